"""Every webhook endpoint under hostile input, through the real API (HTTP server thread,
intake, ledger on SQLite and PostgreSQL, Temporal test server).

Each request gets a clear answer: a 4xx with outcome/reason/message — and a receipt whenever
its sender was authenticated and it carried a usable delivery id, none otherwise — or, when it
was genuinely signed and well-formed, a decision (200/202). Never a 5xx. After each batch the
receipts are all in the ledger, the ledger holds no receipt beyond the answered ones (nothing
unauthenticated was written), and a valid delivery from every source is still admitted, so
nothing the fuzzer sent blocked real work.
"""

from __future__ import annotations

import httpx
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from sqlmodel import Session, select

import ledger
from demo.github_payloads import delivery_headers, encode, pull_request_payload
from ledger import Receipt
from tests.fuzz.strategies import FUZZ, any_request, authenticated, expected_delivery_id
from tests.support.ledger_rows import table_counts
from tests.webhook_api.deliveries import ce_binary, ce_structured, cloud_event, std_body, std_headers
from tests.webhook_api.server import fresh_pull, post, running_api

MAX_BODY = 65_536


class Batch:
    def __init__(self, server, settings, url: str) -> None:
        self.server, self.settings, self.url = server, settings, url
        self.client = httpx.Client(timeout=30)
        self.receipt_ids: list[str] = []
        self.receipts_before = table_counts(url)["receipts"]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def batch(request, sims, temporal_env):
    url = request.getfixturevalue(f"{request.param}_url")
    sims.reset()  # fixture heads: no fuzzed sha is current, so nothing fuzzed is admitted
    with running_api(sims, temporal_env, url, SLUICEGATE__WEBHOOK_API__MAX_BODY_BYTES=str(MAX_BODY)) as (server, s):
        b = Batch(server, s, url)
        yield b
        b.client.close()


def _wire(headers: dict[str, str]) -> dict[str, bytes]:
    return {k: v.encode("latin-1") for k, v in headers.items()}


@pytest.mark.parametrize("source", ["github", "stdhooks", "events"])
@FUZZ
@given(data=st.data())
def test_every_request_gets_a_clear_answer(batch, source, data):
    headers, body = data.draw(any_request(source))
    r = post(batch.server, source, _wire(headers), body, client=batch.client)
    assert r.status_code < 500, r.text
    answer = r.json()
    event(f"{r.status_code} {answer['reason']}")
    assert answer["outcome"] in ("accept", "reject", "no-work") and answer["reason"] and answer["message"]
    if r.status_code >= 400:
        assert r.status_code in (400, 401, 413, 415, 422), r.text
        assert answer["delivery_id"] == expected_delivery_id(source, headers, body, r.status_code), r.text
        assert (answer["receipt_id"] is None) == (answer["delivery_id"] is None), r.text
        if not authenticated(source, headers, body):
            assert answer["receipt_id"] is None, r.text
    else:
        assert answer["receipt_id"] is not None
    if answer["receipt_id"]:
        batch.receipt_ids.append(answer["receipt_id"])


def test_after_the_batch_receipts_are_stored_and_real_work_still_gets_in(batch, sims):
    engine = ledger.make_engine(batch.url)
    try:
        with Session(engine) as s:
            stored = set(s.exec(select(Receipt.id).where(Receipt.id.in_(batch.receipt_ids))).all())
    finally:
        engine.dispose()
    assert len(batch.receipt_ids) > 100 and stored == set(batch.receipt_ids)
    # A repeat (redelivery, replayed body) is answered with the original's receipt id and writes no row.
    assert table_counts(batch.url)["receipts"] - batch.receipts_before == len(set(batch.receipt_ids))
    src = batch.settings.sources
    for source in ("github", "stdhooks", "events-structured", "events-binary"):
        owner, repo, number, sha = fresh_pull(sims)
        if source == "github":
            body = encode(pull_request_payload(owner, repo, number, sha))
            headers = delivery_headers(src["github"].secret, body)
        elif source == "stdhooks":
            body = std_body(owner, repo, number, sha)
            headers = std_headers(src["stdhooks"].secret, body)
        else:
            build = ce_structured if source.endswith("structured") else ce_binary
            headers, body = build(cloud_event(owner, repo, number, sha), src["events"].secret)
        r = post(batch.server, source.split("-")[0], headers, body, client=batch.client)
        assert (r.status_code, r.json()["reason"]) == (202, "admitted"), (source, r.text)
