"""Control API of the model simulator (``/_sim/``; never requires auth).

* ``GET /_sim/health`` -- liveness for launchers.
* ``GET /_sim/stats`` -- ``{"calls", "completed", "by_status": {"200": n},
  "by_work": {"<work key>@<input version>": n}, "keys_by_work": {"<work key>": {"<owner>": n}}
  (per-tenant keys only), "tokens": {...}}``.
* ``POST /_sim/reset`` -- zero counters, clear faults and the prompt cache.
* ``POST /_sim/faults`` -- ``{"status": 429|500|..., "times": n|null,
  "retry_after": s|null, "retry_after_ms": ms|null, "delay_seconds": 0}``;
  needs ``status`` and/or a positive ``delay_seconds``. With ``stall_after_bytes: n`` (and no
  ``status``) the answer is a normal 200 whose body stops after ``n`` bytes for ``delay_seconds``
  before the rest is sent: a provider stuck mid-response. With ``repeat_tool_calls: n`` (and no
  ``status``) an answer that calls a tool calls it ``n`` times at once (ids ``<id>_<i>``): a model
  asking for many parallel tool calls in one answer. Faults apply to
  ``/v1/chat/completions`` only, in order added, one per request.
* ``GET /_sim/faults`` lists, ``DELETE /_sim/faults`` clears.
* ``POST /_sim/faults/release`` -- ends every ``delay_seconds`` being waited out now (a delayed request
  answers as its fault says, a stall sends the rest of its body): ``{"released": n}``. Lets a test hold
  a call for "as long as needed" (a long delay) and end it when it has seen what it waited for.

Bad fault specs (unknown keys, wrong types) answer 400 ``{"message"}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from simulators._faults import FaultSpecError, check_number, check_status
from simulators.model._state import ModelState

__all__ = ["build_control_router", "parse_fault"]

_FAULT_KEYS = {"status", "times", "retry_after", "retry_after_ms", "delay_seconds", "stall_after_bytes",
               "repeat_tool_calls"}


def parse_fault(spec: Any) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        raise FaultSpecError("fault must be a JSON object")
    unknown = set(spec) - _FAULT_KEYS
    if unknown:
        raise FaultSpecError(f"unknown fault fields: {sorted(unknown)}")
    fault = {
        "status": check_status(spec),
        "times": spec.get("times", 1),
        "retry_after": check_number(spec, "retry_after", None),
        "retry_after_ms": check_number(spec, "retry_after_ms", None),
        "delay_seconds": check_number(spec, "delay_seconds") or 0.0,
        "stall_after_bytes": check_number(spec, "stall_after_bytes", None),
    }
    if fault["stall_after_bytes"] is not None and (fault["status"] is not None or not fault["delay_seconds"]):
        raise FaultSpecError("'stall_after_bytes' needs a positive 'delay_seconds' and no 'status'")
    repeat = spec.get("repeat_tool_calls")
    if repeat is not None and (isinstance(repeat, bool) or not isinstance(repeat, int) or not 2 <= repeat <= 1000
                               or fault["status"] is not None):
        raise FaultSpecError("'repeat_tool_calls' must be an integer 2..1000, with no 'status'")
    fault["repeat_tool_calls"] = repeat
    if fault["status"] is None and not fault["delay_seconds"] and repeat is None:
        raise FaultSpecError("a fault needs 'status', a positive 'delay_seconds' or 'repeat_tool_calls'")
    return fault


def build_control_router(state: ModelState) -> APIRouter:
    router = APIRouter(prefix="/_sim")

    @router.get("/health")
    async def health() -> dict[str, Any]:
        return {"simulator": "model", "ok": True, "models": list(state.models)}

    @router.get("/stats")
    async def stats() -> dict[str, Any]:
        return state.stats()

    @router.post("/reset")
    async def reset() -> dict[str, bool]:
        state.reset()
        return {"reset": True}

    @router.post("/faults", status_code=201)
    async def add_fault(request: Request) -> Response:
        try:
            spec = json.loads(await request.body() or b"null")
        except ValueError:
            spec = None
        try:
            fault = state.faults.add(parse_fault(spec))
        except FaultSpecError as exc:
            return JSONResponse({"message": str(exc)}, status_code=400)
        return JSONResponse(fault, status_code=201)

    @router.get("/faults")
    async def list_faults() -> list[dict[str, Any]]:
        return state.faults.list()

    @router.delete("/faults")
    async def clear_faults() -> dict[str, int]:
        return {"cleared": state.faults.clear()}

    @router.post("/faults/release")
    async def release_delays() -> dict[str, int]:
        return {"released": state.delays.release()}

    return router
