"""Per-request gate for the forge API: counting, auth, rate limits, fault injection.

Order for every non-``/_sim/`` request: count it (key = METHOD + route
template, ``<unmatched>`` for unknown paths; and by ``owner/repo`` for
``/repos/...`` paths, so a test can prove a repository was never read) ->
identify the caller -> its rate limits -> take at most one matching fault ->
run the handler. Every answer past the rate-limit step carries GitHub's
``x-ratelimit-*`` headers.

Auth (``_identity``): the static token is the bot user, registered user
tokens are those users, a ``ghs_`` token is judged by ``_apps`` (401
expired/unknown/revoked, 403 outside its repositories or permissions) and
acts as the App's bot; with no credential configured everything is open.
Anything else is 401 ``Bad credentials``. ``/app/...`` routes skip auth and
rate limits (they check the app's JWT themselves) but not faults. An unauthenticated,
refused or rate-limited request is answered without consuming a fault.
The caller is left in ``request.state.caller`` for the handlers (comment
authorship).

Fault semantics (one fault per request, first match wins; ``method``, ``path`` (a regex) and
``accept`` (a substring of the request's ``Accept`` header, e.g. the diff media type) narrow it):

* ``after_commit: false`` -- sleep ``hang_seconds``; then, if ``status``
  is set, answer it (with ``Retry-After`` if given) WITHOUT performing the
  operation; if no ``status``, perform the operation normally after the
  delay (a slow forge -- it still happens even if the client gave up).
* ``after_commit: true`` -- perform the operation first (a comment is
  stored), then sleep ``hang_seconds``, then answer ``status`` if set,
  else the normal response: "the forge accepted the write, the client
  never heard back".
* ``stall_after_bytes: n`` (with a positive ``hang_seconds``, no ``status``,
  not ``after_commit``) -- perform the operation and start the normal 200
  answer, send its first ``n`` body bytes, then hold the rest back for
  ``hang_seconds`` before sending it: a response stuck mid-body (a diff read
  whose connection stops delivering).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping
from http import HTTPStatus
from typing import Any, cast

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.routing import Match
from starlette.types import Scope

from simulators._faults import FaultDelays, FaultSpecError, check_number, check_route, check_status, route_matches
from simulators.forge._identity import identify
from simulators.forge._render import error_body
from simulators.forge._state import ForgeState

__all__ = ["install_gate", "parse_fault"]

_FAULT_KEYS = {"method", "path", "status", "times", "hang_seconds", "after_commit", "retry_after", "stall_after_bytes",
               "accept"}

_REPO_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)(?:/|$)")


def parse_fault(spec: Any) -> dict[str, Any]:
    """Validate a ``POST /_sim/faults`` body; ``FaultSpecError`` if bad."""
    if not isinstance(spec, Mapping):
        raise FaultSpecError("fault must be a JSON object")
    unknown = set(spec) - _FAULT_KEYS
    if unknown:
        raise FaultSpecError(f"unknown fault fields: {sorted(unknown)}")
    method, path = check_route(spec)
    after_commit = spec.get("after_commit", False)
    if not isinstance(after_commit, bool):
        raise FaultSpecError("'after_commit' must be a boolean")
    fault = {
        "method": method,
        "path": path,
        "status": check_status(spec),
        "times": spec.get("times", 1),
        "hang_seconds": check_number(spec, "hang_seconds") or 0.0,
        "after_commit": after_commit,
        "retry_after": check_number(spec, "retry_after", None),
        "stall_after_bytes": check_number(spec, "stall_after_bytes", None),
        "accept": spec.get("accept"),
    }
    if fault["accept"] is not None and not isinstance(fault["accept"], str):
        raise FaultSpecError("'accept' must be a string or null")
    if fault["stall_after_bytes"] is not None and (fault["status"] is not None or not fault["hang_seconds"]
                                                   or after_commit):
        raise FaultSpecError("'stall_after_bytes' needs a positive 'hang_seconds', no 'status' and no 'after_commit'")
    if fault["status"] is None and not fault["hang_seconds"]:
        raise FaultSpecError("a fault needs 'status' and/or a positive 'hang_seconds'")
    return fault


def _route_template(app: FastAPI, scope: Scope) -> str:
    partial = None
    for route in app.router.routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return getattr(route, "path", "<unmatched>")
        if match is Match.PARTIAL and partial is None:
            partial = getattr(route, "path", None)
    return partial or "<unmatched>"


def _fault_response(fault: Mapping[str, Any]) -> Response:
    status = int(fault["status"])
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    headers = {}
    if fault.get("retry_after") is not None:
        headers["Retry-After"] = str(int(fault["retry_after"]))
    body = error_body(status, f"{phrase} (simulated fault {fault['id']})")
    return JSONResponse(body, status_code=status, headers=headers)


def install_gate(app: FastAPI, state: ForgeState, token: str | None) -> None:
    Next = Callable[[Request], Awaitable[Response]]

    @app.middleware("http")
    async def gate(request: Request, call_next: Next) -> Response:
        path = request.url.path
        if path == "/_sim" or path.startswith("/_sim/"):
            return await call_next(request)
        method = request.method.upper()
        repo = _REPO_PATH.match(path)
        state.record_request(f"{method} {_route_template(app, request.scope)}",
                             f"{repo['owner']}/{repo['repo']}" if repo else None)
        headers: dict[str, str] = {}
        if not path.startswith("/app/"):
            caller = identify(request.headers.get("authorization"), method, path, static_token=token,
                              commenter=state.commenter, users=state.users, apps=state.apps)
            if isinstance(caller, Response):
                return caller
            request.state.caller = caller
            limited, headers = state.rate_limits.admit(caller, method, path)
            if limited is not None:
                return JSONResponse(limited.body, status_code=limited.status, headers=limited.headers)
        accept = request.headers.get("accept", "")
        response = await _answer(request, call_next, state.faults.take(
            lambda f: route_matches(f, method, path) and (not f.get("accept") or f["accept"] in accept)), state.delays)
        if response.status_code == 304 and getattr(request.state, "caller", None) is not None:
            state.rate_limits.refund(request.state.caller)  # a conditional hit is free, as on GitHub
        response.headers.update(headers)
        return response


async def _answer(request: Request, call_next: Callable[[Request], Awaitable[Response]],
                  fault: Mapping[str, Any] | None, delays: FaultDelays) -> Response:
    """The handler's answer, shaped by ``fault`` (see the module docstring)."""
    if fault is None:
        return await call_next(request)
    if fault.get("stall_after_bytes") is not None:
        return _stalling(await call_next(request), int(fault["stall_after_bytes"]), fault["hang_seconds"], delays)
    if not fault["after_commit"]:
        if fault["hang_seconds"]:
            await delays.wait(fault["hang_seconds"])
        if fault["status"] is not None:
            return _fault_response(fault)
        return await call_next(request)
    response = await call_next(request)
    if fault["hang_seconds"]:
        await delays.wait(fault["hang_seconds"])
    if fault["status"] is None:
        return response
    async for _ in _body(response):  # drain the discarded response
        pass
    return _fault_response(fault)


def _body(response: Response) -> AsyncIterable[str | bytes | memoryview]:
    """The body of a response from ``call_next`` (Starlette's streaming subclass, typed as ``Response``)."""
    return cast(StreamingResponse, response).body_iterator


def _stalling(response: Response, after: int, seconds: float, delays: FaultDelays) -> Response:
    """``response`` sent as it is, except that its body stops after ``after`` bytes for ``seconds``."""
    async def chunks():
        sent, stalled = 0, False
        async for chunk in _body(response):
            chunk = chunk.encode() if isinstance(chunk, str) else bytes(chunk)
            if not stalled and sent + len(chunk) >= after:
                head, chunk = chunk[:after - sent], chunk[after - sent:]
                if head:
                    yield head
                await delays.wait(seconds)
                stalled = True
            sent += len(chunk)
            if chunk:
                yield chunk

    return StreamingResponse(chunks(), status_code=response.status_code, headers=dict(response.headers))
