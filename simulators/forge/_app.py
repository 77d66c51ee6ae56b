"""FastAPI app for the forge simulator (a subset of GitHub's REST API).

Routes: ``GET /repos/{o}/{r}/pulls``, ``GET /repos/{o}/{r}/pulls/{n}``
(JSON, or the unified diff as ``text/plain`` when ``Accept`` names
``application/vnd.github.diff`` / ``application/vnd.github.v3.diff``),
``GET|POST /repos/{o}/{r}/issues/{n}/comments``, ``GET /repos/{o}/{r}/issues/{n}`` (a plain
issue, or a pull seen as an issue with a ``pull_request`` object, see ``_issues``),
``GET|POST /repos/{o}/{r}/issues/{n}/labels`` (POST ``{"labels": [names]}`` or a bare list adds
them -- a set union, unknown names become repository labels -- and answers 200 with the issue's
full label list). The pull's and the issue's JSON carry a weak ``ETag``; a request whose
``If-None-Match`` names it gets ``304 Not Modified`` with no body, and (as on GitHub) is not counted
against the rate limit.
``POST /app/installations/{id}/access_tokens`` (GitHub App mode, ``_apps``);
control API under ``/_sim/`` (see ``_control``).

Failure modes, as GitHub answers them: unknown repository / pull / path or
a non-numeric number -> 404 ``{"message": "Not Found"}``; bad token ->
401 ``Bad credentials``; unparsable JSON -> 400 ``Problems parsing JSON``;
missing/blank comment body, bad ``state``/``sort``/``direction``/``since``, labels that are not
a list of non-blank names (at most 50 characters) or more than 100 on one issue
-> 422 ``Validation Failed``. Injected faults: see ``_gate``.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from simulators.forge._apps import GitHubAppSpec
from simulators.forge._control import build_control_router
from simulators.forge._gate import install_gate
from simulators.forge._issues import check_label_names, issue_json, label_json
from simulators.forge._pagination import link_header, paginate
from simulators.forge._records import parse_time
from simulators.forge._render import comment_json, entity_tag, error_body, etag_matches, pull_json
from simulators.forge._state import ForgeState

__all__ = ["create_forge_app"]

_DIFF_TYPES = ("application/vnd.github.diff", "application/vnd.github.v3.diff")


class _Fail(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        self.status, self.body = status, error_body(status, message, **extra)


def _not_found() -> _Fail:
    return _Fail(404, "Not Found")


def _invalid(resource: str, field: str, code: str, message: str | None = None) -> _Fail:
    error = {"resource": resource, "code": code, "field": field}
    if message:
        error["message"] = message
    return _Fail(422, "Validation Failed", errors=[error])


def _number(raw: str) -> int:
    if not raw.isdigit():
        raise _not_found()
    return int(raw)


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def _paged(request: Request, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
    chunk, rels = paginate(items, request.query_params.get("per_page"), request.query_params.get("page"))
    link = link_header(request.url, rels)
    return chunk, ({"Link": link} if link else {})


def _conditional(request: Request, body: Any, record: Callable[[str], None]) -> Response:
    """A JSON answer with its weak ``ETag``; 304 when ``If-None-Match`` names it (``record``: the read's kind)."""
    etag = entity_tag(body)
    if etag_matches(request.headers.get("if-none-match"), etag):
        record("not_modified")
        return Response(status_code=304, headers={"ETag": etag})
    record("json")
    return JSONResponse(body, headers={"ETag": etag})


def _choice(request: Request, name: str, allowed: tuple[str, ...], default: str) -> str:
    value = request.query_params.get(name, default)
    if value not in allowed:
        raise _invalid("PullRequest", name, "invalid", f"{name} must be one of {', '.join(allowed)}")
    return value


def create_forge_app(
    state: ForgeState | None = None,
    *,
    token: str | None = None,
    fixtures_dir: str | Path | None = None,
    app: GitHubAppSpec | None = None,
) -> FastAPI:
    """Build the app. ``token`` set -> every API route requires it; ``app`` -> GitHub App mode
    (kept across ``reset``), where installation tokens are accepted within their scope."""
    if state is None:
        state = ForgeState(fixtures_dir)
    if app is not None:
        state.apps.configure(app, seed=True)
    api = FastAPI(title="Forge simulator (GitHub REST subset)", docs_url=None, redoc_url=None, openapi_url=None)
    api.state.forge = state

    @api.exception_handler(_Fail)
    async def _on_fail(_: Request, exc: _Fail) -> Response:
        return JSONResponse(exc.body, status_code=exc.status)

    @api.exception_handler(StarletteHTTPException)
    async def _on_http(_: Request, exc: StarletteHTTPException) -> Response:
        message = "Not Found" if exc.status_code == 404 else str(exc.detail)
        return JSONResponse(error_body(exc.status_code, message), status_code=exc.status_code)

    @api.get("/repos/{owner}/{repo}/pulls")
    async def list_pulls(owner: str, repo: str, request: Request) -> Response:
        state_filter = _choice(request, "state", ("open", "closed", "all"), "open")
        sort = _choice(request, "sort", ("created", "updated"), "created")
        direction = _choice(request, "direction", ("asc", "desc"), "desc" if sort == "created" else "asc")
        pulls = state.list_pulls(owner, repo)
        if pulls is None:
            raise _not_found()
        if state_filter != "all":
            pulls = [p for p in pulls if p.state == state_filter]
        pulls.sort(key=lambda p: (p.created_at if sort == "created" else p.updated_at, p.number))
        if direction == "desc":
            pulls.reverse()
        chunk, headers = _paged(request, pulls)
        base = _base(request)
        return JSONResponse([pull_json(p, base) for p in chunk], headers=headers)

    @api.get("/repos/{owner}/{repo}/pulls/{number}")
    async def get_pull(owner: str, repo: str, number: str, request: Request) -> Response:
        pull = state.get_pull(owner, repo, _number(number))
        if pull is None:
            raise _not_found()
        accept = request.headers.get("accept", "").lower()
        if any(media in accept for media in _DIFF_TYPES):
            state.record_pull_read("diff")
            return PlainTextResponse(pull.diff, media_type="text/plain")
        return _conditional(request, pull_json(pull, _base(request)), state.record_pull_read)

    @api.get("/repos/{owner}/{repo}/issues/{number}/comments")
    async def list_comments(owner: str, repo: str, number: str, request: Request) -> Response:
        comments = state.list_comments(owner, repo, _number(number))
        if comments is None:
            raise _not_found()
        since_raw = request.query_params.get("since")
        if since_raw is not None:
            try:
                since: datetime = parse_time(since_raw)
            except ValueError:
                raise _invalid("IssueComment", "since", "invalid") from None
            comments = [c for c in comments if c.updated_at >= since]
        chunk, headers = _paged(request, comments)
        base = _base(request)
        return JSONResponse([comment_json(c, base) for c in chunk], headers=headers)

    @api.get("/repos/{owner}/{repo}/issues/{number}")
    async def get_issue(owner: str, repo: str, number: str, request: Request) -> Response:
        view = state.get_issue(owner, repo, _number(number))
        if view is None:
            raise _not_found()
        return _conditional(request, issue_json(view, _base(request)), state.record_issue_read)

    @api.get("/repos/{owner}/{repo}/issues/{number}/labels")
    async def list_labels(owner: str, repo: str, number: str, request: Request) -> Response:
        view = state.get_issue(owner, repo, _number(number))
        if view is None:
            raise _not_found()
        chunk, headers = _paged(request, list(view.labels))
        base = _base(request)
        return JSONResponse([label_json(label, view.owner, view.repo, base) for label in chunk], headers=headers)

    @api.post("/repos/{owner}/{repo}/issues/{number}/labels")
    async def add_labels(owner: str, repo: str, number: str, request: Request) -> Response:
        issue_number = _number(number)
        if not state.has_issue(owner, repo, issue_number):
            raise _not_found()
        try:
            payload = json.loads(await request.body() or b"null")
        except ValueError:
            raise _Fail(400, "Problems parsing JSON") from None
        raw = payload.get("labels") if isinstance(payload, dict) else payload
        if raw is None:
            raise _invalid("Label", "labels", "missing_field")
        try:
            view = state.add_labels(owner, repo, issue_number, check_label_names(raw))
        except ValueError as exc:
            raise _invalid("Label", "labels", "invalid", str(exc)) from None
        if view is None:  # vanished between the check and the write (reset)
            raise _not_found()
        base = _base(request)
        return JSONResponse([label_json(label, view.owner, view.repo, base) for label in view.labels])

    @api.post("/repos/{owner}/{repo}/issues/{number}/comments")
    async def create_comment(owner: str, repo: str, number: str, request: Request) -> Response:
        pull_number = _number(number)
        if not state.has_issue(owner, repo, pull_number):
            raise _not_found()
        try:
            payload = json.loads(await request.body() or b"null")
        except ValueError:
            raise _Fail(400, "Problems parsing JSON") from None
        body = payload.get("body") if isinstance(payload, dict) else None
        if body is None:
            raise _invalid("IssueComment", "body", "missing_field")
        if not isinstance(body, str):
            raise _invalid("IssueComment", "body", "invalid")
        if not body.strip():
            raise _invalid("IssueComment", "body", "custom", "body cannot be blank")
        caller = getattr(request.state, "caller", None)
        comment = state.add_comment(owner, repo, pull_number, body, user=caller.login if caller else None)
        if comment is None:  # the pull vanished between the check and the write (reset)
            raise _not_found()
        rendered = comment_json(comment, _base(request))
        return JSONResponse(rendered, status_code=201, headers={"Location": rendered["url"]})

    @api.post("/app/installations/{installation_id}/access_tokens")
    async def create_installation_token(installation_id: str, request: Request) -> Response:
        try:
            payload = json.loads(await request.body() or b"null")
        except ValueError:
            raise _Fail(400, "Problems parsing JSON") from None
        status, answer = state.apps.exchange(_number(installation_id), request.headers.get("authorization"),
                                             payload, state.has_repo)
        if isinstance(answer, str):
            raise _Fail(status, answer)
        return JSONResponse(answer, status_code=status)

    api.include_router(build_control_router(state))
    install_gate(api, state, token)
    return api
