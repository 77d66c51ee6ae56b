"""The peers' front for ``bench/peers_bench.py``: the same FastAPI + signature front, no intake.

    python -m bench._peer_front --peer naive --port P   # naive Temporal: signal-with-start per delivery
    python -m bench._peer_front --peer dbos --port P --dbos-db FILE   # DBOS, SQLite system database

Run in its own process (like Sluicegate's webhook API), configured from the stack's environment
(``SLUICEGATE_*``: the ``github`` source's secret and tenant, the Temporal address). Per
``POST /webhooks/github``: headers and body bounded (``webhook_api._body``), then
``parse_github_delivery`` (signature, JSON, pydantic: what Sluicegate's API does before intake),
then one start with run id = ``work key@version``:

* ``naive`` -- ``client.start_workflow("NaiveReview", ..., id=run id, start_signal="delivery")``:
  Temporal's own id dedupe (a running workflow with that id gets the signal, no new run). Task
  queue ``bench-naive``: nobody polls it, the runs wait there as Sluicegate's admitted ones do.
* ``dbos`` -- ``with SetWorkflowID(run id): DBOS.start_workflow_async(review, ...)``: DBOS's id
  dedupe (the same id returns the existing workflow, it does not run again). DBOS runs the workflow
  in this process at once (there is no separate worker): one step, a fake agent step that counts.

``GET /_peer/stats``: ``{"deliveries", "refused", "runs"}``; for ``dbos`` ``runs`` counts the
step's executions in this process (started runs are also counted from the system database).
No forge read and no model call on either peer.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from intake.errors import InvalidDelivery
from intake.github import parse_github_delivery
from sluicegate.config.settings import load_settings
from webhook_api._body import bounded_headers, read_limited
from webhook_api._serving import uvicorn_options

MAX_BODY = 1024 * 1024
NAIVE_WORKFLOW, NAIVE_SIGNAL, NAIVE_QUEUE = "NaiveReview", "delivery", "bench-naive"


def create_app(peer: str, dbos_db: str | None) -> FastAPI:
    settings = load_settings()
    source = settings.sources["github"]
    secret, tenant = source.secret, source.tenant
    stats = {"deliveries": 0, "refused": 0, "runs": 0}
    start = _naive_start(settings) if peer == "naive" else _dbos_start(dbos_db, stats)
    app = FastAPI()

    @app.post("/webhooks/github")
    async def hook(request: Request) -> JSONResponse:
        headers = bounded_headers(request)
        body = None if headers is None else await read_limited(request, MAX_BODY, timeout=10)
        if body is None:
            stats["refused"] += 1
            return JSONResponse({"outcome": "reject", "reason": "too-large"}, status_code=413)
        try:
            parsed = parse_github_delivery(headers, body, source="github", tenant=tenant, secrets=[secret],
                                           received_at=datetime.now(UTC))
        except InvalidDelivery as exc:
            stats["refused"] += 1
            return JSONResponse({"outcome": "reject", "reason": str(exc.reason)}, status_code=exc.http_status)
        cand = parsed.candidate
        run_id = f"{cand.work_key}@{cand.input_version}"
        await start(run_id, parsed.envelope.id)
        stats["deliveries"] += 1
        return JSONResponse({"outcome": "accept", "run_id": run_id}, status_code=202)

    @app.get("/_peer/stats")
    async def peer_stats() -> dict:
        return stats

    @app.get("/healthz")
    async def health() -> dict:
        return {"ok": True}

    return app


def _naive_start(settings):
    from sluicegate.temporal.client import connect

    client = None
    lock = asyncio.Lock()

    async def start(run_id: str, delivery_id: str) -> None:
        nonlocal client
        async with lock:
            if client is None:
                client = await connect(settings)
        await client.start_workflow(NAIVE_WORKFLOW, run_id, id=run_id, task_queue=NAIVE_QUEUE,
                                    start_signal=NAIVE_SIGNAL, start_signal_args=[delivery_id])
    return start


def _dbos_start(path: str | None, stats: dict):
    from dbos import DBOS, SetWorkflowID

    DBOS(config={"name": "sluicegate-peer-bench", "system_database_url": f"sqlite:///{path}",
                 "run_admin_server": False})

    @DBOS.step()
    async def agent_step(run_id: str) -> str:
        stats["runs"] += 1  # the fake agent step: counts, no model call
        return run_id

    @DBOS.workflow()
    async def review(run_id: str) -> str:
        return await agent_step(run_id)

    DBOS.launch()

    async def start(run_id: str, delivery_id: str) -> None:
        with SetWorkflowID(run_id):
            await DBOS.start_workflow_async(review, run_id)
    return start


def main() -> None:
    p = argparse.ArgumentParser(description="the peers' FastAPI + signature front (bench/peers_bench.py)")
    p.add_argument("--peer", choices=("naive", "dbos"), required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--dbos-db", help="SQLite file of DBOS's system database (--peer dbos)")
    a = p.parse_args()
    served = uvicorn_options(load_settings().webhook_api)  # as the stack's webhook API, keep-alive included
    uvicorn.run(create_app(a.peer, a.dbos_db), host="127.0.0.1", port=a.port, **served)


if __name__ == "__main__":
    main()
