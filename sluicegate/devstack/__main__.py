"""``python -m sluicegate.devstack`` — bring the stack up and keep it up until Ctrl-C (``make up``)."""

from __future__ import annotations

import asyncio
import signal
import sys
import threading

from sluicegate.devstack import DevStack, StackError


async def _apply_schedules(settings) -> dict[str, str]:
    """Scans, the outbox relay and pruning (delivery window, retention) tick in a stack that stays up."""
    from sluicegate.temporal.schedules import apply_schedules
    from sluicegate.temporal.client import connect

    return await apply_schedules(await connect(settings), settings)


def main() -> int:
    stack = DevStack()
    s = stack.settings
    try:
        stack.start()
    except StackError as exc:
        print(f"could not start the stack: {exc}", file=sys.stderr)
        return 1
    applied = asyncio.run(_apply_schedules(s))
    print(f"Schedules        {', '.join(f'{k} ({v})' for k, v in applied.items()) or 'none'}")
    print(f"Temporal UI      http://{s.dev_server.ip}:{s.dev_server.ui_port}/namespaces/{s.temporal.namespace}/workflows")
    print(f"Webhook API      http://{s.webhook_api.host}:{s.webhook_api.port}/webhooks/github")
    print(f"Forge simulator  http://{s.simulators.forge.host}:{s.simulators.forge.port}/_sim/stats")
    print(f"Model simulator  http://{s.simulators.model.host}:{s.simulators.model.port}/_sim/stats")
    if stack.encrypted:
        print(f"Codec server     http://{s.codec_server.host}:{s.codec_server.port} (payloads encrypted; the UI "
              "decodes through it; CLI: --codec-endpoint … --codec-auth \"Bearer $SLUICEGATE_CODEC_TOKEN\")")
    else:
        print("Codec server     not started (no payload key: payloads are plaintext)")
    print(f"Logs             {stack.log_dir}")
    print("Ctrl-C stops everything.")
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    from sluicegate.temporal.process_exit import run_then_exit

    run_then_exit(main)
