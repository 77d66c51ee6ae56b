"""GitHub App mode of the forge simulator: JWT exchange, scoped and expiring installation tokens.

Opt-in: nothing changes until an app is registered (``create_forge_app(app=GitHubAppSpec(...))``,
``--app-id/--app-public-key-file/--app-installation``, or ``POST /_sim/apps``). Then:

* ``POST /app/installations/{id}/access_tokens`` with ``Authorization: Bearer <JWT>``: the JWT
  must be RS256-signed by the app's key (the simulator holds only the PUBLIC key), carry
  ``iat``, ``exp`` and ``iss`` = app id, not be expired and expire at most 10 minutes ahead.
  Optional body: ``repositories`` (names in the installation's account) and ``permissions``
  (a subset of what the installation granted). 201 ``{token: "ghs_...", expires_at,
  permissions, repository_selection, repositories}``; the token lives ``token_lifetime_seconds``
  (3600, settable so tests can watch tokens expire), ``expires_at`` rounded up to the second.
* Every API request presenting a ``ghs_`` token acts as the App's bot user ``<slug>[bot]`` (so
  its comments are authored by it) and counts against its installation's rate limit; unknown, revoked or expired -> 401
  ``Bad credentials``; a repository outside the token's repositories (or the installation's
  account) -> 403 ``Resource not accessible by integration``; likewise a route the token's
  permissions do not cover (pulls: ``pull_requests``; ``/issues/{n}`` routes (the issue, its
  labels, its comments): ``issues``, or ``pull_requests`` when ``n`` is a pull request (as on
  GitHub, whose issue routes answer pulls too); anything else: ``contents``; ``write`` needed for
  non-GET).

Failure answers of the exchange, in GitHub's words: 401 ``A JSON web token could not be
decoded`` (bad signature, wrong algorithm, garbage), 401 for an expired JWT, an ``exp`` too far
ahead or another app's ``iss``; 404 for an unknown installation (or no app registered); 422
for an unknown/foreign repository or permissions not granted. Each refusal is counted by reason
in ``GET /_sim/apps``; token values are never listed there.
"""

from __future__ import annotations

import math
import re
import secrets
import string
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import jwt
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from simulators.forge._ratelimits import Caller

__all__ = ["DEFAULT_GRANTED", "GitHubAppSpec", "GitHubApps", "presented_token"]

DEFAULT_GRANTED: Mapping[str, str] = {"pull_requests": "write", "issues": "write", "contents": "read",
                                      "metadata": "read"}
MAX_JWT_SECONDS = 600
_LEVELS = {"read": 1, "write": 2}
_REPO_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)(/.*)?$")
_ALPHABET = string.ascii_letters + string.digits
Refusal = tuple[int, str]


@dataclass(frozen=True)
class GitHubAppSpec:
    """One registered app: its id, PUBLIC key and installations (id -> account login)."""

    app_id: str
    public_key: str
    installations: Mapping[int, str]
    granted: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_GRANTED))
    """Permissions every installation granted the app (a token may ask for a subset)."""
    token_lifetime_seconds: float = 3600
    slug: str = "sluicegate"
    """The App's slug: its installation tokens act as the bot user ``<slug>[bot]``."""


@dataclass
class _Issued:
    installation_id: int
    account: str
    repositories: tuple[str, ...] | None  # lower-case names; None = every repository of the account
    permissions: dict[str, str]
    expires_at: float
    revoked: bool = False


def presented_token(header: str | None) -> str | None:
    """The credential of an ``Authorization: Bearer|token <x>`` header."""
    scheme, _, value = (header or "").partition(" ")
    return value.strip() if scheme.lower() in ("bearer", "token") and value.strip() else None


def _covers(permissions: Mapping[str, str], names: tuple[str, ...], level: str) -> bool:
    return any(_LEVELS.get(permissions.get(n, ""), 0) >= _LEVELS[level] for n in names)


_ISSUE_NUMBER = re.compile(r"^/issues/(\d+)(?:/|$)")


def _needed(method: str, rest: str, is_pull: Callable[[int], bool]) -> tuple[tuple[str, ...], str]:
    level = "read" if method in ("GET", "HEAD") else "write"
    if rest.startswith("/issues"):
        number = _ISSUE_NUMBER.match(rest)
        return (("issues", "pull_requests") if number and is_pull(int(number.group(1))) else ("issues",)), level
    if rest.startswith("/pulls"):
        return ("pull_requests",), level
    return ("contents",), level


def _check_lifetime(seconds: object) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 1 <= seconds <= 3600:
        raise ValueError("token lifetime must be a number of seconds between 1 and 3600")
    return float(seconds)


def _check_spec(spec: GitHubAppSpec) -> None:
    """``ValueError`` naming the first bad field of an app registration."""
    try:
        load_pem_public_key(spec.public_key.encode())
    except (ValueError, TypeError, AttributeError):
        raise ValueError("public_key must be a PEM public key") from None
    if not isinstance(spec.granted, Mapping) or any(level not in _LEVELS for level in spec.granted.values()):
        raise ValueError("granted must map permission names to read or write")
    _check_lifetime(spec.token_lifetime_seconds)
    if not isinstance(spec.slug, str) or not spec.slug.strip():
        raise ValueError("slug must be a non-empty string")


def _format(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class GitHubApps:
    """Thread-safe app registry and issued tokens; ``reset`` restores the seeded app."""

    def __init__(self, clock: Callable[[], float] = time.time, *,
                 is_pull: Callable[[str, str, int], bool] = lambda owner, repo, number: False) -> None:
        """``is_pull(owner, repo, n)``: is ``n`` a pull request there (its issue routes then also accept
        ``pull_requests``)? Called without this registry's lock held."""
        self._clock = clock
        self._is_pull = is_pull
        self._lock = threading.Lock()
        self._seed: GitHubAppSpec | None = None
        self.reset()

    def configure(self, spec: GitHubAppSpec | None, *, seed: bool = False) -> None:
        """Register (or with ``None`` remove) the app; ``seed``: also what ``reset`` restores."""
        if spec is not None:
            _check_spec(spec)
        with self._lock:
            if seed:
                self._seed = spec
            self._spec = spec
            self._lifetime = spec.token_lifetime_seconds if spec else 3600.0
            self._tokens: dict[str, _Issued] = {}

    def reset(self) -> None:
        with self._lock:
            self._rejections: Counter[str] = Counter()
        self.configure(self._seed)

    @property
    def enabled(self) -> bool:
        with self._lock:
            return self._spec is not None

    def set_token_lifetime(self, seconds: object) -> None:
        """Lifetime of tokens issued from now on (tokens already issued keep theirs)."""
        lifetime = _check_lifetime(seconds)
        with self._lock:
            self._lifetime = lifetime

    def revoke_all(self) -> int:
        with self._lock:
            live = [t for t in self._tokens.values() if not t.revoked]
            for issued in live:
                issued.revoked = True
            return len(live)

    # -- the exchange ----------------------------------------------------------
    def exchange(self, installation_id: int, header: str | None, body: Any,
                 has_repo: Callable[[str, str], bool]) -> tuple[int, dict[str, Any]] | Refusal:
        """``(201, token body)`` or a refusal ``(status, message)``."""
        with self._lock:
            spec, lifetime = self._spec, self._lifetime
        if spec is None or installation_id not in spec.installations:
            return self._refuse("unknown_installation", 404, "Not Found")
        refusal = self._check_jwt(spec, presented_token(header))
        if refusal is not None:
            return refusal
        account = spec.installations[installation_id]
        body = body if isinstance(body, dict) else {}
        repos, permissions = body.get("repositories"), body.get("permissions")
        if repos is not None and (not isinstance(repos, list) or not all(isinstance(r, str) for r in repos)
                                  or not all(has_repo(account, r) for r in repos)):
            return self._refuse("foreign_repository", 422, "There is at least one repository that does not exist "
                                "or is not accessible to the parent installation.")
        if permissions is None:
            permissions = dict(spec.granted)
        if not isinstance(permissions, dict) or not all(
                level in _LEVELS and _covers(spec.granted, (name,), level) for name, level in permissions.items()):
            return self._refuse("permission_not_granted", 422,
                                "The permissions requested are not granted to this installation.")
        token = "ghs_" + "".join(secrets.choice(_ALPHABET) for _ in range(36))
        issued = _Issued(installation_id, account, tuple(r.lower() for r in repos) if repos else None,
                         dict(permissions), float(math.ceil(self._clock() + lifetime)))
        with self._lock:
            self._tokens[token] = issued
        answer: dict[str, Any] = {"token": token, "expires_at": _format(issued.expires_at), "permissions": issued.permissions,
                  "repository_selection": "selected" if repos else "all"}
        if repos:
            answer["repositories"] = [{"name": r, "full_name": f"{account}/{r}"} for r in repos]
        return 201, answer

    def _check_jwt(self, spec: GitHubAppSpec, token: str | None) -> Refusal | None:
        try:
            claims = jwt.decode(token or "", spec.public_key, algorithms=["RS256"],
                                options={"require": ["iat", "exp", "iss"]})
        except jwt.ExpiredSignatureError:
            return self._refuse("bad_jwt", 401, "'Expiration time' claim ('exp') must be a numeric value "
                                "representing the future time at which the assertion expires")
        except jwt.ImmatureSignatureError:
            return self._refuse("bad_jwt", 401, "'Issued at' claim ('iat') must be an Integer representing the "
                                "time that the assertion was issued")
        except jwt.PyJWTError:
            return self._refuse("bad_jwt", 401, "A JSON web token could not be decoded")
        if str(claims["iss"]) != spec.app_id:
            return self._refuse("bad_jwt", 401, "'Issuer' claim ('iss') must be the app's id")
        if claims["exp"] > self._clock() + MAX_JWT_SECONDS + 30:  # 30 s of clock drift, like GitHub
            return self._refuse("bad_jwt", 401, "'Expiration time' claim ('exp') is too far in the future")
        return None

    # -- API requests ------------------------------------------------------------
    def authorize(self, token: str, method: str, path: str) -> Refusal | None:
        """None if ``token`` may make this request, else the refusal."""
        with self._lock:
            issued = self._tokens.get(token)
            if issued is not None:
                issued = _Issued(**vars(issued))
        if issued is None or issued.revoked:
            return self._refuse("unknown_token" if issued is None else "revoked_token", 401, "Bad credentials")
        if self._clock() >= issued.expires_at:
            return self._refuse("expired_token", 401, "Bad credentials")
        match = _REPO_PATH.match(path)
        if match is None:
            return None
        owner, repo, rest = match.group(1), match.group(2), match.group(3) or ""
        in_scope = owner.lower() == issued.account.lower() and (
            issued.repositories is None or repo.lower() in issued.repositories)
        names, level = _needed(method, rest, lambda n: self._is_pull(owner, repo, n))
        if not in_scope:
            return self._refuse("out_of_scope", 403, "Resource not accessible by integration")
        if not _covers(issued.permissions, names, level):
            return self._refuse("permission", 403, "Resource not accessible by integration")
        return None

    def caller_for(self, token: str) -> Caller:
        """The bot user an (authorized) installation token acts as, and its installation's budget."""
        with self._lock:
            issued, slug = self._tokens[token], (self._spec.slug if self._spec else "app")
        ident = issued.installation_id
        return Caller(f"{slug}[bot]", f"installation:{ident}", f"installation ID {ident}")

    def _refuse(self, reason: str, status: int, message: str) -> Refusal:
        with self._lock:
            self._rejections[reason] += 1
        return status, message

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            spec = self._spec
            return {
                "enabled": spec is not None,
                "app_id": spec.app_id if spec else None,
                "slug": spec.slug if spec else None,
                "installations": {str(k): v for k, v in spec.installations.items()} if spec else {},
                "token_lifetime_seconds": self._lifetime,
                "tokens": [{"installation_id": t.installation_id, "account": t.account,
                            "repositories": list(t.repositories) if t.repositories is not None else None,
                            "permissions": dict(t.permissions), "expires_at": _format(t.expires_at),
                            "revoked": t.revoked} for t in self._tokens.values()],
                "rejections": dict(sorted(self._rejections.items())),
            }
