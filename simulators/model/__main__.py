"""``python -m simulators.model`` -- run the model simulator.

Flags: ``--host`` (127.0.0.1), ``--port`` (8302), ``--api-key`` (optional;
when given every ``/v1`` request must send ``Authorization: Bearer KEY``),
``--model`` (repeatable; names listed by ``GET /v1/models``, default
``sim-reviewer-1``), ``--tenant-key TENANT=KEY`` (repeatable; each tenant's work must carry
its own key, see ``_app``), ``--log-level`` (info).
"""

from __future__ import annotations

import sys

from simulators.cli import run


def main(argv: list[str] | None = None) -> int:
    """Same as ``sluicegate simulator model`` (the commands live in :mod:`simulators.cli`)."""
    return run("model", argv)


if __name__ == "__main__":
    sys.exit(main())
