"""Hypothesis strategies: hostile requests for each source of temporal-dev.yaml.

Three families per source: *noise* (random headers from the source's own vocabulary and
from anywhere, random bytes, deep or huge JSON, wrong content types, wrong signature
encodings, timestamps far off); *signed* (a genuine signature over a payload that was
mutated: missing and extra fields, unicode keys, wrong types); and, as a special case of
signed with no mutation drawn, well-formed deliveries that must get a 2xx decision.
Header values stay within what HTTP can carry (latin-1, no control characters), so the
same requests go to the pure parsers and over the wire.
"""

from __future__ import annotations

import copy
import hmac
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from standardwebhooks import Webhook

from demo.github_payloads import delivery_headers, pull_request_payload, sign
from intake.errors import InvalidDelivery
from intake.sources._common import decode_json, delivery_id_from, identity_text, media_type
from intake.sources.cloudevents_source import STRUCTURED
from sluicegate.config.settings import DEFAULT_CONFIG_FILE, load_settings
from tests.webhook_api.deliveries import CE_TYPE, STD_TYPE, pr_data, std_headers

FUZZ = settings(max_examples=200, derandomize=True, deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example])
SOURCES = load_settings(DEFAULT_CONFIG_FILE, env={}).sources
ID_HEADER = {"github": "x-github-delivery", "stdhooks": "webhook-id", "events": "ce-id"}
VOCABULARY = {
    "github": ["x-github-delivery", "x-github-event", "x-hub-signature-256"],
    "stdhooks": ["webhook-id", "webhook-timestamp", "webhook-signature"],
    "events": ["ce-id", "ce-source", "ce-type", "ce-specversion", "ce-time", "ce-subject", "authorization"],
}
Request = tuple[dict[str, str], bytes]

header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
                      max_size=300).map(str.strip)
ids = st.one_of(st.uuids().map(str), header_text, st.integers(250, 300).map(lambda n: "d" * n))
content_types = st.sampled_from([
    "application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "text/plain", "",
    "application/x-www-form-urlencoded", STRUCTURED, "application/cloudevents-batch+json",
    "multipart/form-data; boundary=x", "application/vnd.acme+json"]) | header_text
offsets = st.one_of(st.just(0), st.integers(-299, 299), st.integers(-6 * 10**9, 6 * 10**9))
timestamps = st.one_of(offsets.map(lambda s: str(int(datetime.now(UTC).timestamp()) + s)),
                       st.sampled_from(["nan", "inf", "-1", "1e300", "0x10", "", "yesterday"]), header_text)
_ZONES = st.sampled_from([UTC, timezone(timedelta(hours=14)), timezone(-timedelta(hours=12)), None])
event_times = st.one_of(
    offsets.map(lambda s: (datetime.now(UTC) + timedelta(seconds=s)).isoformat()),
    # hypothesis takes naive bounds and adds the zone itself (None among _ZONES: naive times too)
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=_ZONES).map(  # noqa: DTZ001
        datetime.isoformat),
    st.sampled_from(["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-05:00", "2026-13-45T00:00:00Z", "now"]))
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40))
json_values = st.recursive(json_scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=12), c,
                                                                                               max_size=4),
                           max_leaves=10)
deep = st.one_of(st.integers(1, 5000).map(lambda n: b"[" * n + b"]" * n),
                 st.integers(1, 300).map(lambda n: b'{"k":' * n + b"0" + b"}" * n))
huge = st.integers(66_000, 90_000).map(lambda n: json.dumps({"pad": "x" * n}).encode())
noise_bodies = st.one_of(st.binary(max_size=512), deep, huge, json_values.map(lambda v: json.dumps(v).encode()),
                         st.text(max_size=200).map(str.encode))


def _secret(source: str) -> str:
    return SOURCES[source].secret


def _bad_signatures(source: str) -> st.SearchStrategy[str]:
    token = _secret(source)
    by_source = {
        "github": ["sha256=" + "ab" * 32, "sha1=" + "0" * 40, "sha256=" + "AB" * 32, "sha256=", "sha256=zz",
                   "sha256=" + "é" * 64, token],
        "stdhooks": ["v1," + "ab" * 32, "v1,", "v1", "v1,abc", "v2,Zm9v", "v1a,Zm9v v1,Zm9v", "v1,é", "  ", token],
        "events": ["Bearer", "Bearer ", f"Basic {token}", token, f"bearer {token} x", f"Bearer {token}é"],
    }[source]
    return st.sampled_from(by_source) | header_text


def _value_for(source: str, name: str) -> st.SearchStrategy[str]:
    if name == ID_HEADER[source]:
        return ids
    if name in ("x-hub-signature-256", "webhook-signature", "authorization"):
        return _bad_signatures(source)
    if name in ("webhook-timestamp", "ce-time"):
        return timestamps
    return header_text


@st.composite
def noise_request(draw, source: str) -> Request:
    names = draw(st.lists(st.sampled_from([*VOCABULARY[source], "content-type", "x-extra"]), unique=True))
    headers = {name: draw(content_types if name == "content-type" else _value_for(source, name)).strip()
               for name in names}  # HTTP carries no leading/trailing whitespace
    return headers, draw(noise_bodies)


@st.composite
def mutated(draw, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with 0-3 random edits: a field set to any JSON value, deleted, or added."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(0, 3))):
        target = draw(st.sampled_from(list(_objects(doc))))
        op = draw(st.sampled_from(("set", "delete", "add")))
        if op == "add" or not target:
            target[draw(st.text(max_size=12))] = draw(json_values)
        elif op == "delete":
            del target[draw(st.sampled_from(sorted(target)))]
        else:
            target[draw(st.sampled_from(sorted(target)))] = draw(json_values)
    return doc


def _objects(doc: dict[str, Any]):
    yield doc
    for value in doc.values():
        if isinstance(value, dict):
            yield from _objects(value)


def _encode(draw, doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=draw(st.booleans())).encode()


SHAS = st.sampled_from(["f" * 40, "0" * 40]) | st.text(max_size=140)


@st.composite
def signed_request(draw, source: str) -> Request:
    """A genuinely signed/authenticated request whose content may be anything."""
    # "fuzz-": a delivery decided here is recorded in a ledger other tests may share (PostgreSQL)
    delivery_id = "fuzz-" + draw(st.uuids().map(str) | ids)
    if source == "github":
        action = draw(st.sampled_from(["opened", "synchronize", "labeled", "closed"]) | st.text(max_size=70))
        body = _encode(draw, draw(mutated(pull_request_payload("acme", "api", 44, draw(SHAS), action=action))))
        event = draw(st.sampled_from(["pull_request", "pull_request", "ping", "issues"]) | header_text)
        headers = delivery_headers(_secret(source), body, event=event, delivery_id=delivery_id)
    elif source == "stdhooks":
        doc = {"type": draw(st.sampled_from([STD_TYPE, "pull_request.labeled"]) | st.text(max_size=140)),
               "timestamp": draw(event_times), "data": pr_data("acme", "api", 44, draw(SHAS))}
        body = _encode(draw, draw(mutated(doc)))
        at = datetime.now(UTC) + timedelta(seconds=draw(offsets))
        headers = std_headers(draw(st.sampled_from(SOURCES[source].secret_values())), body, msg_id=delivery_id, at=at)
    else:
        attributes = {"id": delivery_id, "source": "//forge.example", "specversion": "1.0",
                      "type": draw(st.sampled_from([CE_TYPE, "dev.other"]) | st.text(max_size=140)),
                      "time": draw(event_times)}
        data = draw(mutated(pr_data("acme", "api", 44, draw(SHAS))))
        if draw(st.booleans()):
            body = _encode(draw, draw(mutated(attributes | {"data": data})))
            headers = {"content-type": STRUCTURED}
        else:
            body = _encode(draw, data)
            headers = {f"ce-{k.lower()}": quote(v if isinstance(v, str) else json.dumps(v))
                       for k, v in draw(mutated(attributes)).items() if re.fullmatch(r"[A-Za-z0-9_-]{1,40}", k)}
            headers["content-type"] = "application/json"
        headers["authorization"] = f"Bearer {draw(st.sampled_from(SOURCES[source].secret_values()))}"
    if draw(st.integers(0, 9)) == 0:
        headers["content-type"] = draw(content_types)
    return headers, body


@st.composite
def signed_noise_request(draw, source: str) -> Request:
    """A genuine signature (or token) over a body that is not the expected JSON at all."""
    body, delivery_id = draw(noise_bodies), "fuzz-" + draw(st.uuids().map(str))
    if source == "github":
        return delivery_headers(_secret(source), body, delivery_id=delivery_id), body
    if source == "stdhooks":
        return std_headers(_secret(source), body, msg_id=delivery_id), body
    headers = {"authorization": f"Bearer {_secret(source)}", "content-type": draw(st.sampled_from(
        [STRUCTURED, "application/json"]))}
    if headers["content-type"] != STRUCTURED:
        headers |= {"ce-id": delivery_id, "ce-source": "/s", "ce-type": CE_TYPE, "ce-specversion": "1.0"}
    return headers, body


def any_request(source: str) -> st.SearchStrategy[Request]:
    return st.one_of(noise_request(source), signed_request(source), signed_noise_request(source))


def authenticated(source: str, headers: dict[str, str], body: bytes) -> bool:
    """Whether the request proves its sender, checked here independently of the parsers."""
    secrets = SOURCES[source].secret_values()
    if source == "github":
        signature = headers.get("x-hub-signature-256", "").strip()
        return (delivery_id_from(headers, "x-github-delivery") is not None
                and identity_text((headers.get("x-github-event") or "").strip(), 128) is not None
                and any(hmac.compare_digest(signature.encode("latin-1"), sign(s, body).encode()) for s in secrets))
    if source == "stdhooks":
        msg_id = delivery_id_from(headers, "webhook-id")
        signed = {k: headers.get(k, "") for k in ("webhook-timestamp", "webhook-signature")} | {"webhook-id": msg_id}
        for secret in secrets:
            try:
                Webhook(secret).verify(body.decode("utf-8"), signed, json_parse=False)
                return msg_id is not None
            except Exception:  # noqa: BLE001 - any failure: not this secret
                continue
        return False
    scheme, _, token = (headers.get("authorization") or "").strip().partition(" ")
    return scheme.lower() == "bearer" and token.strip() in [s for s in secrets if s]


def expected_delivery_id(source: str, headers: dict[str, str], body: bytes, status: int) -> str | None:
    """The delivery id a rejection must carry (and write a receipt under), derived from the request:
    none at all when the sender was not authenticated or the body was never read (413)."""
    if status == 413 or not authenticated(source, headers, body):
        return None
    if source != "events":
        return delivery_id_from(headers, ID_HEADER[source])
    if media_type(headers) != STRUCTURED:
        return delivery_id_from(headers, "ce-id") if any(k.startswith("ce-") for k in headers) else None
    try:
        return identity_text(decode_json(body, None, None).get("id"), 256)
    except InvalidDelivery:
        return None
