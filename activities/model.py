"""The model call: one Chat Completions request through the real ``openai`` client.

The client's own retries are off (``max_retries=0``): Temporal owns retries, and
retrying in two places multiplies attempts. Around the call, ``activities.step_ledger``
keeps the money and the answer durable: a step answered before (journal) is returned
without a call; otherwise the step's worst-case cost is reserved on the tenant's and the
global day budget (refused → ``DayBudgetExceeded``, no call), the answer is journaled the
moment it arrives and the reservation settled with the real usage; a failed call releases
the reservation only when it provably never reached the provider, and is charged at its
estimate otherwise — a call cut off by a workflow cancel (``cancel-is-an-outcome``) included:
the request may already have been billed. HTTP failures are mapped by ``activities.retry_classes``; a
400/401/403 ends the run with a clear ``ModelRequestRejected`` instead of burning
attempts. Any OpenAI-compatible endpoint works by configuration (base URL, key, model name).

Credentials are per tenant (``activities.model_credentials``): the request's tenant picks the
cached client, built with that tenant's key (or the default). A kill of the tenant, or a global
kill, seen by this activity also drops the cached client(s) in this worker.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import timedelta

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.gateway import killed_error
from activities.heartbeat import Progress
from activities.model_credentials import ModelClients, ModelKeyUnavailable
from activities.retry_classes import classify_status
from activities.step_ledger import SpendGuard, StepLedger
from intake.identity import with_tenant
from sluicegate.observability.genai import ModelCallReport, model_call
from ledger import BreakerBoard, Kill, KillSwitch, ModelJournal, ModelJournalEntry
from workflows.budget import usage_from_openai
from workflows.contracts import ModelRequest, ModelResponse, ToolCall
from workflows.kinds import FailureType
from workflows.names import MODEL_ACTIVITY

WORK_KEY_HEADER = "X-Sluicegate-Work-Key"
VERSION_HEADER = "X-Sluicegate-Input-Version"


def _error_for_status(exc: openai.APIStatusError) -> ApplicationError:
    rc = classify_status(exc.status_code, exc.response.headers, "Model")
    delay = timedelta(seconds=rc.delay_seconds) if rc.delay_seconds is not None else None
    return ApplicationError(f"model endpoint answered {exc.status_code}: {exc.message}", type=rc.error_type,
                            non_retryable=not rc.retryable, next_retry_delay=delay)


MODEL_PROVIDER = "model"


class _OneClient:
    """Every tenant on one client (tests and tools that pass a bare ``AsyncOpenAI``)."""

    def __init__(self, client: AsyncOpenAI) -> None:
        self._client = client

    def slot(self, tenant: str | None) -> str:
        return ""  # one client for everyone: it follows global kills only

    async def for_tenant(self, tenant: str | None, kill_mark: str | None = None) -> AsyncOpenAI:
        return self._client

    async def revoke(self, tenant: str | None) -> bool:
        return False

    async def revoke_all(self) -> int:
        return 0


class ModelActivities:
    def __init__(self, clients: ModelClients | AsyncOpenAI, kills: KillSwitch | None = None,
                 spend: SpendGuard | None = None, breakers: BreakerBoard | None = None,
                 journal: ModelJournal | None = None, first_byte_seconds: float = 60.0) -> None:
        """``first_byte_seconds``: how long the call heartbeats on a timer while the provider has not
        begun to answer (the client's timeout is the natural value); afterwards only progress beats."""
        self._first_byte_seconds = first_byte_seconds
        self._clients = clients if isinstance(clients, ModelClients) else _OneClient(clients)
        self._kills = kills
        self._spend = spend
        self._breakers = breakers
        self._steps = StepLedger(spend, journal)

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

    @activity.defn(name=MODEL_ACTIVITY)
    async def chat_completion(self, req: ModelRequest) -> ModelResponse:
        # A run admitted before the tenancy upgrade carries its old key: kills, reservations and
        # the journal use the key the upgrade gave its rows.
        req = replace(req, work_key=with_tenant(req.work_key, req.tenant))
        # The ledger's reads before the call, in one thread hop (each is one statement, no write lock).
        kill, entry, mark = await asyncio.to_thread(self._before_call, req)
        if kill is not None:  # a kill stops spending at once, even in a retry already scheduled
            await self._revoke(kill)
            raise killed_error(kill)
        attempt = activity.info().attempt
        progress = Progress(step=req.step)  # heartbeats come from the work: a stuck call stops beating
        if attempt > 1 and activity.info().heartbeat_details:
            activity.logger.info("model step %d attempt %d; the last attempt's progress: %s", req.step, attempt,
                                 activity.info().heartbeat_details[0], extra={"work_key": req.work_key})
        progress.beat(phase="journal")
        journaled = await self._steps.journaled(req, attempt, entry)
        if journaled is not None:
            activity.logger.info("model step %d answered from the journal (attempt %d): no provider call",
                                 req.step, attempt, extra={"work_key": req.work_key})
            return journaled
        client = await self._client_for(req, mark)
        progress.beat(phase="reserve")
        reservation = await self._steps.reserve(req, attempt)
        try:
            with model_call(req.model, req.tenant) as (_, report):
                completion = await self._send(client, req, progress)
                response = _response_from(completion, attempt)
                report_answer(report, completion)
        except openai.OpenAIError as exc:
            await self._steps.unanswered(reservation, exc)
            raise await self._activity_error(exc) from None
        except BaseException as exc:  # cancelled, or an answer we could not read: fate unknown
            await self._steps.unanswered(reservation, exc)
            raise
        activity.logger.info("model %s answered %s (%d tool calls)", req.model, response.finish_reason,
                             len(response.tool_calls), extra={"work_key": req.work_key})
        progress.beat(phase="answered")
        return await self._steps.answered(req, reservation, response, attempt)

    async def _revoke(self, kill: Kill) -> None:
        """A kill of a tenant (or of everything) drops the cached client(s) it covers in this worker."""
        if kill.scope == "all":
            dropped = await self._clients.revoke_all()
        elif kill.scope == "tenant":
            dropped = int(await self._clients.revoke(kill.target))
        else:
            return
        if dropped:
            activity.logger.warning("kill %s (%s %s): revoked %d cached model client(s)", kill.id, kill.scope,
                                    kill.target, dropped)

    def _before_call(self, req: ModelRequest) -> tuple[Kill | None, ModelJournalEntry | None, str | None]:
        """In a worker thread: the kill in force over the request (then nothing else), the step's
        journal entry (``StepLedger.find``) and the newest kill covering the request's client slot
        (the shared default client follows global kills only; a tenant's own, its kills too)."""
        if self._kills is None:
            return None, self._steps.find(req), None
        with self._kills.reads() as conn:  # three one-statement reads, one connection
            kill = self._kills.active_for(req.work_key, req.tenant or None, conn)
            if kill is not None:
                return kill, None, None
            mark = self._kills.newest_covering_tenant(self._clients.slot(req.tenant or None) or None, conn)
            return None, self._steps.find(req, conn), mark

    async def _client_for(self, req: ModelRequest, mark: str | None) -> AsyncOpenAI:
        try:
            return await self._clients.for_tenant(req.tenant or None, mark)
        except ModelKeyUnavailable as exc:
            raise ApplicationError(f"no model key for tenant {req.tenant!r}: {exc}", type=FailureType.MODEL_KEY_UNAVAILABLE,
                                   non_retryable=True) from None

    async def _send(self, client: AsyncOpenAI, req: ModelRequest, progress: Progress) -> ChatCompletion:
        """The call, heartbeating from its progress: a timer beat only while the provider has not
        begun to answer (bounded by ``first_byte_seconds``), then one beat per body chunk received,
        with the bytes so far. A body that stalls mid-response stops the beats."""
        max_tokens = self._spend.step_max_output_tokens if self._spend else openai.NOT_GIVEN
        body = bytearray()
        async with AsyncExitStack() as stack:
            async with progress.waiting("awaiting-response", self._first_byte_seconds):
                response = await stack.enter_async_context(client.chat.completions.with_streaming_response.create(
                    model=req.model, messages=req.messages, tools=req.tools or openai.NOT_GIVEN,
                    max_completion_tokens=max_tokens,
                    extra_headers={WORK_KEY_HEADER: req.work_key, VERSION_HEADER: req.input_version}))
            chunks = 0
            progress.beat(phase="receiving", bytes=0, chunks=0)
            async for chunk in response.iter_bytes():
                body += chunk
                chunks += 1
                progress.beat(phase="receiving", bytes=len(body), chunks=chunks)
        try:
            return ChatCompletion.model_validate(json.loads(body))
        except ValueError as exc:
            raise openai.APIResponseValidationError(response.http_response, None,
                                                    message=f"model answer is not a chat completion: {exc}") from None

    async def _activity_error(self, exc: openai.OpenAIError) -> BaseException:
        """The provider's failure as the error Temporal retries (or not); feeds the model breaker."""
        if isinstance(exc, openai.APIStatusError):
            if exc.status_code == 429 or exc.status_code >= 500:
                await self._feed_breaker(f"{exc.status_code}: {exc.message}")
            return _error_for_status(exc)
        if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
            await self._feed_breaker(f"unreachable: {exc}")
            return ApplicationError(f"model endpoint unreachable: {exc}", type=FailureType.MODEL_UNAVAILABLE)
        return exc


def _response_from(completion: ChatCompletion, attempt: int) -> ModelResponse:
    choice = completion.choices[0]
    usage = completion.usage
    prompt = usage.prompt_tokens if usage else 0
    completion_tokens = usage.completion_tokens if usage else 0
    cached = (usage.prompt_tokens_details.cached_tokens or 0) if usage and usage.prompt_tokens_details else 0
    reasoning = ((usage.completion_tokens_details.reasoning_tokens or 0)
                 if usage and usage.completion_tokens_details else 0)
    calls = [ToolCall(c.id, c.function.name, c.function.arguments)
             for c in (choice.message.tool_calls or []) if c.type == "function"]
    return ModelResponse(response_id=completion.id, content=choice.message.content, tool_calls=calls,
                         finish_reason=choice.finish_reason,
                         usage=usage_from_openai(prompt, completion_tokens, cached, reasoning), attempt=attempt)


def report_answer(report: ModelCallReport, completion: ChatCompletion) -> None:
    """The GenAI span's response attributes from the parsed answer."""
    report.response_id, report.response_model = completion.id, completion.model
    report.finish_reasons = [c.finish_reason or "error" for c in completion.choices]
    if completion.usage is not None:
        report.input_tokens, report.output_tokens = completion.usage.prompt_tokens, completion.usage.completion_tokens
