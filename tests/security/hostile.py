"""Hostile-input runner: random headers, bodies, signatures and sizes against a running API.

    python -m tests.security.hostile --requests 10000            # starts its own dev stack (SQLite)
    python -m tests.security.hostile --api http://127.0.0.1:8300 --ledger sqlite:///var/ledger.sqlite \\
        --api-pid 12345 --requests 2000

Every request is unauthenticated (made-up signatures and tokens, unknown sources, garbled or
missing headers, bodies from empty to twice the cap, some streamed without a length), so the
run asserts: no answer >= 500, no durable row in any ledger table, and the API still healthy.
It reports the answers by status, the connections the server closed on a body it refused
unread, and the API process's peak resident memory (``VmHWM``).

Bounded: at most ``--requests`` requests and ``--max-seconds`` seconds, whichever comes first;
loopback addresses only (it refuses any other API URL). Signed hostile content is the fuzz
suite's job (``tests/fuzz``), where every receipt can be accounted for.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from sluicegate.config.dev_guard import is_loopback
from tests.support.ledger_rows import grown, table_counts

SOURCES = ("github", "stdhooks", "events")
VOCABULARY = ("x-github-delivery", "x-github-event", "x-hub-signature-256", "webhook-id", "webhook-timestamp",
              "webhook-signature", "ce-id", "ce-source", "ce-type", "ce-specversion", "ce-time", "ce-subject",
              "authorization", "content-type", "x-forwarded-for", "user-agent")
CONTENT_TYPES = ("application/json", "application/cloudevents+json", "application/cloudevents-batch+json",
                 "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "")
_PRINTABLE = [chr(c) for c in list(range(0x21, 0x7f)) + list(range(0xa1, 0x100))]


@dataclass
class Report:
    sent: int = 0
    statuses: Counter = field(default_factory=Counter)
    refused_by_api: int = 0
    """4xx answers in the API's own reject shape with no receipt: each one must have been counted."""
    closed_on_refused_body: int = 0
    """Connections the server closed while a body it had refused unread was still being sent."""
    unexpected_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    rows_written: dict[str, int] = field(default_factory=dict)
    api_memory_kib: dict[str, int] = field(default_factory=dict)

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)

    def ok(self) -> bool:
        return self.server_errors == 0 and not self.rows_written and not self.unexpected_errors

    def summary(self) -> str:
        by_status = ", ".join(f"{s}: {n}" for s, n in sorted(self.statuses.items()))
        memory = ", ".join(f"{k} {v / 1024:.1f} MiB" for k, v in self.api_memory_kib.items()) or "n/a"
        return (f"hostile: {self.sent} requests in {self.seconds:.1f}s; answers {{{by_status}}}; "
                f">=500: {self.server_errors}; closed on a refused body: {self.closed_on_refused_body}; "
                f"unexpected client errors: {len(self.unexpected_errors)}; rows written: {self.rows_written or 0}; "
                f"API memory: {memory}")


def _text(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice(_PRINTABLE) for _ in range(rng.randint(low, high)))


def _value(rng: random.Random, name: str) -> str:
    roll = rng.random()
    if name == "x-hub-signature-256":
        return rng.choice([f"sha256={rng.randbytes(32).hex()}", "sha256=", "sha1=" + "0" * 40, _text(rng, 1, 80)])
    if name == "webhook-signature":
        return rng.choice([f"v1,{rng.randbytes(32).hex()}", "v1,", "v1a,Zm9v v1,Zm9v", _text(rng, 1, 80)])
    if name == "authorization":
        return rng.choice([f"Bearer {_text(rng, 1, 40)}", "Bearer", f"Basic {_text(rng, 4, 20)}", _text(rng, 1, 60)])
    if name == "content-type":
        return rng.choice(CONTENT_TYPES) or "application/json"
    if roll < 0.05:
        return _text(rng, 8_000, 12_000)  # over the per-header cap
    if roll < 0.5:
        return str(rng.getrandbits(64))
    return _text(rng, 1, 300)


def _json_body(rng: random.Random, manual: bool) -> bytes:
    hostile = [None, True, -1, 0, 2**31, 2**63, 10**40, 1.5, "..", "../..", "a\u0000b", "\u202e", "x" * 600, [], {}]
    keys = (["repository", "number", "reason", "input_version", "request_id", "tenant", "source", "force", "override"]
            if manual else ["action", "number", "pull_request", "repository", "type", "data", "id", "override"])
    doc = {rng.choice(keys): rng.choice(hostile + [_text(rng, 0, 40)]) for _ in range(rng.randint(0, 8))}
    return json.dumps(doc).encode()


def _body(rng: random.Random, cap: int, manual: bool):
    """(body, refused unread?) — a streamed generator for the largest ones (no Content-Length)."""
    roll = rng.random()
    if roll < 0.55:
        return _json_body(rng, manual), False
    if roll < 0.75:
        return rng.randbytes(rng.randint(0, 4096)), False
    if roll < 0.85:
        return b"", False
    if roll < 0.95:
        size = cap + rng.randint(-16, 16)
        return b"{" + b" " * max(0, size - 2) + b"}", size > cap

    async def stream():
        for _ in range(2 * cap // 65536 + 1):
            yield b" " * 65536
    return stream(), True


def _request(rng: random.Random, webhook_cap: int, manual_cap: int) -> tuple[str, str, dict, object, bool]:
    roll = rng.random()
    if roll < 0.7:
        path, manual = f"/webhooks/{rng.choice(SOURCES)}", False
    elif roll < 0.8:
        path, manual = f"/webhooks/{rng.choice(['githubb', 'x' * 200, '%00', str(rng.getrandbits(32))])}", False
    else:
        path, manual = "/v1/triggers/manual", True
    headers = {name: _value(rng, name) for name in rng.sample(VOCABULARY, rng.randint(0, len(VOCABULARY)))}
    if rng.random() < 0.03:
        headers |= {f"x-pad-{i}": "p" for i in range(rng.randint(90, 130))}
    body, unread = _body(rng, manual_cap if manual else webhook_cap, manual)
    method = "POST" if rng.random() < 0.97 else rng.choice(["GET", "PUT", "DELETE"])
    return method, path, {k: v.encode("latin-1") for k, v in headers.items()}, body, unread


async def run(api: str, requests: int, max_seconds: float, seed: int = 7, concurrency: int = 8,
              webhook_cap: int = 1024 * 1024, manual_cap: int = 16 * 1024) -> Report:
    """Send the requests and collect the answers (no ledger or memory readings: see :func:`check`)."""
    if not is_loopback(urlsplit(api).hostname or ""):
        raise SystemExit(f"refusing to send hostile traffic to {api}: loopback addresses only")
    rng, report, started = random.Random(seed), Report(), time.monotonic()
    planned = [_request(rng, webhook_cap, manual_cap) for _ in range(requests)]
    queue: asyncio.Queue = asyncio.Queue()
    for item in planned:
        queue.put_nowait(item)

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty() and time.monotonic() - started < max_seconds:
            method, path, headers, body, unread = queue.get_nowait()
            report.sent += 1
            try:
                r = await client.request(method, f"{api}{path}", headers=headers, content=body)
                report.statuses[r.status_code] += 1
                report.refused_by_api += _refusal(r)
            except (httpx.WriteError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
                if unread:
                    report.closed_on_refused_body += 1
                else:
                    report.unexpected_errors.append(f"{method} {path}: {exc!r}"[:300])

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        health = await client.get(f"{api}/healthz")
        if health.status_code != 200:
            report.unexpected_errors.append(f"healthz answered {health.status_code} after the run")
    report.seconds = time.monotonic() - started
    return report


def _refusal(r: httpx.Response) -> bool:
    try:
        answer = r.json()
    except ValueError:
        return False
    return 400 <= r.status_code < 500 and isinstance(answer, dict) and answer.get("outcome") == "reject" \
        and answer.get("receipt_id", "") is None


def api_memory_kib(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            fields[name] = int(value.split()[0])
    return fields


def check(api: str, ledger_url: str, pid: int | None, requests: int, max_seconds: float, seed: int = 7,
          webhook_cap: int = 1024 * 1024) -> Report:
    """Run, then read the ledger (every table, before and after) and the API's peak memory."""
    before = table_counts(ledger_url)
    report = asyncio.run(run(api, requests, max_seconds, seed, webhook_cap=webhook_cap))
    report.rows_written = grown(before, table_counts(ledger_url))
    if pid is not None:
        report.api_memory_kib = api_memory_kib(pid)
    return report


def _own_stack(run_dir: Path):
    from sluicegate.devstack import DevStack, isolated_overrides

    env = {**isolated_overrides(run_dir), "SLUICEGATE_DEV_MODE": "1", "SLUICEGATE_TELEMETRY_EXPORTER": "none"}
    return DevStack(env, headless=True, log_dir=run_dir / "logs").start()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--api", help="API base URL (loopback); default: start a dev stack of its own")
    p.add_argument("--ledger", help="the API's ledger URL (required with --api)")
    p.add_argument("--api-pid", type=int, help="the API process id, for its peak memory")
    p.add_argument("--requests", type=int, default=1500)
    p.add_argument("--max-seconds", type=float, default=900)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    if args.api:
        if not args.ledger:
            p.error("--ledger is required with --api")
        report = check(args.api, args.ledger, args.api_pid, args.requests, args.max_seconds, args.seed)
    else:
        with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
            stack = _own_stack(Path(tmp))
            try:
                s = stack.settings
                report = check(f"http://{s.webhook_api.host}:{s.webhook_api.port}", s.ledger_url(),
                               stack.processes["webhook-api"].proc.pid, args.requests, args.max_seconds, args.seed,
                               s.webhook_api.max_body_bytes)
            finally:
                stack.stop()
    print(report.summary())
    for line in report.unexpected_errors[:10]:
        print(f"  unexpected: {line}")
    return 0 if report.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
