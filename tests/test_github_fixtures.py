"""The octokit webhook payloads under tests/fixtures/github are verbatim copies: each file's git blob id
is the one the README records from octokit/webhooks (an edit, even of whitespace, fails here)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "github"


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_payloads_are_the_recorded_upstream_blobs() -> None:
    recorded = dict(re.findall(r"^\| `([\w/.]+)` \| `([0-9a-f]{40})` \|$", (FIXTURES / "README.md").read_text(), re.M))
    present = {p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.json")}
    assert len(recorded) == 5 and set(recorded) <= present
    for name, blob in recorded.items():
        data = (FIXTURES / name).read_bytes()
        assert _blob_id(data) == blob, name
        payload = json.loads(data)
        assert payload["action"] == name.rsplit("/", 1)[1].split(".")[0]
        assert payload["repository"]["full_name"] == "Codertocat/Hello-World"
