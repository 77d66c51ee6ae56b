"""The digest of an issue's content (title and body): what triage freshness compares, never the text.

``sha256`` hex of the canonical JSON of ``[title, body]`` (a missing or non-string field is ``""``;
GitHub's ``null`` body is an empty one). The input is bounded: text past :data:`MAX_CONTENT_CHARS`
(GitHub caps a body at 65,536) gives ``""``, "unknown", never a digest of a cut text.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

MAX_CONTENT_CHARS = 262_144
"""Longest title or body digested; anything longer is "unknown" (``""``)."""

DIGEST_FIELD = "content_digest"
"""The key the forge cache keeps an issue's digest under (its body is dropped)."""


def issue_content_digest(title: Any, body: Any) -> str:
    """``sha256`` hex of ``json.dumps([title, body])`` (canonical), or ``""`` when a part is too long."""
    parts = [value if isinstance(value, str) else "" for value in (title, body)]
    if any(len(part) > MAX_CONTENT_CHARS for part in parts):
        return ""
    canonical = json.dumps(parts, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()
