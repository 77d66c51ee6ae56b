"""``kept_deliveries:`` — the caps on raw bodies kept after ``unsupported-schema`` (``ledger/_kept.py``).

How long they are kept is ``maintenance.retention.kept_deliveries`` (default 7 days), applied by
the prune schedule with every other table. A body over a cap is still answered with its receipt;
only the copy for replay is skipped, and the receipt says why.
"""

from __future__ import annotations

from pydantic import Field

from sluicegate.config.section import Section

MIB = 1024 * 1024


class KeptDeliveriesConfig(Section):

    max_body_bytes: int = Field(default=MIB, ge=0)
    """The largest body kept (1 MiB; 0 keeps none)."""
    max_total_bytes: int = Field(default=256 * MIB, ge=0)
    """All kept rows together (256 MiB); past it new bodies are not kept until retention frees room."""
    max_source_bytes: int | None = Field(default=None, ge=0)
    """One source's kept rows together; unset: a quarter of ``max_total_bytes`` (64 MiB), so one
    sender cannot fill the table for everyone."""
