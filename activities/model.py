"""The model call: one Chat Completions request through the real ``openai`` client.

The client's own retries are off (``max_retries=0``): Temporal owns retries, and
retrying in two places multiplies attempts. HTTP failures are mapped by
``activities.retry_classes``; a 400/401/403 ends the run with a clear
``ModelRequestRejected`` instead of burning attempts. Any OpenAI-compatible endpoint
works by configuration (base URL, key, model name).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import openai
from openai import AsyncOpenAI
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.gateway import killed_error
from activities.retry_classes import classify_status
from ledger import KillSwitch
from workflows.budget import usage_from_openai
from workflows.contracts import ModelRequest, ModelResponse, ToolCall

WORK_KEY_HEADER = "X-Sluicegate-Work-Key"
VERSION_HEADER = "X-Sluicegate-Input-Version"


def _error_for_status(exc: openai.APIStatusError) -> ApplicationError:
    rc = classify_status(exc.status_code, exc.response.headers, "Model")
    delay = timedelta(seconds=rc.delay_seconds) if rc.delay_seconds is not None else None
    return ApplicationError(f"model endpoint answered {exc.status_code}: {exc.message}", type=rc.error_type,
                            non_retryable=not rc.retryable, next_retry_delay=delay)


class ModelActivities:
    def __init__(self, client: AsyncOpenAI, kills: KillSwitch | None = None) -> None:
        self._client = client
        self._kills = kills

    @activity.defn(name="sluicegate.model.chat_completion")
    async def chat_completion(self, req: ModelRequest) -> ModelResponse:
        if self._kills is not None:  # a kill stops spending at once, even in a retry already scheduled
            kill = await asyncio.to_thread(self._kills.active_for, req.work_key, req.tenant or None)
            if kill is not None:
                raise killed_error(kill)
        try:
            completion = await self._client.chat.completions.create(
                model=req.model, messages=req.messages, tools=req.tools or openai.NOT_GIVEN,
                extra_headers={WORK_KEY_HEADER: req.work_key, VERSION_HEADER: req.input_version})
        except openai.APIStatusError as exc:
            raise _error_for_status(exc) from None
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            raise ApplicationError(f"model endpoint unreachable: {exc}", type="ModelUnavailable") from None
        choice = completion.choices[0]
        usage = completion.usage
        prompt = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        cached = (usage.prompt_tokens_details.cached_tokens or 0) if usage and usage.prompt_tokens_details else 0
        reasoning = ((usage.completion_tokens_details.reasoning_tokens or 0)
                     if usage and usage.completion_tokens_details else 0)
        calls = [ToolCall(c.id, c.function.name, c.function.arguments)
                 for c in (choice.message.tool_calls or []) if c.type == "function"]
        activity.logger.info("model %s answered %s (%d tool calls)", req.model, choice.finish_reason, len(calls),
                             extra={"work_key": req.work_key})
        return ModelResponse(response_id=completion.id, content=choice.message.content, tool_calls=calls,
                             finish_reason=choice.finish_reason,
                             usage=usage_from_openai(prompt, completion_tokens, cached, reasoning))


def make_openai_client(base_url: str, api_key: str, timeout_seconds: float) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_seconds)
