"""Streams of signed GitHub deliveries for the drills, and the checks every stream drill shares.

A stream is built up front (pure: a seeded RNG, no I/O) and sent through the real webhook API
with K requests in flight. Three kinds of delivery:

* ``original`` -- the first delivery for a pull request version;
* ``redelivery`` -- the same bytes under the same ``X-GitHub-Delivery`` (GitHub's "redeliver");
* ``duplicate`` -- a new event for the same version (new delivery id, its own body).

The sender can play GitHub's redeliver button: a delivery answered 5xx (or whose connection
dropped) is sent again, same bytes and id, until it is answered below 500 or a deadline passes.
Every HTTP call is timed; the figures are read from what was answered, the invariants from the
ledger and the forge simulator.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
from sqlmodel import Session, select

from bench._common import percentile
from demo.github_payloads import delivery_headers, pull_request_payload
from demo.outcome import TERMINAL
from drills._harness import DrillReport, versions
from intake.envelope import PullRequestRef
from intake.identity import review_work_key
from ledger import Receipt, WorkVersion, make_engine
from sluicegate.devstack import DevStack, StackHttp

TENANT = "acme"
"""The tenant of the dev configuration's ``github`` source (it serves ``acme/*``)."""
NO_CAPACITY_LIMITS = {f"SLUICEGATE__CAPACITY__{k}": "100000" for k in (
    "GLOBAL_ACTIVE_RUNS", "CONCURRENCY_LIMIT", "TENANT_DEFAULTS__MAX_ACTIVE_RUNS",
    "TENANT_DEFAULTS__ADMISSIONS_PER_DAY", "TENANT_DEFAULTS__RATE_PER_SECOND", "TENANT_DEFAULTS__BURST")}
"""A stream drill measures intake and recovery, not the dev configuration's capacity limits."""


@dataclass(frozen=True)
class Pull:
    repo: str
    number: int
    sha: str

    @property
    def work_key(self) -> str:
        owner, name = self.repo.split("/")
        return review_work_key(TENANT, PullRequestRef(owner, name, self.number))


@dataclass
class Delivery:
    index: int
    kind: str
    pull: Pull
    delivery_id: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Answer:
    delivery: Delivery
    status: int | None = None
    body: dict = field(default_factory=dict)
    tries: int = 0
    failures: list[str] = field(default_factory=list)
    """What each answer at or above 500 (or dropped connection) was, in order: ``503``, ``ConnectError``."""
    latencies: list[float] = field(default_factory=list)

    @property
    def decided(self) -> bool:
        return self.status is not None and self.status < 500

    @property
    def label(self) -> str:
        return f"{self.status} {self.body.get('outcome')}/{self.body.get('reason')}"


def sha_for(*parts: object) -> str:
    return hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()


def open_pulls(web: StackHttp, repo: str, count: int, first: int = 1) -> list[Pull]:
    """``count`` open pull requests on the forge simulator, each at a head of its own."""
    pulls = [Pull(repo, n, sha_for(repo, n, uuid.uuid4().hex)) for n in range(first, first + count)]
    for p in pulls:
        web.put_pull(p.repo, p.number, p.sha)
    return pulls


def build_stream(secret: str, pulls: list[Pull], total: int, redeliver_share: float, seed: int) -> list[Delivery]:
    """One original per pull request, then redeliveries (``redeliver_share``) and same-version
    duplicates up to ``total``, in a seeded shuffled order (a copy may race its original)."""
    rng = random.Random(seed)
    stamp = datetime.now(UTC)
    out: list[Delivery] = []

    def event(kind: str, pull: Pull) -> Delivery:
        payload = pull_request_payload(*pull.repo.split("/"), pull.number, pull.sha,
                                       action="opened" if kind == "original" else "synchronize", updated_at=stamp)
        payload["drill_event"] = len(out)  # a distinct event: the same bytes under a new id would be a replay
        body = json.dumps(payload).encode()
        did = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        return Delivery(len(out), kind, pull, did, delivery_headers(secret, body, delivery_id=did), body)

    for p in pulls:
        out.append(event("original", p))
    while len(out) < total:
        if rng.random() < redeliver_share:
            o = rng.choice(out)
            out.append(Delivery(len(out), "redelivery", o.pull, o.delivery_id, o.headers, o.body))
        else:
            out.append(event("duplicate", rng.choice(pulls)))
    rng.shuffle(out)
    return out


async def send_all(api: str, deliveries: list[Delivery], in_flight: int, redeliver_5xx: bool = False,
                   give_up_after: float = 300.0, pace: float = 0.0, answers: list[Answer] | None = None
                   ) -> list[Answer]:
    """Send every delivery with ``in_flight`` senders. ``redeliver_5xx``: a delivery answered 5xx (or
    dropped) is sent again later, with backoff, until answered below 500 or ``give_up_after`` seconds
    after its first send; the stream goes on meanwhile, as GitHub's does. ``pace``: seconds each sender
    waits between deliveries (a stream that lasts, not a burst). ``answers``: filled in place (another
    thread may watch the progress)."""
    if answers is None:
        answers = [Answer(d) for d in deliveries]
    fresh = iter(answers)
    again: list[tuple[float, float, Answer]] = []  # (due, deadline, answer), redeliveries waiting
    busy = 0
    # Each delivery on a connection of its own, as GitHub sends them (and no keep-alive race with the server).
    limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=0)
    start = time.perf_counter()

    def take() -> tuple[Answer, float] | None:
        now = time.monotonic()
        for i, (due, deadline, a) in enumerate(again):
            if due <= now:
                del again[i]
                return a, deadline
        a = next(fresh, None)
        return None if a is None else (a, now + give_up_after)

    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        async def post(a: Answer) -> None:
            a.tries += 1
            t = time.perf_counter()
            try:
                r = await http.post(api, content=a.delivery.body, headers=a.delivery.headers)
                a.status, a.body = r.status_code, _json(r)
                if r.status_code >= 500:
                    a.failures.append(str(r.status_code))
            except httpx.HTTPError as exc:
                a.status, a.body = None, {}
                a.failures.append(f"{type(exc).__name__} after {time.perf_counter() - t:.2f} s"
                                  f" at +{time.perf_counter() - start:.1f} s")
            a.latencies.append(time.perf_counter() - t)

        async def sender() -> None:
            nonlocal busy
            while True:
                got = take()
                if got is None:
                    if not busy and not again:
                        return
                    await asyncio.sleep(0.05)
                    continue
                a, deadline = got
                busy += 1
                try:
                    await post(a)
                    if not a.decided and redeliver_5xx and time.monotonic() < deadline:
                        again.append((time.monotonic() + min(4.0, 0.25 * 2 ** a.tries), deadline, a))
                finally:
                    busy -= 1
                if pace:
                    await asyncio.sleep(pace)

        await asyncio.gather(*(sender() for _ in range(in_flight)))
    return answers


def _json(r: httpx.Response) -> dict:
    try:
        data = r.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class Background:
    """``send_all`` in a thread of its own, so a drill can inject faults while the stream runs."""

    def __init__(self, stack: DevStack, deliveries: list[Delivery], in_flight: int, **kwargs) -> None:
        self.answers = [Answer(d) for d in deliveries]
        self.seconds = 0.0
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(api_url(stack), deliveries, in_flight),
                                        kwargs={**kwargs, "answers": self.answers}, daemon=True)

    @property
    def sent(self) -> int:
        """Deliveries sent at least once so far."""
        return sum(a.tries > 0 for a in self.answers)

    def _run(self, *args, **kwargs) -> None:
        t = time.monotonic()
        try:
            asyncio.run(send_all(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - reported by the drill as a failed check
            self.error = exc
        self.seconds = time.monotonic() - t

    def start(self) -> "Background":
        self._thread.start()
        return self

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()


def send(stack: DevStack, deliveries: list[Delivery], in_flight: int, **kw) -> tuple[list[Answer], float]:
    t = time.monotonic()
    answers = asyncio.run(send_all(api_url(stack), deliveries, in_flight, **kw))
    return answers, time.monotonic() - t


def few(items: list, n: int = 5) -> str:
    """A failed check's detail: how many, and the first few."""
    return f"{len(items)}: " + ", ".join(map(str, items[:n])) if items else ""


def api_url(stack: DevStack) -> str:
    s = stack.settings
    return f"http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github"


def throughput(report: DrillReport, answers: list[Answer], seconds: float) -> None:
    lat = [x for a in answers for x in a.latencies]
    calls = sum(a.tries for a in answers)
    report.figure(f"{len(answers)} deliveries ({calls} HTTP calls) in {seconds:.1f} s = "
                  f"{len(answers) / seconds:.1f} deliveries/s; latency p50 {percentile(lat, 50) * 1000:.0f} ms, "
                  f"p95 {percentile(lat, 95) * 1000:.0f} ms, max {max(lat) * 1000:.0f} ms")
    report.figure("answers: " + ", ".join(f"{k} x{n}" for k, n in sorted(Counter(a.label for a in answers).items())))


def check_answers(report: DrillReport, stack: DevStack, answers: list[Answer]) -> None:
    """Every delivery decided (below 500), each with a receipt the ledger holds."""
    undecided = [f"#{a.delivery.index}: {a.failures[-3:]}" for a in answers if not a.decided]
    report.check("every delivery decided (answered below 500)", not undecided,
                 few(undecided))
    engine = make_engine(stack.settings.ledger_url())
    with Session(engine) as s:
        held = set(s.exec(select(Receipt.id).where(Receipt.source == "github")))
    engine.dispose()
    missing = [a.delivery.index for a in answers if a.decided and a.body.get("receipt_id") not in held]
    report.check("every decided delivery answered with a receipt the ledger holds", not missing,
                 few(missing))


def wait_finished(stack: DevStack, pulls: list[Pull], timeout: float) -> list[WorkVersion]:
    """Wait until each pull's version exists and finished; returns the versions of these pulls."""
    want = {(p.work_key, p.sha) for p in pulls}
    deadline = time.monotonic() + timeout
    while True:
        rows = [v for v in versions(stack) if (v.work_key, v.input_version) in want]
        if (len(rows) == len(want) and all(v.status in TERMINAL for v in rows)) or time.monotonic() > deadline:
            return rows
        time.sleep(0.5)


def check_reviews(report: DrillReport, stack: DevStack, web: StackHttp, pulls: list[Pull], rows: list[WorkVersion],
                  label: str = "") -> None:
    """Every version reached a final status, ``done``, with exactly one comment."""
    seen = {(v.work_key, v.input_version): v for v in rows}
    absent = [p.work_key for p in pulls if (p.work_key, p.sha) not in seen]
    open_ = [f"{v.work_key}={v.status}" for v in rows if v.status not in TERMINAL]
    report.check(f"every version{label} reached a final status", not absent and not open_,
                 "; ".join([f"{len(absent)} never admitted: {absent[:3]}"] * bool(absent) + open_[:5]))
    not_done = [f"{v.work_key}={v.status}" for v in rows if v.status != "done"]
    report.check(f"every version{label} ended done", not not_done, ", ".join(not_done[:5]))
    posted = web.comments()
    counts = {p: comments_for_list(posted, p) for p in pulls}
    wrong = [f"{p.repo}#{p.number}: {n}" for p, n in counts.items() if n != 1]
    report.check(f"exactly one review comment per version{label}", not wrong,
                 few(wrong))


def comments_for_list(posted: list[dict], pull: Pull) -> int:
    """``comments_for`` over a list already fetched (one forge read for a whole stream)."""
    from activities.keys import marker_for, operation_key
    from drills._harness import POST_COMMENT

    marker = marker_for(operation_key(pull.work_key, POST_COMMENT, pull.sha))
    return sum(marker in (c.get("body") or "") for c in posted)


def model_calls(web: StackHttp, pulls: list[Pull]) -> int:
    """Model calls the simulator received for these pulls' work keys."""
    keys = {p.work_key for p in pulls}
    return sum(n for k, n in web.model_stats()["by_work"].items() if k.split("@")[0] in keys)


__all__ = ["Answer", "Background", "Delivery", "NO_CAPACITY_LIMITS", "Pull", "api_url", "build_stream",
           "check_answers", "check_reviews", "few", "model_calls", "open_pulls", "send", "send_all",
           "throughput", "wait_finished"]
