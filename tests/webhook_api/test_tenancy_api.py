"""Tenancy at the HTTP boundary (real API server, real intake, SQLite and PostgreSQL ledgers).

Two tenants: acme (source ``github``: ``acme/*`` and ``shared/*``) and beta (source ``beta``:
``beta/*`` and ``shared/*``); actors alice (operator in acme), carol (admin in acme), bob (admin
in beta), dana (operator in acme, admin in beta) and root (admin everywhere).
"""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlmodel import Session, select

import ledger
from activities.keys import operation_key
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from ledger import BeginState, CapacityHold, CapacityLedger, SideEffectLedger, WorkItem
from tests.support.tenants import BETA_SECRET, SHARED_OWNER, TOKENS, bearer, two_tenants
from tests.webhook_api.deliveries import std_body, std_headers
from tests.webhook_api.server import post, receipts, running_api
from workflows.review_task import POST_COMMENT

ROOMY = {f"SLUICEGATE__CAPACITY__{k}": "1000000" for k in (  # the session's ledgers are shared: never defer here
    "GLOBAL_ACTIVE_RUNS", "CONCURRENCY_LIMIT", "TENANT_DEFAULTS__MAX_ACTIVE_RUNS", "TENANT_DEFAULTS__ADMISSIONS_PER_DAY",
    "TENANT_DEFAULTS__RATE_PER_SECOND", "TENANT_DEFAULTS__BURST")}
ALICE = {"Authorization": "Bearer dev-operator-token-alice"}
CAROL = {"Authorization": "Bearer dev-admin-token-carol"}


@pytest.fixture
def api(sims, temporal_env, ledger_url):
    with running_api(sims, temporal_env, ledger_url, **two_tenants(), **ROOMY) as (server, settings):
        yield server, settings, ledger_url


def _pull(sims, owner: str) -> tuple[str, str, int, str]:
    """A new open pull request under ``owner`` (a repository no other test uses)."""
    repo, sha = f"r{uuid.uuid4().hex[:10]}", uuid.uuid4().hex + "00000000"
    sims.forge_ctl("POST", f"/pulls/{owner}/{repo}/7", json={"head_sha": sha, "state": "open"})
    return owner, repo, 7, sha


def _forge_reads(sims, owner: str, repo: str) -> int:
    return sims.forge_ctl("GET", "/stats").json()["by_repository"].get(f"{owner}/{repo}".lower(), 0)


def _github(server, source: str, secret: str, owner: str, repo: str, number: int, sha: str,
            delivery_id: str | None = None, action: str = "opened") -> httpx.Response:
    body = encode(pull_request_payload(owner, repo, number, sha, action=action))
    return post(server, source, delivery_headers(secret, body, delivery_id=delivery_id or str(uuid.uuid4())), body)


def _manual(server, headers: dict[str, str], **body) -> httpx.Response:
    body = {"reason": "tenancy test", "request_id": f"m-{uuid.uuid4()}", **body}
    return httpx.post(f"{server.base_url}/v1/triggers/manual", json=body, headers=headers, timeout=30)


def _work_items(url: str, *keys: str) -> dict[str, WorkItem]:
    engine = ledger.make_engine(url)
    try:
        with Session(engine) as s:
            return {w.work_key: w for w in s.exec(select(WorkItem).where(WorkItem.work_key.in_(keys))).all()}
    finally:
        engine.dispose()


def test_a_delivery_naming_a_repository_its_source_does_not_serve_is_refused_before_any_forge_read(api, sims):
    server, s, url = api
    owner, repo, number, sha = _pull(sims, "beta")  # exists on the forge, but source github serves acme/*, shared/*
    delivery = str(uuid.uuid4())
    r = _github(server, "github", s.sources["github"].secret, owner, repo, number, sha, delivery)
    assert (r.status_code, r.json()["outcome"], r.json()["reason"]) == (403, "reject", "out-of-scope")
    assert f"{owner}/{repo} is not among the repositories source 'github' serves" in r.json()["message"]
    [receipt] = receipts(url, delivery)  # authenticated: it is decided and recorded
    assert (receipt.tenant, receipt.work_key, receipt.reason) == ("acme", f"acme/github:{owner}/{repo}#7:review",
                                                                 "out-of-scope")
    again = _github(server, "github", s.sources["github"].secret, owner, repo, number, sha, delivery)
    assert (again.status_code, again.json()["reason"]) == (200, "duplicate-delivery")
    # A generic source is held to its own list the same way (stdhooks serves acme/* only).
    std = std_body(owner, repo, number, sha)
    r = post(server, "stdhooks", std_headers(s.sources["stdhooks"].secret, std), std)
    assert (r.status_code, r.json()["reason"]) == (403, "out-of-scope")
    # Through the manual endpoint, an acme operator cannot reach a beta-only repository either.
    r = _manual(server, ALICE, repository=f"{owner}/{repo}", number=number)
    assert (r.status_code, r.json()["reason"]) == (403, "out-of-scope")
    assert "is not in tenant 'acme''s scope" in r.json()["message"]
    assert _forge_reads(sims, owner, repo) == 0
    assert _work_items(url, f"acme/github:{owner}/{repo}#7:review") == {}
    # The control: the tenant that does serve it reads the forge and admits.
    ok = _github(server, "beta", BETA_SECRET, owner, repo, number, sha)
    assert (ok.status_code, ok.json()["work_key"]) == (202, f"beta/github:{owner}/{repo}#7:review")
    assert _forge_reads(sims, owner, repo) == 1


def test_the_tenant_of_a_manual_trigger_comes_from_the_actor_never_from_the_request(api, sims):
    server, _, url = api
    owner, repo, number, _ = _pull(sims, SHARED_OWNER)
    target = {"repository": f"{owner}/{repo}", "number": number}
    as_alice = _manual(server, ALICE, **target)  # one tenant: implied
    assert (as_alice.status_code, as_alice.json()["work_key"]) == (202, f"acme/github:{owner}/{repo}#7:review")

    request_id = f"m-{uuid.uuid4()}"
    foreign = _manual(server, ALICE, tenant="beta", request_id=request_id, **target)
    assert (foreign.status_code, foreign.json()["reason"]) == (403, "out-of-scope")
    assert foreign.json()["message"] == "actor 'alice' holds no role in tenant 'beta'"
    [receipt] = receipts(url, request_id)  # authenticated: a receipt, naming the actor and no tenant
    assert (receipt.actor, receipt.tenant, receipt.source, receipt.work_key) == ("alice", None, "manual", None)
    assert _manual(server, ALICE, tenant="nobody", **target).status_code == 403

    ambiguous = _manual(server, bearer("dana"), **target)
    assert (ambiguous.status_code, ambiguous.json()["reason"]) == (422, "bad-input")
    assert _manual(server, bearer("root"), **target).status_code == 422  # "*": must name the tenant
    as_dana = _manual(server, bearer("dana"), tenant="beta", **target)
    assert (as_dana.status_code, as_dana.json()["work_key"]) == (202, f"beta/github:{owner}/{repo}#7:review")
    # The old way to pick a tenant is gone: a `source` field is refused, not silently honoured.
    assert _manual(server, ALICE, source="beta", **target).status_code == 422


def test_force_needs_the_admin_role_in_that_very_tenant(api, sims):
    server, _, url = api
    owner, repo, number, sha = _pull(sims, "acme")
    target = {"repository": f"{owner}/{repo}", "number": number}
    first = _manual(server, CAROL, **target).json()
    engine = ledger.make_engine(url)
    ledger.WorkStore(engine).record_outcome(work_key=first["work_key"], input_version=sha,
                                            generation=first["generation"], status="done", run_id=None, result={})
    engine.dispose()
    force = {**target, "force": True}
    operator = _manual(server, ALICE, **force)
    assert (operator.status_code, operator.json()["reason"]) == (403, "policy:override-not-permitted")
    mixed = _manual(server, bearer("dana"), tenant="acme", **force)  # admin in beta, operator in acme
    assert (mixed.status_code, mixed.json()["reason"]) == (403, "policy:override-not-permitted")
    request_id = f"m-{uuid.uuid4()}"
    other_admin = _manual(server, bearer("bob"), tenant="acme", request_id=request_id, **force)
    assert (other_admin.status_code, other_admin.json()["reason"]) == (403, "out-of-scope")
    implied = _manual(server, bearer("bob"), **force)  # bob acts in beta, whose scope holds no acme/* repository
    assert (implied.status_code, implied.json()["reason"]) == (403, "out-of-scope")
    assert _work_items(url, first["work_key"])[first["work_key"]].generation == first["generation"]  # nothing admitted
    admin = _manual(server, CAROL, **force)
    assert (admin.status_code, admin.json()["generation"]) == (202, first["generation"] + 1)
    platform = _manual(server, bearer("root"), tenant="acme", **force)
    assert (platform.status_code, platform.json()["reason"]) == (200, "duplicate-work")  # carol's re-run is in flight


def test_two_tenants_reviewing_one_repository_are_independent(api, sims):
    server, s, url = api
    owner, repo, number, sha = _pull(sims, SHARED_OWNER)
    acme_key, beta_key = (f"{t}/github:{owner}/{repo}#7:review" for t in ("acme", "beta"))
    answers = {t: _github(server, src, secret, owner, repo, number, sha)
               for t, src, secret in (("acme", "github", s.sources["github"].secret), ("beta", "beta", BETA_SECRET))}
    assert {t: (r.status_code, r.json()["work_key"], r.json()["generation"]) for t, r in answers.items()} == {
        "acme": (202, acme_key, 1), "beta": (202, beta_key, 1)}
    assert answers["acme"].json()["workflow_id"] != answers["beta"].json()["workflow_id"]
    # Dedupe and generations are per tenant: a second delivery of the same version is a duplicate in each
    # (another event for it: the same body under a new delivery id would be a replayed-body).
    again = {t: _github(server, src, secret, owner, repo, number, sha, action="synchronize").json()["reason"]
             for t, src, secret in (("acme", "github", s.sources["github"].secret), ("beta", "beta", BETA_SECRET))}
    assert again == {"acme": "duplicate-work", "beta": "duplicate-work"}
    items = _work_items(url, acme_key, beta_key)
    assert {k: (w.tenant, w.generation) for k, w in items.items()} == {acme_key: ("acme", 1), beta_key: ("beta", 1)}

    engine = ledger.make_engine(url)
    try:
        def holds() -> dict[str, set[str]]:
            with Session(engine) as session:
                rows = session.exec(select(CapacityHold).where(CapacityHold.work_key.in_((acme_key, beta_key)))).all()
            return {k: {h.slot_key for h in rows if h.work_key == k} for k in (acme_key, beta_key)}

        held = holds()
        assert "tenant:acme" in held[acme_key] and "tenant:beta" in held[beta_key]
        CapacityLedger(engine).release(acme_key)  # acme's run ends: beta's holds stay
        assert holds() == {acme_key: set(), beta_key: held[beta_key]}

        # Side effects: each tenant's comment has its own operation key; one done does not stop the other.
        effects = SideEffectLedger(engine)
        ops = {k: operation_key(k, POST_COMMENT, sha) for k in (acme_key, beta_key)}
        assert ops[acme_key] != ops[beta_key]
        begun = effects.begin(ops[acme_key], work_key=acme_key, operation=POST_COMMENT, target_version=sha,
                              generation=1)
        effects.complete(ops[acme_key], "c-1", {"comment_id": 1})
        assert begun.state == BeginState.NEW
        assert effects.begin(ops[beta_key], work_key=beta_key, operation=POST_COMMENT, target_version=sha,
                             generation=1).state == BeginState.NEW
        assert effects.begin(ops[acme_key], work_key=acme_key, operation=POST_COMMENT, target_version=sha,
                             generation=1).state == BeginState.DONE
    finally:
        engine.dispose()


def test_the_trigger_cli_names_the_tenant_for_an_actor_in_several(api, sims):
    from typer.testing import CliRunner

    from starter import app

    server, _, _ = api
    owner, repo, number, _ = _pull(sims, SHARED_OWNER)
    args = ["trigger", "--repo", f"{owner}/{repo}", "--pr", str(number), "--reason", "cli", "--api-url", server.base_url]
    env = {"SLUICEGATE_ACTOR_TOKEN": TOKENS["dana"]}
    unnamed = CliRunner().invoke(app, args, env=env)
    assert unnamed.exit_code == 1 and "bad-input" in unnamed.output
    named = CliRunner().invoke(app, [*args, "--tenant", "beta"], env=env)
    assert named.exit_code == 0 and f"beta/github:{owner}/{repo}#7:review" in named.output


def test_a_manual_request_id_is_deduplicated_per_tenant(api, sims):
    """Finding 6: tenant beta's request id must neither collide with acme's nor reveal its receipt."""
    server, _, url = api
    request_id = f"shared-{uuid.uuid4().hex[:8]}"
    acme = _pull(sims, "acme")
    beta = _pull(sims, "beta")
    first = _manual(server, ALICE, repository=f"{acme[0]}/{acme[1]}", number=acme[2], request_id=request_id)
    assert first.json()["reason"] == "admitted", first.text
    other = _manual(server, bearer("bob"), repository=f"{beta[0]}/{beta[1]}", number=beta[2], request_id=request_id)
    assert other.json()["reason"] == "admitted", other.text
    assert other.json()["receipt_id"] != first.json()["receipt_id"]
    again = _manual(server, ALICE, repository=f"{acme[0]}/{acme[1]}", number=acme[2], request_id=request_id)
    assert again.json()["reason"] == "duplicate-delivery"
    assert [r.id for r in receipts(url, f"beta:{request_id}")] == [other.json()["receipt_id"]]
