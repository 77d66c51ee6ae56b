"""Input hygiene: the one set of rules every identity value passes before it is used.

Used by every parser (``intake/github.py``, ``intake/sources/*``), the manual trigger
(``intake/manual_request.py``, shared by the API and ``starter.py trigger``) and the
receipt errors (``intake/errors.py``). Pure: no I/O, no configuration.

Failure modes written against:

* NUL and other control characters: PostgreSQL refuses NUL in text *after* the decision was
  taken (a 500 where SQLite stored it), and control characters — including the invisible
  "format" ones such as bidi overrides and the Unicode line separators — forge or hide log
  lines. Refused in identity values; replaced by ``?`` in free text that is only displayed.
* ``.`` and ``..`` path segments: owner and repository names go into forge URLs
  (``/repos/{owner}/{repo}``), and any identity may end up in a path or a key; a segment of
  dots walks up a level. Refused everywhere an identity is read, whatever the field.
* Unbounded lengths and numbers: a value longer than its ledger column is refused by
  PostgreSQL, not SQLite (the two ledgers must behave the same), and a pull request number
  past a 32-bit integer is no real number on any forge. Every bound is a constant here.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

MAX_NAME = 100
"""An owner or repository name (GitHub allows 39 and 100)."""
MAX_DELIVERY_ID = 256
MAX_EVENT_TYPE = 128
MAX_SUBJECT = 512
MAX_VERSION = 128
MAX_REQUEST_ID = 128
MAX_ACTOR = 128
MAX_REASON = 500
MAX_NUMBER = 2**31 - 1
"""Pull request numbers are positive 32-bit integers."""

_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Control, format (bidi overrides, zero-width), surrogate, line and paragraph separators."""
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_VERSION = re.compile(r"[\x21-\x7e]+")
_SEGMENT_SPLIT = re.compile(r"[/\\]")


_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
"""The refused characters an ASCII string can hold (category ``Cc``; ``Cf``, ``Cs``, ``Zl``, ``Zp`` are all
outside ASCII)."""


def has_control(value: str) -> bool:
    """True when ``value`` holds a character that must never reach the ledger or a log line.
    ASCII (delivery ids, event types, shas): one regex scan instead of a category lookup per character."""
    if value.isascii():
        return _ASCII_CONTROL.search(value) is not None
    return any(unicodedata.category(ch) in _REFUSED_CATEGORIES for ch in value)


def has_dot_segment(value: str) -> bool:
    """True when a ``/``- or ``\\``-separated segment of ``value`` is ``.`` or ``..``."""
    return any(segment in (".", "..") for segment in _SEGMENT_SPLIT.split(value))


def identity_text(value: object, limit: int) -> str | None:
    """``value`` when it is a string of 1..``limit`` characters, free of control characters and
    of ``.``/``..`` segments; otherwise ``None``. For delivery ids, event types, subjects,
    request ids, actor names."""
    if not isinstance(value, str) or not 0 < len(value) <= limit or has_control(value) or has_dot_segment(value):
        return None
    return value


def repo_name(value: object) -> str | None:
    """An owner or repository name: ``[A-Za-z0-9_.-]``, 1..100, not ``.`` or ``..``."""
    if not isinstance(value, str) or len(value) > MAX_NAME or not _NAME.fullmatch(value) or value in (".", ".."):
        return None
    return value


def repository(value: object) -> tuple[str, str] | None:
    """``owner/repo`` → (owner, repo), each a :func:`repo_name`; otherwise ``None``."""
    if not isinstance(value, str) or value.count("/") != 1:
        return None
    owner, repo = value.split("/")
    return (owner, repo) if repo_name(owner) and repo_name(repo) else None


def pr_number(value: object) -> int | None:
    """A pull request number: a real integer (not a bool, not a string) in 1..2**31-1."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_NUMBER:
        return None
    return value


def input_version(value: object) -> str | None:
    """An input version (a head sha): printable ASCII without spaces, 1..128, no dot segments."""
    if not isinstance(value, str) or len(value) > MAX_VERSION or not _VERSION.fullmatch(value) \
            or has_dot_segment(value):
        return None
    return value


def free_text(value: object, limit: int) -> str | None:
    """Text a person wrote (a reason): 1..``limit`` characters, not blank, no control characters."""
    if not isinstance(value, str) or not 0 < len(value) <= limit or not value.strip() or has_control(value):
        return None
    return value


def printable(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with every refused character shown as ``?``: for
    messages and log lines that quote something, never for identities."""
    return "".join("?" if unicodedata.category(ch) in _REFUSED_CATEGORIES else ch for ch in text[:limit])


TITLE_LIMIT = 120
"""A pull request title kept for the Temporal UI (summary and memo, ``workflows/run_memo.py``) is cut
to this many characters; here, not in workflows, because the GitHub parser keeps titles short too."""


def display_title(value: Any) -> str:
    """A pull request title fit for the UI: a string, one line, at most :data:`TITLE_LIMIT` characters."""
    if not isinstance(value, str):
        return ""
    line = "".join(c if c.isprintable() else " " for c in value[:TITLE_LIMIT * 4])
    line = " ".join(line.split())
    return line if len(line) <= TITLE_LIMIT else line[:TITLE_LIMIT - 1] + "…"
