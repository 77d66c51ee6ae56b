"""Errors raised while turning a raw delivery into an envelope.

Each carries the enumerated reason, the HTTP status the API answers with, and whatever
identity was recovered before the failure, so the caller can write a reject receipt
whenever the delivery is identifiable.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class InvalidDelivery(Exception):
    """The delivery cannot be admitted as it stands; nothing downstream sees it."""

    reason: str
    message: str
    http_status: int
    delivery_id: str | None = None
    event_type: str | None = None

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"
