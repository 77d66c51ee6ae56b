"""GitHub-style page/per_page pagination and the ``Link`` response header.

Like GitHub: ``per_page`` defaults to 30 and is clamped to 1..100, ``page``
defaults to 1; unparsable values fall back to the defaults instead of
failing. A page past the end is an empty list (with ``prev``/``first``
links). The ``Link`` header is omitted when everything fits on one page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from starlette.datastructures import URL

__all__ = ["link_header", "paginate", "parse_paging"]

T = TypeVar("T")
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100


def _as_int(raw: str | None, default: int) -> int:
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


def parse_paging(per_page: str | None, page: str | None) -> tuple[int, int]:
    size = min(max(_as_int(per_page, DEFAULT_PER_PAGE), 1), MAX_PER_PAGE)
    number = max(_as_int(page, 1), 1)
    return size, number


def paginate(items: Sequence[T], per_page: str | None, page: str | None) -> tuple[list[T], dict[str, int]]:
    """Slice ``items``; return ``(slice, {rel: page_number})`` for links."""
    size, number = parse_paging(per_page, page)
    last = max((len(items) + size - 1) // size, 1)
    chunk = list(items[(number - 1) * size : number * size])
    rels: dict[str, int] = {}
    if last > 1 or number > 1:
        if number > 1:
            rels["prev"] = min(number - 1, last)
        if number < last:
            rels["next"] = number + 1
            rels["last"] = last
        if number > 1:
            rels["first"] = 1
    return chunk, rels


def link_header(url: URL, rels: dict[str, int]) -> str | None:
    """Render ``<url?page=N>; rel="next", ...`` keeping the other query params."""
    if not rels:
        return None
    parts = [f'<{url.include_query_params(page=page)}>; rel="{rel}"' for rel, page in rels.items()]
    return ", ".join(parts)
