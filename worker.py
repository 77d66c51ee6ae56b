"""Sluicegate worker: runs the agent workflow and its activities.

    python worker.py            # uses temporal-dev.yaml + environment overrides

Refuses to start when the ledger schema is not at the expected revision, so a worker
from a newer release never writes into an older schema. Stops gracefully on SIGTERM /
SIGINT: in-flight activities get the graceful-shutdown window to finish, and anything
cut off is retried elsewhere (side effects reconcile through the gateway).

A thin entry: the worker is assembled in ``sluicegate/wiring.py`` (the composition root).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from contextlib import AsyncExitStack

from ledger import CapacityLedger, DeferredQueue
from sluicegate.config.dev_guard import refuse_published_secrets
from sluicegate.config.settings import load_settings
from sluicegate.observability.activity_telemetry import ActivityTelemetry
from sluicegate.observability.ledger_gauges import ledger_reading, observe_ledger
from sluicegate.observability.metrics import observe_capacity, setup_metrics
from sluicegate.observability.prometheus_export import temporal_runtime
from sluicegate.observability.telemetry import setup_logging, setup_tracing
from sluicegate.services.resources import open_ledger
from sluicegate.services.startup_gc import freeze_after_startup
from sluicegate.temporal.client import connect
from sluicegate.wiring import create_worker
from tasks import registry

__all__ = ["create_worker", "main"]

log = logging.getLogger("sluicegate.worker")


async def main() -> None:
    settings = load_settings()
    refuse_published_secrets(settings, "worker", settings.temporal.address.rpartition(":")[0])
    setup_logging(settings, "worker")
    provider = setup_tracing(settings, "worker")
    setup_metrics(settings, "worker")
    client = await connect(settings, temporal_runtime(settings.telemetry))
    telemetry = ActivityTelemetry(registry.tool_activity_names())
    telemetry.observe()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with AsyncExitStack() as stack:
        gauges = open_ledger(settings, stack)  # read at each metrics export
        queue = DeferredQueue(gauges)
        observe_capacity(CapacityLedger(gauges).counters,
                         lambda: {t: n for (t, status), n in queue.counts().items() if status == "waiting"})
        observe_ledger(ledger_reading(gauges, settings.capacity.breaker_policy(),
                                      settings.telemetry.prometheus.ledger_read_seconds))
        worker = await create_worker(client, settings, stack, telemetry=telemetry)
        log.info("froze %d start-up objects out of full garbage collections", freeze_after_startup())
        async with worker:
            log.info("worker polling %s on %s/%s", settings.temporal.task_queue, settings.temporal.address,
                     settings.temporal.namespace)
            await stop.wait()
            log.info("shutting down")
    if provider is not None:
        provider.shutdown()


if __name__ == "__main__":
    from sluicegate.temporal.process_exit import run_then_exit

    run_then_exit(lambda: asyncio.run(main()))
