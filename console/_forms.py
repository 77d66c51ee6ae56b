"""Console input: bounded form bodies and query strings, parsed only after the session is checked.

Order for every POST (the API's rule, ``docs/security.md``): bound the declared size, then
authenticate (the session cookie; the sign-in form is the one exception, whose body *is* the
credential, read under the same bound), then read the body under its cap, then parse it, then
check the CSRF token before anything is looked up or changed.

Failure modes written against:

* A body that is large, not a form, not UTF-8, has too many fields or repeats one, that does not
  arrive whole within :data:`FORM_READ_SECONDS`, or whose client goes away first: refused
  (:class:`FormRefused` with the status to answer) before any field is used.
* A field that is too long or missing: refused naming the field and what was expected, never
  echoing the value.
* Query strings (filters) are bounded the same way; a bad filter value is reported on the page
  and the filter left out, so a page always renders.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal, overload
from urllib.parse import parse_qsl

from fastapi import Request

from intake.hygiene import has_control
from sluicegate.web.bounded_body import BodyNotReceived, declared_too_large, read_limited
from sluicegate.errors import SluicegateError

MAX_FORM_BYTES = 8 * 1024
FORM_READ_SECONDS = 10.0
"""The whole form must arrive within this (the webhook API's default deadline): a sender trickling a
sign-in form, anonymous by nature, holds a connection no longer."""
MAX_FIELDS = 16
MAX_QUERY_VALUE = 512
FORM_TYPE = "application/x-www-form-urlencoded"


class FormRefused(SluicegateError):
    """The request cannot be used; ``status`` is the answer, ``message`` names fields, never values."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def declared_size_ok(request: Request) -> bool:
    return not declared_too_large(request, MAX_FORM_BYTES)


async def read_form(request: Request) -> dict[str, str]:
    """The URL-encoded form body, bounded and parsed; raises :class:`FormRefused`."""
    if request.headers.get("content-type", "").split(";", 1)[0].strip().lower() != FORM_TYPE:
        raise FormRefused(415, f"expected a form ({FORM_TYPE})")
    try:
        body = await read_limited(request, MAX_FORM_BYTES, FORM_READ_SECONDS)
    except BodyNotReceived as unread:
        raise FormRefused(unread.status, str(unread)) from None
    if body is None:
        raise FormRefused(413, f"form over {MAX_FORM_BYTES} bytes")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False,
                          max_num_fields=MAX_FIELDS)
    except (UnicodeDecodeError, ValueError):
        raise FormRefused(400, "the form is not UTF-8 or has too many fields") from None
    form: dict[str, str] = {}
    for name, value in pairs:
        if name in form:
            raise FormRefused(400, f"field {name[:32]!r} sent twice")
        form[name] = value
    return form


@overload
def text(values: Mapping[str, str], name: str, max_chars: int, *, required: Literal[True] = True) -> str: ...
@overload
def text(values: Mapping[str, str], name: str, max_chars: int, *, required: bool) -> str | None: ...
def text(values: Mapping[str, str], name: str, max_chars: int, *, required: bool = True) -> str | None:
    """A trimmed field without control characters; ``None`` when absent and not required."""
    value = (values.get(name) or "").strip()
    if not value:
        if required:
            raise FormRefused(422, f"{name} is required")
        return None
    if len(value) > max_chars or has_control(value):  # ASCII controls, and bidi overrides, U+2028...
        raise FormRefused(422, f"{name}: at most {max_chars} characters, no control characters")
    return value


def query_text(values: Mapping[str, str], name: str, errors: list[str], max_chars: int = MAX_QUERY_VALUE,
               choices: tuple[str, ...] | None = None) -> str | None:
    """A filter from the query string, or ``None`` (absent, or bad: then ``errors`` says why)."""
    try:
        value = text(values, name, max_chars, required=False)
    except FormRefused as refused:
        errors.append(refused.message)
        return None
    if value is not None and choices is not None and value not in choices:
        errors.append(f"{name}: one of {', '.join(choices)}")
        return None
    return value


def query_time(values: Mapping[str, str], name: str, errors: list[str]) -> datetime | None:
    """An ISO time (``2025-01-31T14:00`` as a ``datetime-local`` input sends it); naive means UTC."""
    raw = query_text(values, name, errors, 40)
    if raw is None:
        return None
    try:
        at = datetime.fromisoformat(raw)
    except ValueError:
        errors.append(f"{name}: an ISO time such as 2025-01-31T14:00 (UTC)")
        return None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def query_int(values: Mapping[str, str], name: str, errors: list[str], default: int, low: int, high: int) -> int:
    raw = query_text(values, name, errors, 12)
    if raw is None:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        errors.append(f"{name}: a whole number from {low} to {high}")
        return default
    return int(raw)


def encode_cursor(cursor: tuple[datetime, str]) -> str:
    at, rid = cursor
    return f"{at.astimezone(UTC).isoformat()}~{rid}"


def decode_cursor(raw: str | None, errors: list[str]) -> tuple[datetime, str] | None:
    if raw is None:
        return None
    at, sep, rid = raw.partition("~")
    try:
        when = datetime.fromisoformat(at)
    except ValueError:
        when = None
    if not sep or when is None or not rid or len(rid) > 64:
        errors.append("before: not a page cursor (start again from the newest page)")
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)), rid


def safe_next(raw: str | None) -> str:
    """Where to go after signing in: a console path only (never another host: no open redirect)."""
    if raw and raw.startswith("/console") and "//" not in raw and "\\" not in raw and len(raw) <= 512 \
            and all(32 < ord(ch) < 127 for ch in raw):
        return raw
    return "/console/"
