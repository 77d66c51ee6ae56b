"""FastAPI app for the model simulator (OpenAI Chat Completions subset).

``POST /v1/chat/completions`` -- per request, in order: count the call
(``X-Sluicegate-Work-Key`` / ``X-Sluicegate-Input-Version`` headers, absent
-> ``unknown``), check the API key (401 ``invalid_api_key``), take one
fault (sleep ``delay_seconds``; answer ``status`` with ``retry-after`` /
``retry-after-ms`` if set), parse JSON (400), validate (400, see
``_validate``), run the reviewer policy (``_policy``) -- or, when ``get_issue`` is offered, the
issue-triage policy (``_triage``) --, account usage
(``_usage``). Every answer carries ``x-request-id`` and
``openai-processing-ms``. Any model name is accepted and echoed back.

Per-tenant keys (``tenant_keys={"acme": "sk-a", ...}`` / ``--tenant-key acme=sk-a``): every
``/v1`` request must then carry one of the tenant keys or the default ``api_key``; a request whose
work key names a tenant with a key of its own must carry exactly that key, and a tenant's key is
refused for any other tenant's work (401 ``invalid_api_key``, ``key not valid for tenant``). Each
request records whose key it carried (``/_sim/stats`` ``keys_by_work``: work key -> key owner ->
count; owner ``default`` for ``api_key``, ``unknown`` for a refused key), never the key itself.

``GET /v1/models`` lists the configured model names. Unknown paths answer
404 ``Invalid URL (METHOD /path)`` like the real API. Control API:
``_control``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping, Sequence

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from simulators.model._control import build_control_router
from simulators.model._errors import InvalidRequest, fault_error, openai_error
from simulators.model._policy import decide
from simulators.model._state import DEFAULT_MODELS, ModelState
from simulators.model._triage import decide_triage, offers_triage
from simulators.model._usage import build_usage, completion_tokens, prompt_tokens
from simulators.model._validate import ChatRequest, validate_chat_request

__all__ = ["create_model_app"]

WORK_KEY_HEADER = "x-sluicegate-work-key"
INPUT_VERSION_HEADER = "x-sluicegate-input-version"
_MODELS_CREATED = 1_700_000_000


def _auth_error(header: str | None, api_key: str) -> Response | None:
    scheme, _, value = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        message = (
            "You didn't provide an API key. You need to provide your API key in an Authorization header "
            "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
        )
        return openai_error(401, message)
    if not hmac.compare_digest(value.strip().encode(), api_key.encode()):
        shown = value.strip()
        masked = f"{shown[:3]}*****{shown[-4:]}" if len(shown) > 8 else "*****"
        return openai_error(401, f"Incorrect API key provided: {masked}.", code="invalid_api_key")
    return None


def _tenant_of(work_key: str) -> str | None:
    head, sep, _ = work_key.partition("/")
    return head if sep and ":" not in head else None


def _key_owner(header: str | None, api_key: str | None, tenant_keys: Mapping[str, str]) -> str | None:
    """Whose key the request presents: a tenant name, ``default``, or None (no known key)."""
    scheme, _, value = (header or "").partition(" ")
    presented = value.strip().encode() if scheme.lower() == "bearer" else b""
    owner = None
    for tenant, key in tenant_keys.items():  # compare with every key: the time says nothing about which
        if hmac.compare_digest(presented, key.encode()):
            owner = tenant
    if api_key is not None and hmac.compare_digest(presented, api_key.encode()):
        owner = owner or "default"
    return owner


def _tenant_key_error(owner: str | None, work_key: str, tenant_keys: Mapping[str, str]) -> Response | None:
    tenant = _tenant_of(work_key)
    wanted = tenant if tenant in tenant_keys else "default"
    if owner == wanted:
        return None
    if owner is None:
        return openai_error(401, "Incorrect API key provided.", code="invalid_api_key")
    return openai_error(401, f"Incorrect API key provided: key not valid for tenant {tenant or 'unknown'!r}.",
                        code="invalid_api_key")


def _completion(request: ChatRequest, state: ModelState, seq: int, created: int) -> dict:
    policy = decide_triage if offers_triage(request.tools) else decide
    reply = policy(request.messages, request.tools, request.tool_choice)
    message: dict = {"role": "assistant", "content": reply.content, "refusal": None, "annotations": []}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    prompt = prompt_tokens(request.messages, request.tools)
    cached = state.lookup_and_remember(request.messages, prompt)
    completion = completion_tokens(message, reply.reasoning_tokens)
    digest = hashlib.sha256(f"{seq}|{json.dumps(request.messages, sort_keys=True)}".encode()).hexdigest()
    return {
        "id": f"chatcmpl-{digest[:29]}",
        "object": "chat.completion",
        "created": created,
        "model": request.model,
        "system_fingerprint": "fp_sim",
        "service_tier": "default",
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}],
        "usage": build_usage(prompt, cached, completion, reply.reasoning_tokens),
    }


def _repeat_tool_calls(payload: dict, times: int) -> None:
    """Each tool call of the answer, ``times`` times over (a model fanning out parallel calls)."""
    message = payload["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    message_calls = [{**call, "id": f"{call['id']}_{i}"} for call in calls for i in range(times)]
    if message_calls:
        message["tool_calls"] = message_calls


def _stalling(payload: dict, after: int, seconds: float, state: ModelState) -> Response:
    """A 200 whose body stops after ``after`` bytes for ``seconds``, then ends: stuck mid-response."""
    body = json.dumps(payload).encode()

    async def chunks():
        yield body[:after]
        await state.delays.wait(seconds)
        yield body[after:]

    return StreamingResponse(chunks(), media_type="application/json")


def create_model_app(
    state: ModelState | None = None,
    *,
    api_key: str | None = None,
    models: Sequence[str] | None = None,
    tenant_keys: Mapping[str, str] | None = None,
) -> FastAPI:
    """Build the app. ``api_key`` set -> ``Authorization: Bearer`` required; ``tenant_keys`` set ->
    each tenant's work must carry its own key (tenants not listed: ``api_key``)."""
    tenant_keys = dict(tenant_keys or {})
    if state is None:
        state = ModelState(models or DEFAULT_MODELS)
    app = FastAPI(title="Model simulator (OpenAI Chat Completions subset)", docs_url=None, redoc_url=None,
                  openapi_url=None)  # fmt: skip
    app.state.model_sim = state

    @app.exception_handler(StarletteHTTPException)
    async def _on_http(request: Request, exc: StarletteHTTPException) -> Response:
        return openai_error(exc.status_code, f"Invalid URL ({request.method} {request.url.path})")

    @app.get("/v1/models")
    async def list_models(request: Request) -> Response:
        if tenant_keys and _key_owner(request.headers.get("authorization"), api_key, tenant_keys) is None:
            return openai_error(401, "Incorrect API key provided.", code="invalid_api_key")
        if not tenant_keys and api_key is not None and (
                denied := _auth_error(request.headers.get("authorization"), api_key)):
            return denied
        data = [{"id": m, "object": "model", "created": _MODELS_CREATED, "owned_by": "sluicegate-simulator"}
                for m in state.models]  # fmt: skip
        return JSONResponse({"object": "list", "data": data})

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        started = time.monotonic()
        seq = state.next_seq()
        headers = request.headers
        work_key = headers.get(WORK_KEY_HEADER, "unknown")
        state.record_arrival(f"{work_key}@{headers.get(INPUT_VERSION_HEADER, 'unknown')}")

        def finish(response: Response, usage: dict | None = None) -> Response:
            state.record_outcome(response.status_code, usage)
            response.headers["x-request-id"] = f"req_{hashlib.sha256(f'req:{seq}'.encode()).hexdigest()[:32]}"
            response.headers["openai-processing-ms"] = str(int((time.monotonic() - started) * 1000))
            return response

        if tenant_keys:
            owner = _key_owner(headers.get("authorization"), api_key, tenant_keys)
            state.record_key(work_key, owner or "unknown")
            if (denied := _tenant_key_error(owner, work_key, tenant_keys)) is not None:
                return finish(denied)
        elif api_key is not None and (denied := _auth_error(headers.get("authorization"), api_key)):
            return finish(denied)
        fault = state.faults.take(lambda _: True)
        stall = fault if fault is not None and fault.get("stall_after_bytes") is not None else None
        if fault is not None and stall is None:
            if fault["delay_seconds"]:
                await state.delays.wait(fault["delay_seconds"])
            if fault["status"] is not None:
                return finish(fault_error(fault))
        try:
            try:
                body = json.loads(await request.body())
            except ValueError:
                raise InvalidRequest(
                    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
                    "your HTTP library correctly. The OpenAI API expects a JSON payload.)"
                ) from None
            chat = validate_chat_request(body)
        except InvalidRequest as exc:
            return finish(openai_error(400, exc.message, param=exc.param, code=exc.code))
        payload = _completion(chat, state, seq, int(time.time()))
        if fault is not None and fault.get("repeat_tool_calls"):
            _repeat_tool_calls(payload, fault["repeat_tool_calls"])
        if stall is not None:
            return finish(_stalling(payload, int(stall["stall_after_bytes"]), stall["delay_seconds"], state),
                          payload["usage"])
        return finish(JSONResponse(payload), payload["usage"])

    app.include_router(build_control_router(state))
    return app
