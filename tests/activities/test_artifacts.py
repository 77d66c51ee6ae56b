"""Content-addressed artifacts: same content → same handle, atomic, verified on read."""

from __future__ import annotations

import pytest

from activities.artifacts import ArtifactStore, diff_summary


def test_put_is_content_addressed_and_verified(tmp_path):
    store = ArtifactStore(tmp_path)
    a = store.put(b"diff --git a/x b/x\n+new\n")
    assert a == store.put(b"diff --git a/x b/x\n+new\n") and a.startswith("artifact:sha256:")
    assert store.get(a) == b"diff --git a/x b/x\n+new\n"
    assert a != store.put(b"something else")
    path = next(p for p in tmp_path.rglob("*") if p.is_file() and p.name == a.rsplit(":", 1)[1])
    path.write_bytes(b"tampered")
    with pytest.raises(ValueError, match="corrupt"):
        store.get(a)
    assert not [p for p in tmp_path.rglob(".tmp-*")]


def test_diff_summary_counts_files_and_lines():
    diff = "diff --git a/a b/a\n--- a/a\n+++ b/a\n-old\n+new\n+more\ndiff --git a/b b/b\n+x\n"
    assert diff_summary(diff) == "2 files changed, +3/-1 lines"
