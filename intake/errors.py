"""Errors raised while turning a raw delivery into an envelope.

Each carries the enumerated reason, the HTTP status the API answers with, and whatever
identity was recovered before the failure, so the caller can write a reject receipt
whenever the delivery is identifiable.

Everything here is written into a receipt, often quoting what the sender sent. So the
error itself keeps those values storable whatever a parser passed in: control characters
(PostgreSQL refuses NUL in text) are replaced in the message, which is capped; a delivery id
or event type longer than its receipt column, or holding control characters, is dropped
(the receipt is then written without it, or — without a delivery id — not at all).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

MAX_MESSAGE = 1000
MAX_DELIVERY_ID = 256
MAX_EVENT_TYPE = 128


@dataclass
class InvalidDelivery(Exception):
    """The delivery cannot be admitted as it stands; nothing downstream sees it."""

    reason: str
    message: str
    http_status: int
    delivery_id: str | None = None
    event_type: str | None = None

    def __post_init__(self) -> None:
        self.message = "".join("?" if _control(ch) else ch for ch in self.message[:MAX_MESSAGE])
        self.delivery_id = storable_text(self.delivery_id, MAX_DELIVERY_ID)
        self.event_type = storable_text(self.event_type, MAX_EVENT_TYPE)

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


def _control(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cs")


def storable_text(value: object, limit: int) -> str | None:
    """``value`` when it is a string of 1..``limit`` characters without control characters."""
    if not isinstance(value, str) or not 0 < len(value) <= limit or any(_control(ch) for ch in value):
        return None
    return value
