"""`starter.py explain WORK_KEY` shows what each model call cost, a crashed one included, against a
real ledger, as an operator runs it."""

from __future__ import annotations

import uuid

import ledger
from ledger import DayBudgets, StepRef
from tests.test_status_cli import _draft, _starter


def test_explain_shows_a_crashed_call_charged_at_its_estimate(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    engine = ledger.make_engine(url)
    draft = _draft("acme", 7)
    generation = ledger.SqlIntakeStore(engine).decide(draft).generation
    budgets = DayBudgets(engine, 100.0, {}, 100.0)
    ref = StepRef(draft.work_key, "v1", generation, step=1, attempt=1)
    budgets.reserve("acme", draft.work_key, 0.4, reservation_id=f"rsv_{uuid.uuid4().hex}", ref=ref)  # worker died
    retry = StepRef(draft.work_key, "v1", generation, step=1, attempt=2)
    assert len(budgets.charge_abandoned(retry)) == 1
    budgets.settle(budgets.reserve("acme", draft.work_key, 0.4, ref=retry), 0.0125)
    engine.dispose()

    shown = _starter(url, "explain", draft.work_key)
    assert shown.returncode == 0, shown.stderr
    lines = [line for line in shown.stdout.splitlines() if "step 1 attempt" in line]
    assert "estimated $0.40000 of $0.40000" in lines[0] and "attempt 1 ended without an answer" in lines[0]
    assert "settled $0.01250 of $0.40000" in lines[1]
    assert "spent $0.41250; 1 call(s) of unknown fate (crashed, timed out, 5xx) charged $0.40000" in shown.stdout


def test_settle_stale_by_hand_charges_a_dead_workers_reservation(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    engine = ledger.make_engine(url)
    budgets = DayBudgets(engine, 100.0, {}, 100.0)
    held = budgets.reserve("acme", "acme/github:acme/api#8:review", 0.25)
    young = _starter(url, "ledger", "settle-stale")  # the default grace: too young to touch
    swept = _starter(url, "ledger", "settle-stale", "--grace-seconds", "0")
    row = budgets.reservation(held)
    engine.dispose()
    assert young.returncode == swept.returncode == 0, young.stderr + swept.stderr
    assert "charged 0 at their estimate" in young.stdout and f"charged 1 at their estimate: {held}" in swept.stdout
    assert (row.status, row.spent_usd) == ("estimated", 0.25)
