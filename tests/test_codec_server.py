"""The codec server over real HTTP: a bearer token on /encode and /decode, CORS for the UI, bounds."""

from __future__ import annotations

import httpx
import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from simulators import ServerThread
from sluicegate.temporal.codec import EncryptionCodec, PayloadKeys, new_key, parse_key
from sluicegate.temporal.codec_server import app_from_settings, create_codec_app, ui_codec_endpoint
from sluicegate.config.settings import DEFAULT_CONFIG_FILE, ConfigError, load_settings

TOKEN = "codec-token-0123456789"
UI = "http://127.0.0.1:8233"


@pytest.fixture(scope="module")
def server():
    codec = EncryptionCodec(PayloadKeys(parse_key(new_key())), accept_plaintext=True)
    srv = ServerThread(create_codec_app(codec, TOKEN, [UI], max_body_bytes=64 * 1024)).start()
    yield srv
    srv.stop()


def _body(text: bytes = b'"review of acme/api#42"') -> str:
    return json_format.MessageToJson(Payloads(payloads=[Payload(metadata={"encoding": b"json/plain"}, data=text)]))


def _post(server, path: str, content, **headers) -> httpx.Response:
    return httpx.post(f"{server.base_url}{path}", content=content, headers=headers, timeout=10)


def test_encode_then_decode_round_trips_with_the_token(server):
    sealed = _post(server, "/encode", _body(), Authorization=f"Bearer {TOKEN}")
    assert sealed.status_code == 200
    assert b"review of" not in sealed.content
    opened = _post(server, "/decode", sealed.content, Authorization=f"Bearer {TOKEN}")
    [payload] = json_format.Parse(opened.content, Payloads()).payloads
    assert payload.data == b'"review of acme/api#42"'
    via_ui_path = _post(server, f"/ui/{TOKEN}/decode", sealed.content)  # the UI's form: the token in the path
    assert via_ui_path.status_code == 200 and via_ui_path.json() == opened.json()


@pytest.mark.parametrize("path, headers", [
    ("/decode", {}), ("/encode", {}), ("/decode", {"Authorization": "Bearer wrong-token-0123456789"}),
    ("/encode", {"Authorization": f"Basic {TOKEN}"}), ("/ui/wrong/decode", {})])
def test_without_the_token_nothing_is_encoded_or_decoded(server, path, headers):
    refused = _post(server, path, _body(), **headers)
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert "review of" not in refused.text


def test_the_token_is_checked_before_the_body_is_read_and_bodies_are_bounded(server):
    huge = b"x" * (1024 * 1024)
    assert _post(server, "/decode", huge).status_code == 401
    assert _post(server, "/decode", huge, Authorization=f"Bearer {TOKEN}").status_code == 413
    garbled = _post(server, "/decode", b'{"payloads": "<script>alert(1)</script>"}', Authorization=f"Bearer {TOKEN}")
    assert garbled.status_code == 400 and "script" not in garbled.text


def test_foreign_ciphertext_is_422_not_a_crash(server):
    other = EncryptionCodec(PayloadKeys(parse_key(new_key())))
    import asyncio

    sealed = asyncio.run(other.encode([Payload(metadata={"encoding": b"json/plain"}, data=b"1")]))
    r = _post(server, "/decode", json_format.MessageToJson(Payloads(payloads=sealed)), Authorization=f"Bearer {TOKEN}")
    assert r.status_code == 422


def test_cors_preflight_and_answers_for_the_ui_origin_only(server):
    preflight = httpx.options(f"{server.base_url}/decode", headers={
        "Origin": UI, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,x-namespace,authorization"})
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == UI
    allowed = {h.strip() for h in preflight.headers["access-control-allow-headers"].lower().split(",")}
    assert {"content-type", "x-namespace", "authorization"} <= allowed
    assert "POST" in preflight.headers["access-control-allow-methods"]
    answer = _post(server, f"/ui/{TOKEN}/decode", _body(), Origin=UI, **{"X-Namespace": "sluicegate"})
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == UI
    stranger = _post(server, f"/ui/{TOKEN}/decode", _body(), Origin="https://evil.example")
    assert "access-control-allow-origin" not in stranger.headers


def test_settings_name_what_is_missing():
    base = {"SLUICEGATE_TELEMETRY_EXPORTER": "none"}
    with pytest.raises(ConfigError, match="no payload key"):
        app_from_settings(load_settings(DEFAULT_CONFIG_FILE, env=base))
    with pytest.raises(ConfigError, match="SLUICEGATE_CODEC_TOKEN"):
        app_from_settings(load_settings(DEFAULT_CONFIG_FILE, env={**base, "SLUICEGATE_PAYLOAD_KEY": new_key()}))
    with pytest.raises(ConfigError, match="at least 16"):
        load_settings(DEFAULT_CONFIG_FILE, env={**base, "SLUICEGATE_CODEC_TOKEN": "short"})
    settings = load_settings(DEFAULT_CONFIG_FILE, env={**base, "SLUICEGATE_PAYLOAD_KEY": new_key(),
                                                       "SLUICEGATE_CODEC_TOKEN": TOKEN})
    assert app_from_settings(settings) is not None
    assert ui_codec_endpoint(settings) == f"http://127.0.0.1:8888/ui/{TOKEN}"
    assert TOKEN not in repr(settings)


@pytest.mark.parametrize("path", ["/encode", f"/ui/{TOKEN}/encode"])
def test_the_ui_path_token_reaches_decode_only(server, path):
    """The Temporal UI only decodes; its path token (readable from the UI's settings) must not
    let anyone seal payloads with the fleet's key. /encode takes the bearer header only."""
    answer = _post(server, path, _body())
    assert answer.status_code in (401, 404, 405)
    assert b"binary/encrypted" not in answer.content
    assert _post(server, "/encode", _body(), Authorization=f"Bearer {TOKEN}").status_code == 200


def _sealed(encoding: bytes = b"binary/encrypted", kid: bytes = b"k", data: bytes = b"short") -> bytes:
    return json_format.MessageToJson(Payloads(payloads=[Payload(
        metadata={"encoding": encoding, "encryption-key-id": kid}, data=data)])).encode()


@pytest.mark.parametrize("body", [
    b"", b"null", b"[]", b'"payloads"', b"{", b'{"payloads": [1]}', b'{"payloads": {"a": 1}}',
    b'{"payloads": [{"data": "!!!not base64"}]}', b'{"payloads": [{"metadata": {"encoding": 5}}]}',
    b"\xff\xfe\x00garbage", b'{"payloads": [], "extra": 1}',
    _sealed(kid=b"\xff\xfe"), _sealed(data=b""), _sealed(data=b"x" * 5),
])
@pytest.mark.parametrize("path", ["/decode", "/encode"])
def test_malformed_bodies_are_400_never_500(server, path, body):
    answer = _post(server, path, body, Authorization=f"Bearer {TOKEN}", **{"Content-Type": "application/json"})
    assert answer.status_code < 500, answer.text
    assert answer.status_code in (200, 400, 422)
