"""Two tenants on one stack (API, worker, simulators as processes): one repository reviewed by
both is two runs and two comments; a repository a source does not serve is never read; a manual
trigger runs in its actor's tenant and forces only as that tenant's admin."""

from __future__ import annotations

import httpx
import pytest

from activities.keys import marker_for, operation_key
from demo.outcome import wait_for_runs
from tests.e2e.conftest import StackHttp
from tests.support.tenants import BETA_SOURCE, SHARED_OWNER, bearer, two_tenants
from workflows.review_task import POST_COMMENT

pytestmark = pytest.mark.e2e


def test_two_tenants_review_one_pull_request_independently_and_scope_holds(stack_factory):
    stack = stack_factory(**two_tenants())
    s, web = stack.settings, StackHttp(stack)
    repo, sha = f"{SHARED_OWNER}/app", "ab" * 20
    httpx.post(f"{web.forge}/_sim/pulls/{repo}/5", json={"head_sha": sha, "state": "open"}).raise_for_status()

    outside = web.send_opened("acme/api", 44, sha, source=BETA_SOURCE)  # beta's source serves beta/*, shared/*
    assert (outside.status_code, outside.json()["reason"]) == (403, "out-of-scope")
    answers = [web.send_opened(repo, 5, sha, source=src) for src in ("github", BETA_SOURCE)]
    assert [(r.status_code, r.json()["work_key"]) for r in answers] == [
        (202, f"acme/github:{repo}#5:review"), (202, f"beta/github:{repo}#5:review")]

    versions = wait_for_runs(s, timeout=120)
    assert sorted((v.work_key, v.status, v.generation) for v in versions) == [
        (f"acme/github:{repo}#5:review", "done", 1), (f"beta/github:{repo}#5:review", "done", 1)]
    bodies = [c["body"] for c in web.comments() if f"{c['owner']}/{c['repo']}" == repo]
    markers = {t: marker_for(operation_key(f"{t}/github:{repo}#5:review", POST_COMMENT, sha)) for t in ("acme", "beta")}
    assert len(bodies) == 2 and all(sum(m in b for b in bodies) == 1 for m in markers.values())
    assert web.forge_reads("acme/api") == 0

    # The manual trigger's tenant is the actor's: a foreign tenant is refused, force needs admin there.
    manual = f"{web.api}/v1/triggers/manual"
    body = {"repository": repo, "number": 5, "reason": "e2e", "force": True}
    alice = {"Authorization": f"Bearer {s.actors['alice'].token.get_secret_value()}"}
    assert httpx.post(manual, json={**body, "tenant": "beta"}, headers=alice).json()["reason"] == "out-of-scope"
    assert httpx.post(manual, json=body, headers=alice).json()["reason"] == "policy:override-not-permitted"
    assert httpx.post(manual, json={**body, "tenant": "acme"}, headers=bearer("bob")).status_code == 403
    forced = httpx.post(manual, json=body, headers=bearer("bob"))  # admin in beta, his only tenant
    assert (forced.status_code, forced.json()["work_key"], forced.json()["generation"]) == (
        202, f"beta/github:{repo}#5:review", 2)
    wait_for_runs(s, timeout=120)
