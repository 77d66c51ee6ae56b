"""Errors raised while turning a raw delivery into an envelope.

Each carries the enumerated reason, the HTTP status the API answers with, and whatever
identity was recovered before the failure, so the caller can write a reject receipt
whenever the delivery is identifiable.

Everything here may be written into a receipt and answered to the sender. So the error
itself keeps those values storable whatever a parser passed in (rules in
:mod:`intake.hygiene`): control characters (PostgreSQL refuses NUL in text) are replaced in
the message, which is capped; a delivery id or event type longer than its receipt column, or
holding control characters or a ``..`` segment, is dropped (the receipt is then written
without it, or — without a delivery id — not at all). Messages name what was wrong, never
quote the value that was sent: an error body must not echo input.
"""

from __future__ import annotations

from dataclasses import dataclass

from intake.hygiene import MAX_DELIVERY_ID, MAX_EVENT_TYPE, identity_text, printable
from sluicegate.errors import SluicegateError

MAX_MESSAGE = 1000
__all__ = ["InvalidDelivery", "MAX_DELIVERY_ID", "MAX_EVENT_TYPE", "MAX_MESSAGE", "storable_text"]


@dataclass
class InvalidDelivery(SluicegateError):
    """The delivery cannot be admitted as it stands; nothing downstream sees it."""

    reason: str
    message: str
    http_status: int
    delivery_id: str | None = None
    event_type: str | None = None

    def __post_init__(self) -> None:
        self.message = printable(self.message, MAX_MESSAGE)
        self.delivery_id = storable_text(self.delivery_id, MAX_DELIVERY_ID)
        self.event_type = storable_text(self.event_type, MAX_EVENT_TYPE)

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


storable_text = identity_text
"""``value`` when it is a string of 1..``limit`` characters fit for the ledger (see :mod:`intake.hygiene`)."""
