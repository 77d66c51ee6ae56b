"""The model call: one Chat Completions request through the real ``openai`` client.

The client's own retries are off (``max_retries=0``): Temporal owns retries, and
retrying in two places multiplies attempts. Before the call the step's worst-case cost is
reserved on the tenant's and the global day budget (refused → ``DayBudgetExceeded``, no
call); after it the reservation is settled with the real usage, or released on failure. HTTP failures are mapped by
``activities.retry_classes``; a 400/401/403 ends the run with a clear
``ModelRequestRejected`` instead of burning attempts. Any OpenAI-compatible endpoint
works by configuration (base URL, key, model name).
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from datetime import timedelta

import openai
from openai import AsyncOpenAI
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.gateway import killed_error
from activities.heartbeat import heartbeating
from activities.retry_classes import classify_status
from intake.identity import with_tenant
from ledger import BreakerBoard, DayBudgetExceeded, DayBudgets, KillSwitch
from workflows.budget import cost_usd, usage_from_openai
from workflows.contracts import ModelRequest, ModelResponse, Price, TokenUsage, ToolCall

WORK_KEY_HEADER = "X-Sluicegate-Work-Key"
VERSION_HEADER = "X-Sluicegate-Input-Version"


def _error_for_status(exc: openai.APIStatusError) -> ApplicationError:
    rc = classify_status(exc.status_code, exc.response.headers, "Model")
    delay = timedelta(seconds=rc.delay_seconds) if rc.delay_seconds is not None else None
    return ApplicationError(f"model endpoint answered {exc.status_code}: {exc.message}", type=rc.error_type,
                            non_retryable=not rc.retryable, next_retry_delay=delay)


@dataclass(frozen=True)
class SpendGuard:
    """Day budgets and the prices and output cap that bound one step's cost."""

    budgets: DayBudgets
    prices: dict[str, Price]
    step_max_output_tokens: int

    def worst_case_usd(self, req: ModelRequest) -> float:
        price = self.prices[req.model]
        prompt = len(json.dumps(req.messages)) + len(json.dumps(req.tools))
        # ~3 characters per token over-counts English and JSON: a reservation must not undershoot.
        worst = TokenUsage(input=math.ceil(prompt / 3), output=self.step_max_output_tokens)
        return cost_usd(worst, Price(price.input, price.input, max(price.output, price.reasoning), price.reasoning))


MODEL_PROVIDER = "model"


class ModelActivities:
    def __init__(self, client: AsyncOpenAI, kills: KillSwitch | None = None, spend: SpendGuard | None = None,
                 breakers: BreakerBoard | None = None) -> None:
        self._client = client
        self._kills = kills
        self._spend = spend
        self._breakers = breakers

    async def _feed_breaker(self, error: str) -> None:
        """A 429, 5xx or unreachable endpoint counts toward the model breaker (intake defers while open)."""
        if self._breakers is None:
            return
        try:
            state = await asyncio.to_thread(self._breakers.record_failure, MODEL_PROVIDER, error)
        except Exception as exc:  # noqa: BLE001 - the breaker is advisory; the call's own error matters
            activity.logger.warning("could not record a model breaker failure: %r", exc)
            return
        if state.opened_at is not None and state.failures == self._breakers.policy.failure_threshold:
            activity.logger.warning("model breaker opened after %d failures: %s", state.failures, error)

    @activity.defn(name="sluicegate.model.chat_completion")
    async def chat_completion(self, req: ModelRequest) -> ModelResponse:
        if self._kills is not None:  # a kill stops spending at once, even in a retry already scheduled
            kill = await asyncio.to_thread(self._kills.active_for, with_tenant(req.work_key, req.tenant),
                                           req.tenant or None)
            if kill is not None:
                raise killed_error(kill)
        reservation = await self._reserve(req)
        try:
            async with heartbeating():  # a dead worker is noticed at the heartbeat timeout
                response = await self._call(req)
        except BaseException:  # a cancel (CancelledError) too: the reservation is never left held
            if reservation is not None:  # the thread finishes the release even if this await is cancelled again
                await asyncio.to_thread(self._spend.budgets.release, reservation)
            raise
        if reservation is not None:
            spent = cost_usd(response.usage, self._spend.prices[req.model])
            await asyncio.to_thread(self._spend.budgets.settle, reservation, spent)
        return response

    async def _reserve(self, req: ModelRequest) -> str | None:
        if self._spend is None:
            return None
        amount = self._spend.worst_case_usd(req)
        try:
            return await asyncio.to_thread(self._spend.budgets.reserve, req.tenant or "-",
                                           with_tenant(req.work_key, req.tenant), amount)
        except DayBudgetExceeded as exc:
            raise ApplicationError(str(exc), type="DayBudgetExceeded", non_retryable=True) from None

    async def _call(self, req: ModelRequest) -> ModelResponse:
        max_tokens = self._spend.step_max_output_tokens if self._spend else openai.NOT_GIVEN
        try:
            completion = await self._client.chat.completions.create(
                model=req.model, messages=req.messages, tools=req.tools or openai.NOT_GIVEN,
                max_completion_tokens=max_tokens,
                extra_headers={WORK_KEY_HEADER: req.work_key, VERSION_HEADER: req.input_version})
        except openai.APIStatusError as exc:
            if exc.status_code == 429 or exc.status_code >= 500:
                await self._feed_breaker(f"{exc.status_code}: {exc.message}")
            raise _error_for_status(exc) from None
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            await self._feed_breaker(f"unreachable: {exc}")
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
                             usage=usage_from_openai(prompt, completion_tokens, cached, reasoning),
                             attempt=activity.info().attempt)


def make_openai_client(base_url: str, api_key: str, timeout_seconds: float) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_seconds)
