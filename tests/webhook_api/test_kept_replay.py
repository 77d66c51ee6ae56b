"""Versioned mappings through the real API (server thread, real intake, ledger and Temporal client),
on SQLite and PostgreSQL: an unknown schema version is 422 ``unsupported-schema`` with a receipt and
its body kept (sealed when payload keys are set); an unsigned one leaves nothing; a replay after the
mapping learns the version admits once; the caps hold; only admins replay."""

from __future__ import annotations

import contextlib
import json
import uuid

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

import ledger
from intake.sources.schema_version import SchemaVersions
from ledger import KeptDelivery
from simulators import ServerThread
from sluicegate.temporal.codec import new_key
from sluicegate.config.settings import Settings
from starter import app as starter_app
from tests.support.ledger_rows import grown, table_counts
from tests.support.sims import settings_for
from tests.webhook_api.deliveries import STD_TYPE, ce_binary, cloud_event, pr_data, std_headers
from tests.webhook_api.server import fresh_pull, post, receipts
from webhook_api import create_app

ADMIN, OPERATOR = "dev-admin-token-carol", "dev-operator-token-alice"


def versioned(settings: Settings, accepted: list[str], **caps: int) -> Settings:
    """``stdhooks`` reads its version from the body's ``schema``, ``events`` from the CloudEvents
    extension attribute ``schemaversion``; both accept ``accepted``."""
    sources = dict(settings.sources)
    for name, path in (("stdhooks", "schema"), ("events", "/schemaversion")):
        mapping = sources[name].mapping.model_copy(
            update={"schema_versions": SchemaVersions(field=path, accepted=accepted)})
        sources[name] = sources[name].model_copy(update={"mapping": mapping})
    kept = settings.kept_deliveries.model_copy(update=caps)
    return settings.model_copy(update={"sources": sources, "kept_deliveries": kept})


@contextlib.contextmanager
def api(sims, temporal_env, url: str, accepted: list[str], env: dict[str, str] | None = None, **caps: int):
    settings = versioned(settings_for(sims, url, **(env or {})), accepted, **caps)
    server = ServerThread(create_app(settings, client=temporal_env.client, search_attributes=False),
                          name="webhook-api").start()
    try:
        yield server, settings
    finally:
        server.stop()


def std_versioned(s: Settings, pull, schema: str | None, msg_id: str | None = None, secret: str | None = None):
    doc = {"type": STD_TYPE, "data": pr_data(*pull)} | ({"schema": schema} if schema is not None else {})
    body = json.dumps(doc).encode()
    return std_headers(secret or s.sources["stdhooks"].secret, body, msg_id=msg_id), body


def kept_rows(url: str, delivery_id: str) -> list[KeptDelivery]:
    engine = ledger.make_engine(url)
    try:
        with Session(engine) as s:
            return list(s.exec(select(KeptDelivery).where(KeptDelivery.delivery_id == delivery_id)))
    finally:
        engine.dispose()


def replay(server, token: str, delivery_id: str, **extra):
    import httpx

    return httpx.post(f"{server.base_url}/v1/replays", json={"delivery_id": delivery_id, **extra},
                      headers={"Authorization": f"Bearer {token}"}, timeout=30)


@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "sealed"])
@pytest.mark.parametrize("kind", ["stdhooks", "events-binary"])
def test_an_unknown_version_is_422_with_a_receipt_and_its_body_kept(kind, sealed, sims, temporal_env,
                                                                   fresh_ledger_url):
    env = {"SLUICEGATE_PAYLOAD_KEY": new_key()} if sealed else {}
    with api(sims, temporal_env, fresh_ledger_url, ["1"], env) as (server, s):
        pull = fresh_pull(sims)
        if kind == "stdhooks":
            source, (headers, body) = "stdhooks", std_versioned(s, pull, "2")
            delivery_id = headers["webhook-id"]
        else:
            source = "events"
            headers, body = ce_binary(cloud_event(*pull, schemaversion="2"), s.sources["events"].secret)
            delivery_id = headers["ce-id"]
        reads = sims.forge_ctl("GET", "/stats").json()["total"]
        r = post(server, source, headers, body)
    answer = r.json()
    assert (r.status_code, answer["reason"], answer["kept"]) == (422, "unsupported-schema", True), r.text
    assert sims.forge_ctl("GET", "/stats").json()["total"] == reads  # decided before any forge read
    [receipt] = receipts(fresh_ledger_url, delivery_id)
    assert (receipt.id, receipt.outcome, receipt.reason, receipt.source) == (
        answer["receipt_id"], "reject", "unsupported-schema", source)
    [row] = kept_rows(fresh_ledger_url, delivery_id)
    assert (row.receipt_id, row.source, row.tenant) == (receipt.id, source, "acme")
    assert (row.key_id is not None) == sealed
    assert (body in row.body) != sealed  # sealed: the stored bytes are ciphertext
    assert "authorization" not in (row.meta.decode("latin-1") if not sealed else "")


def test_an_unsigned_delivery_with_a_bad_version_leaves_nothing(sims, temporal_env, fresh_ledger_url):
    with api(sims, temporal_env, fresh_ledger_url, ["1"]) as (server, s):
        before = table_counts(fresh_ledger_url)
        bad_secret = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY="
        r = post(server, "stdhooks", *std_versioned(s, fresh_pull(sims), "2", secret=bad_secret))
        forged_ce = ce_binary(cloud_event(*fresh_pull(sims), schemaversion="2"), "not-the-token-at-all")
        r2 = post(server, "events", *forged_ce)
    assert [(x.status_code, x.json()["reason"]) for x in (r, r2)] == [(401, "bad-signature")] * 2
    assert grown(before, table_counts(fresh_ledger_url)) == {}  # no receipt, no kept row


def test_a_replay_after_the_mapping_learns_the_version_admits_once(sims, temporal_env, fresh_ledger_url):
    delivery_id = f"msg_{uuid.uuid4().hex}"
    with api(sims, temporal_env, fresh_ledger_url, ["1"]) as (server, s):
        pull = fresh_pull(sims)
        first = post(server, "stdhooks", *std_versioned(s, pull, "2", msg_id=delivery_id))
        assert first.json()["reason"] == "unsupported-schema"
        early = replay(server, ADMIN, delivery_id)  # the mapping does not know "2" yet
        assert (early.status_code, early.json()["reason"], early.json()["replay_of"]) == (
            422, "unsupported-schema", first.json()["receipt_id"]), early.text
    with api(sims, temporal_env, fresh_ledger_url, ["1", "2"]) as (server, s):  # the mapping evolved
        r = replay(server, ADMIN, delivery_id, reason="mapping v2 deployed")
        assert (r.status_code, r.json()["reason"], r.json()["admitted"]) == (202, "admitted", True), r.text
        cli = CliRunner().invoke(starter_app, ["replay", delivery_id, "--api-url", server.base_url],
                                 env={"SLUICEGATE_ACTOR_TOKEN": ADMIN})
    again = json.loads(cli.stdout)
    assert (cli.exit_code, again["reason"], again["receipt_id"]) == (0, "duplicate-delivery", r.json()["receipt_id"])
    rows = receipts(fresh_ledger_url, delivery_id)
    assert [(x.outcome, x.reason) for x in rows] == [("reject", "unsupported-schema"), ("reject", "unsupported-schema"),
                                                   ("accept", "admitted")]
    assert (rows[-1].actor, rows[-1].source, rows[-1].id) == ("carol", "stdhooks", r.json()["receipt_id"])
    [row] = kept_rows(fresh_ledger_url, delivery_id)
    assert (row.replay_receipt_id, row.replayed_by) == (r.json()["receipt_id"], "carol")


def test_the_caps_bound_what_is_kept(sims, temporal_env, fresh_ledger_url):
    with api(sims, temporal_env, fresh_ledger_url, ["1"], max_body_bytes=150) as (server, s):
        headers, body = std_versioned(s, fresh_pull(sims), "2")
        assert len(body) > 150
        r = post(server, "stdhooks", headers, body)
    assert (r.status_code, r.json()["reason"], r.json()["kept"]) == (422, "unsupported-schema", False)
    [receipt] = receipts(fresh_ledger_url, headers["webhook-id"])
    assert "not kept" in receipt.message and kept_rows(fresh_ledger_url, headers["webhook-id"]) == []
    with api(sims, temporal_env, fresh_ledger_url, ["1"]) as (server, s):
        kept = post(server, "stdhooks", *std_versioned(s, fresh_pull(sims), "2")).json()
    [row] = kept_rows(fresh_ledger_url, kept["delivery_id"])
    with api(sims, temporal_env, fresh_ledger_url, ["1"], max_total_bytes=row.size_bytes + 100) as (server, s):
        full = post(server, "stdhooks", *std_versioned(s, fresh_pull(sims), "2")).json()
    assert (kept["kept"], full["kept"]) == (True, False)
    assert kept_rows(fresh_ledger_url, full["delivery_id"]) == []


def test_a_redelivery_keeps_a_body_its_first_delivery_could_not_and_writes_no_second_receipt(
        sims, temporal_env, fresh_ledger_url):
    """Found by an adversarial review of session 17's repeat answers: a repeat of an unsupported-schema
    delivery is answered from its first receipt (no row), and when that first copy was not kept (a cap
    full during the very rollout causing these rejects) the repeat keeps it, so a replay stays possible."""
    with api(sims, temporal_env, fresh_ledger_url, ["1"], max_body_bytes=150) as (server, s):
        headers, body = std_versioned(s, fresh_pull(sims), "2")
        first = post(server, "stdhooks", headers, body).json()
    assert (first["reason"], first["kept"]) == ("unsupported-schema", False)
    before = table_counts(fresh_ledger_url)
    with api(sims, temporal_env, fresh_ledger_url, ["1"]) as (server, s):  # the cap raised
        again = post(server, "stdhooks", headers, body).json()  # the sender's redelivery (same id)
    assert (again["reason"], again["receipt_id"], again["kept"]) == ("duplicate-delivery", first["receipt_id"], True)
    assert grown(before, table_counts(fresh_ledger_url)) == {"kept_deliveries": 1}
    [row] = kept_rows(fresh_ledger_url, headers["webhook-id"])
    assert row.receipt_id == first["receipt_id"]


def test_only_an_admin_replays(sims, temporal_env, fresh_ledger_url):
    with api(sims, temporal_env, fresh_ledger_url, ["1"]) as (server, s):
        delivery_id = post(server, "stdhooks", *std_versioned(s, fresh_pull(sims), "2")).json()["delivery_id"]
    with api(sims, temporal_env, fresh_ledger_url, ["1", "2"]) as (server, s):
        before = table_counts(fresh_ledger_url)
        nobody = replay(server, "not-a-configured-token", delivery_id)
        assert (nobody.status_code, nobody.json()["reason"]) == (401, "unauthorized-actor")
        assert grown(before, table_counts(fresh_ledger_url)) == {}
        operator = replay(server, OPERATOR, delivery_id)
        assert (operator.status_code, operator.json()["reason"]) == (403, "policy:replay-not-permitted"), operator.text
        unknown = replay(server, ADMIN, "msg_never_kept")
        assert (unknown.status_code, unknown.json()["reason"]) == (404, "bad-input")
    refusal = [x for x in receipts(fresh_ledger_url, delivery_id) if x.source == "replay"]
    assert [(x.actor, x.reason) for x in refusal] == [("alice", "policy:replay-not-permitted")]
    assert all(x.outcome != "accept" for x in receipts(fresh_ledger_url, delivery_id))
    [row] = kept_rows(fresh_ledger_url, delivery_id)
    assert row.replay_receipt_id is None


def test_a_replay_is_refused_when_its_source_moved_to_another_tenant(sims, temporal_env, fresh_ledger_url):
    with api(sims, temporal_env, fresh_ledger_url, ["1"]) as (server, s):
        delivery_id = post(server, "stdhooks", *std_versioned(s, fresh_pull(sims), "2")).json()["delivery_id"]
    [row] = kept_rows(fresh_ledger_url, delivery_id)
    assert row.tenant == "acme"
    moved = versioned(settings_for(sims, fresh_ledger_url), ["1", "2"])
    sources = dict(moved.sources)
    sources["stdhooks"] = sources["stdhooks"].model_copy(update={"tenant": "beta"})
    moved = moved.model_copy(update={"sources": sources})
    server = ServerThread(create_app(moved, client=temporal_env.client, search_attributes=False),
                          name="webhook-api").start()
    try:
        r = replay(server, ADMIN, delivery_id)  # carol is admin in acme, where the row was kept
    finally:
        server.stop()
    assert (r.status_code, r.json()["reason"]) == (409, "bad-input"), r.text
    assert "now belongs to tenant 'beta'" in r.json()["message"]
    assert all(x.outcome != "accept" for x in receipts(fresh_ledger_url, delivery_id))
    [row] = kept_rows(fresh_ledger_url, delivery_id)
    assert row.replay_receipt_id is None
