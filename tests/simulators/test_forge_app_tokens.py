"""Forge simulator, GitHub App mode: JWT exchange, repository/permission scope, expiry, revocation."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from gidgethub.apps import get_jwt

from simulators import serve_in_thread
from simulators.forge import ForgeState, GitHubAppSpec, create_forge_app
from simulators.forge.__main__ import main as forge_main

APP_ID = "4242"
STATIC = "ghp_static_still_works"
ISSUE_URL = "/app/installations/{}/access_tokens"


def _keypair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@pytest.fixture(scope="module")
def keys() -> tuple[str, str]:
    return _keypair()


@pytest.fixture(scope="module")
def server(keys: tuple[str, str]) -> Iterator[tuple[str, ForgeState]]:
    state = ForgeState()
    spec = GitHubAppSpec(APP_ID, keys[1], {7: "acme", 8: "globex"})
    with serve_in_thread(create_forge_app(state, token=STATIC, app=spec), name="forge-sim-apps") as srv:
        yield srv.base_url, state


@pytest.fixture
def http(server: tuple[str, ForgeState]) -> Iterator[httpx.Client]:
    server[1].reset()
    with httpx.Client(base_url=server[0], timeout=5.0) as client:
        yield client


def _mint(http: httpx.Client, key: str, installation: int = 7, **body: Any) -> httpx.Response:
    bearer = get_jwt(app_id=APP_ID, private_key=key)
    return http.post(ISSUE_URL.format(installation), json=body or None, headers={"Authorization": f"Bearer {bearer}"})


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"token {token}"}


def test_token_is_scoped_to_its_repository(http: httpx.Client, keys: tuple[str, str]) -> None:
    answer = _mint(http, keys[0], repositories=["api"], permissions={"pull_requests": "read", "issues": "write"})
    assert answer.status_code == 201, answer.text
    body = answer.json()
    token = body["token"]
    assert token.startswith("ghs_") and body["repository_selection"] == "selected"
    assert [r["full_name"] for r in body["repositories"]] == ["acme/api"]
    lifetime = datetime.fromisoformat(body["expires_at"]).timestamp() - time.time()
    assert 3590 < lifetime <= 3601
    assert http.get("/repos/acme/api/pulls/42", headers=_auth(token)).status_code == 200
    posted = http.post("/repos/acme/api/issues/42/comments", json={"body": "ok"}, headers=_auth(token))
    assert posted.status_code == 201

    for method, path in (("GET", "/repos/acme/web/pulls/7"), ("POST", "/repos/acme/web/issues/7/comments")):
        refused = http.request(method, path, json={"body": "x"}, headers=_auth(token))
        assert refused.status_code == 403
        assert refused.json() == {"message": "Resource not accessible by integration",
                                  "documentation_url": "https://docs.github.com/rest", "status": "403"}
    assert [c["repo"] for c in http.get("/_sim/comments").json()] == ["api"]
    assert http.get("/_sim/apps").json()["rejections"] == {"out_of_scope": 2}


def test_permissions_are_enforced_per_route(http: httpx.Client, keys: tuple[str, str]) -> None:
    token = _mint(http, keys[0], repositories=["api"], permissions={"pull_requests": "read"}).json()["token"]
    assert http.get("/repos/acme/api/issues/42/comments", headers=_auth(token)).status_code == 200
    refused = http.post("/repos/acme/api/issues/42/comments", json={"body": "x"}, headers=_auth(token))
    assert refused.status_code == 403 and refused.json()["message"] == "Resource not accessible by integration"
    assert http.get("/_sim/comments").json() == []


def test_token_without_repositories_covers_only_its_account(http: httpx.Client, keys: tuple[str, str]) -> None:
    http.post("/_sim/pulls/globex/site/1", json={"title": "globex"}).raise_for_status()
    body = _mint(http, keys[0]).json()
    assert body["repository_selection"] == "all" and "repositories" not in body
    assert http.get("/repos/acme/web/pulls/7", headers=_auth(body["token"])).status_code == 200
    assert http.get("/repos/globex/site/pulls/1", headers=_auth(body["token"])).status_code == 403
    globex = _mint(http, keys[0], installation=8, repositories=["site"]).json()["token"]
    assert http.get("/repos/globex/site/pulls/1", headers=_auth(globex)).status_code == 200
    assert [t["installation_id"] for t in http.get("/_sim/apps").json()["tokens"]] == [7, 8]


def test_expired_token_is_bad_credentials(http: httpx.Client, keys: tuple[str, str]) -> None:
    assert http.post("/_sim/apps/token_lifetime", json={"seconds": 2}).status_code == 200
    body = _mint(http, keys[0], repositories=["api"]).json()
    expires = datetime.fromisoformat(body["expires_at"]).timestamp()
    assert 2 <= expires - time.time() <= 3.1
    assert http.get("/repos/acme/api/pulls/42", headers=_auth(body["token"])).status_code == 200
    time.sleep(max(0.0, expires - time.time()) + 0.1)
    refused = http.get("/repos/acme/api/pulls/42", headers=_auth(body["token"]))
    assert refused.status_code == 401 and refused.json()["message"] == "Bad credentials"
    assert http.get("/_sim/apps").json()["rejections"] == {"expired_token": 1}


def test_unknown_and_revoked_tokens_are_bad_credentials(http: httpx.Client, keys: tuple[str, str]) -> None:
    token = _mint(http, keys[0], repositories=["api"]).json()["token"]
    assert http.get("/repos/acme/api/pulls/42", headers=_auth("ghs_" + "x" * 36)).status_code == 401
    assert http.delete("/_sim/apps/tokens").json() == {"revoked": 1}
    assert http.get("/repos/acme/api/pulls/42", headers=_auth(token)).status_code == 401
    assert http.get("/_sim/apps").json()["rejections"] == {"revoked_token": 1, "unknown_token": 1}


def _jwt(key: str, **claims: Any) -> str:
    now = int(time.time())
    payload = {"iat": now - 60, "exp": now + 540, "iss": APP_ID, **claims}
    return jwt.encode({k: v for k, v in payload.items() if v is not None}, key, algorithm="RS256")


@pytest.mark.parametrize("case, message", [
    ("wrong key", "A JSON web token could not be decoded"),
    ("garbage", "A JSON web token could not be decoded"),
    ("expired", ("'Expiration time' claim ('exp') must be a numeric value representing the future time at which "
                 "the assertion expires")),
    ("too long", "'Expiration time' claim ('exp') is too far in the future"),
    ("other app", "'Issuer' claim ('iss') must be the app's id"),
    ("no iat", "A JSON web token could not be decoded"),
])
def test_bad_jwt_is_refused_401(http: httpx.Client, keys: tuple[str, str], case: str, message: str) -> None:
    now = int(time.time())
    bearer = {"wrong key": lambda: _jwt(_keypair()[0]), "garbage": lambda: "not.a.jwt",
              "expired": lambda: _jwt(keys[0], iat=now - 700, exp=now - 60),
              "too long": lambda: _jwt(keys[0], exp=now + 3600), "other app": lambda: _jwt(keys[0], iss="999"),
              "no iat": lambda: _jwt(keys[0], iat=None)}[case]()
    refused = http.post(ISSUE_URL.format(7), headers={"Authorization": f"Bearer {bearer}"})
    assert refused.status_code == 401
    assert refused.json() == {"message": message, "documentation_url": "https://docs.github.com/rest", "status": "401"}
    assert http.get("/_sim/apps").json()["tokens"] == []


def test_exchange_refusals(http: httpx.Client, keys: tuple[str, str]) -> None:
    assert _mint(http, keys[0], installation=99).status_code == 404
    foreign = _mint(http, keys[0], repositories=["api"], installation=8)  # acme/api is not globex's
    assert foreign.status_code == 422 and "not accessible to the parent installation" in foreign.json()["message"]
    assert _mint(http, keys[0], repositories=["nope"]).status_code == 422
    too_much = _mint(http, keys[0], permissions={"contents": "write"})
    assert too_much.status_code == 422
    assert too_much.json()["message"] == "The permissions requested are not granted to this installation."
    token = _mint(http, keys[0]).json()["token"]
    assert http.post(ISSUE_URL.format(7), headers={"Authorization": f"Bearer {token}"}).status_code == 401
    stats = http.get("/_sim/stats").json()["requests"]
    assert stats == {"POST /app/installations/{installation_id}/access_tokens": 6}


def test_static_token_still_works_and_nothing_else_does(http: httpx.Client) -> None:
    assert http.get("/repos/acme/api/pulls/42", headers=_auth(STATIC)).status_code == 200
    assert http.get("/repos/acme/api/pulls/42").status_code == 401
    assert http.get("/repos/acme/api/pulls/42", headers=_auth("wrong")).status_code == 401


def test_reset_forgets_tokens_and_restores_the_seeded_app(http: httpx.Client, keys: tuple[str, str]) -> None:
    token = _mint(http, keys[0]).json()["token"]
    http.post("/_sim/apps/token_lifetime", json={"seconds": 5}).raise_for_status()
    http.post("/_sim/reset").raise_for_status()
    snapshot = http.get("/_sim/apps").json()
    assert (snapshot["app_id"], snapshot["token_lifetime_seconds"], snapshot["tokens"]) == (APP_ID, 3600, [])
    assert http.get("/repos/acme/api/pulls/42", headers=_auth(token)).status_code == 401


def test_runtime_registration_on_an_open_server(forge_http: httpx.Client, keys: tuple[str, str]) -> None:
    assert forge_http.get("/repos/acme/api/pulls/42").status_code == 200
    assert forge_http.post("/_sim/apps", json={"app_id": 1, "public_key": "nope", "installations": {}}
                           ).json() == {"message": "public_key must be a PEM public key"}
    assert forge_http.post("/_sim/apps/token_lifetime", json={"seconds": 0}).status_code == 400
    registered = forge_http.post("/_sim/apps", json={"app_id": APP_ID, "public_key": keys[1],
                                                     "installations": {"7": "acme"}})
    assert registered.status_code == 201 and registered.json()["installations"] == {"7": "acme"}
    try:
        assert forge_http.get("/repos/acme/api/pulls/42").status_code == 401
        assert _mint(forge_http, keys[0], repositories=["api"]).status_code == 201
    finally:
        forge_http.post("/_sim/reset").raise_for_status()
    assert forge_http.get("/_sim/apps").json()["enabled"] is False
    assert forge_http.get("/repos/acme/api/pulls/42").status_code == 200


def test_cli_needs_every_app_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert forge_main(["--app-id", APP_ID, "--port", "0"]) == 2
    assert "--app-public-key-file" in capsys.readouterr().err


def test_installation_token_acts_as_the_app_bot_with_its_own_budget(http: httpx.Client, keys: tuple[str, str]) -> None:
    token = _mint(http, keys[0], repositories=["api"]).json()["token"]
    posted = http.post("/repos/acme/api/issues/42/comments", json={"body": "by the app"}, headers=_auth(token))
    assert posted.status_code == 201
    assert posted.json()["user"] == {**posted.json()["user"], "login": "sluicegate[bot]", "type": "Bot"}
    by_static = http.post("/repos/acme/api/issues/42/comments", json={"body": "by the token"}, headers=_auth(STATIC))
    assert by_static.json()["user"]["login"] == "sluicegate-bot"
    listed = http.get("/repos/acme/api/issues/42/comments", headers=_auth(token)).json()
    assert [(c["body"], c["user"]["login"]) for c in listed] == [("by the app", "sluicegate[bot]"),
                                                                 ("by the token", "sluicegate-bot")]
    used = http.get("/_sim/rate_limits").json()["used"]
    assert used == {"installation:7": 2, "user:sluicegate-bot": 1}
