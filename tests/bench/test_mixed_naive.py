"""The mixed-stream bench's naive baseline must be one the product runs, and its checks must not
pass on nothing: until session 9 every naive order ended ``refused`` at its claim (no admission in
the ledger, a work key no pull request makes), 0 model calls, and "0 calls == 0 steps" passed."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import replace

from temporalio.testing import ActivityEnvironment

import ledger
from activities.work_ledger import WorkLedgerActivities
from bench._mixed_checks import naive_checks
from bench._mixed_naive import admit_all, naive_order, naive_pulls
from bench._mixed_results import NaiveResult, Phase
from bench._stream import build_stream
from sluicegate.config.settings import DEFAULT_CONFIG_FILE, load_settings
from workflows.claims import ClaimRequest, ClaimVerdict
from workflows.contracts import WorkOrder

STREAM = build_stream(12, {"new": 0.6, "redeliver": 0.3, "stale": 0.1}, seed=20261129)
REVIEWED = "naive: every delivery reviewed (order done, >= 1 model call each)"


def _check(result: NaiveResult) -> bool:
    return next(c for c in naive_checks(STREAM, result) if c.name == REVIEWED).ok


def _ran(statuses: Counter, calls: int, steps: int) -> NaiveResult:
    n = len(STREAM.items)
    return NaiveResult(Phase("naive", model={"calls": calls}, executions={(f"w{i}", "r") for i in range(n)}),
                       starts=n, statuses=statuses, steps=steps)


def test_naive_checks_fail_when_the_runs_called_no_model():
    n = len(STREAM.items)
    old = _ran(Counter(refused=n), calls=0, steps=0)  # what the bench measured before the fix
    assert not _check(old)
    assert any(c.fatal and not c.ok for c in naive_checks(STREAM, old))
    assert not _check(_ran(Counter(done=n - 1, refused=1), calls=3 * n, steps=3 * n))
    assert _check(_ran(Counter(done=n), calls=3 * n, steps=3 * n))


def test_one_pull_request_and_work_key_per_delivery():
    pulls = naive_pulls(STREAM)
    assert len({p.pr for p in pulls}) == len(STREAM.items)
    assert not {p.pr for p in pulls} & {p.pr for p in STREAM.pulls}


def _claim(order: WorkOrder, acts: WorkLedgerActivities):
    req = ClaimRequest(order.work_key, order.input_version, order.generation, 0, "", order.tenant,
                       order.receipt_id, order.owner, order.repo, order.number, require_admission=True)
    return ActivityEnvironment().run(acts.claim_order, req)


async def test_naive_orders_pass_the_products_admission_claim(tmp_path):
    """The worker's own claim activity (admission required, as in the dev stack) lets every naive
    order run; an order like the old baseline's (no admission) is refused by the same check."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    s = load_settings(DEFAULT_CONFIG_FILE, env={"SLUICEGATE_LEDGER_URL": url, "OPENAI_API_KEY": "k",
                                                "SLUICEGATE_TELEMETRY_EXPORTER": "none"})
    tenant = s.sources["github"].tenant
    orders = admit_all(s, [naive_order(s, it, tenant) for it in STREAM.items])
    assert len({o.work_key for _, o in orders}) == len(STREAM.items)
    engine = ledger.make_engine(url)
    try:
        acts = WorkLedgerActivities(ledger.WorkStore(engine), require_admission=True)
        for _, order in orders:
            claim = await _claim(order, acts)
            assert claim.verdict == ClaimVerdict.RUN, (order.work_key, claim)
        # As the old baseline started them: a key of its own, generation 1, a receipt id nothing holds.
        unadmitted = replace(naive_order(s, replace(STREAM.items[0], index=999), tenant), generation=1,
                             receipt_id=uuid.uuid4().hex)
        claim = await _claim(unadmitted, acts)
        assert (claim.verdict, claim.reason) == (ClaimVerdict.REFUSED, "unadmitted:no-admission")
    finally:
        engine.dispose()
