"""The conditional-read cache behind :meth:`sluicegate.forge.client.ForgeClient.get_pull`.

gidgethub's cache protocol: a ``MutableMapping`` from the request URL to ``(etag, last_modified,
data, more)``; on a GET it sends ``If-None-Match`` with the stored ETag and, on ``304``, returns the
stored ``data``. Handed a plain LRU, that meant up to 4096 whole pull-request bodies per process
(a pull's JSON is tens of kB: hundreds of MB at worst), keyed by URL alone, so two tenants (each with
its own installation token) reading the same URL overwrote each other's ETag and data.

:class:`FreshnessCache` is that mapping with two changes: an entry is keyed by (scope, URL), the
scope being the tenant of the call (:func:`scoped`, a context variable set around the request, as
gidgethub passes only the URL), and ``data`` is cut to :data:`PULL_FIELDS`, the fields freshness
(``intake.forge_reader``) and goal observations (``activities.goal_activities``) read; an issue's
answer (``.../issues/<n>``, the triage task's freshness read) is cut to :data:`ISSUE_FIELDS`. The URL
is part of the key, so a pull request's and an issue's read of one number never share an entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from cachetools import LRUCache

from sluicegate.forge.issue_digest import DIGEST_FIELD, issue_content_digest

PULL_FIELDS = ("number", "state", "draft", "merged", "updated_at", "title")
"""Top-level fields of a pull request kept (plus ``head.sha``); everything else (body, links, users) is dropped."""

ISSUE_FIELDS = ("number", "state", "updated_at", "title")
"""Top-level fields of an issue kept for freshness (plus ``pull_request`` as ``True`` when present, and
the ``content_digest`` of title and body in place of the body: ``sluicegate.forge.issue_digest``)."""

_SCOPE: ContextVar[str] = ContextVar("sluicegate_forge_cache_scope", default="")


def pull_fields(pull: Any) -> Any:
    """``pull`` cut to what freshness and goals read: :data:`PULL_FIELDS` and ``head.sha``."""
    if not isinstance(pull, dict):
        return pull
    kept = {k: pull[k] for k in PULL_FIELDS if k in pull}
    head = pull.get("head")
    if isinstance(head, dict):
        kept["head"] = {"sha": head.get("sha")}
    return kept


def issue_fields(issue: Any) -> Any:
    """``issue`` cut to what triage freshness reads: :data:`ISSUE_FIELDS`, and ``pull_request: True``
    when the issue is a pull request (GitHub's issues endpoint answers pull requests too)."""
    if not isinstance(issue, dict):
        return issue
    kept = {k: issue[k] for k in ISSUE_FIELDS if k in issue}
    if issue.get("pull_request"):
        kept["pull_request"] = True
    # The forge's answer has a body (null when empty); a kept entry (a 304) has only its digest.
    kept[DIGEST_FIELD] = (issue_content_digest(issue.get("title"), issue.get("body")) if "body" in issue
                          else str(issue.get(DIGEST_FIELD) or ""))
    return kept


_ISSUE_PATH = re.compile(r"/issues/[0-9]+/?$")


def _fields_for(url: str, data: Any) -> Any:
    """The kept fields of a conditional read's answer: an issue's for ``.../issues/<n>``, else a pull's."""
    # The path's *end* decides: ``/issues/<n>`` is an issue read, ``/pulls/<n>`` a pull's, whatever the
    # owner, the repository (one named ``issues`` is common) or an enterprise base path holds.
    return issue_fields(data) if _ISSUE_PATH.search(urlsplit(url).path) else pull_fields(data)


@contextmanager
def scoped(scope: str | None) -> Iterator[None]:
    """Cache entries read and written inside this block belong to ``scope`` (the call's tenant)."""
    token = _SCOPE.set(scope or "")
    try:
        yield
    finally:
        _SCOPE.reset(token)


class FreshnessCache(MutableMapping):
    """gidgethub's URL-keyed cache, stored per (scope, URL) with only the pull fields freshness needs."""

    def __init__(self, maxsize: int) -> None:
        self._entries: LRUCache = LRUCache(maxsize=maxsize)

    def __getitem__(self, url: str) -> tuple:
        return self._entries[(_SCOPE.get(), url)]

    def __setitem__(self, url: str, value: tuple) -> None:
        etag, last_modified, data, more = value
        self._entries[(_SCOPE.get(), url)] = (etag, last_modified, _fields_for(url, data), more)

    def __delitem__(self, url: str) -> None:
        del self._entries[(_SCOPE.get(), url)]

    def __iter__(self) -> Iterator[str]:
        scope = _SCOPE.get()
        return iter([url for (s, url) in list(self._entries) if s == scope])

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, scope: str | None, url: str) -> tuple | None:
        """The stored ``(etag, last_modified, data, more)`` of ``url`` for ``scope`` (inspection, tests)."""
        return self._entries.get((scope or "", url))
