"""Per-tenant model credentials, on SQLite and PostgreSQL (the kills live in the ledger).

Real parts: the model simulator over HTTP requiring each tenant's own key (it records whose key
every request carried), the real ``openai`` client, the real ``ModelActivities`` in Temporal's
``ActivityEnvironment``, kills recorded in the SQL ledger. Tenant names are fresh per test, so
kills never leak into other tests sharing the session's database.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.model import ModelActivities
from activities.model_credentials import IssuedKey, ModelClients, ModelCredential, credentials_from_settings
from ledger import KillSwitch
from simulators import serve_in_thread
from simulators.model import create_model_app
from sluicegate.config.settings import ModelConfig
from workflows.contracts import ModelRequest
from workflows.review_task import TOOLS

DEFAULT_KEY = "sk-default-model-key"


class Tenants:
    """Three fresh tenants: ``a`` (inline key), ``b`` (key file), ``c`` (not listed: the default)."""

    def __init__(self, tmp_path: Path) -> None:
        tag = uuid.uuid4().hex[:8]
        self.a, self.b, self.c = f"a{tag}", f"b{tag}", f"c{tag}"
        self.keys = {self.a: f"sk-{self.a}-key", self.b: f"sk-{self.b}-key"}
        self.key_file = tmp_path / "b.key"
        self.key_file.write_text(self.keys[self.b] + "\n")

    def config(self, base_url: str) -> ModelConfig:
        return ModelConfig(base_url=base_url, api_key=DEFAULT_KEY, name="sim-reviewer-1", prices={},
                           tenants={self.a: {"api_key": self.keys[self.a]}, self.b: {"api_key_file": self.key_file}})

    def clients(self, base_url: str, **kw) -> ModelClients:
        cfg = self.config(base_url)
        return ModelClients(credentials_from_settings(cfg, lambda p: p), 10.0,
                            own_key_tenants=frozenset(cfg.tenants), **kw)


@pytest.fixture
def tenants(tmp_path) -> Tenants:
    return Tenants(tmp_path)


@pytest.fixture
def model_sim(tenants):
    app = create_model_app(api_key=DEFAULT_KEY, tenant_keys=tenants.keys)
    with serve_in_thread(app, name="model-sim-tenant-keys") as server:
        yield server.base_url


def _request(tenant: str) -> ModelRequest:
    key = f"{tenant}/github:acme/api#{uuid.uuid4().int % 10**6 + 1}:review"
    return ModelRequest(key, "v1", "sim-reviewer-1", [{"role": "user", "content": "Review it."}], TOOLS, tenant=tenant)


def _keys_by_work(base_url: str) -> dict[str, dict[str, int]]:
    return httpx.get(f"{base_url}/_sim/stats").json()["keys_by_work"]


async def _call(acts: ModelActivities, req: ModelRequest):
    return await ActivityEnvironment().run(acts.chat_completion, req)


async def test_each_tenant_presents_only_its_own_key(engine, tenants, model_sim):
    clients = tenants.clients(f"{model_sim}/v1")
    acts = ModelActivities(clients, KillSwitch(engine))
    reqs = {t: [_request(t), _request(t)] for t in (tenants.a, tenants.b, tenants.c)}
    try:
        for pair in reqs.values():
            for req in pair:
                assert (await _call(acts, req)).tool_calls  # the reviewer asks for the diff
    finally:
        await clients.close()
    expected = {tenants.a: tenants.a, tenants.b: tenants.b, tenants.c: "default"}
    assert _keys_by_work(model_sim) == {req.work_key: {expected[t]: 1} for t, pair in reqs.items() for req in pair}
    assert clients.cached_slots() == set()  # closed


async def test_the_simulator_refuses_a_tenant_key_used_for_another_tenants_work(tenants, model_sim):
    """The proof's other half: if a run ever carried another tenant's key, the call would fail."""
    from openai import AsyncOpenAI, AuthenticationError

    req = _request(tenants.a)
    async with AsyncOpenAI(base_url=f"{model_sim}/v1", api_key=tenants.keys[tenants.b], max_retries=0) as wrong:
        with pytest.raises(AuthenticationError, match="not valid for tenant"):
            await wrong.chat.completions.create(model=req.model, messages=req.messages,
                                                extra_headers={"X-Sluicegate-Work-Key": req.work_key})
    assert _keys_by_work(model_sim) == {req.work_key: {tenants.b: 1}}


async def test_a_tenant_kill_revokes_its_cached_client_and_the_unkill_reads_the_key_file_again(
        engine, tenants, model_sim):
    clients = tenants.clients(f"{model_sim}/v1")
    kills = KillSwitch(engine)
    acts = ModelActivities(clients, kills)
    first, rotated = _request(tenants.b), _request(tenants.b)
    try:
        await _call(acts, _request(tenants.a))
        await _call(acts, first)
        assert clients.cached_slots() == {tenants.a, tenants.b}
        tenants.key_file.write_text("sk-rotated-not-yet-known\n")  # cached: the next call still uses the old key
        await _call(acts, _request(tenants.b))

        kills.kill("tenant", tenants.b, "test", "rotate the leaked key")
        with pytest.raises(ApplicationError) as refused:
            await _call(acts, _request(tenants.b))
        assert refused.value.type == "Killed" and refused.value.non_retryable
        assert clients.cached_slots() == {tenants.a}  # b's client is gone; a's is untouched

        assert kills.unkill("tenant", tenants.b, "test", "key rotated") == 1
        with pytest.raises(ApplicationError) as rejected:  # the rebuilt client presents the file's new key
            await _call(acts, rotated)
        assert rejected.value.type == "ModelRequestRejected"
    finally:
        await clients.close()
    assert _keys_by_work(model_sim)[first.work_key] == {tenants.b: 1}
    assert _keys_by_work(model_sim)[rotated.work_key] == {"unknown": 1}


async def test_a_global_kill_revokes_every_client_and_a_work_key_kill_none(engine, tenants, model_sim):
    clients = tenants.clients(f"{model_sim}/v1")
    kills = KillSwitch(engine)
    acts = ModelActivities(clients, kills)
    victim = _request(tenants.a)
    try:
        for t in (tenants.a, tenants.b, tenants.c):
            await _call(acts, _request(t))
        kills.kill("work_key", victim.work_key, "test", "one item")
        with pytest.raises(ApplicationError, match="killed"):
            await _call(acts, victim)
        assert clients.cached_slots() == {tenants.a, tenants.b, ""}  # other work of the tenant goes on
        kill = kills.kill("all", "*", "test", "stop everything")
        try:
            with pytest.raises(ApplicationError, match="killed"):
                await _call(acts, _request(tenants.c))
            assert clients.cached_slots() == set()
        finally:
            kills.unkill("all", "*", "test", "done")
        assert kill.scope == "all"
    finally:
        await clients.close()


async def test_a_missing_key_file_ends_the_call_with_a_clear_non_retryable_error(engine, tenants, model_sim):
    tenants.key_file.unlink()
    clients = tenants.clients(f"{model_sim}/v1")
    try:
        with pytest.raises(ApplicationError) as missing:
            await _call(ModelActivities(clients, KillSwitch(engine)), _request(tenants.b))
    finally:
        await clients.close()
    assert missing.value.type == "ModelKeyUnavailable" and missing.value.non_retryable
    assert "api_key_file" in str(missing.value) and tenants.keys[tenants.b] not in str(missing.value)
    assert _keys_by_work(model_sim) == {}  # nothing was sent


async def test_a_short_lived_key_from_the_exchange_hook_is_exchanged_again_before_it_lapses(tenants):
    now = [1000.0]
    asked: list[tuple[str, str]] = []

    async def exchange(tenant: str, configured: ModelCredential) -> IssuedKey:
        asked.append((tenant, configured.api_key.get_secret_value()))
        return IssuedKey(configured.api_key, expires_at=now[0] + 300)

    clients = tenants.clients("http://127.0.0.1:9/v1", exchange=exchange, refresh_margin_seconds=60,
                              clock=lambda: now[0])
    try:
        first = await clients.for_tenant(tenants.a)
        now[0] += 200  # 100 s left, more than the margin
        assert await clients.for_tenant(tenants.a) is first
        now[0] += 50  # 50 s left: inside the margin
        second = await clients.for_tenant(tenants.a)
        assert second is not first and first.is_closed()
        await clients.for_tenant(tenants.c)
    finally:
        await clients.close()
    assert asked == [(tenants.a, tenants.keys[tenants.a])] * 2 + [("", DEFAULT_KEY)]


def test_a_tenant_entry_must_carry_exactly_one_key_of_its_own(tmp_path):
    base = {"base_url": "http://x/v1", "api_key": DEFAULT_KEY, "name": "m", "prices": {}}
    for entry in ({"base_url": "http://other/v1"}, {"api_key": "k", "api_key_file": str(tmp_path / "k")}):
        with pytest.raises(ValidationError, match="exactly one of api_key or api_key_file"):
            ModelConfig(**base, tenants={"acme": entry})


def test_model_tenants_must_be_configured_tenants():
    from sluicegate.config.settings import ConfigError, DEFAULT_CONFIG_FILE, load_settings

    env = {"SLUICEGATE__MODEL__TENANTS": '{"acme": {"api_key": "sk-acme"}, "acmee": {"api_key": "sk-typo"}}'}
    with pytest.raises(ConfigError, match="model.tenants: 'acmee' is not a tenant of any source") as bad:
        load_settings(DEFAULT_CONFIG_FILE, env=env)
    assert "sk-typo" not in str(bad.value)
    ok = load_settings(DEFAULT_CONFIG_FILE, env={"SLUICEGATE__MODEL__TENANTS": '{"acme": {"api_key": "sk-acme"}}'})
    assert repr(ok.model.tenants["acme"].api_key) == "SecretStr('**********')"
