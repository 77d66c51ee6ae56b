"""The work key page: ``starter.py explain``'s chain, with costs, links and what stops it.

Everything comes from ``ledger.explain`` (decisions, versions, side effects, model-call
reservations) plus the key's dead letters and the kill in force, if any. A key the viewer's
tenants do not cover answers exactly like a key that does not exist, so the console does not
tell an operator which other tenants' work exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from sqlalchemy.engine import Engine

import ledger
from console._access import Viewer
from console._costs import cost_of, usage_of
from intake.identity import parse_work_key
from sluicegate.config.settings import Settings
from workflows.contracts import TokenUsage


@dataclass(frozen=True)
class RunRow:
    version: ledger.WorkVersion
    steps: int | None
    tokens: TokenUsage
    cost: float
    reason: str
    temporal_url: str | None


@dataclass(frozen=True)
class EffectRow:
    effect: ledger.SideEffect
    url: str | None
    """The external object (the review comment) as the forge reported it."""


@dataclass
class WorkView:
    key: str
    tenant: str | None
    chain: ledger.Chain
    runs: list[RunRow]
    effects: list[EffectRow]
    letters: list[ledger.DeadLetter]
    kill: ledger.Kill | None
    spent: float
    unknown_fate: float
    held: float
    tokens: TokenUsage


def temporal_ui_base(settings: Settings) -> str:
    dev = settings.dev_server
    return (settings.console.temporal_ui_url or f"http://{dev.ip}:{dev.ui_port}").rstrip("/")


def temporal_run_url(settings: Settings, workflow_id: str | None, run_id: str | None = None) -> str | None:
    """The run's page in the Temporal UI (the workflow's, when the run id is not known)."""
    if not workflow_id:
        return None
    url = (f"{temporal_ui_base(settings)}/namespaces/{quote(settings.temporal.namespace, safe='')}"
           f"/workflows/{quote(workflow_id, safe='')}")
    return f"{url}/{quote(run_id, safe='')}/history" if run_id else url


def tenant_of(key: str) -> tuple[bool, str | None]:
    """``(is a work key, its tenant)``; a key written before tenancy has none."""
    try:
        return True, parse_work_key(key).tenant
    except ValueError:
        return False, None


def work_view(engine: Engine, settings: Settings, viewer: Viewer, key: str) -> WorkView | None:
    """What the ledger knows about ``key``, or ``None`` when it knows nothing the viewer may see."""
    is_key, tenant = tenant_of(key)
    if not is_key or not viewer.sees(tenant):
        return None
    chain = ledger.explain(engine, key)
    if not chain.receipts and not chain.items:
        return None
    runs = []
    for v in chain.versions:
        result = v.result or {}
        steps = result.get("steps")
        runs.append(RunRow(v, steps if isinstance(steps, int) else None, usage_of(result), cost_of(result),
                           str(result.get("reason") or ""), temporal_run_url(settings, v.workflow_id, v.run_id)))
    effects = [EffectRow(e, (e.result or {}).get("html_url")) for e in chain.side_effects]
    letters = ledger.dead_letters_page(engine, None, viewer.visible, work_key=key)
    spent = sum(r.spent_usd or 0.0 for r in chain.reservations)
    unknown = sum(r.spent_usd or 0.0 for r in chain.reservations if r.status == ledger.ReservationStatus.ESTIMATED)
    held = sum(r.amount_usd for r in chain.reservations if r.status == ledger.ReservationStatus.RESERVED)
    tokens = TokenUsage()
    for run in runs:
        tokens = tokens.plus(run.tokens)
    return WorkView(key, tenant, chain, runs, effects, letters, ledger.KillSwitch(engine).active_for(key, tenant),
                    spent, unknown, held, tokens)
