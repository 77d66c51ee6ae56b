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
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from sluicegate.budget_config import StaleReservationsConfig
from sluicegate.capacity_config import CapacityConfig
from sluicegate.forge_config import ForgeAppConfig, ForgeConfig  # noqa: F401 - ForgeAppConfig re-exported
from sluicegate.source_config import SourceConfig

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG_FILE = PROJECT_ROOT / "temporal-dev.yaml"


class ConfigError(Exception):
    """The configuration file or an environment override is invalid."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TemporalConfig(_Section):
    address: str = "127.0.0.1:7233"
    namespace: str = "default"
    task_queue: str = "sluicegate-agents"
    tls: bool = False
    tls_client_cert: Path | None = None
    """PEM client certificate for mTLS (Temporal Cloud or a self-hosted cluster)."""
    tls_client_key: Path | None = None
    api_key: str | None = None
    payload_key: str | None = None
    """Base64 AES-256 key: encrypt every payload (see sluicegate/codec.py). Unset: plaintext."""
    payload_old_keys: list[str] = Field(default_factory=list)
    """Retired keys, still used to decrypt histories written with them."""


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
    max_body_bytes: int = 1024 * 1024


class ActorConfig(_Section):
    token: str
    role: Literal["operator", "admin"] = "operator"


class Price(_Section):
    """USD per million tokens."""

    input: float
    cached_input: float
    output: float
    reasoning: float


class ModelConfig(_Section):
    base_url: str
    api_key: str
    name: str
    timeout_seconds: float = 60.0
    prices: dict[str, Price]


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
    """Where large tool outputs go; only a handle and a summary enter the prompt."""

    dir: Path = Path("var/artifacts")
    inline_limit_chars: int = Field(default=20_000, gt=0)


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
    tool_max_attempts: int = 5
    max_task_retries: int = 20
    """Retries summed over all steps of one order; past it the order fails to the dead letters."""


class SimulatorAddress(_Section):
    host: str = "127.0.0.1"
    port: int
    fixtures: Path | None = None


class SimulatorsConfig(_Section):
    """Where the dev stack runs the simulators; unused in production."""

    forge: SimulatorAddress = Field(default_factory=lambda: SimulatorAddress(port=8301))
    model: SimulatorAddress = Field(default_factory=lambda: SimulatorAddress(port=8302))


class TelemetryConfig(_Section):
    service_name: str = "sluicegate"
    exporter: Literal["none", "console", "file", "otlp"] = "none"
    file: Path = Path("var/traces.jsonl")
    otlp_endpoint: str | None = None
    log_level: str = "INFO"


_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?$")


def parse_duration(value: Any) -> Any:
    """``90`` / ``"90s"`` / ``"5m"`` / ``"1h30m"`` -> timedelta; other values go to pydantic as they are."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return timedelta(seconds=value)
    if isinstance(value, str):
        text = value.strip().lower()
        m = _DURATION.match(text)
        if text and m and any(m.groups()):
            h, mi, sec = (float(g) if g else 0.0 for g in m.groups())
            return timedelta(hours=h, minutes=mi, seconds=sec)
    return value


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
OverlapName = Literal["skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"]
MIN_CATCHUP_WINDOW = timedelta(seconds=10)
MAX_CANDIDATES_PER_SCAN = 5000


class MaintenanceConfig(_Section):
    """The ledger's own schedules (applied with the scan schedules by ``starter.py schedule apply``)."""

    outbox_relay_interval: Duration = timedelta(minutes=1)
    outbox_grace_seconds: float = Field(default=30.0, ge=0)
    """An accepted item younger than this may still be admitting; the relay leaves it alone."""
    delivery_dedupe_window_hours: float = Field(default=168.0, gt=0)
    """How long a delivery id is remembered; a redelivery after this is decided afresh."""
    prune_interval: Duration = timedelta(hours=1)
    model_journal_retention_hours: float = Field(default=72.0, gt=0)
    """Journaled model answers older than this are pruned (only a retry of a step still running reads them)."""


class ScheduleConfig(_Section):
    """One Temporal Schedule whose action is a ``Scan`` of ``repos`` (see docs/schedules.md)."""

    repos: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]] = Field(min_length=1)
    tenant: str
    cron: str | None = None
    """Cron expression (5 fields, or a Temporal macro such as ``@hourly``); exclusive with ``interval``."""
    interval: Duration | None = None
    time_zone: str = "UTC"
    """IANA name the cron expression is evaluated in (intervals ignore it)."""
    jitter: Duration = timedelta(0)
    overlap: OverlapName = "skip"
    catchup_window: Duration = timedelta(minutes=10)
    """Ticks missed while the Temporal server was down are still taken if at most this old."""
    pause_on_failure: bool = False
    max_candidates: int = Field(default=200, ge=1, le=10_000)
    """Candidates decided per repository per scan; the rest wait for the next tick."""
    scan_timeout: Duration = timedelta(minutes=10)
    """Execution timeout of one scan workflow (a stuck scan must not hold the schedule forever)."""
    note: str | None = None
    start_paused: bool = False
    """Create the schedule paused (``apply`` never changes the paused state of an existing one)."""

    @model_validator(mode="after")
    def _check(self) -> "ScheduleConfig":
        if (self.cron is None) == (self.interval is None):
            raise ValueError("set exactly one of cron or interval")
        if self.interval is not None and self.interval < timedelta(seconds=1):
            raise ValueError("interval must be at least 1s")
        if len(self.repos) * self.max_candidates > MAX_CANDIDATES_PER_SCAN:
            raise ValueError(f"repos x max_candidates must be at most {MAX_CANDIDATES_PER_SCAN} (one intake "
                             "activity per candidate in one workflow history); split the schedule")
        if self.catchup_window < MIN_CATCHUP_WINDOW:
            raise ValueError("catchup_window must be at least 10s (Temporal's minimum)")
        try:
            ZoneInfo(self.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {self.time_zone!r}") from None
        return self


class GoalsConfig(_Section):
    """Defaults and hard limits for goal watchers (``starter.py goal start``)."""

    tenant: str = "default"
    poll_seconds: float = Field(default=60, gt=0)
    max_polls: int = Field(default=30, ge=1)
    deadline_minutes: float = Field(default=60, gt=0)
    min_poll_seconds: float = Field(default=5, gt=0)
    max_polls_limit: int = Field(default=1000, ge=1)
    max_deadline_minutes: float = Field(default=1440, gt=0)


class Settings(_Section):
    """Everything a Sluicegate process needs to know about its environment."""

    temporal: TemporalConfig = Field(default_factory=TemporalConfig)
    dev_server: DevServerConfig = Field(default_factory=DevServerConfig)
    ledger: LedgerConfig = Field(default_factory=LedgerConfig)
    webhook_api: WebhookApiConfig = Field(default_factory=WebhookApiConfig)
    sources: dict[str, SourceConfig] = Field(default_factory=dict)
    actors: dict[str, ActorConfig] = Field(default_factory=dict)
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
    base_dir: Path = PROJECT_ROOT
    """Directory relative paths are resolved against (the config file's directory)."""

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
    "TEMPORAL_TLS": "temporal.tls",
    "TEMPORAL_TLS_CLIENT_CERT_PATH": "temporal.tls_client_cert",
    "TEMPORAL_TLS_CLIENT_KEY_PATH": "temporal.tls_client_key",
    "SLUICEGATE_LEDGER_URL": "ledger.url",
    "OPENAI_BASE_URL": "model.base_url",
    "OPENAI_API_KEY": "model.api_key",
    "SLUICEGATE_MODEL": "model.name",
    "FORGE_BASE_URL": "forge.base_url",
    "FORGE_TOKEN": "forge.token",
    "SLUICEGATE_FORGE_APP_ID": "forge.app.app_id",
    "SLUICEGATE_FORGE_APP_PRIVATE_KEY": "forge.app.private_key",
    "SLUICEGATE_FORGE_APP_PRIVATE_KEY_FILE": "forge.app.private_key_file",
    "SLUICEGATE_GITHUB_WEBHOOK_SECRET": "sources.github.secrets",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "telemetry.otlp_endpoint",
    "SLUICEGATE_TELEMETRY_EXPORTER": "telemetry.exporter",
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


def load_settings(path: Path | str | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Load settings from ``path`` (default: ``$SLUICEGATE_CONFIG`` or the repo's temporal-dev.yaml)."""
    env = os.environ if env is None else env
    cfg_path = Path(path or env.get("SLUICEGATE_CONFIG") or DEFAULT_CONFIG_FILE).resolve()
    try:
        raw_text = cfg_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {cfg_path}: {exc}") from exc
    try:
        tree = _substitute_tree(yaml.safe_load(raw_text) or {}, env)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{cfg_path} is not valid YAML: {exc}") from exc
    if not isinstance(tree, dict):
        raise ConfigError(f"{cfg_path} must hold a mapping at the top level")
    tree = apply_env_overrides(tree, env)
    tree.setdefault("base_dir", str(cfg_path.parent))
    try:
        return Settings.model_validate(tree)
    except ValidationError as exc:
        lines = [f"  {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise ConfigError(f"invalid configuration in {cfg_path}:\n" + "\n".join(lines)) from exc
