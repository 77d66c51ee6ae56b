"""The reviewer's artifact reading: a large diff arrives as a preview plus a handle, and the
simulated reviewer reads the rest with ``read_artifact`` in parts before it reviews.

Pure functions of the conversation. The stored-diff message is Sluicegate's
(``activities/forge_tools.py``): ``[diff stored as <handle>: ...; <N> characters. First <P> below;
... at most <M> characters a call:]`` followed by the preview. Each ``read_artifact`` result starts
``[<handle> characters <a>-<b> of <N>; next offset <b> | end of artifact]``. The reviewer asks for
``M`` characters from the end of what it has, until it has all ``N``; a result that is an error (or
makes no progress) stops the reading, and the review covers what was read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["READ_TOOL", "ArtifactPlan", "plan_reads"]

READ_TOOL = "read_artifact"
_STORED = re.compile(r"^\[diff stored as (artifact:sha256:[0-9a-f]{64}): [^\n]*?; (\d+) characters\. "
                     r"First (\d+) below;[^\n]*?at most (\d+) characters a call:\]\n", re.S)
_READ = re.compile(r"^\[(artifact:sha256:[0-9a-f]{64}) characters (\d+)-(\d+) of (\d+); [^\]\n]*\]\n", re.S)


@dataclass(frozen=True)
class ArtifactPlan:
    text: str
    """The diff as read so far (the preview, then each contiguous part)."""
    next_read: dict | None
    """Arguments of the next ``read_artifact`` call, or None when done (or reading stopped)."""


def plan_reads(diff_result: str, read_results: list[str]) -> ArtifactPlan | None:
    """None when ``diff_result`` is not a stored-diff message (the diff came inline)."""
    stored = _STORED.match(diff_result)
    if stored is None:
        return None
    handle, total, max_chars = stored[1], int(stored[2]), int(stored[4])
    text = diff_result[stored.end():]
    for result in read_results:
        part = _READ.match(result)
        if part is None or part[1] != handle or int(part[2]) != len(text) or int(part[3]) <= len(text):
            return ArtifactPlan(text, None)  # an error or a gap: review what was read
        text += result[part.end():]
    if len(text) >= total:
        return ArtifactPlan(text, None)
    return ArtifactPlan(text, {"handle": handle, "offset": len(text), "length": max_chars})
