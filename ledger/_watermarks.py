"""Scan watermarks: how far each scan has decided each repository's pull requests.

A watermark is the forge's ``updated_at`` of the newest pull request a scan decided,
plus the ``<number>@<head sha>`` keys decided at exactly that instant (the *boundary*).
``updated_at`` has one-second resolution on GitHub, so a strict ``>`` would miss a pull
request updated in the same second as the last one decided, and ``>=`` would decide the
last one again on every scan; the boundary set makes the filter exact:
candidate ⇔ ``updated_at > watermark`` or (``updated_at == watermark`` and key ∉ boundary).

:meth:`WatermarkStore.advance` is monotonic (a watermark never moves backwards), so two
scans of one schedule running at once (overlap policy ``allow_all``, a trigger during a
tick) cannot rewind each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import JSON, Column, DateTime, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col

from ledger._sql import as_utc, utcnow


class ScanWatermark(SQLModel, table=True):
    __tablename__ = "scan_watermarks"

    scan_id: str = Field(primary_key=True, max_length=128)
    repo: str = Field(primary_key=True, max_length=256)
    """``owner/repo`` as configured (lower-cased)."""
    updated_at: datetime = Field(sa_type=DateTime(timezone=True))
    boundary: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    recorded_at: datetime = Field(sa_type=DateTime(timezone=True))


@dataclass(frozen=True)
class Watermark:
    scan_id: str
    repo: str
    updated_at: datetime
    boundary: frozenset[str] = field(default_factory=frozenset)

    def admits(self, updated_at: datetime, key: str) -> bool:
        """True when a pull request at ``updated_at`` with boundary key ``key`` is not decided yet."""
        return updated_at > self.updated_at or (updated_at == self.updated_at and key not in self.boundary)


def _plain(row: ScanWatermark) -> Watermark:
    return Watermark(row.scan_id, row.repo, as_utc(row.updated_at), frozenset(row.boundary or ()))


class WatermarkStore:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def get(self, scan_id: str, repo: str) -> Watermark | None:
        with Session(self._engine) as s:
            row = s.get(ScanWatermark, (scan_id, repo.lower()))
            return _plain(row) if row is not None else None

    def advance(self, scan_id: str, repo: str, updated_at: datetime, keys: list[str]) -> Watermark:
        """Move the watermark to ``updated_at`` (boundary ``keys``) unless it is already further."""
        repo = repo.lower()
        for attempt in range(3):
            try:
                with Session(self._engine, expire_on_commit=False) as s, s.begin():
                    row = s.execute(select(ScanWatermark).where(col(ScanWatermark.scan_id) == scan_id,
                                                                col(ScanWatermark.repo) == repo)
                                    .with_for_update()).scalar_one_or_none()
                    now = utcnow()
                    if row is None:
                        row = ScanWatermark(scan_id=scan_id, repo=repo, updated_at=updated_at,
                                            boundary=sorted(set(keys)), recorded_at=now)
                        s.add(row)
                    else:
                        current = as_utc(row.updated_at)
                        if updated_at > current:
                            row.updated_at, row.boundary = updated_at, sorted(set(keys))
                        elif updated_at == current:
                            row.boundary = sorted(set(row.boundary or ()) | set(keys))
                        row.recorded_at = now
                        s.add(row)
                    s.flush()
                    return _plain(row)
            except IntegrityError:  # two first scans inserted at once: read the winner's row
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")
