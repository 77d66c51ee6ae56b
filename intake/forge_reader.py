"""The authoritative-source reader for pull requests: the forge, read fresh on every intake.

A 404 is an answer (the pull request does not exist); any other forge error means the source
cannot be read now (permanently so when the mapper says retrying cannot help: bad credentials, a
forbidden repository) and intake defers, asking the sender to come back after the delay the forge
error mapper (``sluicegate.forge.errors``) derived: a rate limit's own delay, a 5xx's
``Retry-After``, or intake's default.
"""

from __future__ import annotations

from typing import Any, Awaitable

from intake.envelope import PullRequestRef
from intake.freshness import TargetSnapshot
from intake.hygiene import display_title
from intake.ports import SourceUnavailable
from sluicegate.forge.client import ForgeClient, ForgeError


async def authoritative_read(read: Awaitable[Any]) -> Any | None:
    """The forge's answer to a freshness read; ``None`` for a 404 (the target does not exist); any
    other forge error raises :class:`SourceUnavailable` (every task's reader maps errors this way)."""
    try:
        return await read
    except ForgeError as exc:
        if exc.not_found:
            return None
        raise SourceUnavailable(str(exc), exc.retry_after, permanent=not exc.retryable) from None


class ForgeTargetReader:
    def __init__(self, forge: ForgeClient) -> None:
        self._forge = forge

    async def read(self, ref: PullRequestRef, tenant: str | None = None) -> TargetSnapshot:
        pull = await authoritative_read(self._forge.get_pull(ref.owner, ref.repo, ref.number, tenant=tenant))
        if pull is None:
            return TargetSnapshot(exists=False)
        return TargetSnapshot(exists=True, open=pull.get("state") == "open",
                              current_version=(pull.get("head") or {}).get("sha"),
                              draft=bool(pull.get("draft")), title=display_title(pull.get("title")))
