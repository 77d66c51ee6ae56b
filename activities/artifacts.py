"""Content-addressed artifact store for large tool outputs (local directory by default).

A large output (a big diff) is stored once under its SHA-256 and only a handle and a short
summary enter the prompt and the workflow history, so every later step does not pay for
the same tokens again and histories stay small. Writes are atomic (temp file + rename),
so a crash never leaves a half-written artifact under a valid handle; identical content
maps to the same handle, so retries store nothing twice.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

PREFIX = "artifact:sha256:"


class ArtifactStore:
    def __init__(self, root: Path) -> None:
        self._root = root

    def _path(self, digest: str) -> Path:
        return self._root / digest[:2] / digest

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        path = self._path(digest)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        return PREFIX + digest

    def get(self, handle: str) -> bytes:
        if not handle.startswith(PREFIX):
            raise ValueError(f"not an artifact handle: {handle!r}")
        digest = handle[len(PREFIX):]
        data = self._path(digest).read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"artifact {handle} is corrupt")
        return data


def diff_summary(diff: str) -> str:
    """Files touched and lines added/removed, for the prompt in place of a large diff."""
    files = sum(1 for line in diff.splitlines() if line.startswith("diff --git "))
    added = sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff.splitlines() if line.startswith("-") and not line.startswith("---"))
    return f"{files} files changed, +{added}/-{removed} lines"
