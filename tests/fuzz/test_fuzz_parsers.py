"""Envelope normalization under hostile input, per source kind (pure, no server).

A parser is *total*: it returns a ParsedDelivery or raises InvalidDelivery with a 4xx, never
anything else, and every value it hands on fits the receipt columns (PostgreSQL refuses
over-long text and NUL characters, SQLite does not, so this is checked here, not left to
the backend a test happens to use). The verify stage agrees with an independent check of the
signature or token (``strategies.authenticated``): nothing unauthenticated reaches the parse stage.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from intake.errors import InvalidDelivery
from intake.sources import ParsedDelivery
from ledger import Receipt
from tests.fuzz.strategies import FUZZ, SOURCES, any_request, authenticated, expected_delivery_id
from webhook_api._sources import authenticate, normalize

COLUMNS = {c.name: c.type.length for c in Receipt.__table__.columns if getattr(c.type, "length", None)}


def _fits(column: str, value: str | None) -> bool:
    if value is None:
        return True
    return len(value) <= COLUMNS[column] and not any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value)


def _check(source: str, headers: dict[str, str], body: bytes) -> None:
    try:
        verified = authenticate(SOURCES[source], headers, body)
    except InvalidDelivery as err:  # unauthenticated: the API records nothing, whatever the error holds
        event(f"unauthenticated {err.http_status} {err.reason}")
        assert err.http_status in (400, 401) and "\x00" not in err.message, err
        assert not authenticated(source, headers, body), err
        return
    assert authenticated(source, headers, body)
    try:
        parsed = normalize(source, SOURCES[source], verified, headers, body, datetime.now(UTC))
    except InvalidDelivery as err:
        event(f"{err.http_status} {err.reason}: {err.message[:40]}")
        assert 400 <= err.http_status < 500 and err.http_status != 413, err
        assert err.message and _fits("delivery_id", err.delivery_id) and _fits("event_type", err.event_type)
        assert "\x00" not in err.message
        assert err.delivery_id == expected_delivery_id(source, headers, body, err.http_status), err
        return
    assert isinstance(parsed, ParsedDelivery) and parsed.max_age_seconds == SOURCES[source].max_age_seconds
    env, cand = parsed.envelope, parsed.candidate
    event("candidate" if cand else "no-work")
    assert env.source == source and env.id == expected_delivery_id(source, headers, body, 200)
    assert _fits("delivery_id", env.id) and _fits("event_type", env.type) and _fits("subject", env.subject)
    assert env.time is None or env.time.utcoffset() == timedelta(0)
    if cand is not None:
        assert _fits("work_key", cand.work_key) and _fits("target_id", cand.target.target_id)
        assert _fits("input_version", cand.input_version) and cand.work_key.startswith("github:")


@pytest.mark.parametrize("source", ["github", "stdhooks", "events"])
@settings(FUZZ, max_examples=400)
@given(data=st.data())
def test_parsers_are_total_and_bounded(source, data):
    headers, body = data.draw(any_request(source))
    _check(source, headers, body)
