"""`starter.py status` and `starter.py breaker reset` against a real ledger, as an operator runs them."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import ledger
from intake.capacity import Block, BreakerPolicy, CapacityRequest, SlotClaim
from intake.decision import Outcome, Reason
from intake.envelope import TriggerKind
from intake.ports import CapacityContext
from intake.receipts import ReceiptDraft

ROOT = Path(__file__).resolve().parents[1]


def _starter(url: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SLUICEGATE__LEDGER__URL": url, "COLUMNS": "200"}
    return subprocess.run([sys.executable, str(ROOT / "starter.py"), *args], env=env, capture_output=True,
                          text=True, timeout=60)


def _draft(tenant: str, number: int) -> ReceiptDraft:
    return ReceiptDraft(outcome=Outcome.ACCEPT, reason=Reason.ADMITTED, message="admitting",
                        trigger_kind=TriggerKind.EVENT, source="github", received_at=datetime.now(UTC),
                        delivery_id=str(uuid.uuid4()), tenant=tenant, work_key=f"{tenant}/github:{tenant}/api#{number}:review",
                        target_id=f"{tenant}/api#{number}", input_version="v1")


def test_status_shows_holders_the_queue_with_positions_and_breakers_and_reset_closes_one(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    engine = ledger.make_engine(url)
    store = ledger.SqlIntakeStore(engine)
    ctx = CapacityContext(CapacityRequest("acme", 3, (SlotClaim("key:repo:acme/api", 1, Block.KEY),)), {})
    assert [store.decide(_draft("acme", n), ctx).outcome for n in (1, 2, 3)] == ["accept", "defer", "defer"]
    ledger.BreakerBoard(engine, BreakerPolicy(failure_threshold=1)).record_failure("model", "503 upstream down")
    engine.dispose()

    shown = _starter(url, "status", "--tenant", "acme")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "key:repo:acme/api" in out and "acme/github:acme/api#1:review" in out  # the holder
    assert "2 waiting" in out and "concurrency-key" in out
    lines = [line for line in out.splitlines() if "acme/github:acme/api#2:review" in line or "acme/github:acme/api#3:review" in line]
    assert [line.split("│")[1].strip() for line in lines] == ["1", "2"]  # positions, oldest first
    assert "open" in out and "503 upstream down" in out

    reset = _starter(url, "breaker", "reset", "model", "--actor", "alice", "--reason", "provider healthy")
    assert reset.returncode == 0, reset.stderr
    after = _starter(url, "status").stdout
    assert "closed" in after and "reset by alice: provider healthy" in after
    assert _starter(url, "breaker", "reset", "forge", "--actor", "a", "--reason", "b").returncode == 1
