"""The body of ``POST /v1/replays``, shared by the API and ``starter.py replay``.

A replay names a delivery kept after ``unsupported-schema`` (``ledger/_kept.py``) by its delivery
id, and by its source when two sources kept one id. It carries nothing that could change what
is decided: the kept body is re-run through its source's current mapping and intake, as if it
had just arrived (same delivery id, same received time). Errors name fields, never values.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from intake.hygiene import MAX_DELIVERY_ID, free_text, identity_text
from intake.manual_request import problems

MAX_BODY_BYTES = 4 * 1024
"""A replay request is a few dozen bytes; anything past this is refused unread (413)."""
MAX_REASON = 500


def _identity(value: str) -> str:
    if identity_text(value, MAX_DELIVERY_ID) is None:
        raise ValueError(f"1-{MAX_DELIVERY_ID} printable characters")
    return value


def _free_text(value: str) -> str:
    if free_text(value, MAX_REASON) is None:
        raise ValueError("not blank, no control characters")
    return value


class ReplayRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    delivery_id: Annotated[str, AfterValidator(_identity)]
    """The kept delivery's id (as its source sent it)."""
    source: Annotated[str, AfterValidator(_identity)] | None = None
    """The source that kept it; needed only when several kept one id."""
    reason: Annotated[str, AfterValidator(_free_text)] = Field(default="replay of a kept delivery", min_length=1,
                                                                max_length=MAX_REASON)
    """Why the operator replays it (recorded on the replay's receipt): a person's text, no control,
    format or line-separator characters (``intake.hygiene.free_text``), as every other reason."""


def parse_replay_body(body: bytes) -> ReplayRequest:
    """Parse a bounded, authenticated body; raises ``ValueError`` naming the bad fields."""
    try:
        return ReplayRequest.model_validate_json(body)
    except ValidationError as exc:
        raise ValueError(f"replay body invalid at: {problems(exc, model=ReplayRequest)}") from None
