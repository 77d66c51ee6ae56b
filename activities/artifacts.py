"""Content-addressed artifact store for large tool outputs (local directory by default).

A large output (a big diff) is stored once under its SHA-256 and only a handle and a short
summary enter the prompt and the workflow history, so every later step does not pay for
the same tokens again and histories stay small. Writes are atomic (temp file + rename),
so a crash never leaves a half-written artifact under a valid handle; identical content
maps to the same handle, so retries store nothing twice.

**At rest.** With payload keys configured (``temporal.payload_key``, ``sluicegate.temporal.codec``) an
artifact is sealed with the current key (AES-256-GCM, bound to its handle): the file is
``SGA1 | key id | nonce | ciphertext``. Retired keys still open old files; a file written before
encryption was turned on is still read (its SHA-256 must match the handle, so a planted file is
refused) and is sealed the next time the same content is stored. The file name is the handle's
SHA-256 of the plaintext: whoever can list the directory and guesses a diff exactly can confirm
the guess, but cannot read any content.

**Who may read.** Content addressing alone would let anyone who knows (or guesses) a handle read
it. A store that records a *grant* — ``put(data, scope=(tenant, work_key))`` writes an empty file
``grants/<sha256 of the scope and handle>`` — answers :meth:`ArtifactStore.granted` for that scope
only, so the model's ``read_artifact`` tool (``activities/artifact_tools.py``) opens an artifact only
for the work item (and tenant) whose tool call stored it. Identical content stored by two work items
is one file with two grants.

**Retention.** Storing content again refreshes the file's (and its grant's) modification time;
``prune`` removes files not written for longer than the retention period, grants included, a
bounded number per call (the maintenance prune schedule, ``activities/maintenance.py``). A run
reads its artifacts within minutes of storing them; a read of one already pruned is answered
"not found" to the model, never an error that fails the run.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path

from sluicegate.temporal.codec import PayloadKeys

PREFIX = "artifact:sha256:"
MAGIC = b"SGA1"
_KID_BYTES = 16
_AAD = b"sluicegate-artifact\x1f"
GRANTS = "grants"
Scope = tuple[str, str]
"""(tenant, work key): who may read an artifact back."""


class ArtifactStore:
    def __init__(self, root: Path, keys: PayloadKeys | None = None) -> None:
        self._root = root
        self._keys = keys

    def _path(self, digest: str) -> Path:
        return self._root / digest[:2] / digest

    def put(self, data: bytes, scope: Scope | None = None) -> str:
        """Store ``data``; with ``scope``, grant that (tenant, work key) reading it back."""
        digest = hashlib.sha256(data).hexdigest()
        path = self._path(digest)
        if path.exists() and (self._keys is None or path.read_bytes()[:len(MAGIC)] == MAGIC):
            os.utime(path)  # stored again: keep it through retention
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(self._seal(data, digest))
            os.replace(tmp, path)
        if scope is not None:
            grant = self._grant_path(digest, scope)
            grant.parent.mkdir(parents=True, exist_ok=True)
            grant.touch()  # created, or refreshed through retention
        return PREFIX + digest

    def granted(self, handle: str, scope: Scope) -> bool:
        """Was ``handle`` stored for this (tenant, work key)? False for anything not a handle."""
        digest = handle[len(PREFIX):] if handle.startswith(PREFIX) else ""
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            return False
        return self._grant_path(digest, scope).is_file()

    def _grant_path(self, digest: str, scope: Scope) -> Path:
        tenant, work_key = scope
        name = hashlib.sha256(f"{tenant}\x1f{work_key}\x1f{digest}".encode()).hexdigest()
        return self._root / GRANTS / name

    def get(self, handle: str) -> bytes:
        if not handle.startswith(PREFIX):
            raise ValueError(f"not an artifact handle: {handle!r}")
        digest = handle[len(PREFIX):]
        stored = self._path(digest).read_bytes()
        data = self._open(stored, digest) if stored[:len(MAGIC)] == MAGIC else stored
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"artifact {handle} is corrupt")
        return data

    def prune(self, older_than_seconds: float, limit: int) -> int:
        """Remove at most ``limit`` artifacts not written for ``older_than_seconds``; returns how many."""
        cutoff = time.time() - older_than_seconds
        removed = 0
        if not self._root.is_dir():
            return 0
        for shard in sorted(self._root.iterdir()):
            if not shard.is_dir():
                continue
            for path in sorted(shard.iterdir()):
                if removed >= limit:
                    return removed
                try:
                    if path.stat().st_mtime < cutoff:
                        path.unlink()
                        removed += 1
                except FileNotFoundError:  # another worker pruned it meanwhile
                    continue
        return removed

    def _seal(self, data: bytes, digest: str) -> bytes:
        if self._keys is None:
            return data
        kid = self._keys.key_id.encode()
        return MAGIC + kid + self._keys.seal(data, _AAD + digest.encode())

    def _open(self, stored: bytes, digest: str) -> bytes:
        if self._keys is None:
            raise ValueError("artifact is encrypted but no payload key is configured (temporal.payload_key)")
        kid = stored[len(MAGIC):len(MAGIC) + _KID_BYTES].decode(errors="replace")
        return self._keys.open(kid, stored[len(MAGIC) + _KID_BYTES:], _AAD + digest.encode())


def diff_summary(diff: str) -> str:
    """Files touched and lines added/removed, for the prompt in place of a large diff."""
    files = sum(1 for line in diff.splitlines() if line.startswith("diff --git "))
    added = sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff.splitlines() if line.startswith("-") and not line.startswith("---"))
    return f"{files} files changed, +{added}/-{removed} lines"
