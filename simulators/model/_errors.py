"""OpenAI-shaped error responses: ``{"error": {message, type, param, code}}``.

``fault_error`` picks the body OpenAI sends for a given status, so an
injected 429 looks like a real rate limit (``type: "requests"``, ``code:
"rate_limit_exceeded"``) and 5xx look like ``server_error``; every message
ends with "(simulated fault)" so a log line can never be mistaken for the
real service.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi.responses import JSONResponse

__all__ = ["InvalidRequest", "fault_error", "openai_error"]


class InvalidRequest(Exception):
    """A request the real API would reject with 400 invalid_request_error."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message, self.param, self.code = message, param, code


def openai_error(
    status: int,
    message: str,
    type_: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = {"error": {"message": message, "type": type_, "param": param, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


_FAULT_BODIES: dict[int, tuple[str, str, str | None]] = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to sample from this model.", "invalid_request_error", "permission_denied"),
    429: ("Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}


def fault_error(fault: dict[str, Any]) -> JSONResponse:
    status = int(fault["status"])
    default_type = "server_error" if status >= 500 else "invalid_request_error"
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    message, type_, code = _FAULT_BODIES.get(status, (f"{phrase}.", default_type, None))
    headers: dict[str, str] = {}
    if fault.get("retry_after") is not None:
        headers["retry-after"] = str(int(fault["retry_after"]))
    if fault.get("retry_after_ms") is not None:
        headers["retry-after-ms"] = str(int(fault["retry_after_ms"]))
    return openai_error(status, f"{message} (simulated fault {fault['id']})", type_, None, code, headers)
