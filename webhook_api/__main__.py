"""Run the webhook API: ``python -m webhook_api`` (host/port from temporal-dev.yaml)."""

from __future__ import annotations

import uvicorn

from sluicegate.config import load_settings
from sluicegate.telemetry import setup_logging, setup_tracing
from webhook_api import create_app


def main() -> None:
    settings = load_settings()
    setup_logging(settings, "api")
    setup_tracing(settings, "api")
    uvicorn.run(create_app(settings), host=settings.webhook_api.host, port=settings.webhook_api.port,
                log_config=None, access_log=False)


if __name__ == "__main__":
    from sluicegate.process_exit import run_then_exit

    run_then_exit(main)
