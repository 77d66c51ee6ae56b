"""Control API of the forge simulator (``/_sim/``; never requires auth).

* ``GET /_sim/health`` -- liveness for launchers.
* ``GET /_sim/stats`` -- ``{"total", "requests": {"METHOD /route": n}, "by_repository":
  {"owner/repo": n}, "comments_posted", "pull_reads": {"json", "diff", "not_modified"}}``
  (every API request, answered or refused; ``pull_reads`` counts answered single-pull reads:
  200 JSON, 200 diff, 304 to a conditional JSON read); ``issue_reads`` {"json", "not_modified"}
  likewise for ``GET .../issues/{n}``; ``label_writes`` counts answered label POSTs.
* ``POST /_sim/reset`` -- re-seed from fixtures, zero counters, clear faults.
* ``POST /_sim/pulls/{owner}/{repo}/{number}`` -- upsert a pull with any of
  ``head_sha, base_sha, state, diff, title, head_ref, base_ref, body, user,
  merged``; bumps ``updated_at``. Creates the repository/pull if needed.
* ``POST /_sim/issues/{owner}/{repo}/{number}`` -- create or update a plain issue with any of
  ``title, body, state, labels`` (replaces the set), ``user``, ``updated_at`` (ISO 8601, taken
  as given; otherwise it moves to now). 400 for a pull request's number. ``GET`` the same path --
  the stored issue (or pull, ``"pull_request": true``) as ``{owner, repo, number, title, body,
  state, state_reason, user, labels: [names], comments, created_at, updated_at, closed_at,
  pull_request}``; 404 if there is neither.
* ``GET /_sim/comments`` -- every stored comment with owner/repo/number.
* ``POST|GET|DELETE /_sim/faults`` -- add / list / clear faults (``_gate``).
* ``POST /_sim/faults/release`` -- end every ``hang_seconds`` wait under way now (a hung request
  answers as its fault says, a stall sends the rest of its body): ``{"released": n}``.
* ``POST /_sim/apps`` -- register (replace) the GitHub App until the next reset:
  ``{"app_id", "public_key": PEM, "installations": {"<id>": "<account>"},
  "granted"?: {...}, "token_lifetime_seconds"?: n}``; ``{"app_id": null}`` turns
  app mode off. ``GET /_sim/apps`` -- the app, issued tokens (no values) and
  refusals by reason. ``POST /_sim/apps/token_lifetime`` ``{"seconds": n}``
  (1..3600) -- lifetime of tokens issued from now on. ``DELETE
  /_sim/apps/tokens`` -- revoke every issued token (see ``_apps``). ``slug``
  (default ``sluicegate``) names the App's bot user, ``<slug>[bot]``.
* ``POST /_sim/users`` ``{"token", "login"}`` -- another user who may call the
  API (comments are attributed to them); ``GET /_sim/users`` -- their logins.
* ``POST|GET /_sim/rate_limits`` -- the primary limit (``limit``,
  ``window_seconds``, ``status`` 403|429, ``exhaust_for_seconds``) and the
  ``writes_per_minute`` secondary rule; ``POST /_sim/rate_limits/inject``
  ``{"kind": "primary"|"secondary", "method", "path", "times", "status",
  "retry_after", "reset_in_seconds"}`` -- the next matching requests meet that
  limit (see ``_ratelimits``).

Bad control input answers 400 ``{"message": ...}``; a fixture reload
failure on reset answers 500 and keeps the previous data.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from simulators._faults import FaultSpecError
from simulators.forge._apps import GitHubAppSpec
from simulators.forge._gate import parse_fault
from simulators.forge._issues import IssueView
from simulators.forge._records import FixtureError, format_time
from simulators.forge._render import comment_json, pull_json
from simulators.forge._state import ForgeState

__all__ = ["build_control_router"]


def _bad(message: str, status: int = 400) -> Response:
    return JSONResponse({"message": message}, status_code=status)


async def _json_object(request: Request) -> dict[str, Any] | None:
    try:
        payload = json.loads(await request.body() or b"{}")
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def build_control_router(state: ForgeState) -> APIRouter:
    router = APIRouter(prefix="/_sim")

    @router.get("/health")
    async def health() -> dict[str, Any]:
        return {"simulator": "forge", "ok": True}

    @router.get("/stats")
    async def stats() -> dict[str, Any]:
        return state.stats()

    @router.post("/reset")
    async def reset() -> Response:
        try:
            state.reset()
        except FixtureError as exc:
            return _bad(str(exc), 500)
        return JSONResponse({"reset": True})

    @router.post("/pulls/{owner}/{repo}/{number}")
    async def upsert_pull(owner: str, repo: str, number: int, request: Request) -> Response:
        changes = await _json_object(request)
        if changes is None:
            return _bad("body must be a JSON object")
        if number < 1:
            return _bad("number must be positive")
        try:
            pull = state.upsert_pull(owner, repo, number, changes)
        except ValueError as exc:
            return _bad(str(exc))
        return JSONResponse(pull_json(pull, str(request.base_url).rstrip("/")))

    @router.post("/issues/{owner}/{repo}/{number}")
    async def upsert_issue(owner: str, repo: str, number: int, request: Request) -> Response:
        changes = await _json_object(request)
        if changes is None:
            return _bad("body must be a JSON object")
        if number < 1:
            return _bad("number must be positive")
        try:
            return JSONResponse(_issue_state(state.upsert_issue(owner, repo, number, changes)))
        except ValueError as exc:
            return _bad(str(exc))

    @router.get("/issues/{owner}/{repo}/{number}")
    async def issue(owner: str, repo: str, number: int) -> Response:
        view = state.get_issue(owner, repo, number)
        if view is None:
            return _bad(f"no issue or pull request #{number} in {owner}/{repo}", 404)
        return JSONResponse(_issue_state(view))

    @router.get("/comments")
    async def comments(request: Request) -> list[dict[str, Any]]:
        base = str(request.base_url).rstrip("/")
        return [
            {"owner": c.owner, "repo": c.repo, "number": c.number, **comment_json(c, base)}
            for c in state.all_comments()
        ]

    @router.post("/faults", status_code=201)
    async def add_fault(request: Request) -> Response:
        spec = await _json_object(request)
        try:
            fault = state.faults.add(parse_fault(spec))
        except FaultSpecError as exc:
            return _bad(str(exc))
        return JSONResponse(fault, status_code=201)

    @router.get("/faults")
    async def list_faults() -> list[dict[str, Any]]:
        return state.faults.list()

    @router.delete("/faults")
    async def clear_faults() -> dict[str, int]:
        return {"cleared": state.faults.clear()}

    @router.post("/faults/release")
    async def release_faults() -> dict[str, int]:
        return {"released": state.delays.release()}

    @router.post("/users", status_code=201)
    async def add_user(request: Request) -> Response:
        spec = await _json_object(request)
        try:
            state.users.add((spec or {}).get("token"), (spec or {}).get("login"))
        except ValueError as exc:
            return _bad(str(exc))
        return JSONResponse({"logins": state.users.list()}, status_code=201)

    @router.get("/users")
    async def users() -> dict[str, Any]:
        return {"logins": state.users.list()}

    @router.post("/rate_limits")
    async def rate_limits(request: Request) -> Response:
        try:
            return JSONResponse(state.rate_limits.configure(await _json_object(request)))
        except FaultSpecError as exc:
            return _bad(str(exc))

    @router.get("/rate_limits")
    async def rate_limit_state() -> dict[str, Any]:
        return state.rate_limits.snapshot()

    @router.post("/rate_limits/inject", status_code=201)
    async def inject_limit(request: Request) -> Response:
        try:
            return JSONResponse(state.rate_limits.inject(await _json_object(request)), status_code=201)
        except FaultSpecError as exc:
            return _bad(str(exc))

    @router.post("/apps")
    async def register_app(request: Request) -> Response:
        spec = await _json_object(request)
        if spec is None:
            return _bad("body must be a JSON object")
        try:
            state.apps.configure(_app_spec(spec) if spec.get("app_id") is not None else None)
        except (ValueError, TypeError) as exc:
            return _bad(str(exc))
        return JSONResponse(state.apps.snapshot(), status_code=201)

    @router.get("/apps")
    async def apps() -> dict[str, Any]:
        return state.apps.snapshot()

    @router.post("/apps/token_lifetime")
    async def token_lifetime(request: Request) -> Response:
        body = await _json_object(request)
        try:
            state.apps.set_token_lifetime((body or {}).get("seconds"))
        except ValueError as exc:
            return _bad(str(exc))
        return JSONResponse(state.apps.snapshot())

    @router.delete("/apps/tokens")
    async def revoke_tokens() -> dict[str, int]:
        return {"revoked": state.apps.revoke_all()}

    return router


def _issue_state(view: IssueView) -> dict[str, Any]:
    def stamp(value: Any) -> str | None:
        return format_time(value) if value is not None else None

    return {"owner": view.owner, "repo": view.repo, "number": view.number, "title": view.title, "body": view.body,
            "state": view.state, "state_reason": view.state_reason, "user": view.user,
            "labels": [label.name for label in view.labels], "comments": view.comments,
            "created_at": stamp(view.created_at), "updated_at": stamp(view.updated_at),
            "closed_at": stamp(view.closed_at), "pull_request": view.pull is not None}


def _app_spec(spec: dict[str, Any]) -> GitHubAppSpec:
    unknown = set(spec) - {"app_id", "public_key", "installations", "granted", "token_lifetime_seconds", "slug"}
    if unknown:
        raise ValueError(f"unknown fields: {sorted(unknown)}")
    installations = spec.get("installations")
    if not isinstance(installations, dict) or not all(
            str(k).isdigit() and isinstance(v, str) for k, v in installations.items()):
        raise ValueError("installations must map installation ids to account logins")
    if not isinstance(spec.get("public_key"), str):
        raise ValueError("public_key must be a PEM string")
    extra = {k: spec[k] for k in ("granted", "token_lifetime_seconds", "slug") if k in spec}
    return GitHubAppSpec(str(spec["app_id"]), spec["public_key"], {int(k): v for k, v in installations.items()},
                         **extra)
