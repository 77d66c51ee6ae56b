"""Forge simulator: fault injection (status, hang, after_commit, times, stall mid-body, accept)."""

from __future__ import annotations

import concurrent.futures
import json
import time

import httpx
import pytest

COMMENTS = "/repos/acme/api/issues/42/comments"


def _fault(client: httpx.Client, **spec: object) -> dict:
    response = client.post("/_sim/faults", json=spec)
    assert response.status_code == 201, response.text
    return response.json()


def test_status_fault_skips_the_operation(forge_http: httpx.Client) -> None:
    _fault(forge_http, method="POST", path=r"/issues/\d+/comments$", status=503, retry_after=7)
    failed = forge_http.post(COMMENTS, json={"body": "first"})
    assert failed.status_code == 503
    assert failed.headers["retry-after"] == "7"
    assert "message" in failed.json()
    assert forge_http.get("/_sim/comments").json() == []
    ok = forge_http.post(COMMENTS, json={"body": "second"})  # times defaults to 1
    assert ok.status_code == 201
    assert [c["body"] for c in forge_http.get("/_sim/comments").json()] == ["second"]


def test_fault_only_matches_method_and_path(forge_http: httpx.Client) -> None:
    _fault(forge_http, method="POST", path="/pulls/", status=500)
    assert forge_http.get("/repos/acme/api/pulls/42").status_code == 200  # wrong method
    assert forge_http.post(COMMENTS, json={"body": "x"}).status_code == 201  # wrong path
    assert len(forge_http.get("/_sim/faults").json()) == 1


def test_times_counts_down_and_null_is_forever(forge_http: httpx.Client) -> None:
    _fault(forge_http, method="GET", path="/pulls/42$", status=502, times=2)
    codes = [forge_http.get("/repos/acme/api/pulls/42").status_code for _ in range(3)]
    assert codes == [502, 502, 200]
    _fault(forge_http, path="/pulls/44$", status=500, times=None)
    assert {forge_http.get("/repos/acme/api/pulls/44").status_code for _ in range(4)} == {500}


def test_after_commit_hang_stores_comment_but_client_times_out(forge_http: httpx.Client) -> None:
    _fault(forge_http, method="POST", path="/comments$", hang_seconds=1.5, after_commit=True)
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        forge_http.post(COMMENTS, json={"body": "did it land?"}, timeout=0.3)
    assert time.monotonic() - started < 1.5
    assert [c["body"] for c in forge_http.get("/_sim/comments").json()] == ["did it land?"]
    assert forge_http.get("/_sim/stats").json()["comments_posted"] == 1


def test_after_commit_status_stores_comment_then_fails(forge_http: httpx.Client) -> None:
    _fault(forge_http, method="POST", path="/comments$", status=500, after_commit=True)
    response = forge_http.post(COMMENTS, json={"body": "stored anyway"})
    assert response.status_code == 500
    assert [c["body"] for c in forge_http.get(COMMENTS).json()] == ["stored anyway"]


def test_hang_before_commit_delays_then_fails_without_storing(forge_http: httpx.Client) -> None:
    _fault(forge_http, method="POST", path="/comments$", status=504, hang_seconds=0.3)
    started = time.monotonic()
    response = forge_http.post(COMMENTS, json={"body": "never stored"})
    assert response.status_code == 504
    assert time.monotonic() - started >= 0.3
    assert forge_http.get(COMMENTS).json() == []


def test_single_use_fault_is_consumed_once_under_concurrency(forge_http: httpx.Client) -> None:
    _fault(forge_http, method="GET", path="/pulls/7$", status=500, times=1)

    def fetch(_: int) -> int:
        return forge_http.get("/repos/acme/web/pulls/7").status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(fetch, range(16)))
    assert sorted(codes).count(500) == 1 and codes.count(200) == 15


def test_list_and_clear_faults(forge_http: httpx.Client) -> None:
    first = _fault(forge_http, status=500, times=None)
    second = _fault(forge_http, hang_seconds=0.1)
    assert [f["id"] for f in forge_http.get("/_sim/faults").json()] == [first["id"], second["id"]]
    assert forge_http.delete("/_sim/faults").json() == {"cleared": 2}
    assert forge_http.get("/repos/acme/api/pulls/42").status_code == 200


@pytest.mark.parametrize(
    "spec",
    [{}, {"status": 200}, {"status": 500, "times": 0}, {"path": "(", "status": 500}, {"status": 500, "hang": 1},
     {"hang_seconds": -1}, {"status": 500, "after_commit": "yes"}, {"stall_after_bytes": 10},
     {"stall_after_bytes": 10, "hang_seconds": 1, "status": 500},
     {"stall_after_bytes": 10, "hang_seconds": 1, "after_commit": True}, {"status": 500, "accept": 3}],
)  # fmt: skip
def test_bad_fault_specs_are_rejected(forge_http: httpx.Client, spec: dict) -> None:
    response = forge_http.post("/_sim/faults", json=spec)
    assert response.status_code == 400
    assert forge_http.get("/_sim/faults").json() == []


DIFF_TYPE = "application/vnd.github.diff"


def test_stall_sends_the_first_bytes_then_holds_the_rest_back(forge_http: httpx.Client) -> None:
    diff = forge_http.get("/repos/acme/api/pulls/42", headers={"Accept": DIFF_TYPE}).content
    _fault(forge_http, method="GET", path="/pulls/42$", stall_after_bytes=50, hang_seconds=30)
    received = bytearray()
    with pytest.raises(httpx.ReadTimeout):
        with forge_http.stream("GET", "/repos/acme/api/pulls/42", headers={"Accept": DIFF_TYPE},
                               timeout=httpx.Timeout(10, read=0.5)) as response:
            assert response.status_code == 200
            for chunk in response.iter_raw():
                received += chunk
    assert bytes(received) == diff[:50]


def test_a_stall_that_ends_delivers_the_whole_body(forge_http: httpx.Client) -> None:
    diff = forge_http.get("/repos/acme/api/pulls/42", headers={"Accept": DIFF_TYPE}).content
    _fault(forge_http, method="GET", path="/pulls/42$", stall_after_bytes=50, hang_seconds=0.1)
    assert forge_http.get("/repos/acme/api/pulls/42", headers={"Accept": DIFF_TYPE}).content == diff


def test_accept_narrows_a_fault_to_one_media_type(forge_http: httpx.Client) -> None:
    _fault(forge_http, method="GET", path="/pulls/42$", accept=DIFF_TYPE, status=502)
    assert forge_http.get("/repos/acme/api/pulls/42").status_code == 200  # the JSON read
    assert forge_http.get("/repos/acme/api/pulls/42", headers={"Accept": DIFF_TYPE}).status_code == 502


def test_release_ends_the_hangs_and_stalls_under_way_now_and_not_later_ones(forge_http: httpx.Client) -> None:
    assert forge_http.post("/_sim/faults/release").json() == {"released": 0}
    _fault(forge_http, method="POST", path="/comments$", status=504, hang_seconds=300)
    _fault(forge_http, method="GET", path="/pulls/42$", stall_after_bytes=50, hang_seconds=300)

    def stalled_read() -> bytes:
        with forge_http.stream("GET", "/repos/acme/api/pulls/42", timeout=60) as response:
            return b"".join(response.iter_bytes())

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        hung = pool.submit(forge_http.post, COMMENTS, json={"body": "x"}, timeout=60)
        stalled = pool.submit(stalled_read)
        released, deadline = 0, time.monotonic() + 60
        while not (hung.done() and stalled.done()):  # released as each reaches its wait (each once)
            assert time.monotonic() < deadline, "the held requests were not released"
            released += forge_http.post("/_sim/faults/release").json()["released"]
            time.sleep(0.05)
        assert released == 2
        assert hung.result().status_code == 504  # answered as its fault says, long before 300 s
        assert forge_http.get("/repos/acme/api/pulls/42").json() == json.loads(stalled.result())
    _fault(forge_http, method="GET", path="/pulls/42$", hang_seconds=300)  # a hang that starts after the release
    with pytest.raises(httpx.ReadTimeout):
        forge_http.get("/repos/acme/api/pulls/42", timeout=0.5)
    assert forge_http.post("/_sim/faults/release").json() == {"released": 1}  # it was still waiting
