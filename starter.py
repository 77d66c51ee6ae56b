"""``python starter.py ...``: the same CLI as the ``sluicegate`` console script (``sluicegate.cli.app``).

    python starter.py status --json
    python starter.py --help          # every command
"""

from __future__ import annotations

from sluicegate.cli.app import app, main

__all__ = ["app", "main"]

if __name__ == "__main__":
    main()
