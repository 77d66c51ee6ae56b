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


def _keys(*texts: str):
    from sluicegate.temporal.codec import PayloadKeys, parse_key

    return PayloadKeys(parse_key(texts[0]), [parse_key(t) for t in texts[1:]])


def _file(root, handle: str):
    return next(p for p in root.rglob("*") if p.is_file() and p.name == handle.rsplit(":", 1)[1])


def test_artifacts_are_sealed_at_rest_and_open_with_retired_keys(tmp_path):
    from sluicegate.temporal.codec import PayloadKeyError, new_key

    old, new = new_key(), new_key()
    secret = b"diff --git a/secret b/secret\n+API_KEY=hunter2\n"
    handle = ArtifactStore(tmp_path, _keys(old)).put(secret)
    stored = _file(tmp_path, handle).read_bytes()
    assert b"hunter2" not in stored and stored.startswith(b"SGA1")
    assert ArtifactStore(tmp_path, _keys(new, old)).get(handle) == secret  # rotation: the old key still opens it
    with pytest.raises(PayloadKeyError, match="not configured"):
        ArtifactStore(tmp_path, _keys(new)).get(handle)
    with pytest.raises(ValueError, match="no payload key"):
        ArtifactStore(tmp_path).get(handle)
    path = _file(tmp_path, handle)
    path.write_bytes(stored[:-1] + bytes([stored[-1] ^ 1]))
    with pytest.raises(PayloadKeyError, match="does not authenticate"):
        ArtifactStore(tmp_path, _keys(old)).get(handle)


def test_a_plaintext_artifact_from_before_encryption_is_read_then_sealed(tmp_path):
    from sluicegate.temporal.codec import new_key

    handle = ArtifactStore(tmp_path).put(b"old diff\n")
    keys = _keys(new_key())
    sealed_store = ArtifactStore(tmp_path, keys)
    assert sealed_store.get(handle) == b"old diff\n"
    assert sealed_store.put(b"old diff\n") == handle
    assert _file(tmp_path, handle).read_bytes().startswith(b"SGA1") and sealed_store.get(handle) == b"old diff\n"


def test_prune_removes_only_old_artifacts_a_bounded_number_at_a_time(tmp_path):
    import os
    import time

    store = ArtifactStore(tmp_path)
    handles = [store.put(f"diff {i}\n".encode()) for i in range(5)]
    long_ago = time.time() - 10 * 86400
    for handle in handles[:3]:
        os.utime(_file(tmp_path, handle), (long_ago, long_ago))
    assert store.prune(older_than_seconds=86400, limit=2) == 2
    assert store.prune(older_than_seconds=86400, limit=2) == 1
    assert store.prune(older_than_seconds=86400, limit=2) == 0
    assert [store.get(h) for h in handles[3:]] == [b"diff 3\n", b"diff 4\n"]
    store.put(b"diff 3\n")  # stored again: its clock restarts
    assert ArtifactStore(tmp_path / "missing").prune(0, 10) == 0
