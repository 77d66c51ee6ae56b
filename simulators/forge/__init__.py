"""Forge simulator: a small, deterministic subset of GitHub's REST API.

Serves pull requests (JSON or unified diff), lists them with GitHub-style
``Link`` pagination, serves issues (a pull request is one too) and their
labels (``_issues``), and lists/creates issue comments. State is seeded from
JSON fixtures (``simulators/fixtures/forge``) and held in memory; every
request is counted and faults (error statuses, hangs, "committed but the
response was lost", a body stalled after its first bytes) can be injected through the ``/_sim/`` control API.

    app = create_forge_app(token="t")          # or ForgeState(...) first
    python -m simulators.forge --port 8301 --token t

GitHub App mode (opt-in, alongside or instead of the static token): give
the app's id, its PUBLIC key and its installations (id -> account)::

    create_forge_app(app=GitHubAppSpec("123", public_pem, {7: "acme"}))
    python -m simulators.forge --app-id 123 --app-public-key-file app.pub.pem \
        --app-installation 7=acme

Then ``POST /app/installations/{id}/access_tokens`` verifies the app's RS256
JWT and issues ``ghs_`` tokens limited to the requested repositories and
permissions, expiring after an hour (``POST /_sim/apps/token_lifetime``
shortens it); API requests with such a token are refused 401 ``Bad
credentials`` once it expired (or is unknown/revoked) and 403 ``Resource
not accessible by integration`` outside its repositories or permissions.

See ``_app`` (routes and error shapes), ``_gate`` (auth and fault
semantics), ``_apps`` (the GitHub App mode) and ``_control`` (control
endpoints).
"""

from simulators.forge._app import create_forge_app
from simulators.forge._apps import GitHubAppSpec
from simulators.forge._records import FixtureError
from simulators.forge._state import ForgeState

__all__ = ["FixtureError", "ForgeState", "GitHubAppSpec", "create_forge_app"]
