"""Run the webhook API: ``python -m webhook_api`` (host/port from temporal-dev.yaml)."""

from __future__ import annotations

import signal

import uvicorn

from sluicegate.config.settings import load_settings
from sluicegate.config.dev_guard import refuse_insecure_cookie, refuse_published_secrets
from sluicegate.observability.metrics import setup_metrics
from sluicegate.observability.telemetry import setup_logging, setup_tracing
from webhook_api import create_app
from webhook_api._serving import uvicorn_options


def _exit_after_shutdown(signum, frame) -> None:
    raise SystemExit(0)


def main() -> None:
    settings = load_settings()
    refuse_published_secrets(settings, "api", settings.webhook_api.host)
    refuse_insecure_cookie(settings, settings.webhook_api.host)
    setup_logging(settings, "api")
    setup_tracing(settings, "api")
    setup_metrics(settings, "api")
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal to the handler
    # that was installed before it: make that a normal exit, so the exit handlers flush the
    # last spans and metrics (the default handler would kill the process first).
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _exit_after_shutdown)
    uvicorn.run(create_app(settings, freeze_gc=True), host=settings.webhook_api.host, port=settings.webhook_api.port,
                **uvicorn_options(settings.webhook_api))  # h11: a bounded request head (webhook_api/_serving.py)


if __name__ == "__main__":
    from sluicegate.temporal.process_exit import run_then_exit

    run_then_exit(main)
