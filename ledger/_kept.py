"""Kept deliveries: the raw body of a verified delivery that could not be mapped, for a while.

A verified delivery rejected ``unsupported-schema`` (its payload names a schema version its
source's mapping does not accept) is not lost: its raw body and the headers its parser reads
are kept here (an allow-list: :func:`kept_headers`), with its reject receipt, so an operator can replay it through intake once a
mapping for that version exists (``POST /v1/replays``, ``starter.py replay``). Only verified
deliveries reach this table: the API checks the signature or token before it parses.

Bounds, all configured (``kept_deliveries``, ``maintenance.retention.kept_deliveries``):

* one body over ``max_body_bytes`` is not kept (its receipt says so);
* one source holds at most ``max_source_bytes`` (default a quarter of the total), so one sender
  (say a CloudEvents producer that changed its schema) cannot fill the table for every tenant;
* a body identical to one already kept for the same source (under another delivery id) is not
  kept again: the row id is the digest of (source, body), so the primary key refuses the copy and
  the receipt names the delivery to replay instead;
* the table holds at most ``max_total_bytes`` (bodies plus headers); once full, new ones are
  not kept (their receipts say so) until retention removes old rows. The sums are read and the row
  inserted in one transaction: SQLite serializes writers, so the caps hold exactly; on PostgreSQL
  (read committed) concurrent inserts can overshoot them by at most one body per concurrent request;
* the sums stay cheap: every row is charged at least :data:`MIN_CHARGE` (4 KiB; ``size_bytes`` is
  the charged size), so one source's sum reads at most ``max_source_bytes / 4 KiB`` rows (16,384
  at the defaults) through the ``(source, delivery_id)`` unique index, and the table's at most
  ``max_total_bytes / 4 KiB`` (65,536) — bounded by configuration, not by traffic;
* rows older than the retention age are deleted by the prune schedule (``ledger/_retention.py``).

At rest: with payload keys configured (``temporal.payload_key``) the headers and the body are
sealed with AES-256-GCM under the current key exactly as artifacts are, bound to the row's
source and delivery id and to the column (ciphertext moved to another row or column does not open); ``key_id``
names the key. Without keys they are stored as they came (``key_id`` null).

One row per (source, delivery id): a sender redelivering the same rejected delivery gets another
receipt, not another copy. Replaying twice admits once: intake's delivery dedupe answers the
second replay ``duplicate-delivery`` with the first one's receipt.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import Column, DateTime, Index, LargeBinary, UniqueConstraint, func, insert, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel

from intake.decision import IntakeDecision
from intake.receipts import ReceiptDraft
from ledger._intake_store import _RECEIPTS, _decision_from_row, _receipt_row
from ledger._sql import dialect_insert, new_id, utcnow

MIB = 1024 * 1024
MIN_CHARGE = 4096
"""The least a kept row counts against the caps (bounds the rows a cap's sum reads)."""
_AAD = b"sluicegate-kept-delivery\x1f"


class Sealer(Protocol):
    """What sealing needs of ``sluicegate.temporal.codec.PayloadKeys`` (the ledger does not import it)."""

    key_id: str

    def seal(self, plain: bytes, aad: bytes) -> bytes: ...

    def open(self, kid: str, sealed: bytes, aad: bytes) -> bytes: ...


class KeptDelivery(SQLModel, table=True):
    __tablename__ = "kept_deliveries"
    __table_args__ = (UniqueConstraint("source", "delivery_id", name="uq_kept_deliveries_delivery"),
                      Index("ix_kept_deliveries_created_at", "created_at"),
                      Index("ix_kept_deliveries_delivery_id", "delivery_id"))

    id: str = Field(primary_key=True, max_length=40)
    created_at: datetime = Field(sa_type=DateTime(timezone=True))
    source: str = Field(max_length=128)
    delivery_id: str = Field(max_length=256)
    tenant: str = Field(max_length=128)
    event_type: str | None = Field(default=None, max_length=128)
    received_at: datetime = Field(sa_type=DateTime(timezone=True))
    receipt_id: str = Field(max_length=40)
    """The ``unsupported-schema`` receipt the delivery was answered with."""
    key_id: str | None = Field(default=None, max_length=16)
    """The payload key ``meta`` and ``body`` are sealed with; null: stored as received."""
    meta: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    """JSON: the headers (less credentials) and what verification established."""
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    size_bytes: int
    """Stored bytes (meta plus body), at least ``MIN_CHARGE``: what the row counts against the caps."""
    replay_receipt_id: str | None = Field(default=None, max_length=40)
    """The receipt of the first replay that reached a decision."""
    replayed_by: str | None = Field(default=None, max_length=128)
    replayed_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))


@dataclass(frozen=True)
class KeptCaps:
    max_body_bytes: int = MIB
    max_total_bytes: int = 256 * MIB
    max_source_bytes: int | None = None
    """One source's rows together; ``None``: a quarter of ``max_total_bytes``."""
    retention: timedelta | None = timedelta(days=7)
    """Only for the receipt's message (the prune schedule applies it)."""


@dataclass(frozen=True)
class KeptContent:
    """A kept delivery opened: what the normalize stage needs to run again."""

    row: KeptDelivery
    headers: dict[str, str]
    verified_id: str | None
    """The delivery id verification read from the headers (``VerifiedDelivery.delivery_id``)."""
    verified_type: str | None
    body: bytes


KEPT_HEADERS = frozenset({"content-type", "webhook-id", "webhook-timestamp"})
"""Headers a replay's normalize stage reads, kept with ``ce-*`` and the source's schema-version
header. An allow-list, not a deny-list: whatever else a sender or a proxy adds (API keys,
signatures, JWTs, cookies, forwarded-for addresses) is never stored."""


def kept_headers(headers: dict[str, str], schema_header: str | None = None) -> dict[str, str]:
    """The headers worth keeping for a replay: :data:`KEPT_HEADERS`, ``ce-*`` (binary CloudEvents
    attributes) and ``schema_header`` (the source's ``schema_versions.header``), lower-cased."""
    extra = schema_header.lower() if schema_header else None
    out = {}
    for name, value in headers.items():
        key = name.lower()
        if key in KEPT_HEADERS or key.startswith("ce-") or key == extra:
            out[key] = value
    return out


class KeptDeliveries:
    def __init__(self, engine: Engine, keys: Sealer | None = None, caps: KeptCaps = KeptCaps()) -> None:
        self._engine = engine
        self._keys = keys
        self._caps = caps

    def reject_and_keep(self, draft: ReceiptDraft, headers: dict[str, str], body: bytes,
                        verified_id: str | None, verified_type: str | None,
                        schema_header: str | None = None) -> tuple[IntakeDecision, bool]:
        """Write ``draft``'s reject receipt and keep the delivery, in one transaction; returns the
        decision and whether the body is kept (now or by an earlier copy). Only the headers
        :func:`kept_headers` allows are stored (``schema_header``: the source's version header)."""
        if draft.delivery_id is None or draft.tenant is None:
            raise ValueError("only an identified delivery of a known tenant can be kept")
        meta = json.dumps({"headers": kept_headers(headers, schema_header),
                           "verified_id": verified_id, "verified_type": verified_type}).encode()
        receipt_id = new_id()
        with Session(self._engine) as s, s.begin():
            kept, why = self._keep(s, draft, receipt_id, meta, body)
            note = f" Body kept for replay ({self._kept_for()}): starter.py replay {draft.delivery_id}." if kept \
                else f" Body not kept: {why}."
            row = {**_receipt_row(_with_message(draft, draft.message + note), receipt_id),
                   "reject_digest": draft.body_digest}  # a repeat of this content writes nothing more
            s.execute(insert(_RECEIPTS), row)
        return _decision_from_row(row), kept

    def keep_for(self, receipt_id: str, draft: ReceiptDraft, headers: dict[str, str], body: bytes,
                 verified_id: str | None, verified_type: str | None, schema_header: str | None = None) -> bool:
        """Keep a repeat of a delivery under the receipt that answered its original (no new receipt):
        a first copy that was not kept — a cap full during the very rollout that causes these rejects,
        or pruned since — is kept now, so a replay after the upgrade stays possible. True when it is
        kept (now or by an earlier copy)."""
        if draft.delivery_id is None or draft.tenant is None:
            return False
        meta = json.dumps({"headers": kept_headers(headers, schema_header),
                           "verified_id": verified_id, "verified_type": verified_type}).encode()
        with Session(self._engine) as s, s.begin():
            kept, _ = self._keep(s, draft, receipt_id, meta, body)
            # an identical body kept under its original delivery: a replay is possible (of that one)
            return kept or s.get(KeptDelivery, body_row_id(draft.source, body)) is not None

    def _kept_for(self) -> str:
        days = self._caps.retention.total_seconds() / 86400 if self._caps.retention else None
        return f"{days:g} days" if days is not None else "until removed"

    def _keep(self, s: Session, draft: ReceiptDraft, receipt_id: str, meta: bytes, body: bytes) -> tuple[bool, str]:
        if len(body) > self._caps.max_body_bytes:
            return False, f"over kept_deliveries.max_body_bytes ({self._caps.max_body_bytes})"
        if self._exists(s, draft.source, draft.delivery_id):
            return True, ""
        row_id = body_row_id(draft.source, body)
        twin = s.get(KeptDelivery, row_id)
        if twin is not None:
            return False, (f"an identical body from {draft.source} is already kept as delivery {twin.delivery_id} "
                           f"(replay that one)")
        aad = _aad(draft.source, draft.delivery_id)
        sealed_meta, sealed_body = (self._keys.seal(meta, aad + b"meta"), self._keys.seal(body, aad + b"body")) \
            if self._keys else (meta, body)
        size = max(len(sealed_meta) + len(sealed_body), MIN_CHARGE)
        source_cap = self._source_cap()
        used_here = s.execute(select(func.coalesce(func.sum(KeptDelivery.size_bytes), 0))
                              .where(KeptDelivery.source == draft.source)).scalar_one()
        if used_here + size > source_cap:
            return False, f"kept_deliveries.max_source_bytes ({source_cap}) reached for {draft.source}"
        used = s.execute(select(func.coalesce(func.sum(KeptDelivery.size_bytes), 0))).scalar_one()
        if used + size > self._caps.max_total_bytes:
            return False, f"kept_deliveries.max_total_bytes ({self._caps.max_total_bytes}) reached"
        values = dict(id=row_id, created_at=utcnow(), source=draft.source, delivery_id=draft.delivery_id,
                      tenant=draft.tenant, event_type=draft.event_type, received_at=draft.received_at,
                      receipt_id=receipt_id, key_id=self._keys.key_id if self._keys else None, meta=sealed_meta,
                      body=sealed_body, size_bytes=size)
        kept = s.execute(dialect_insert(s, KeptDelivery).values(**values).on_conflict_do_nothing()
                         .returning(KeptDelivery.id)).scalar_one_or_none()
        if kept is None and not self._exists(s, draft.source, draft.delivery_id):
            return False, f"an identical body from {draft.source} was kept at the same moment"
        return True, ""

    def _source_cap(self) -> int:
        cap = self._caps.max_source_bytes
        return self._caps.max_total_bytes // 4 if cap is None else cap

    @staticmethod
    def _exists(s: Session, source: str, delivery_id: str) -> bool:
        return s.execute(select(KeptDelivery.id).where(KeptDelivery.source == source,
                                                       KeptDelivery.delivery_id == delivery_id)).first() is not None

    def find(self, delivery_id: str, source: str | None = None) -> list[KeptDelivery]:
        """The kept deliveries with this id (one per source; ``source`` narrows it)."""
        query = select(KeptDelivery).where(KeptDelivery.delivery_id == delivery_id)
        if source is not None:
            query = query.where(KeptDelivery.source == source)
        with Session(self._engine, expire_on_commit=False) as s:
            return list(s.scalars(query.order_by(KeptDelivery.source)))

    def open(self, row: KeptDelivery) -> KeptContent:
        """Unseal a row; raises ``PayloadKeyError`` (from the keys) when its key is not configured,
        ``LookupError`` when it is sealed and no keys are configured at all."""
        meta, body = row.meta, row.body
        if row.key_id is not None:
            if self._keys is None:
                raise LookupError(f"kept delivery is sealed with key {row.key_id!r}; no payload key is configured")
            aad = _aad(row.source, row.delivery_id)
            meta = self._keys.open(row.key_id, meta, aad + b"meta")
            body = self._keys.open(row.key_id, body, aad + b"body")
        data: dict[str, Any] = json.loads(meta)
        return KeptContent(row, dict(data["headers"]), data.get("verified_id"), data.get("verified_type"), body)

    def mark_replayed(self, row_id: str, receipt_id: str | None, actor: str) -> None:
        """Record the first replay that reached a decision (later ones leave it as it is)."""
        with Session(self._engine) as s, s.begin():
            s.execute(update(KeptDelivery).where(KeptDelivery.id == row_id, KeptDelivery.replay_receipt_id.is_(None))
                      .values(replay_receipt_id=receipt_id, replayed_by=actor[:128], replayed_at=utcnow()))

    def used_bytes(self) -> int:
        with Session(self._engine) as s:
            return int(s.execute(select(func.coalesce(func.sum(KeptDelivery.size_bytes), 0))).scalar_one())


def body_row_id(source: str, body: bytes) -> str:
    """A kept row's id: the digest of its source and raw body (40 hex digits), so one source keeps
    one copy of a body. Unkeyed like the delivery dedupe's ``body_digest``."""
    return hashlib.sha256(source.encode() + b"\x1f" + body).hexdigest()[:40]


def _aad(source: str, delivery_id: str) -> bytes:
    return _AAD + source.encode() + b"\x1f" + delivery_id.encode("utf-8", "surrogatepass") + b"\x1f"


def _with_message(draft: ReceiptDraft, message: str) -> ReceiptDraft:
    return replace(draft, message=message[:1000])
