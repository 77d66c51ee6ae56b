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

import argparse
import sys

import uvicorn

from simulators.forge._app import create_forge_app
from simulators.forge._apps import GitHubAppSpec
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
    parser.add_argument("--app-id", default=None, help="GitHub App mode: the app's id")
    parser.add_argument("--app-public-key-file", default=None, help="GitHub App mode: the app's PEM public key")
    parser.add_argument("--app-installation", action="append", default=[], metavar="ID=ACCOUNT",
                        help="GitHub App mode: an installation id and the account it is installed on")
    parser.add_argument("--app-slug", default="sluicegate", help="GitHub App mode: the app's slug")
    parser.add_argument("--rate-limit", type=int, default=None, help="requests per credential per hour")
    args = parser.parse_args(argv)
    try:
        app_spec = _app_spec(args)
    except (OSError, ValueError) as exc:
        print(f"forge simulator: {exc}", file=sys.stderr)
        return 2
    try:
        state = ForgeState(args.fixtures, commenter=args.commenter)
    except FixtureError as exc:
        print(f"forge simulator: {exc}", file=sys.stderr)
        return 2
    if args.rate_limit is not None:
        state.rate_limits.configure({"limit": args.rate_limit})
    try:
        app = create_forge_app(state, token=args.token, app=app_spec)
    except ValueError as exc:
        print(f"forge simulator: {exc}", file=sys.stderr)
        return 2
    print(f"forge simulator (NOT GitHub) on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def _app_spec(args: argparse.Namespace) -> GitHubAppSpec | None:
    given = [args.app_id, args.app_public_key_file, args.app_installation or None]
    if not any(given):
        return None
    if not all(given):
        raise ValueError("GitHub App mode needs --app-id, --app-public-key-file and --app-installation")
    installations = {}
    for item in args.app_installation:
        ident, _, account = item.partition("=")
        if not ident.isdigit() or not account:
            raise ValueError(f"--app-installation {item!r} is not ID=ACCOUNT")
        installations[int(ident)] = account
    with open(args.app_public_key_file, encoding="utf-8") as fh:
        return GitHubAppSpec(args.app_id, fh.read(), installations, slug=args.app_slug)


if __name__ == "__main__":
    sys.exit(main())
