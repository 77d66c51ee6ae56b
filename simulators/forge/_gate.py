"""Per-request gate for the forge API: counting, auth, fault injection.

Order for every non-``/_sim/`` request: count it (key = METHOD + route
template, ``<unmatched>`` for unknown paths; and by ``owner/repo`` for
``/repos/...`` paths, so a test can prove a repository was never read) -> check the token -> take
at most one matching fault -> run the handler.

Auth: with neither a static token nor a GitHub App configured, everything is
open. Otherwise the static token, when configured and presented, is
accepted; once an app is registered a ``ghs_`` token is judged by ``_apps``
(401 expired/unknown/revoked, 403 outside its repositories or permissions);
anything else is 401 ``Bad credentials``. ``/app/...`` routes skip this step: they check the
app's JWT themselves. An unauthenticated or refused request is answered
without consuming a fault.

Fault semantics (one fault per request, first match wins):

* ``after_commit: false`` -- sleep ``hang_seconds``; then, if ``status``
  is set, answer it (with ``Retry-After`` if given) WITHOUT performing the
  operation; if no ``status``, perform the operation normally after the
  delay (a slow forge -- it still happens even if the client gave up).
* ``after_commit: true`` -- perform the operation first (a comment is
  stored), then sleep ``hang_seconds``, then answer ``status`` if set,
  else the normal response: "the forge accepted the write, the client
  never heard back".
"""

from __future__ import annotations

import asyncio
import hmac
import re
from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from starlette.routing import Match

from simulators._faults import FaultSpecError, check_number, check_status
from simulators.forge._apps import presented_token
from simulators.forge._render import error_body
from simulators.forge._state import ForgeState

__all__ = ["install_gate", "parse_fault"]

_FAULT_KEYS = {"method", "path", "status", "times", "hang_seconds", "after_commit", "retry_after"}

_REPO_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)(?:/|$)")


def parse_fault(spec: Any) -> dict[str, Any]:
    """Validate a ``POST /_sim/faults`` body; ``FaultSpecError`` if bad."""
    if not isinstance(spec, Mapping):
        raise FaultSpecError("fault must be a JSON object")
    unknown = set(spec) - _FAULT_KEYS
    if unknown:
        raise FaultSpecError(f"unknown fault fields: {sorted(unknown)}")
    method = spec.get("method")
    if method is not None and not isinstance(method, str):
        raise FaultSpecError("'method' must be a string or null")
    path = spec.get("path") or ".*"
    try:
        re.compile(path)
    except (re.error, TypeError) as exc:
        raise FaultSpecError(f"'path' is not a valid regex: {exc}") from exc
    after_commit = spec.get("after_commit", False)
    if not isinstance(after_commit, bool):
        raise FaultSpecError("'after_commit' must be a boolean")
    fault = {
        "method": method.upper() if method else None,
        "path": path,
        "status": check_status(spec),
        "times": spec.get("times", 1),
        "hang_seconds": check_number(spec, "hang_seconds") or 0.0,
        "after_commit": after_commit,
        "retry_after": check_number(spec, "retry_after", None),
    }
    if fault["status"] is None and not fault["hang_seconds"]:
        raise FaultSpecError("a fault needs 'status' and/or a positive 'hang_seconds'")
    return fault


def _matches(fault: Mapping[str, Any], method: str, path: str) -> bool:
    if fault["method"] and fault["method"] != method:
        return False
    return re.search(fault["path"], path) is not None


def _authorized(header: str | None, token: str) -> bool:
    scheme, _, value = (header or "").partition(" ")
    if scheme.lower() not in ("bearer", "token"):
        return False
    return hmac.compare_digest(value.strip().encode(), token.encode())


def _refusal(state: ForgeState, token: str | None, header: str | None, method: str, path: str) -> Response | None:
    if path.startswith("/app/"):
        return None
    if token is not None and _authorized(header, token):
        return None
    presented = presented_token(header)
    if state.apps.enabled and presented is not None and presented.startswith("ghs_"):
        refused = state.apps.authorize(presented, method, path)
        return None if refused is None else JSONResponse(error_body(*refused), status_code=refused[0])
    if token is not None or state.apps.enabled:
        return JSONResponse(error_body(401, "Bad credentials"), status_code=401)
    return None


def _route_template(app: FastAPI, scope: Mapping[str, Any]) -> str:
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
        refused = _refusal(state, token, request.headers.get("authorization"), method, path)
        if refused is not None:
            return refused
        fault = state.faults.take(lambda f: _matches(f, method, path))
        if fault is None:
            return await call_next(request)
        if not fault["after_commit"]:
            if fault["hang_seconds"]:
                await asyncio.sleep(fault["hang_seconds"])
            if fault["status"] is not None:
                return _fault_response(fault)
            return await call_next(request)
        response = await call_next(request)
        if fault["hang_seconds"]:
            await asyncio.sleep(fault["hang_seconds"])
        if fault["status"] is None:
            return response
        async for _ in response.body_iterator:  # drain the discarded response
            pass
        return _fault_response(fault)
