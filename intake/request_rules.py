"""Refusals of who is asking, as pure functions: the HTTP layer only maps them to a response.

The webhook, manual-trigger and replay endpoints (``webhook_api/``) ask these rules before
anything is parsed further or recorded: is the source configured, is there an actor, may the
actor act in the tenant it named, may it force a re-run or replay a kept delivery. Each answers
``None`` (go on) or the :class:`~intake.errors.InvalidDelivery` to refuse with — its enumerated
reason, message and HTTP status. See the reason table in ``docs/architecture.md``.

Pure: no Temporal, HTTP or database imports.
"""

from __future__ import annotations

from collections.abc import Collection

from intake.actors import TenantChoice
from intake.decision import Reason, policy_reason
from intake.errors import InvalidDelivery

OVERRIDE_NOT_PERMITTED = policy_reason("override-not-permitted")
REPLAY_NOT_PERMITTED = policy_reason("replay-not-permitted")
ADMIN = "admin"


def source_rule(configured: bool) -> InvalidDelivery | None:
    """A delivery to a source name nobody configured: ``unknown-source``, answered 401 like a bad
    signature (which names exist is nobody's business)."""
    if configured:
        return None
    return InvalidDelivery(Reason.UNKNOWN_SOURCE, "no source of that name is configured", 401)


def actor_rule(actor: str | None) -> InvalidDelivery | None:
    """A manual trigger or replay without a configured actor's bearer token: ``unauthorized-actor``."""
    if actor is not None:
        return None
    return InvalidDelivery(Reason.UNAUTHORIZED_ACTOR, "a configured actor's bearer token is required", 401)


def task_rule(task: str, enabled: Collection[str], request_id: str | None, event_type: str,
              ) -> InvalidDelivery | None:
    """A manual trigger naming a task that is not registered or not enabled (``tasks.enabled``):
    ``unknown-task``, 422, with a receipt naming the actor."""
    if task in enabled:
        return None
    return InvalidDelivery(Reason.UNKNOWN_TASK, f"task {task!r} is not enabled (enabled: {', '.join(sorted(enabled))})",
                           422, request_id, event_type)


def tenant_rule(choice: TenantChoice, request_id: str | None, event_type: str) -> InvalidDelivery | None:
    """The actor's tenant choice refused: ``out-of-scope`` (403, no role there) or ``bad-input`` (422,
    it must name one of several tenants)."""
    if choice.tenant is not None:
        return None
    reason, status = (Reason.BAD_INPUT, 422) if choice.ambiguous else (Reason.OUT_OF_SCOPE, 403)
    return InvalidDelivery(reason, choice.refusal or "", status, request_id, event_type)


def force_rule(force: bool, role: str | None, actor: str, tenant: str, request_id: str | None,
               event_type: str) -> InvalidDelivery | None:
    """Forcing a re-run of finished work needs the admin role in that tenant:
    ``policy:override-not-permitted``."""
    if not force or role == ADMIN:
        return None
    return InvalidDelivery(OVERRIDE_NOT_PERMITTED, f"actor {actor!r} may not force a re-run in tenant {tenant!r} "
                           "(role admin required there)", 403, request_id, event_type)


def replay_rule(role: str | None, actor: str, tenant: str, delivery_id: str | None,
                event_type: str) -> InvalidDelivery | None:
    """Replaying a kept delivery needs the admin role in its tenant: ``policy:replay-not-permitted``."""
    if role == ADMIN:
        return None
    return InvalidDelivery(REPLAY_NOT_PERMITTED, f"actor {actor!r} may not replay deliveries in tenant "
                           f"{tenant!r} (role admin required there)", 403, delivery_id, event_type)
