"""Paths into a JSON payload: RFC 6901 JSON Pointers (``/data/pull_request/head/sha``; ``~1`` is
``/``, ``~0`` is ``~``) or dotted paths (``data.pull_request.head.sha``); a segment of digits
indexes a list. Used by the payload mapping and the schema-version rule."""

from __future__ import annotations

from typing import Any

_MISSING = object()


def parse_path(path: str) -> tuple[str, ...]:
    """Split a JSON Pointer or dotted path into segments; raises ``ValueError`` when unusable."""
    if not path:
        raise ValueError("path must not be empty")
    if path.startswith("/"):
        return tuple(p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/"))
    segments = tuple(path.split("."))
    if "" in segments:
        raise ValueError(f"dotted path {path!r} has an empty segment")
    return segments


def resolve(document: Any, path: str) -> Any:
    """The value at ``path`` in ``document``, or the module's missing sentinel."""
    node = document
    for segment in parse_path(path):
        if isinstance(node, dict) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and segment.isdecimal() and segment.isascii() and int(segment) < len(node):
            node = node[int(segment)]
        else:
            return _MISSING
    return node


def is_missing(value: Any) -> bool:
    return value is _MISSING
