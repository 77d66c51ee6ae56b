"""Hidden comment markers: a crashed post finds its own comment after a restart, and only its own.

Every comment Sluicegate posts ends with ``<!-- sluicegate:op=<operation key> sig=<hmac> -->``,
where ``sig`` is HMAC-SHA256 of the operation key under the server's marker secret. Reconcile
(``activities.forge_tools``) takes a comment as the effect of an operation only when **both**:

* its author is the configured bot identity (``forge.bot_login``: the static token's login, or
  ``<app slug>[bot]`` for a GitHub App), and
* it carries the marker of *that* operation key with a signature valid under the current secret
  or a retired one (``forge.marker_secret`` / ``forge.marker_old_secrets``: rotation).

Failure modes this is written against:

* Operation keys are sha256 of public values (work key, operation, head sha), so anyone who can
  comment can compute one and plant its marker in advance to suppress a review. Without the
  secret the signature cannot be forged; posted by someone else, the author check fails too.
* A genuine marker copied into another user's comment fails the author check.
* Without a secret or a bot login configured nothing is trusted: after a crash between the post
  and its record the review may be posted a second time, never suppressed (the worker warns).
* Markers from before signing (no ``sig``) are not trusted: an operation in flight across that
  upgrade may post once more.

Pure (hmac/hashlib only); :meth:`CommentMarks.from_forge_config` builds one from ``settings.forge``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from typing import Any, Iterable

from activities.keys import marker_for

MARKER_PREFIX = "<!-- sluicegate:op="
_MARKER = re.compile(r"<!-- sluicegate:op=(op_[0-9a-f]{40}) sig=([0-9a-f]{64}) -->")
_CONTEXT = b"sluicegate-comment-marker\x1f"


def _sign(secret: bytes, op_key: str) -> str:
    return hmac.new(secret, _CONTEXT + op_key.encode("ascii"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class CommentMarks:
    """Signs markers with the first secret; verifies with any of them and the bot's login."""

    secrets: tuple[bytes, ...] = ()
    bot_login: str | None = None

    @classmethod
    def from_values(cls, secret: str | None, old_secrets: Iterable[str] = (), bot_login: str | None = None
                    ) -> "CommentMarks":
        keys = tuple(s.encode("utf-8") for s in (secret, *old_secrets) if s) if secret else ()
        return cls(keys, bot_login or None)

    @classmethod
    def from_forge_config(cls, forge: Any) -> "CommentMarks":
        """From ``settings.forge`` (``marker_secret``, ``marker_old_secrets``: SecretStr; ``bot_login``)."""
        secret = forge.marker_secret.get_secret_value() if forge.marker_secret else None
        return cls.from_values(secret, [s.get_secret_value() for s in forge.marker_old_secrets], forge.bot_login)

    @property
    def trusting(self) -> bool:
        """False when a comment can never be recognised as ours (no secret or no bot login)."""
        return bool(self.secrets) and self.bot_login is not None

    def marker(self, op_key: str) -> str:
        """The marker to end a comment with (unsigned, hence never trusted, without a secret)."""
        sig = _sign(self.secrets[0], op_key) if self.secrets else "0" * 64
        return f"{marker_for(op_key)}sig={sig} -->"

    def authored_by_bot(self, comment: dict[str, Any]) -> bool:
        login = (comment.get("user") or {}).get("login")
        return self.bot_login is not None and isinstance(login, str) and hmac.compare_digest(
            login.lower().encode(), self.bot_login.lower().encode())

    def signed_ops(self, body: str | None) -> set[str]:
        """Operation keys whose marker in ``body`` carries a valid signature."""
        found = set()
        for op_key, sig in _MARKER.findall(body or ""):
            if any(hmac.compare_digest(sig, _sign(secret, op_key)) for secret in self.secrets):
                found.add(op_key)
        return found

    def is_effect_of(self, comment: dict[str, Any], op_key: str) -> bool:
        """Is ``comment`` the one an attempt of ``op_key`` posted?"""
        return self.trusting and self.authored_by_bot(comment) and op_key in self.signed_ops(comment.get("body"))

    def is_own(self, comment: dict[str, Any]) -> bool:
        """Did Sluicegate post ``comment`` (any operation)?"""
        return self.trusting and self.authored_by_bot(comment) and bool(self.signed_ops(comment.get("body")))
