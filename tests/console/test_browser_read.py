"""The console's pages in a real browser, against a real stack: what they show is what the ledger holds.

Every expected value is computed here from the ledger with a query of the test's own, never
written down: the pages must agree with it. Each page is also kept as a screenshot.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest
from sqlmodel import Session, col, select

import ledger
from tests.console.browser import Browser
from tests.console.stack import Filled
from tests.support.tenants import TOKENS
from tests.support.ledger_rows import table_counts

pytestmark = pytest.mark.e2e


def _rows(filled: Filled, model, *where):
    engine = filled.engine()
    try:
        with Session(engine) as s:
            return list(s.exec(select(model).where(*where)))
    finally:
        engine.dispose()


def _usd(value: float, places: int = 4) -> str:
    return f"${value:,.{places}f}"


def test_no_session_redirects_to_sign_in_and_a_bad_token_signs_nobody_in(browser: Browser, filled: Filled):
    browser.driver.delete_all_cookies()
    browser.open("/console/receipts?outcome=accept")
    assert browser.path.startswith("/console/sign-in?next=%2Fconsole%2Freceipts")
    browser.screenshot("sign-in")
    before = table_counts(filled.url)
    browser.one("#token").send_keys("not-a-token-of-anyone-at-all")
    browser.click("#signin")
    assert "does not sign anyone in" in browser.text("#signin-error")
    assert browser.path.startswith("/console/sign-in")
    assert table_counts(filled.url) == before  # a failed sign-in is counted, never recorded

    browser.one("#token").send_keys(TOKENS["root"])
    browser.click("#signin")
    assert browser.path == "/console/receipts?outcome=accept"  # back where the redirect came from
    assert browser.text("#who").startswith("root: admin in every tenant")


def test_overview_counts_decisions_capacity_queue_letters_and_spend_as_the_ledger_does(browser, filled):
    browser.sign_in(TOKENS["root"])
    browser.open("/console/")
    now = datetime.now(UTC)
    for window, since in (("hour", now - timedelta(hours=1)), ("day", now - timedelta(days=1))):
        shown = {(g.get_attribute("data-outcome"), g.get_attribute("data-reason")): int(g.get_attribute("data-count"))
                 for g in browser.css(f"g.bar[data-window={window}]")}
        expected = Counter((r.outcome, r.reason) for r in _rows(filled, ledger.Receipt, ledger.Receipt.created_at >= since))
        assert shown == dict(expected) and len(shown) >= 3  # accept admitted, defer quota, a reject
    columns = sum(int(r.get_attribute("data-count")) for r in browser.css("#chart-hours rect.seg"))
    assert columns == len(_rows(filled, ledger.Receipt))  # every receipt so far is from this last day

    counters = {c.key: c.active for c in _rows(filled, ledger.CapacityCounter)}
    for tenant in ("acme", "beta"):
        assert int(browser.text(f"tr[data-counter='tenant:{tenant}'] td.active")) == counters.get(f"tenant:{tenant}", 0)
    waiting = Counter(i.tenant for i in _rows(filled, ledger.DeferredItem, ledger.DeferredItem.status == "waiting"))
    assert waiting == {"beta": len(filled.queued_keys)}
    assert int(browser.text("#queue-summary tr[data-tenant=beta] td.waiting")) == waiting["beta"]
    letters = Counter((d.tenant, d.owner) for d in _rows(filled, ledger.DeadLetter, ledger.DeadLetter.status == "open"))
    shown_letters = {tuple(r.get_attribute("data-letters").split("/", 1)): int(r.find_element("css selector", ".open-letters").text)
                     for r in browser.css("tr[data-letters]")}
    assert shown_letters == dict(letters)

    today = now.strftime("%Y-%m-%d")
    days = {d.scope: d for d in _rows(filled, ledger.BudgetDay, ledger.BudgetDay.day == today)}
    assert days["tenant:acme"].spent_usd > 0
    for scope, label in (("global", "global"), ("tenant:acme", "acme"), ("tenant:beta", "beta")):
        assert browser.text(f"#spend tr[data-scope='{label}'] td.spent") == _usd(days[scope].spent_usd)
    browser.screenshot("overview")


def test_receipts_filter_and_keyset_pages_match_the_ledger(browser, filled):
    browser.sign_in(TOKENS["root"])
    every = sorted(_rows(filled, ledger.Receipt), key=lambda r: (r.created_at, r.id), reverse=True)
    browser.open("/console/receipts?limit=4")
    seen: list[str] = []
    for _ in range(len(every)):
        seen += [r.get_attribute("data-receipt") for r in browser.css("#receipts tbody tr[data-receipt]")]
        older = browser.css("#older")
        if not older:
            break
        browser.click("#older")
    assert seen == [r.id for r in every]  # newest first, each once, none skipped

    browser.open("/console/receipts")
    browser.one("input[name=work_key]").send_keys(filled.done_keys[0])
    browser.click("#filter")
    shown = [r.get_attribute("data-receipt") for r in browser.css("#receipts tbody tr[data-receipt]")]
    for_key = _rows(filled, ledger.Receipt, ledger.Receipt.work_key == filled.done_keys[0])
    assert sorted(shown) == sorted(r.id for r in for_key) and len(shown) >= 2  # accept + duplicate-work

    browser.open(f"/console/receipts?outcome=defer&tenant=beta&since={quote((datetime.now(UTC) - timedelta(hours=1)).strftime('%Y-%m-%dT%H:%M:%S'))}")
    deferred = _rows(filled, ledger.Receipt, ledger.Receipt.outcome == "defer", ledger.Receipt.tenant == "beta")
    assert len(browser.css("#receipts tbody tr[data-receipt]")) == len(deferred) == len(filled.queued_keys)
    assert {c.text for c in browser.css("#receipts td.reason")} == {"quota"}
    browser.open("/console/receipts?limit=12")
    browser.screenshot("receipts")


def test_work_key_page_shows_the_explain_timeline_with_links(browser, filled):
    browser.sign_in(TOKENS["root"])
    key = filled.done_keys[0]
    browser.open(f"/console/work?key={quote(key, safe='')}")
    [version] = _rows(filled, ledger.WorkVersion, ledger.WorkVersion.work_key == key)
    row = f"#runs tr[data-generation='{version.generation}']"
    assert browser.text(f"{row} td.status") == version.status == "done"
    usage = version.result["usage"]
    assert int(browser.text(f"{row} td.steps")) == version.result["steps"]
    assert [int(browser.text(f"{row} td.t-{c}")) for c in ("input", "cached", "output", "reasoning")] == [
        usage["input"], usage["cached_input"], usage["output"], usage["reasoning"]]
    assert browser.text(f"{row} td.cost") == _usd(version.result["cost_usd"], 5)
    s = filled.stack.settings
    assert browser.one(f"{row} a.temporal-run").get_attribute("href") == (
        f"http://{s.dev_server.ip}:{s.dev_server.ui_port}/namespaces/{s.temporal.namespace}/workflows/"
        f"{quote(version.workflow_id, safe='')}/{version.run_id}/history")
    [effect] = _rows(filled, ledger.SideEffect, ledger.SideEffect.work_key == key)
    link = browser.one(f"#side-effects tr[data-operation='{effect.operation_key}'] a.external")
    assert link.get_attribute("href") == effect.result["html_url"] and effect.status == "done"
    receipts = _rows(filled, ledger.Receipt, ledger.Receipt.work_key == key)
    assert len(browser.css("#decisions tbody tr[data-receipt]")) == len(receipts)
    spent = sum(r.spent_usd or 0 for r in _rows(filled, ledger.BudgetReservation, ledger.BudgetReservation.work_key == key))
    assert browser.text("#work-spent") == _usd(spent, 5)
    browser.screenshot("work-key")

    browser.open(f"/console/work?key={quote(filled.failed_keys[0], safe='')}")
    assert browser.css("#work-letters tr[data-letter]")


def test_queue_and_costs_pages_match_the_ledger(browser, filled):
    browser.sign_in(TOKENS["root"])
    browser.open("/console/queue")
    waiting = _rows(filled, ledger.DeferredItem, ledger.DeferredItem.status == "waiting")
    assert sorted(r.get_attribute("data-item") for r in browser.css("#queue tr[data-item]")) == sorted(i.id for i in waiting)
    browser.screenshot("queue")

    browser.open("/console/costs?days=1")
    finished = [(v, v.work_key.split("/", 1)[0]) for v in _rows(filled, ledger.WorkVersion, col(ledger.WorkVersion.result).is_not(None))]
    for tenant in ("acme", "beta"):
        mine = [v.result for v, t in finished if t == tenant]
        row = f"#tenant-day tr[data-tenant={tenant}]"
        assert int(browser.text(f"{row} td.runs")) == len(mine)
        assert int(browser.text(f"{row} td.t-output")) == sum(r["usage"]["output"] for r in mine)
        assert browser.text(f"{row} td.cost") == _usd(sum(r["cost_usd"] for r in mine))
    browser.screenshot("costs")


def test_an_operator_sees_only_their_tenants(browser, filled):
    browser.sign_in("dev-operator-token-alice")  # operator in acme only (temporal-dev.yaml)
    browser.open("/console/receipts?limit=200")
    assert {c.text for c in browser.css("#receipts tbody td:nth-child(2)")} == {"acme"}
    browser.open("/console/receipts?tenant=beta")
    assert "not one of the tenants you hold a role in" in browser.text("#filter-errors")
    browser.open(f"/console/work?key={quote(filled.queued_keys[0], safe='')}")
    assert "Nothing you may see" in browser.text("#refusal")
    browser.open("/console/")
    assert not browser.css("tr[data-counter='tenant:beta']") and not browser.css("tr[data-counter=global]")
    assert [r.get_attribute("data-scope") for r in browser.css("#spend tr[data-scope]")] == ["acme"]
