"""Operation keys: the identity of an external mutation.

Derived from work key, operation and target version — never the attempt number — so
every retry and every replay of the same intent maps to the same key, and a new head
commit maps to a new one. ``discriminator`` separates legitimate repeats within a run.
"""

from __future__ import annotations

import hashlib


def operation_key(work_key: str, operation: str, target_version: str, discriminator: str = "") -> str:
    material = "\x1f".join((work_key, operation, target_version, discriminator))
    return "op_" + hashlib.sha256(material.encode("utf-8")).hexdigest()[:40]


def marker_for(op_key: str) -> str:
    """The start of the hidden marker naming ``op_key`` in a comment, for finding comments by
    operation (demo, benchmarks, runbook). Its signature follows; whether a comment is trusted as
    Sluicegate's own is decided by ``activities.markers``, never by this prefix."""
    return f"<!-- sluicegate:op={op_key} "
