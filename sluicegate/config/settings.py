"""One typed config object, loaded from ``temporal-dev.yaml`` with environment overrides.

Failure modes this module is written against:

* A ``${VAR}`` in the YAML whose variable is undefined raises :class:`ConfigError`
  naming the variable, instead of silently becoming an empty string.
* An unknown key or a wrong type fails validation at start-up with the dotted path,
  not at the first request that happens to read it.
* Production settings (Temporal address, TLS/API key, Postgres URL, model and forge
  credentials) come from well-known environment variables listed in ``ENV_OVERRIDES``;
  any other value can be set with ``SLUICEGATE__SECTION__KEY``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Mapping

import yaml
from pydantic import Field, ValidationError, model_validator

from sluicegate.config.budget import StaleReservationsConfig
from sluicegate.config.capacity import CapacityConfig
from sluicegate.config.section import Section as _Section
from sluicegate.errors import SluicegateError
from sluicegate.config.intake import IntakeConfig
from sluicegate.config.codec import CodecServerConfig
from sluicegate.config.checks import UniqueKeyLoader, uniqueness_problems
from sluicegate.config.console import ConsoleConfig
from sluicegate.config.durations import parse_duration  # noqa: F401 - re-exported
from sluicegate.config.kept import KeptDeliveriesConfig
from sluicegate.config.tasks import TasksConfig
from sluicegate.config.maintenance import MaintenanceConfig
from sluicegate.config.model import ModelConfig, Price, TenantModelConfig  # noqa: F401 - re-exported
from sluicegate.config.schedule import GoalsConfig, ScheduleConfig  # noqa: F401 - ScheduleConfig re-exported
from sluicegate.config.telemetry import TelemetryConfig  # noqa: F401 - re-exported
from sluicegate.config.forge import ForgeAppConfig, ForgeConfig  # noqa: F401 - ForgeAppConfig re-exported
from sluicegate.config.secret_fields import Credential, VerifierSecret
from sluicegate.config.source import SourceConfig
from sluicegate.config.tenancy import Role, actor_shape, check_tenancy

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # sluicegate/config/settings.py -> the project root
DEFAULT_CONFIG_FILE = PROJECT_ROOT / "temporal-dev.yaml"


class ConfigError(SluicegateError):
    """The configuration file or an environment override is invalid."""




class TemporalConfig(_Section):
    address: str = "127.0.0.1:7233"
    namespace: str = "default"
    task_queue: str = "sluicegate-agents"
    tls: bool = False
    tls_client_cert: Path | None = None
    """PEM client certificate for mTLS (Temporal Cloud or a self-hosted cluster)."""
    tls_client_key: Path | None = None
    api_key: Credential | None = None
    payload_key: Credential | None = None
    """Base64 AES-256 key: encrypt every payload (see sluicegate/temporal/codec.py). Unset: plaintext."""
    payload_old_keys: list[Credential] = Field(default_factory=list)
    """Retired keys, still used to decrypt histories and artifacts written with them."""
    accept_plaintext_payloads: bool = False
    """Migration flag: with a payload key set, still accept unencrypted payloads (histories and
    schedules written before encryption was turned on). Off: they are refused, non-retryable."""
    require_admission: bool = True
    """Workers run only work orders that match an admission in the ledger (receipt, work key,
    version, generation); any other is refused at its claim. Off only for tests that signal
    orders straight into the workflow, bypassing intake."""
    heartbeat_throttle_seconds: float = Field(default=2.0, gt=0)
    """Longest a worker holds back an activity's heartbeat: a cancel reaches a running model or
    tool call within about this (Temporal delivers cancels in heartbeat answers)."""
    graceful_shutdown_seconds: float = Field(default=10.0, ge=0)
    """On SIGTERM the worker stops polling and gives running activities this long to finish before
    cancelling them; a supervisor must wait longer than this before a SIGKILL (the dev stack waits
    this + 20 s)."""


class DevServerConfig(_Section):
    ip: str = "127.0.0.1"
    port: int = 7233
    ui_port: int = 8233
    db_filename: Path = Path("var/temporal-dev.sqlite")
    log_level: str = "error"
    search_attributes: dict[str, str] = Field(default_factory=dict)
    dynamic_config: dict[str, Any] = Field(default_factory=dict)


class LedgerConfig(_Section):
    url: str = "sqlite:///var/ledger.sqlite"


class WebhookApiConfig(_Section):
    host: str = "127.0.0.1"
    port: int = 8300
    max_body_bytes: int = Field(default=1024 * 1024, gt=0)
    refusal_log_lines: int = Field(default=10, ge=1)
    """Log lines for unauthenticated refusals per interval; the rest are counted in the next line."""
    refusal_log_interval_seconds: float = Field(default=60.0, gt=0)
    body_read_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    """Deadline for a whole request body (webhooks, manual triggers): a slower one is 408 (slow-loris)."""
    max_concurrent_body_reads: int = Field(default=64, ge=1)
    """Request bodies read at once by one API process for one source; past it a request to that
    source is 429 at once (other sources keep their own slots)."""
    max_concurrent_body_reads_per_client: int | None = Field(default=16, ge=1)
    """Of those, how many one client address may hold (None: no per-address cap). A genuine sender's
    body arrives in milliseconds, so it holds one or two at a time; a slow-loris from one host is
    held to this many, and the source's other slots stay free. Behind a proxy every request has the
    proxy's address (unless uvicorn trusts its forwarded headers): there the proxy should buffer
    whole bodies, and this cap can be lifted (null) or left, the proxy sending each body at once."""
    keep_alive_seconds: int = Field(default=75, ge=1, le=3600)
    """How long an idle kept-alive connection stays open (uvicorn's ``timeout_keep_alive``). Longer
    than the idle timeout of whatever sends to the API (a load balancer: AWS ALB 60 s by default; set
    it above 600 behind Google's), so that side always closes first: a request sent on a connection
    the API is closing at that moment is lost in flight (the sender sees a reset, and GitHub marks the
    delivery failed)."""


class ActorConfig(_Section):
    """An operator allowed to send manual triggers, with a role per tenant (``intake/actors.py``)."""

    token: VerifierSecret
    """Sent as ``Authorization: Bearer <token>``; at least 16 characters."""
    tenants: dict[str, Role] = Field(min_length=1)
    """Tenant -> ``operator`` | ``admin``; the tenant ``*`` grants the role in every tenant."""

    @model_validator(mode="before")
    @classmethod
    def _tenant_roles(cls, data: Any) -> Any:
        return actor_shape(data)


class TaskBudget(_Section):
    max_steps: int = 6
    max_total_tokens: int = 60_000
    max_usd: float = 0.25
    max_wall_seconds: float = 1800


class DayBudgetConfig(_Section):
    """USD per UTC day, reserved in the ledger before each model call (see ledger/_budgets.py)."""

    global_usd: float = Field(default=50.0, gt=0)
    default_tenant_usd: float = Field(default=10.0, ge=0)
    tenants: dict[str, float] = Field(default_factory=dict)


class BudgetsConfig(_Section):
    per_task: TaskBudget = Field(default_factory=TaskBudget)
    day: DayBudgetConfig = Field(default_factory=DayBudgetConfig)
    step_max_output_tokens: int = Field(default=2048, gt=0)
    """Output cap sent with every model call; the reservation prices this worst case."""
    stale_reservations: StaleReservationsConfig = Field(default_factory=StaleReservationsConfig)


class DeadLettersConfig(_Section):
    """Who owns failed work: by tenant, then by source, then the default."""

    default_owner: str = "platform-oncall"
    by_tenant: dict[str, str] = Field(default_factory=dict)
    by_source: dict[str, str] = Field(default_factory=dict)

    def owner_for(self, tenant: str, source: str) -> str:
        return self.by_tenant.get(tenant) or self.by_source.get(source) or self.default_owner


class ArtifactsConfig(_Section):
    """Where large tool outputs go; a handle, a summary and a preview enter the prompt, and the
    model reads the rest with ``read_artifact`` (``activities/artifact_tools.py``)."""

    dir: Path = Path("var/artifacts")
    inline_limit_chars: int = Field(default=20_000, gt=0)
    read_max_chars: int = Field(default=16_000, gt=0, le=100_000)
    """Most characters one ``read_artifact`` tool call returns to the model."""


class EgressConfig(_Section):
    """Hosts tools may reach, per tenant (``default`` for tenants not listed)."""

    default: list[str] = Field(default_factory=list)
    tenants: dict[str, list[str]] = Field(default_factory=dict)


class ActivitiesConfig(_Section):
    model_start_to_close_seconds: float = 60
    model_max_attempts: int = 5
    model_heartbeat_seconds: float = 10
    tool_start_to_close_seconds: float = 30
    tool_heartbeat_seconds: float = 10
    tool_max_attempts: int = 12
    """Attempts per tool call: 1+2+4+8+16 s then 30 s apart, about 3.5 min, so a forge outage of a
    few minutes is waited out instead of failing every run in flight (drill `forge-outage`)."""
    max_task_retries: int = 40
    """Retries summed over all steps of one order; past it the order fails to the dead letters."""
    memo_cost_interval_seconds: float = Field(default=10, ge=0)
    """Least time between two memo upserts of a run's cost so far after its model steps (the Temporal
    UI's figure; every upsert is a history event and a visibility write). 0: after every step."""
    max_tool_calls_per_step: int = Field(default=16, ge=1, le=128)
    """Tool calls run for one model answer; the rest are answered ``not run`` to the model. The model
    (and a prompt-injected diff) chooses how many it asks for, and each is an activity in the run's
    history: without a cap one answer could push a run toward Temporal's history limit."""


class SimulatorAddress(_Section):
    host: str = "127.0.0.1"
    port: int
    fixtures: Path | None = None


class SimulatorsConfig(_Section):
    """Where the dev stack runs the simulators; unused in production."""

    forge: SimulatorAddress = Field(default_factory=lambda: SimulatorAddress(port=8301))
    model: SimulatorAddress = Field(default_factory=lambda: SimulatorAddress(port=8302))


class Settings(_Section):
    """Everything a Sluicegate process needs to know about its environment."""

    temporal: TemporalConfig = Field(default_factory=TemporalConfig)
    dev_server: DevServerConfig = Field(default_factory=DevServerConfig)
    ledger: LedgerConfig = Field(default_factory=LedgerConfig)
    webhook_api: WebhookApiConfig = Field(default_factory=WebhookApiConfig)
    intake: IntakeConfig = Field(default_factory=IntakeConfig)
    codec_server: CodecServerConfig = Field(default_factory=CodecServerConfig)
    console: ConsoleConfig = Field(default_factory=ConsoleConfig)
    sources: dict[str, SourceConfig] = Field(default_factory=dict)
    actors: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")], ActorConfig] = Field(
        default_factory=dict)
    """Operators allowed to send manual triggers, by name (the name is recorded on receipts)."""
    forge: ForgeConfig = Field(default_factory=ForgeConfig)
    model: ModelConfig
    budgets: BudgetsConfig = Field(default_factory=BudgetsConfig)
    activities: ActivitiesConfig = Field(default_factory=ActivitiesConfig)
    egress: EgressConfig = Field(default_factory=EgressConfig)
    artifacts: ArtifactsConfig = Field(default_factory=ArtifactsConfig)
    dead_letters: DeadLettersConfig = Field(default_factory=DeadLettersConfig)
    simulators: SimulatorsConfig = Field(default_factory=SimulatorsConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    schedules: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")], ScheduleConfig] = Field(
        default_factory=dict)
    """Temporal Schedules running scans, by schedule id (``starter.py schedule apply``)."""
    goals: GoalsConfig = Field(default_factory=GoalsConfig)
    maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)
    capacity: CapacityConfig = Field(default_factory=CapacityConfig)
    kept_deliveries: KeptDeliveriesConfig = Field(default_factory=KeptDeliveriesConfig)
    tasks: TasksConfig = Field(default_factory=TasksConfig)
    """Which registered tasks are served, and their options (``sluicegate/config/tasks.py``, ``docs/tasks.md``)."""
    """Caps on bodies kept after ``unsupported-schema`` for replay (``sluicegate/config/kept.py``)."""
    dev_mode: bool = False
    """Local development (``SLUICEGATE_DEV_MODE=1``, set by the dev stack, tests and benches):
    the API and worker may start with the secrets published in temporal-dev.yaml, on loopback only."""
    base_dir: Path = PROJECT_ROOT
    """Directory relative paths are resolved against (the config file's directory)."""

    @model_validator(mode="after")
    def _tenancy(self) -> "Settings":
        check_tenancy(self)
        problems = uniqueness_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def path(self, p: Path) -> Path:
        """Resolve a configured path against the config file's directory."""
        return p if p.is_absolute() else self.base_dir / p

    def ledger_url(self) -> str:
        """The ledger URL with a relative SQLite file made absolute."""
        url = self.ledger.url
        prefix = "sqlite:///"
        if url.startswith(prefix) and not url.startswith(prefix + "/") and url != prefix + ":memory:":
            return prefix + str(self.path(Path(url[len(prefix):])))
        return url


# Well-known production variables -> dotted config path.
ENV_OVERRIDES: dict[str, str] = {
    "TEMPORAL_ADDRESS": "temporal.address",
    "TEMPORAL_NAMESPACE": "temporal.namespace",
    "TEMPORAL_TASK_QUEUE": "temporal.task_queue",
    "TEMPORAL_API_KEY": "temporal.api_key",
    "SLUICEGATE_PAYLOAD_KEY": "temporal.payload_key",
    "SLUICEGATE_CODEC_TOKEN": "codec_server.token",
    "SLUICEGATE_CONSOLE_SESSION_KEY": "console.session_key",
    "TEMPORAL_TLS": "temporal.tls",
    "TEMPORAL_TLS_CLIENT_CERT_PATH": "temporal.tls_client_cert",
    "TEMPORAL_TLS_CLIENT_KEY_PATH": "temporal.tls_client_key",
    "SLUICEGATE_LEDGER_URL": "ledger.url",
    "OPENAI_BASE_URL": "model.base_url",
    "OPENAI_API_KEY": "model.api_key",
    "SLUICEGATE_MODEL": "model.name",
    "FORGE_BASE_URL": "forge.base_url",
    "FORGE_TOKEN": "forge.token",
    "SLUICEGATE_FORGE_BOT_LOGIN": "forge.bot_login",
    "SLUICEGATE_MARKER_SECRET": "forge.marker_secret",
    "SLUICEGATE_FORGE_APP_ID": "forge.app.app_id",
    "SLUICEGATE_FORGE_APP_PRIVATE_KEY": "forge.app.private_key",
    "SLUICEGATE_FORGE_APP_PRIVATE_KEY_FILE": "forge.app.private_key_file",
    "SLUICEGATE_GITHUB_WEBHOOK_SECRET": "sources.github.secrets",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "telemetry.otlp_endpoint",
    "SLUICEGATE_DEV_MODE": "dev_mode",
    "SLUICEGATE_TELEMETRY_EXPORTER": "telemetry.exporter",
    "SLUICEGATE_LOG_FORMAT": "telemetry.log_format",
}
# Variables holding one value for a list setting: it replaces the whole list (to rotate from
# the environment, set the list: SLUICEGATE__SOURCES__GITHUB__SECRETS='[new, old]').
_ONE_ITEM_LISTS = {"SLUICEGATE_GITHUB_WEBHOOK_SECRET"}
GENERIC_PREFIX = "SLUICEGATE__"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def substitute_env(text: str, env: Mapping[str, str]) -> str:
    """Replace ``${VAR}`` / ``${VAR:-default}``; an undefined VAR without default is an error."""

    def repl(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise ConfigError(f"config refers to ${{{name}}} but the environment variable {name} is not set")

    return _VAR.sub(repl, text)


def _substitute_tree(node: Any, env: Mapping[str, str]) -> Any:
    """Substitute in string values only, so comments never need escaping."""
    if isinstance(node, str):
        return substitute_env(node, env)
    if isinstance(node, dict):
        return {k: _substitute_tree(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute_tree(v, env) for v in node]
    return node


def _set_path(tree: dict[str, Any], dotted: str, value: Any) -> None:
    node = tree
    *parents, leaf = dotted.split(".")
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[leaf] = value


def _drop_path(tree: dict[str, Any], dotted: str) -> None:
    *parents, leaf = dotted.split(".")
    node: Any = tree
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(leaf, None)


def apply_env_overrides(tree: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """Apply overrides onto the parsed YAML tree; later sources win:
    ``DATABASE_URL`` < ``SLUICEGATE__A__B`` < the well-known names in ``ENV_OVERRIDES``."""
    if env.get("DATABASE_URL"):
        _set_path(tree, "ledger.url", env["DATABASE_URL"])
    for var, raw in env.items():
        if var.startswith(GENERIC_PREFIX) and raw != "":
            dotted = var[len(GENERIC_PREFIX):].lower().replace("__", ".")
            _set_path(tree, dotted, yaml.safe_load(raw))
    for var, dotted in ENV_OVERRIDES.items():
        if not env.get(var):
            continue
        if var in _ONE_ITEM_LISTS:
            _set_path(tree, dotted, [env[var]])
            _drop_path(tree, dotted.removesuffix("s"))  # an old single ``secret:`` in the file
        else:
            _set_path(tree, dotted, yaml.safe_load(env[var]) if var == "TEMPORAL_TLS" else env[var])
    return tree


def yaml_problem(exc: yaml.YAMLError) -> str:
    """What PyYAML says is wrong and where (line, column), never the source snippet it quotes."""
    def at(text: object, mark: yaml.Mark | None) -> str:
        return f"{text} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else str(text)

    parts = [at(text, getattr(exc, f"{kind}_mark", None)) for kind in ("context", "problem")
             if (text := getattr(exc, kind, None))]
    return ": ".join(parts) or type(exc).__name__


def load_settings(path: Path | str | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Load settings from ``path`` (default: ``$SLUICEGATE_CONFIG`` or the repo's temporal-dev.yaml)."""
    env = os.environ if env is None else env
    cfg_path = Path(path or env.get("SLUICEGATE_CONFIG") or DEFAULT_CONFIG_FILE).resolve()
    try:
        raw_text = cfg_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {cfg_path}: {exc}") from exc
    try:
        tree = _substitute_tree(yaml.load(raw_text, Loader=UniqueKeyLoader) or {}, env)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        # ``from None`` and no ``str(exc)``: PyYAML's text quotes the offending line, which may hold a secret.
        raise ConfigError(f"{cfg_path} is not valid YAML: {yaml_problem(exc)}") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"{cfg_path} must hold a mapping at the top level")
    tree = apply_env_overrides(tree, env)
    tree.setdefault("base_dir", str(cfg_path.parent))
    try:
        return Settings.model_validate(tree)
    except ValidationError as exc:
        lines = [f"  {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_input=False)]
        # ``from None``: pydantic's own error text quotes each input, and an input may be a secret.
        raise ConfigError(f"invalid configuration in {cfg_path}:\n" + "\n".join(lines)) from None
