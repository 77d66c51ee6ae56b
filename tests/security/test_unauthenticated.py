"""Unauthenticated traffic costs a counter, not a row: forged, unsigned, garbled, oversize or
misaddressed requests leave nothing durable, call no model, post nothing, and are counted by
source and reason in the API's ``sluicegate.intake.unauthenticated`` metric."""

from __future__ import annotations

import uuid

import pytest

from tests.security.senders import cloudevent, github, manual, post, raw, stdhooks

pytestmark = [pytest.mark.attack, pytest.mark.e2e]


def _assert_refused_and_counted(target, sends, expected: dict[tuple[str, str], int], statuses: set[int]) -> None:
    counted = target.unauthenticated()
    before = target.observe()
    answers = [send() for send in sends]
    assert {r.status_code for r in answers} <= statuses, [r.text for r in answers]
    assert all(r.json()["receipt_id"] is None and r.json()["delivery_id"] is None for r in answers)
    assert target.changes(before, reads=True) == {}  # no row, no forge read, no model call, no comment
    assert target.wait_counted(counted, expected) == expected


def test_a_flood_of_forged_github_signatures(target):
    pull = target.new_pull()

    def forged():
        return post(target, "/webhooks/github", *github(target, pull, secret="attacker-secret-guess-0001"))
    _assert_refused_and_counted(target, [forged] * 60, {("github", "bad-signature"): 60}, {401})


def test_unsigned_and_garbled_headers(target):
    pull = target.new_pull()
    headers, body = github(target, pull)

    def without(*names, **replace):
        return lambda: post(target, "/webhooks/github", {k: v for k, v in headers.items() if k not in names}
                            | replace, body)
    sends = [without("x-hub-signature-256"), without("x-github-delivery"), without("x-github-event"),
             without(**{"x-hub-signature-256": ("sha256=" + "é" * 64).encode("latin-1")}),
             without(**{"x-hub-signature-256": "sha1=" + "0" * 40}),
             without(**{f"x-pad-{i}": "x" for i in range(120)}), without(**{"x-pad": "x" * 9000})]
    _assert_refused_and_counted(target, sends, {("github", "bad-signature"): 3, ("github", "bad-input"): 4},
                                {401, 431})


def test_oversize_webhook_bodies_are_refused_unread(target):
    cap = target.settings.webhook_api.max_body_bytes
    headers, _ = stdhooks(target, target.new_pull())

    def chunks():  # no Content-Length: only the streamed size gives it away
        for _ in range(cap // 65536 + 2):
            yield b" " * 65536
    sends = [lambda: post(target, "/webhooks/stdhooks", headers, b" " * (cap + 1)),
             lambda: post(target, "/webhooks/stdhooks", headers, chunks())]
    _assert_refused_and_counted(target, sends, {("stdhooks", "bad-input"): 2}, {413})


def test_made_up_sources_share_one_metric_label(target):
    headers, body = github(target, target.new_pull())
    sends = [lambda name=name: post(target, f"/webhooks/{name}", headers, body)
             for name in ("githubb", "%2e%2e", "%00", uuid.uuid4().hex, "x" * 300)]
    _assert_refused_and_counted(target, sends, {("unknown", "unknown-source"): 5}, {401})


def test_wrong_or_empty_bearer_tokens(target):
    pull = target.new_pull()
    body = {"repository": f"{pull[0]}/{pull[1]}", "number": pull[2], "reason": "let me in"}
    sends = [lambda: post(target, "/webhooks/events", *cloudevent(target, pull, token="")),
             lambda: post(target, "/webhooks/events", *cloudevent(target, pull, token="not-the-token-0000")),
             lambda: post(target, "/webhooks/events", *cloudevent(target, pull, binary=False, token="x")),
             lambda: manual(target, None, body), lambda: manual(target, "guess-guess-guess-0", body),
             lambda: post(target, "/v1/triggers/manual", {"authorization": "Bearer", "content-type": "application/json"},
                          b"{}"),
             lambda: post(target, "/v1/triggers/manual", {"authorization": "Basic YWxpY2U6", "content-type":
                                                          "application/json"}, b"{}")]
    _assert_refused_and_counted(target, sends, {("events", "bad-signature"): 3, ("manual", "unauthorized-actor"): 4},
                                {401})


def test_a_60_mb_manual_body_without_a_token_is_never_read(target):
    """Answered after the first 64 KiB: declared too large (413), or, streamed without a length,
    refused for its missing token (401) — the rest of the 60 MB never has to be sent."""
    peak = target.api_memory_kib()["VmHWM"]
    counted = target.unauthenticated()
    before = target.observe()
    declared = raw(target, f"POST /v1/triggers/manual HTTP/1.1\nHost: x\nContent-Type: application/json\n"
                           f"Content-Length: {60 * 2**20}\n", b"A" * 65536)
    streamed = raw(target, "POST /v1/triggers/manual HTTP/1.1\nHost: x\nContent-Type: application/json\n"
                           "Transfer-Encoding: chunked\n", b"10000\r\n" + b"A" * 65536 + b"\r\n")
    assert (declared[0], streamed[0]) == (413, 401) and b"AAAA" not in declared[1] + streamed[1]
    assert target.changes(before, reads=True) == {}
    expected = {("manual", "bad-input"): 1, ("manual", "unauthorized-actor"): 1}
    assert target.wait_counted(counted, expected) == expected
    assert target.api_memory_kib()["VmHWM"] - peak < 20 * 1024  # nothing was buffered
