"""``python -m simulators.forge`` -- run the forge simulator.

Flags: ``--host`` (127.0.0.1), ``--port`` (8301), ``--fixtures`` (the
packaged ``simulators/fixtures/forge``), ``--token`` (optional; when given
every API request must send ``Authorization: Bearer|token <TOKEN>``),
``--commenter`` (login that posted comments are attributed to),
``--log-level`` (info). GitHub App mode: ``--app-id``, ``--app-public-key-file``
(PEM) and ``--app-installation ID=ACCOUNT`` (repeatable), all three needed;
``--app-slug`` (the App's bot is ``<slug>[bot]``). ``--rate-limit N``: the primary
rate limit per credential per hour (default: generous, never met in demos).
Exits non-zero if the fixtures or the app's key cannot be loaded.
"""

from __future__ import annotations

import sys

from simulators.cli import run


def main(argv: list[str] | None = None) -> int:
    """Same as ``sluicegate simulator forge`` (the commands live in :mod:`simulators.cli`)."""
    return run("forge", argv)


if __name__ == "__main__":
    sys.exit(main())
