"""The triage task through the webhook API on a real HTTP server: a signed octokit ``issues``
delivery admitted under the triage key, and the manual trigger's ``task`` field (default ``review``;
an unknown or disabled task refused ``unknown-task`` with a receipt naming the actor)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest

from demo.github_payloads import delivery_headers
from tests.support.sims import Sims, fresh_ledger
from tests.webhook_api.server import post, receipts, running_api

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "github" / "issues"
SECRET = "dev-webhook-secret"
ALICE = {"Authorization": "Bearer dev-operator-token-alice"}


@pytest.fixture
def url(sims, tmp_path) -> str:
    return fresh_ledger(sims, tmp_path)


def fresh_issue(sims: Sims) -> tuple[str, dict]:
    name = f"i{uuid.uuid4().hex[:8]}"
    return name, sims.forge_ctl("POST", f"/issues/acme/{name}/5", json={"title": "Crash", "body": "Traceback"}).json()


def issues_delivery(name: str, stored: dict, action: str = "opened") -> bytes:
    data = json.loads((FIXTURES / f"{action}.payload.json").read_text())
    data["repository"]["full_name"] = f"acme/{name}"
    data["issue"].update(number=5, updated_at=stored["updated_at"])
    return json.dumps(data).encode()


def test_a_signed_issues_delivery_admits_triage_once(sims, temporal_env, url):
    name, stored = fresh_issue(sims)
    body = issues_delivery(name, stored)
    headers = delivery_headers(SECRET, body, event="issues")
    with running_api(sims, temporal_env, url) as (server, _):
        first = post(server, "github", headers, body)
        again = post(server, "github", headers, body)
        labeled = json.loads(body)
        labeled["action"] = "labeled"
        raw = json.dumps(labeled).encode()
        no_work = post(server, "github", delivery_headers(SECRET, raw, event="issues"), raw)
    assert first.status_code == 202, first.text
    assert first.json()["work_key"] == f"acme/github:acme/{name}#5:triage"
    assert first.json()["input_version"] == stored["updated_at"]
    assert again.json()["reason"] == "duplicate-delivery"
    assert (no_work.status_code, no_work.json()["reason"]) == (200, "not-actionable")


def test_an_issues_delivery_is_unsupported_when_triage_is_disabled(sims, temporal_env, url):
    name, stored = fresh_issue(sims)
    body = issues_delivery(name, stored)
    with running_api(sims, temporal_env, url, SLUICEGATE__TASKS__ENABLED='["review"]') as (server, _):
        r = post(server, "github", delivery_headers(SECRET, body, event="issues"), body)
    assert (r.status_code, r.json()["reason"]) == (422, "unsupported-event")


def test_the_manual_trigger_runs_the_task_it_names(sims, temporal_env, url):
    name, stored = fresh_issue(sims)
    with running_api(sims, temporal_env, url) as (server, _):
        manual = f"{server.base_url}/v1/triggers/manual"
        ok = httpx.post(manual, headers=ALICE, json={"repository": f"acme/{name}", "number": 5, "task": "triage",
                                                     "reason": "triage it"}, timeout=30)
        unknown = httpx.post(manual, headers=ALICE, json={"repository": f"acme/{name}", "number": 5, "task": "nope",
                                                          "reason": "?", "request_id": "unknown-task"}, timeout=30)
        garbled = httpx.post(manual, headers=ALICE, json={"repository": f"acme/{name}", "number": 5, "task": "triage",
                                                          "input_version": "ab" * 20, "reason": "?"}, timeout=30)
    assert ok.status_code == 202, ok.text
    assert ok.json()["work_key"] == f"acme/github:acme/{name}#5:triage"
    assert ok.json()["input_version"] == stored["updated_at"]  # none given: the issue's current version
    assert (unknown.status_code, unknown.json()["reason"]) == (422, "unknown-task")
    [receipt] = receipts(url, "unknown-task")
    assert (receipt.reason, receipt.actor) == ("unknown-task", "alice")
    assert (garbled.status_code, garbled.json()["reason"]) == (422, "bad-input")
    assert "ab" * 20 not in garbled.text


def test_a_disabled_task_is_refused_by_the_manual_trigger(sims, temporal_env, url):
    name, _ = fresh_issue(sims)
    with running_api(sims, temporal_env, url, SLUICEGATE__TASKS__ENABLED='["review"]') as (server, _):
        r = httpx.post(f"{server.base_url}/v1/triggers/manual", headers=ALICE,
                       json={"repository": f"acme/{name}", "number": 5, "task": "triage", "reason": "x"}, timeout=30)
    assert (r.status_code, r.json()["reason"]) == (422, "unknown-task")
