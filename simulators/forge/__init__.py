"""Forge simulator: a small, deterministic subset of GitHub's REST API.

Serves pull requests (JSON or unified diff), lists them with GitHub-style
``Link`` pagination, and lists/creates issue comments. State is seeded from
JSON fixtures (``simulators/fixtures/forge``) and held in memory; every
request is counted and faults (error statuses, hangs, "committed but the
response was lost") can be injected through the ``/_sim/`` control API.

    app = create_forge_app(token="t")          # or ForgeState(...) first
    python -m simulators.forge --port 8301 --token t

See ``_app`` (routes and error shapes), ``_gate`` (auth and fault
semantics) and ``_control`` (control endpoints).
"""

from simulators.forge._app import create_forge_app
from simulators.forge._records import FixtureError
from simulators.forge._state import ForgeState

__all__ = ["FixtureError", "ForgeState", "create_forge_app"]
