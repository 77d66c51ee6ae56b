"""The console over HTTP on both ledgers (real API server, real intake, real Temporal client).

Cookies and headers a browser does not show, and the trust-boundary rules: no session means a
redirect and no row; a bad token, a forged cookie, a POST without the session's CSRF token or an
operator's admin action change no table; an admin's actions are recorded with the admin's name.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

import httpx
import pytest
from sqlmodel import Session

import ledger
from tests.support.ledger_rows import table_counts
from tests.support.tenants import TOKENS, two_tenants
from tests.webhook_api.server import running_api

ALICE, CAROL = "dev-operator-token-alice", "dev-admin-token-carol"
KEY = "acme/github:acme/api#77:review"


@pytest.fixture
def api(sims, temporal_env, fresh_ledger_url):
    with running_api(sims, temporal_env, fresh_ledger_url, **two_tenants(),
                     SLUICEGATE__CONSOLE__SECURE_COOKIE="false") as (server, settings):
        yield server, fresh_ledger_url


def _client(server) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, timeout=30, follow_redirects=False)


def _sign_in(client: httpx.Client, token: str) -> httpx.Response:
    page = client.get("/console/sign-in")
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text).group(1)
    return client.post("/console/sign-in", data={"token": token, "nonce": nonce, "next": "/console/kills"})


def _csrf(client: httpx.Client) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', client.get("/console/kills").text).group(1)


def _letter(url: str) -> ledger.DeadLetter:
    engine = ledger.make_engine(url)
    outcome = {"work_key": KEY, "input_version": "ef" * 20, "generation": 1, "tenant": "acme", "source": "github",
               "reason": "model-error: ModelRequestRejected", "retries": 0}
    with Session(engine) as s, s.begin():
        ledger.DeadLetters(engine).record(s, outcome, "acme-reviews-team", f"agent/{KEY}")
    [letter] = ledger.dead_letters_page(engine, "open", None)
    engine.dispose()
    return letter


def test_sessions_are_hardened_cookies_and_pages_forbid_scripts_and_framing(api):
    server, _ = api
    with _client(server) as client:
        signed = _sign_in(client, CAROL)
        assert (signed.status_code, signed.headers["location"]) == (303, "/console/kills")
        cookie = next(c for c in signed.headers.get_list("set-cookie") if c.startswith("sg_console="))
        attributes = {a.strip().lower() for a in cookie.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/console"} <= attributes and "secure" not in attributes
        page = client.get("/console/")
        assert page.status_code == 200 and "carol: admin in acme" in page.text
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "script" not in csp
        assert page.headers["cache-control"] == "no-store" and page.headers["x-frame-options"] == "DENY"


def test_secure_cookie_setting_marks_the_console_cookies_https_only(sims, temporal_env, fresh_ledger_url):
    with running_api(sims, temporal_env, fresh_ledger_url, SLUICEGATE__CONSOLE__SECURE_COOKIE="true") as (server, _), \
            _client(server) as client:
        page = client.get("/console/sign-in")
        cookie = next(c for c in page.headers.get_list("set-cookie") if c.startswith("sg_console_signin="))
        assert "secure" in {a.strip().lower() for a in cookie.split(";")[1:]}
        nonce = re.search(r'name="nonce" value="([^"]+)"', page.text).group(1)
        # Over plain HTTP the client keeps the Secure nonce cookie to itself: the sign-in cannot complete.
        assert client.post("/console/sign-in", data={"token": CAROL, "nonce": nonce}).status_code == 403


def test_requests_without_a_valid_session_or_token_write_nothing(api):
    server, url = api
    before = table_counts(url)
    with _client(server) as client:
        for path in ("/console/", "/console/receipts?outcome=accept", f"/console/work?key={KEY}"):
            answer = client.get(path)
            assert answer.status_code == 303 and answer.headers["location"].startswith("/console/sign-in?next=")
        client.cookies.set("sg_console", "eyJhIjoiY2Fyb2wifQ.forged.signature", path="/console")
        assert client.get("/console/").status_code == 303
        posted = client.post("/console/kills", data={"scope": "all", "reason": "x"})
        assert posted.status_code == 303  # sent to sign in, the body unread
        assert _sign_in(client, "definitely-not-a-configured-token").status_code == 401
        page = client.get("/console/sign-in")  # a sign-in form posted without its nonce cookie
        nonce = re.search(r'name="nonce" value="([^"]+)"', page.text).group(1)
        client.cookies.clear()
        assert client.post("/console/sign-in", data={"token": CAROL, "nonce": nonce}).status_code == 403
    assert table_counts(url) == before


def test_operators_and_forms_without_csrf_change_nothing_and_admins_are_recorded(api):
    server, url = api
    letter = _letter(url)
    with _client(server) as alice, _client(server) as carol:
        _sign_in(alice, ALICE)
        _sign_in(carol, CAROL)
        before = table_counts(url)
        for action, fields in (("/console/kills", {"scope": "work_key", "target": KEY, "reason": "r"}),
                               ("/console/kills", {"scope": "all", "reason": "r"}),
                               ("/console/dead-letters/resolve", {"letter": letter.id, "reason": "r"})):
            refused = alice.post(action, data={**fields, "csrf": _csrf(alice)})
            assert refused.status_code == 403 and "Nothing was changed" in refused.text
            assert carol.post(action, data=fields).status_code == 403  # no CSRF token
            assert carol.post(action, data={**fields, "csrf": _csrf(alice)}).status_code == 403  # another session's
        twice = urlencode([("scope", "all"), ("scope", "all"), ("csrf", _csrf(carol)), ("reason", "r")])
        assert carol.post("/console/kills", content=twice,
                          headers={"content-type": "application/x-www-form-urlencoded"}).status_code == 400
        assert carol.post("/console/kills", json={"scope": "all"}).status_code == 415
        assert table_counts(url) == before

        resolved = carol.post("/console/dead-letters/resolve",
                              data={"letter": letter.id, "reason": "handled by hand", "csrf": _csrf(carol)})
        assert resolved.status_code == 303
        again = carol.post("/console/dead-letters/resolve", data={"letter": letter.id, "reason": "x", "csrf": _csrf(carol)})
        assert again.status_code == 409
        killed = carol.post("/console/kills", data={"scope": "work_key", "target": KEY, "reason": "loops",
                                                    "csrf": _csrf(carol)})
        assert killed.status_code == 303 and "Kill" in carol.get("/console/kills").text
    engine = ledger.make_engine(url)
    [kill] = ledger.KillSwitch(engine).in_force()
    assert (kill.scope, kill.target, kill.actor, kill.reason) == ("work_key", KEY, "carol", "loops")
    assert ledger.DeadLetters(engine).get(letter.id).note == "resolved by carol: handled by hand"
    engine.dispose()


def test_an_operator_cannot_see_another_tenants_work(api):
    server, url = api
    engine = ledger.make_engine(url)
    with Session(engine) as s, s.begin():
        ledger.DeadLetters(engine).record(s, {"work_key": "beta/github:beta/x#1:review", "input_version": "aa" * 20,
                                              "generation": 1, "tenant": "beta", "source": "beta",
                                              "reason": "model-error"}, "beta-team", None)
    engine.dispose()
    with _client(server) as alice:
        _sign_in(alice, ALICE)
        assert "beta/github:beta/x#1:review" not in alice.get("/console/dead-letters?status=all").text
        assert alice.get("/console/work?key=beta/github:beta/x%231:review").status_code == 404
    with _client(server) as bob:
        _sign_in(bob, TOKENS["bob"])
        assert "beta/github:beta/x#1:review" in bob.get("/console/dead-letters?status=all").text


def test_lifting_a_kill_says_whether_a_dispatch_pass_was_started(api):
    # The test Temporal server has no dispatch schedule (or no schedules at all): the lift stands and
    # the flash says queued work waits for the next pass, instead of failing the request.
    server, url = api
    with _client(server) as carol:
        _sign_in(carol, CAROL)
        assert carol.post("/console/kills", data={"scope": "tenant", "target": "acme", "reason": "incident",
                                                  "csrf": _csrf(carol)}).status_code == 303
        lifted = carol.post("/console/kills/lift", data={"scope": "tenant", "target": "acme", "reason": "over",
                                                         "csrf": _csrf(carol)})
        assert lifted.status_code == 303
        page = carol.get(lifted.headers["location"]).text
    assert "Lifted 1 kill(s) for tenant acme by carol" in page
    assert "no sluicegate-dispatch-deferred schedule" in page or "dispatch pass NOT started" in page
    engine = ledger.make_engine(url)
    assert ledger.KillSwitch(engine).in_force() == []
    engine.dispose()
