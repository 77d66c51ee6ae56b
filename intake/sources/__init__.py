"""Webhook sources: one parser per source kind, two stages each, one result type for all.

Each kind (:mod:`intake.github`, :mod:`intake.sources.standard_webhooks`,
:mod:`intake.sources.cloudevents_source`) has two stages, run in this order by the API's
router (``webhook_api/_sources.py``), which picks the kind from the source's config:

1. **verify** — authenticate the sender from the headers and the raw body bytes, reading
   nothing else from the body: returns a :class:`VerifiedDelivery`. Its failures are
   *unauthenticated*: the API answers them, counts them and writes nothing durable.
2. **normalize** — only for a verified delivery: parse the body into a
   :class:`ParsedDelivery`. Its failures (:class:`intake.errors.InvalidDelivery`) carry the
   delivery id when one could be read, so the API writes a reject receipt.

Parsers are pure: no Temporal, no database, no configuration import.
"""

from __future__ import annotations

from dataclasses import dataclass

from intake.envelope import Envelope, WorkCandidate


@dataclass(frozen=True)
class VerifiedDelivery:
    """What authenticating a delivery established, before its body is parsed."""

    delivery_id: str | None
    """From the headers; ``None`` when the kind carries it in the body (structured CloudEvents)."""
    event_type: str | None = None
    """From the headers, where the kind has one (``X-GitHub-Event``)."""


@dataclass(frozen=True)
class ParsedDelivery:
    """A verified, normalized delivery, ready for :class:`intake.service.IntakeService`."""

    envelope: Envelope
    candidate: WorkCandidate | None
    """``None`` when the event is valid but asks for no work (e.g. ``labeled``, ``ping``)."""
    max_age_seconds: float | None = None
    """The source's event-age bound (``sources.<name>.max_age_seconds``); ``None`` = unbounded.
    Compare with :func:`intake.sources.age.too_old` against ``envelope.time``."""


__all__ = ["ParsedDelivery", "VerifiedDelivery"]
