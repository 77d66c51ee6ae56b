"""Webhook sources: one parser per source kind, one result type for all of them.

Each parser (:mod:`intake.github`, :mod:`intake.sources.standard_webhooks`,
:mod:`intake.sources.cloudevents_source`) verifies one raw HTTP delivery and normalizes it
into a :class:`ParsedDelivery`, or raises :class:`intake.errors.InvalidDelivery` carrying the
delivery id when one could be read, so the API can still write a reject receipt. Parsers are
pure: no Temporal, no database, no configuration import; the API's router
(``webhook_api/_sources.py``) picks the parser from the source's ``kind``.
"""

from __future__ import annotations

from dataclasses import dataclass

from intake.envelope import Envelope, WorkCandidate


@dataclass(frozen=True)
class ParsedDelivery:
    """A verified, normalized delivery, ready for :class:`intake.service.IntakeService`."""

    envelope: Envelope
    candidate: WorkCandidate | None
    """``None`` when the event is valid but asks for no work (e.g. ``labeled``, ``ping``)."""
    max_age_seconds: float | None = None
    """The source's event-age bound (``sources.<name>.max_age_seconds``); ``None`` = unbounded.
    Compare with :func:`intake.sources.age.too_old` against ``envelope.time``."""


__all__ = ["ParsedDelivery"]
