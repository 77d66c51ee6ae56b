"""HTML out: one Jinja2 environment, the page headers, and the formatting filters.

Autoescaping is on for every template and undefined names fail loudly (a typo in a template
is a 500 in the tests, not an empty cell in production). Every page is sent with a strict
Content-Security-Policy: no script at all (the console is plain forms), styles and images from
the console itself only, forms posting only to it, and never framed. Links that come from
recorded data (a comment's URL) are shown only when they are ``http(s)``, so a ``javascript:``
URL a forge returned can never become a link.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                                "frame-ancestors 'none'; base-uri 'none'"),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def utc(value: datetime) -> datetime:
    """SQLite hands timestamps back naive; they were written as UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def when(value: datetime | None) -> str:
    return "-" if value is None else utc(value).strftime("%Y-%m-%d %H:%M:%S")


def usd(value: float | None, places: int = 4) -> str:
    return "-" if value is None else f"${value:,.{places}f}"


def age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s >= 86400:
        return f"{s // 86400}d{s % 86400 // 3600:02d}h"
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def http_url(value: Any) -> str | None:
    """``value`` when it is an absolute http(s) URL, else ``None`` (never a ``javascript:`` link)."""
    if not isinstance(value, str) or len(value) > 2048:
        return None
    parts = urlsplit(value)
    return value if parts.scheme in ("http", "https") and parts.netloc else None


def query(params: dict[str, Any], **changes: Any) -> str:
    """A query string from ``params`` with ``changes`` applied; empty values are left out."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})


_env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "svg"]),
                   undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_env.filters.update(when=when, usd=usd, age=age, http_url=http_url)
_env.globals.update(query=query)


def render(template: str, status: int = 200, headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
    html = _env.get_template(template).render(**context)
    return HTMLResponse(html, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})})
