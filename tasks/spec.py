"""What a registered task declares: :class:`TaskSpec`, and the ports its tools are written against.

A spec is plain data plus pure functions, except :attr:`TaskSpec.reader` (a forge read) and the
tool handlers (forge calls through a :class:`ToolKit`). Nothing here imports Temporal, the
ledger, the activities or the workflows: the workflow reads :class:`LoopSpec` (data), the worker
hosts the handlers as activities (``activities/task_tools.py``), and intake gets the reader and
rules injected (``intake.ports.TaskIntake``). See ``docs/tasks.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, Protocol

from intake.envelope import PullRequestRef, WorkCandidate
from intake.github import GithubMapper
from intake.ports import FreshnessRule, TargetReader, TaskPolicyRule
from sluicegate.forge.client import ForgeClient
from sluicegate.forge.progress_reads import ProgressSink

TASK_NAME = r"^[a-z][a-z0-9_-]{0,31}$"
"""A task's name: its package's name and its work keys' suffix."""


@dataclass(frozen=True)
class TaskToolCall:
    """One model tool call bound to its work order (the target comes from the order, never the model)."""

    work_key: str
    tenant: str
    owner: str
    repo: str
    number: int
    input_version: str
    generation: int
    arguments: str
    """JSON text exactly as the model produced it: untrusted."""
    effect_discriminator: str = ""


@dataclass(frozen=True)
class ToolAnswer:
    """What the model is told, and the mutation identity the run's outcome records."""

    content: str
    operation_key: str | None = None
    external_id: str | None = None
    reconciled: bool = False


@dataclass(frozen=True)
class EffectDone:
    """An effect operation's result through the side-effect ledger (exactly once per operation key)."""

    operation_key: str
    external_id: str | None
    result: dict[str, Any]
    reconciled: bool = False
    replayed: bool = False


Effect = tuple[str | None, dict[str, Any]]
"""(external id, result) of an applied effect."""


class ToolKit(Protocol):
    """What the worker gives a tool handler (``activities/task_tools.py``): the forge, the task's
    config section, progress heartbeats, signed comment markers, and the gateway for effects."""

    forge: ForgeClient
    options: Any
    """The task's configuration section (``settings.tasks.<name>``), or None when it has none."""

    def progress(self) -> ProgressSink:
        """This attempt's heartbeat sink."""
        ...

    def marker(self, operation_key: str) -> str:
        """The signed hidden marker a comment posted by ``operation_key`` must end with."""
        ...

    def is_effect_of(self, comment: dict[str, Any], operation_key: str) -> bool:
        """Is ``comment`` the one an attempt of ``operation_key`` posted (bot author, valid signature)?"""
        ...

    async def mutate(self, call: TaskToolCall, operation: str, perform: Callable[[str], Awaitable[Effect]],
                     reconcile: Callable[[str], Awaitable[Effect | None]], detail: str = "") -> EffectDone:
        """Run an effect exactly once per (work key, ``operation``, version, discriminator, ``detail``):
        kill and fencing checks, ledger claim, ``reconcile(op_key)`` after a lost attempt, then
        ``perform(op_key)``. Forge errors raised inside are mapped (transient: retried after reconcile)."""
        ...


ToolHandler = Callable[[ToolKit, TaskToolCall], Awaitable[ToolAnswer]]


@dataclass(frozen=True)
class ToolSpec:
    """One model-facing tool: its OpenAI function definition, its activity, its handler."""

    definition: dict[str, Any]
    activity: str
    """The registered activity name (never renamed once a history holds it)."""
    handler: ToolHandler | None = None
    """The implementation hosted by ``activities/task_tools.py``; ``None``: a built-in activity
    (the review task's tools live in ``activities/forge_tools.py`` and ``activities/artifact_tools.py``)."""
    effect: str | None = None
    """The effect operation it performs through the side-effect ledger, if any."""

    @property
    def name(self) -> str:
        return str(self.definition["function"]["name"])


@dataclass(frozen=True)
class LoopSpec:
    """What the agent loop offers the model for this task. Pure data: read by workflow code."""

    system_prompt: str
    tools: tuple[ToolSpec, ...]
    first_message: Callable[[str, str, int, str], str]
    """(owner, repo, number, input version) -> the first user message."""

    def tool_definitions(self) -> list[dict[str, Any]]:
        return [t.definition for t in self.tools]

    def tool_activities(self) -> dict[str, str]:
        return {t.name: t.activity for t in self.tools}

    def messages(self, owner: str, repo: str, number: int, version: str) -> list[dict[str, Any]]:
        return [{"role": "system", "content": self.system_prompt},
                {"role": "user", "content": self.first_message(owner, repo, number, version)}]


@dataclass(frozen=True)
class TaskSpec:
    """One registered task (``docs/tasks.md`` lists what each field means and who reads it)."""

    name: str
    """The work-key suffix: ``<tenant>/github:<owner>/<repo>#<n>:<name>``."""
    candidate: Callable[[str, PullRequestRef, str | None], WorkCandidate]
    """Work-key scheme: (tenant, target, input version or None) -> the candidate. Raises ``ValueError``
    for a version that is not one of this task's (the manual trigger answers ``bad-input``)."""
    github: Mapping[str, GithubMapper]
    """Trigger mapping: GitHub event name -> mapper (payload model, actions, envelope, candidate)."""
    reader: Callable[[ForgeClient], TargetReader]
    """Target reader factory: the authoritative read intake's freshness check makes."""
    freshness: FreshnessRule
    """(event version, snapshot, the candidate's content digest — ``""`` unknown) -> ``stale-version`` / ``target-closed`` / ``target-not-found``,
    ``source-unavailable`` (the source lags: deferred, never rejected) or None."""
    loop: LoopSpec
    policy: TaskPolicyRule | None = None
    """The task's own admission rule, after ``intake.policy.Policy`` (repository refusals, drafts)."""
    effects: tuple[str, ...] = ()
    """Effect operations (idempotent: each through the side-effect ledger, or a set by nature)."""
    config_section: str | None = None
    """The attribute of ``settings.tasks`` holding this task's options (``None``: it has none)."""
    scans: bool = False
    """Do scans and goals serve this task? Only ``review`` (``docs/tasks.md``)."""
    description: str = field(default="", compare=False)

    def activities(self) -> dict[str, ToolSpec]:
        """Activity name -> tool, for the tools this task's package implements (hosted generically)."""
        return {t.activity: t for t in self.loop.tools if t.handler is not None}
