"""Payloads exchanged between intake, the agent workflow and its activities.

One dataclass per workflow/activity argument so fields can be added (with defaults)
without breaking running histories. Pure: no Temporal or database imports, so intake
can build a :class:`WorkOrder` without importing the workflow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workflows.kinds import NEEDS_A_PERSON as NEEDS_A_PERSON, RunStatus as RunStatus  # noqa: F401  (re-exported)
from workflows.names import (  # noqa: F401  (re-exported)
    AGENT_WORKFLOW as AGENT_WORKFLOW, KILL_SIGNAL as KILL_SIGNAL, PROGRESS_QUERY as PROGRESS_QUERY,
    WORK_ORDER_SIGNAL as WORK_ORDER_SIGNAL,
)


@dataclass
class TaskBudget:
    max_steps: int
    """Model calls allowed for one work order."""
    max_total_tokens: int
    """Input + output tokens (all categories) allowed for one work order."""
    max_usd: float
    """Spend allowed for one work order, priced with the order's price table."""
    max_wall_seconds: float = 1800
    """Wall time allowed for one work order, from its first step (workflow time)."""


@dataclass
class Price:
    """USD per million tokens, per category."""

    input: float
    cached_input: float
    output: float
    reasoning: float


@dataclass
class TokenUsage:
    """Tokens by billing category; ``input`` excludes cached, ``output`` excludes reasoning."""

    input: int = 0
    cached_input: int = 0
    output: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        return self.input + self.cached_input + self.output + self.reasoning

    def plus(self, other: "TokenUsage") -> "TokenUsage":
        return TokenUsage(self.input + other.input, self.cached_input + other.cached_input,
                          self.output + other.output, self.reasoning + other.reasoning)


@dataclass
class RuntimeOptions:
    """Activity timeouts and retry caps, snapshotted at admission (workflows read no config)."""

    model_start_to_close_seconds: float = 60
    model_max_attempts: int = 5
    model_heartbeat_seconds: float = 10
    """A worker that dies mid-call is noticed after this, not after the whole start-to-close."""
    tool_start_to_close_seconds: float = 30
    tool_heartbeat_seconds: float = 10
    tool_max_attempts: int = 5
    search_attributes: bool = True
    """Upsert Sluicegate's search attributes (off only where the server lacks them)."""
    max_task_retries: int = 20
    """Retries summed over every step of one order; past it the order fails (dead letter)."""
    memo_cost_interval_seconds: float = 10
    """Least workflow time between a step's cost-so-far memo upsert and the run's previous memo upsert
    (patch ``lean-loop-steps-2``); the order's start and end always upsert. Its default decides replay for
    orders encoded without the field: never change it."""
    max_tool_calls_per_step: int = 16
    """Tool calls run for one model answer (patch ``tool-calls-per-step-cap``); the rest are answered
    ``not run``. The default holds for orders encoded without the field."""


@dataclass
class WorkOrder:
    """An admitted work item, as signalled into the agent workflow."""

    work_key: str
    tenant: str
    owner: str
    repo: str
    number: int
    input_version: str
    generation: int
    """Fencing token: bumped on every admission of the work key."""
    trigger_kind: str
    source: str
    receipt_id: str
    model: str
    price: Price
    budget: TaskBudget
    delivery_id: str | None = None
    actor: str | None = None
    policy_version: str | None = None
    runtime: RuntimeOptions = field(default_factory=RuntimeOptions)
    effect_discriminator: str = ""
    """Empty for ordinary admissions, so retries and replays map to the same operation keys;
    set for a forced re-run, whose review must be posted again rather than found as done."""
    title: str = ""
    """The pull request's title when the trigger carried it (``workflows.run_memo.display_title``); the UI's memo."""


@dataclass
class AgentLoopStart:
    work_key: str
    tenant: str
    state: "AgentLoopState | None" = None
    """Carried over by continue-as-new; ``None`` for a fresh run."""
    max_orders_per_run: int = 50
    """Continue-as-new after this many orders (or earlier when Temporal suggests it)."""


STATE_SCHEMA_VERSION = 1


@dataclass
class AgentLoopState:
    """What one run of the agent workflow hands to the next. Versioned: a run refuses a state
    written by a newer schema, and migrates an older one, instead of misreading it."""

    schema_version: int
    pending: list[WorkOrder] = field(default_factory=list)
    seen_generations: list[int] = field(default_factory=list)
    recent: list[RunOutcome] = field(default_factory=list)
    """The last few finished orders (bounded), for the result and the progress query."""
    kill: "KillNotice | None" = None


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str
    """JSON text exactly as the model produced it."""


@dataclass
class ModelRequest:
    work_key: str
    input_version: str
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    tenant: str = ""
    """For the kill switch's tenant scope (empty in histories recorded before it existed)."""
    generation: int = 0
    """The order's generation; with ``step``, the key of the model-response journal."""
    step: int = 0
    """The order's model call, 1-based; 0 (histories from before it existed) means no journal."""


@dataclass
class KillNotice:
    """The ``kill`` signal: stop before the next step."""

    actor: str
    reason: str
    covers: list[str] | None = None
    """Set by the run when the notice arrives (patch ``kill-notice-covers-its-orders``): the orders it
    held then (``order_ref``), the ones the notice ends. None: every order (before the patch). An
    order signalled later is stopped, while a kill is in force, by the ledger's kill checks of its
    model and tool calls, and runs once the kill is lifted."""


def order_ref(generation: int, receipt_id: str | None) -> str:
    """How :attr:`KillNotice.covers` names an order: ``<generation>:<receipt id>``."""
    return f"{generation}:{receipt_id or ''}"


@dataclass
class ModelResponse:
    response_id: str
    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: TokenUsage
    attempt: int = 1
    """The activity attempt that answered (attempt - 1 retries were spent on this step)."""


@dataclass
class ToolRequest:
    """A tool call bound to its work order; the target comes from the order, never the model."""

    work_key: str
    tenant: str
    owner: str
    repo: str
    number: int
    input_version: str
    generation: int
    tool_call_id: str
    arguments: str
    effect_discriminator: str = ""
    """Separates a deliberate re-run's side effects from the first run's (see WorkOrder)."""


@dataclass
class ToolResult:
    content: str
    operation_key: str | None = None
    external_id: str | None = None
    reconciled: bool = False
    """True when the effect was found already applied (after a crash) instead of performed."""
    attempt: int = 1


@dataclass
class RunOutcome:
    """The end of one work order, recorded in the ledger and returned by the workflow."""

    work_key: str
    input_version: str
    generation: int
    status: str
    """A :class:`RunStatus` value, or ``skipped``: the order was not run, either because its admission had
    already ended (``workflows.order_claim``; nothing recorded) or because the policy in force refused
    it before its first step (``workflows.policy_step``; recorded, with a receipt)."""
    reason: str
    steps: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float = 0.0
    operation_keys: list[str] = field(default_factory=list)
    external_ids: list[str] = field(default_factory=list)
    run_id: str | None = None
    receipt_id: str | None = None
    """The admission receipt, which gets the mutation identity (operation keys, external ids)."""
    retries: int = 0
    last_error: str | None = None
    tenant: str = ""
    source: str = ""
    cancel_request: str | None = None
    """For ``cancelled``: the ledger's cancel request named by Temporal's cancel reason
    (``starter.py cancel``); the ledger then records who asked and why. None: from Temporal."""


@dataclass
class AgentLoopResult:
    work_key: str
    orders: list[RunOutcome] = field(default_factory=list)
