"""The manual trigger's request body: one model, shared by the API and ``starter.py trigger``.

The API parses it only after the body was bounded (:data:`MAX_BODY_BYTES`, while streaming)
and the bearer token checked; the CLI validates the same model before sending, so an
operator learns about a bad value without a round trip. Every identity field goes through
:mod:`intake.hygiene`.

Failure modes written against:

* pydantic's errors carry the offending ``input`` (and, for an unknown field, its name in the
  location): :func:`problems` turns them into field names and expectations only, so an error
  body never echoes what was sent.
* ``number`` arrives as JSON: ``true``, ``"42"`` or ``1e309`` are refused, not coerced; it is
  bounded to a 32-bit pull request number.
* ``force`` is the only way to ask for an override, and the API grants it only to an
  authenticated admin; no other field (and no payload of any webhook) can.
"""

from __future__ import annotations

from typing import Annotated, Any, Callable

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from intake import hygiene
from intake.identity import is_tenant_name

MAX_BODY_BYTES = 16 * 1024
"""A manual trigger body is a few hundred bytes; anything past this is refused unread (413)."""


def _rule(check: Callable[[Any], Any], expected: str) -> AfterValidator:
    def validate(value: Any) -> Any:
        if check(value) is None:
            raise ValueError(expected)
        return value
    return AfterValidator(validate)


class ManualTrigger(BaseModel):
    """A manual run request; the actor comes from the bearer token, never from the body."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tenant: Annotated[str, _rule(lambda v: v if is_tenant_name(v) else None,
                                 "a tenant name: [a-z0-9_-], 1-63, starting with a letter or digit")] | None = None
    """Which of the actor's tenants to act in; needed only when the actor holds roles in several.
    It only chooses among the tenants the bearer token's actor holds a role in (``intake/actors.py``)."""
    repository: Annotated[str, _rule(hygiene.repository, "owner/repo of [A-Za-z0-9_.-], not . or ..")]
    number: Annotated[int, _rule(hygiene.pr_number, f"an integer in 1..{hygiene.MAX_NUMBER}")]
    input_version: Annotated[str, _rule(hygiene.input_version, "printable ASCII, 1-128 characters")] | None = None
    request_id: Annotated[str, _rule(lambda v: hygiene.identity_text(v, hygiene.MAX_REQUEST_ID),
                                     f"1-{hygiene.MAX_REQUEST_ID} characters, no control characters")] | None = None
    reason: Annotated[str, _rule(lambda v: hygiene.free_text(v, hygiene.MAX_REASON),
                                 f"1-{hygiene.MAX_REASON} characters, no control characters")]
    task: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")] | None = None
    """The registered task to run (``review`` when absent): ``triage`` takes an issue number and an
    ``updated_at`` version. A task not enabled is refused ``unknown-task``."""
    force: bool = False
    """Re-run a version already done. Only actors with role ``admin`` in the tenant; recorded on the receipt."""

    @property
    def owner_repo(self) -> tuple[str, str]:
        owner, repo = self.repository.split("/")
        return owner, repo


def problems(exc: ValidationError, limit: int = 5, model: type[BaseModel] | None = None) -> str:
    """The fields a validation error is about, with what was expected — never the input.
    ``model``: the request model whose fields may be named (default :class:`ManualTrigger`)."""
    known = set((model or ManualTrigger).model_fields)
    parts = []
    for err in exc.errors(include_input=False, include_url=False)[:limit]:
        loc = [str(p) for p in err["loc"] if str(p) != "body"]
        name = ".".join(loc) if loc and loc[0] in known else None
        if err["type"] == "extra_forbidden" or name is None:
            parts.append("an unexpected field" if err["type"] == "extra_forbidden" else "<body>")
            continue
        expected = str(err.get("ctx", {}).get("error", "")) or err["type"].replace("_", " ")
        parts.append(f"{name} ({expected})")
    return ", ".join(parts) or "<body>"


def parse_manual_body(body: bytes) -> ManualTrigger:
    """Parse a bounded, authenticated body; raises ``ValueError`` with :func:`problems`' text."""
    try:
        return ManualTrigger.model_validate_json(body)
    except ValidationError as exc:
        raise ValueError(f"manual trigger body invalid at: {problems(exc)}") from None
