"""GitHub App installation tokens end to end: config -> credentials -> ForgeClient -> forge simulator.

Real parts only: an RSA key generated here, the forge simulator in GitHub App mode over HTTP
(it holds the PUBLIC key and checks every token's repository, permissions and expiry), the
real ``ForgeClient``/``InstallationTokens`` and, for the tool path, ``ForgeTools`` with the SQL
ledger in Temporal's ``ActivityEnvironment``.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from temporalio.testing import ActivityEnvironment

from activities.forge_tools import ForgeTools
from activities.gateway import ToolGateway
from ledger import SideEffectLedger
from simulators import serve_in_thread
from simulators.forge import ForgeState, GitHubAppSpec, create_forge_app
from sluicegate.config.settings import DEFAULT_CONFIG_FILE, ConfigError, load_settings
from sluicegate.forge.auth import InstallationTokens, StaticToken
from sluicegate.services.forge_credentials import credentials_from_settings
from sluicegate.forge.client import ForgeClient, ForgeError
from sluicegate.services.resources import open_forge
from workflows.contracts import ToolRequest

APP_ID = "4242"
EXCHANGE = "POST /app/installations/{installation_id}/access_tokens"
TENANTS = {"acme": 7, "globex-corp": 8}


def _private_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


def _public_pem(private_pem: str) -> str:
    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


@pytest.fixture(scope="module")
def app_key() -> str:
    return _private_pem()


@pytest.fixture(scope="module")
def forge_app(app_key: str):
    spec = GitHubAppSpec(APP_ID, _public_pem(app_key), {7: "acme", 8: "globex"})
    with serve_in_thread(create_forge_app(ForgeState(), app=spec), name="forge-sim-app-auth") as server:
        yield server.base_url


@pytest.fixture
def forge(forge_app: str) -> str:
    httpx.post(f"{forge_app}/_sim/reset").raise_for_status()
    httpx.post(f"{forge_app}/_sim/pulls/globex/site/1", json={"title": "globex's"}).raise_for_status()
    return forge_app


def _client(forge: str, key: str, margin: float = 300.0) -> ForgeClient:
    return ForgeClient(forge, credentials=InstallationTokens(
        forge, app_id=APP_ID, private_key=key, installations=TENANTS, refresh_margin_seconds=margin))


def _exchanges(forge: str) -> int:
    return httpx.get(f"{forge}/_sim/stats").json()["requests"].get(EXCHANGE, 0)


def _apps(forge: str) -> dict:
    return httpx.get(f"{forge}/_sim/apps").json()


async def test_one_token_per_repository_cached_and_shared(forge: str, app_key: str) -> None:
    client = _client(forge, app_key)
    try:
        await asyncio.gather(*(client.get_pull("acme", "api", 42, tenant="acme") for _ in range(8)))
        await client.get_pull_diff("acme", "api", 42, tenant="acme")
        await client.post_comment("acme", "api", 42, "hello", tenant="acme")
        assert [c async for c in client.iter_comments("acme", "api", 42, tenant="acme")][0]["body"] == "hello"
        assert _exchanges(forge) == 1
        assert [p["number"] for p in await client.list_open_pulls("acme", "web", tenant="acme")] == [7]
    finally:
        await client.aclose()
    assert _exchanges(forge) == 2
    tokens = _apps(forge)["tokens"]
    assert [(t["installation_id"], t["repositories"]) for t in tokens] == [(7, ["api"]), (7, ["web"])]
    assert tokens[0]["permissions"] == {"pull_requests": "read", "issues": "write", "contents": "read"}


async def test_a_token_for_one_repository_cannot_touch_another(forge: str, app_key: str) -> None:
    minting = InstallationTokens(forge, app_id=APP_ID, private_key=app_key, installations=TENANTS)
    try:
        api_token = await minting.token_for("acme", "acme", "api")
    finally:
        await minting.aclose()
    holder = ForgeClient(forge, api_token)  # someone holding acme/api's token tries acme/web
    try:
        assert (await holder.get_pull("acme", "api", 42))["number"] == 42
        for attempt in (holder.get_pull("acme", "web", 7), holder.post_comment("acme", "web", 7, "x")):
            with pytest.raises(ForgeError) as refused:
                await attempt
            assert (refused.value.status, refused.value.retryable) == (403, False)
            assert "Resource not accessible by integration" in str(refused.value)
    finally:
        await holder.aclose()
    assert httpx.get(f"{forge}/_sim/comments").json() == []


async def test_expiring_token_is_replaced_before_the_forge_refuses_it(forge: str, app_key: str) -> None:
    httpx.post(f"{forge}/_sim/apps/token_lifetime", json={"seconds": 2}).raise_for_status()
    client = _client(forge, app_key, margin=1.0)
    try:
        await client.get_pull("acme", "api", 42, tenant="acme")
        await client.get_pull("acme", "api", 42, tenant="acme")
        assert _exchanges(forge) == 1  # more than the margin left: cached
        expires = datetime.fromisoformat(_apps(forge)["tokens"][0]["expires_at"]).timestamp()
        await asyncio.sleep(max(0.0, expires - 0.5 - time.time()))  # inside the margin, not yet expired
        await client.get_pull("acme", "api", 42, tenant="acme")
        assert _exchanges(forge) == 2
        expires = datetime.fromisoformat(_apps(forge)["tokens"][1]["expires_at"]).timestamp()
        await asyncio.sleep(max(0.0, expires + 0.2 - time.time()))  # fully expired
        await client.post_comment("acme", "api", 42, "still here", tenant="acme")
        assert _exchanges(forge) == 3
    finally:
        await client.aclose()
    assert _apps(forge)["rejections"] == {}  # never sent an expired token


async def test_revoked_token_is_replaced_once_and_the_call_succeeds(forge: str, app_key: str) -> None:
    client = _client(forge, app_key)
    try:
        await client.get_pull("acme", "api", 42, tenant="acme")
        assert httpx.delete(f"{forge}/_sim/apps/tokens").json() == {"revoked": 1}
        comment = await client.post_comment("acme", "api", 42, "after revocation", tenant="acme")
        httpx.delete(f"{forge}/_sim/apps/tokens").raise_for_status()
        assert [c["id"] async for c in client.iter_comments("acme", "api", 42, tenant="acme")] == [comment["id"]]
    finally:
        await client.aclose()
    assert _exchanges(forge) == 3
    assert _apps(forge)["rejections"] == {"revoked_token": 2}
    assert len(httpx.get(f"{forge}/_sim/comments").json()) == 1


async def test_a_jwt_signed_with_the_wrong_key_is_a_clear_permanent_error(forge: str) -> None:
    wrong_key = _private_pem()
    client = _client(forge, wrong_key)
    try:
        with pytest.raises(ForgeError) as refused:
            await client.get_pull("acme", "api", 42, tenant="acme")
    finally:
        await client.aclose()
    err = refused.value
    assert (err.status, err.retryable) == (401, False)
    assert f"GitHub App {APP_ID} was refused an installation token for acme/api (installation 7)" in err.message
    assert "check forge.app.app_id, the private key and the clock" in err.message
    assert "PRIVATE KEY" not in str(err) and _apps(forge)["rejections"] == {"bad_jwt": 1}
    assert httpx.get(f"{forge}/_sim/stats").json()["requests"] == {EXCHANGE: 1}  # the API was never called


async def test_tenant_picks_the_installation_with_no_fallback(forge: str, app_key: str) -> None:
    client = _client(forge, app_key)
    try:
        assert (await client.get_pull("globex", "site", 1, tenant="globex-corp"))["number"] == 1
        with pytest.raises(ForgeError) as foreign:  # globex's installation cannot reach acme
            await client.get_pull("acme", "api", 42, tenant="globex-corp")
        assert (foreign.value.status, foreign.value.retryable) == (422, False)
        assert (await client.get_pull("acme", "api", 42))["number"] == 42  # no tenant: owner "acme" is a tenant
        with pytest.raises(ForgeError) as unknown:
            await client.get_pull("globex", "site", 1)  # no tenant, and no tenant named "globex"
        with pytest.raises(ForgeError) as unmapped:
            await client.get_pull("acme", "api", 42, tenant="initech")
    finally:
        await client.aclose()
    assert (unknown.value.status, unknown.value.retryable) == (None, False)
    assert "no GitHub App installation for owner 'globex'" in unknown.value.message
    assert "no GitHub App installation for tenant 'initech'" in unmapped.value.message
    issued = [(t["installation_id"], t["account"], t["repositories"]) for t in _apps(forge)["tokens"]]
    assert issued == [(8, "globex", ["site"]), (7, "acme", ["api"])]


async def test_review_tools_use_the_work_orders_tenant(forge: str, app_key: str, engine) -> None:
    work_key = f"globex/github:globex/site#1:review:{uuid.uuid4().hex[:8]}"
    req = ToolRequest(work_key, "globex-corp", "globex", "site", 1, "0" * 40, 1, "call-1", json.dumps({"body": "LGTM"}))
    client = _client(forge, app_key)
    tools = ForgeTools(client, ToolGateway(SideEffectLedger(engine)))
    try:
        await ActivityEnvironment().run(tools.get_pull_request_diff, req)
        posted = await ActivityEnvironment().run(tools.post_review_comment, req)
    finally:
        await client.aclose()
    assert posted.external_id is not None
    assert [t["installation_id"] for t in _apps(forge)["tokens"]] == [8]


def _env(key: str, **extra: str) -> dict[str, str]:
    return {"SLUICEGATE_FORGE_APP_ID": APP_ID, "SLUICEGATE_FORGE_APP_PRIVATE_KEY": key.replace("\n", "\\n"),
            "SLUICEGATE__FORGE__APP__INSTALLATIONS": "{acme: 7}", **extra}


async def test_settings_from_the_environment_drive_the_worker_client(forge: str, app_key: str) -> None:
    settings = load_settings(DEFAULT_CONFIG_FILE, env=_env(app_key, FORGE_BASE_URL=forge))
    assert settings.forge.app is not None and settings.forge.app.app_id == APP_ID
    assert "PRIVATE KEY" not in repr(settings)
    async with AsyncExitStack() as stack:
        client = open_forge(settings, stack)
        assert (await client.get_pull("acme", "api", 42))["number"] == 42
    assert [t["repositories"] for t in _apps(forge)["tokens"]] == [["api"]]
    no_app = load_settings(DEFAULT_CONFIG_FILE, env={})
    assert isinstance(credentials_from_settings(no_app), StaticToken)


def test_app_settings_are_validated(tmp_path: Path, app_key: str) -> None:
    numeric = load_settings(DEFAULT_CONFIG_FILE, env={**_env(app_key), "SLUICEGATE_FORGE_APP_ID": "",
                                                      "SLUICEGATE__FORGE__APP__APP_ID": "4242"})
    assert numeric.forge.app is not None and numeric.forge.app.app_id == APP_ID  # YAML int accepted
    without_key = {**_env(app_key), "SLUICEGATE_FORGE_APP_PRIVATE_KEY": ""}
    with pytest.raises(ConfigError, match="set exactly one of private_key"):
        load_settings(DEFAULT_CONFIG_FILE, env=without_key)
    with pytest.raises(ConfigError, match="installations must map every tenant"):
        load_settings(DEFAULT_CONFIG_FILE, env={**_env(app_key), "SLUICEGATE__FORGE__APP__INSTALLATIONS": "{}"})
    other_tenant = load_settings(DEFAULT_CONFIG_FILE, env={**_env(app_key),
                                                           "SLUICEGATE__FORGE__APP__INSTALLATIONS": "{globex: 8}"})
    with pytest.raises(ConfigError, match=r"no installation for tenant\(s\) acme"):
        credentials_from_settings(other_tenant)  # temporal-dev.yaml's sources and scan belong to acme
    pem_file = tmp_path / "app.pem"
    pem_file.write_text("not a key")
    from_file = load_settings(DEFAULT_CONFIG_FILE,
                              env={**without_key, "SLUICEGATE_FORGE_APP_PRIVATE_KEY_FILE": str(pem_file)})
    with pytest.raises(ConfigError, match="is not an unencrypted PEM RSA private key"):
        credentials_from_settings(from_file)


async def test_a_forge_outage_during_the_exchange_is_retryable_and_not_cached(forge: str, app_key: str) -> None:
    httpx.post(f"{forge}/_sim/faults", json={"method": "POST", "path": "^/app/installations/", "status": 502}
               ).raise_for_status()
    client = _client(forge, app_key)
    try:
        with pytest.raises(ForgeError) as outage:
            await client.get_pull("acme", "api", 42, tenant="acme")
        assert (outage.value.status, outage.value.retryable) == (502, True)
        assert "cannot mint an installation token for acme/api (installation 7) yet" in outage.value.message
        assert (await client.get_pull("acme", "api", 42, tenant="acme"))["number"] == 42  # Temporal's next attempt
    finally:
        await client.aclose()
    assert _exchanges(forge) == 2
