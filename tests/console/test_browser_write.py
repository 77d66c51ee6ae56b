"""Acting in the console, in a real browser: admins act and are recorded; nobody else changes anything.

An operator's hand-made POST (with a valid session and CSRF token) and a POST without a CSRF
token are refused with a page and leave every ledger table as it was; an admin's kill, unkill,
dead-letter resolve and retry are recorded with the admin's name, as the CLI records its actor.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from selenium.webdriver.support.ui import Select
from sqlmodel import Session, select

import ledger
from tests.console.browser import Browser
from tests.console.stack import Filled, wait_settled
from tests.support.ledger_rows import table_counts
from tests.support.tenants import TOKENS

pytestmark = pytest.mark.e2e
CAROL = "dev-admin-token-carol"  # admin in acme (temporal-dev.yaml)


def _letter(filled: Filled, key: str) -> ledger.DeadLetter:
    engine = filled.engine()
    try:
        with Session(engine) as s:
            return s.exec(select(ledger.DeadLetter).where(ledger.DeadLetter.work_key == key)).one()
    finally:
        engine.dispose()


def _kills(filled: Filled) -> list[ledger.Kill]:
    engine = filled.engine()
    try:
        with Session(engine) as s:
            return list(s.exec(select(ledger.Kill)))
    finally:
        engine.dispose()


def test_an_operator_is_refused_every_admin_action_and_nothing_changes(browser: Browser, filled: Filled):
    browser.sign_in(TOKENS["dana"])  # operator in acme (admin in beta)
    browser.open("/console/dead-letters")
    letter = _letter(filled, filled.failed_keys[0])
    assert browser.css(f"tr[data-letter='{letter.id}']") and not browser.css(f"tr[data-letter='{letter.id}'] form")
    csrf = browser.one("header form input[name=csrf]").get_attribute("value")
    before = table_counts(filled.url)
    attempts = [("/console/dead-letters/resolve", {"letter": letter.id, "reason": "not mine to close"}),
                ("/console/dead-letters/retry", {"letter": letter.id, "reason": "not mine to retry"}),
                ("/console/kills", {"scope": "tenant", "target": "acme", "reason": "not mine to stop"}),
                ("/console/kills", {"scope": "all", "target": "", "reason": "not mine to stop"})]
    for action, fields in attempts:
        browser.submit_form(action, {**fields, "csrf": csrf})
        assert browser.driver.title.startswith("Not allowed"), action
        assert "Nothing was changed" in browser.text("#refusal")
    browser.screenshot("refused-operator")
    assert table_counts(filled.url) == before
    assert _letter(filled, letter.work_key).status == "open" and _kills(filled) == []


def test_a_post_without_the_sessions_csrf_token_is_refused(browser: Browser, filled: Filled):
    browser.sign_in(CAROL)
    browser.open("/console/kills")
    before = table_counts(filled.url)
    for csrf in (None, "a-token-from-another-session"):
        fields = {"scope": "work_key", "target": filled.done_keys[0], "reason": "forged"}
        browser.submit_form("/console/kills", fields if csrf is None else {**fields, "csrf": csrf})
        assert "CSRF" in browser.text("#refusal")
    assert table_counts(filled.url) == before


def test_an_admin_resolves_and_retries_dead_letters_recorded_with_their_name(browser: Browser, filled: Filled):
    browser.sign_in(CAROL)
    browser.open("/console/dead-letters")
    first, second = (_letter(filled, k) for k in filled.failed_keys)
    browser.screenshot("dead-letters")
    browser.one(f"tr[data-letter='{first.id}'] input[name=reason]").send_keys("closed the PR by hand")
    browser.click(f"tr[data-letter='{first.id}'] button.resolve")
    assert f"{first.id} resolved by carol" in browser.text("#flash")
    resolved = _letter(filled, first.work_key)
    assert (resolved.status, resolved.note) == ("resolved", "resolved by carol: closed the PR by hand")

    browser.one(f"tr[data-letter='{second.id}'] input[name=reason]").send_keys("provider fixed")
    browser.click(f"tr[data-letter='{second.id}'] button.retry")
    assert f"{second.id} retried by carol" in browser.text("#flash")
    retried = _letter(filled, second.work_key)
    assert retried.status == "retried" and retried.note.startswith("retried by carol (receipt ")
    receipt_id = retried.note.split("(receipt ", 1)[1].split(")", 1)[0]
    engine = filled.engine()
    with Session(engine) as s:
        receipt = s.get(ledger.Receipt, receipt_id)
    engine.dispose()
    assert (receipt.actor, receipt.trigger_kind, receipt.tenant, receipt.outcome) == ("carol", "manual", "acme", "accept")
    wait_settled(filled.url)
    browser.open(f"/console/work?key={quote(second.work_key, safe='')}")
    assert browser.text(f"#runs tr[data-generation='{second.generation + 1}'] td.status") == "done"


def test_an_admin_kills_and_lifts_a_work_key_recorded_with_their_name(browser: Browser, filled: Filled):
    browser.sign_in(CAROL)
    browser.open("/console/kills")
    key = filled.done_keys[1]
    Select(browser.one("#kill-scope")).select_by_value("work_key")
    browser.one("#kill-target").send_keys(key)
    browser.one("#kill-reason").send_keys("runaway prompt")
    browser.click("#kill-submit")
    [kill] = _kills(filled)
    assert (kill.scope, kill.target, kill.actor, kill.reason, kill.lifted_at) == (
        "work_key", key, "carol", "runaway prompt", None)
    assert f"Kill {kill.id} recorded" in browser.text("#flash")
    assert browser.text(f"#kills-in-force tr[data-kill='{kill.id}'] td.actor") == "carol"
    browser.screenshot("kills")

    browser.one(f"#kills-in-force tr[data-kill='{kill.id}'] input[name=reason]").send_keys("prompt fixed")
    browser.click(f"#kills-in-force tr[data-kill='{kill.id}'] button.lift")
    assert "Lifted 1 kill(s)" in browser.text("#flash")
    [lifted] = _kills(filled)
    assert (lifted.lifted_by, lifted.lift_reason) == ("carol", "prompt fixed") and lifted.lifted_at is not None
    assert browser.text(f"#kills-lifted tr[data-kill='{kill.id}'] td.lifted-by") == "carol"
