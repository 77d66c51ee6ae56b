"""``python -m simulators.forge`` -- run the forge simulator.

Flags: ``--host`` (127.0.0.1), ``--port`` (8301), ``--fixtures`` (the
packaged ``simulators/fixtures/forge``), ``--token`` (optional; when given
every API request must send ``Authorization: Bearer|token <TOKEN>``),
``--commenter`` (login that posted comments are attributed to),
``--log-level`` (info). Exits non-zero if the fixtures cannot be loaded.
"""

from __future__ import annotations

import argparse
import sys

import uvicorn

from simulators.forge._app import create_forge_app
from simulators.forge._records import DEFAULT_FIXTURES, FixtureError
from simulators.forge._state import ForgeState


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simulators.forge", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8301)
    parser.add_argument("--fixtures", default=str(DEFAULT_FIXTURES), help="directory of <owner>__<repo>.json files")
    parser.add_argument("--token", default=None, help="require this token on every API request")
    parser.add_argument("--commenter", default="sluicegate-bot", help="login shown on posted comments")
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    try:
        state = ForgeState(args.fixtures, commenter=args.commenter)
    except FixtureError as exc:
        print(f"forge simulator: {exc}", file=sys.stderr)
        return 2
    app = create_forge_app(state, token=args.token)
    print(f"forge simulator (NOT GitHub) on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
