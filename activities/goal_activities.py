"""Goal activities: observe a pull request on the forge; record that a goal's bound was reached.

Observations (all read from the forge's REST API, so they work on GitHub and the simulator):

* ``head:<sha>`` — the pull request is open and its head commit is ``<sha>`` (a prefix of at
  least 7 characters is accepted);
* ``comment:<text>`` — the pull request is open and has a comment containing ``<text>`` that
  Sluicegate did not write (its own comments — by the bot, with a validly signed marker,
  ``activities.markers`` — are ignored; a marker anyone else pastes does not hide their comment);
* ``ready`` — the pull request is open, not a draft, and its title does not start with
  ``WIP``, ``[WIP]`` or ``Draft:``.

A pull request that is missing or closed never satisfies a condition (the watch goes on until
its bound: it may be reopened); neither does one outside the goal's tenant's scope, which is
never read (``goal start`` refuses it; this catches a watch started some other way). Forge errors other than 404 fail the attempt (retried).
"""

from __future__ import annotations

import asyncio

from sqlalchemy.engine import Engine
from temporalio import activity

from activities.forge_failure import forge_activity_error
from activities.markers import CommentMarks
from activities.scan_activities import record_receipt_once
from intake.envelope import PullRequestRef
from intake.identity import review_work_key
from intake.outbox import parse_target
from intake.scope import ScopeRules
from intake.ports import IntakeStore
from ledger import KillSwitch
from sluicegate.forge.client import ForgeClient, ForgeError
from workflows.scan_contracts import (
    GOAL_BOUND_ACTIVITY, GOAL_OBSERVE_ACTIVITY, GoalCondition, Observation, ObserveRequest, ReceiptRef,
    ReceiptRequest,
)

WIP_PREFIXES = ("wip", "[wip]", "draft:")
MIN_SHA_PREFIX = 7


def head_matches(head: str | None, wanted: str) -> bool:
    wanted = wanted.strip().lower()
    return head is not None and len(wanted) >= MIN_SHA_PREFIX and head.lower().startswith(wanted)


class GoalActivities:
    def __init__(self, forge: ForgeClient, store: IntakeStore, engine: Engine, scope: ScopeRules,
                 marks: CommentMarks = CommentMarks()) -> None:
        self._forge = forge
        self._marks = marks
        self._store = store
        self._engine = engine
        self._scope = scope

    @activity.defn(name=GOAL_OBSERVE_ACTIVITY)
    async def observe(self, req: ObserveRequest) -> Observation:
        target = f"{req.owner}/{req.repo}#{req.number}"
        work_key = review_work_key(req.tenant, PullRequestRef(req.owner, req.repo, req.number))
        kill = await asyncio.to_thread(KillSwitch(self._engine).active_for, work_key, req.tenant)
        if kill is not None:
            return Observation(exists=True, killed=True,
                               detail=f"killed by {kill.actor} ({kill.scope} {kill.target}): {kill.reason}")
        if not self._scope.tenant_covers(req.tenant, req.owner, req.repo):  # a watch started around `goal start`
            return Observation(exists=False, detail=f"{target} is not in tenant {req.tenant!r}'s scope (not read)")
        try:
            pull = await self._forge.get_pull(req.owner, req.repo, req.number, tenant=req.tenant or None)
        except ForgeError as exc:
            if exc.not_found:
                return Observation(exists=False, detail=f"{target} not found")
            raise forge_activity_error(exc, f"cannot read {target}") from None
        head = (pull.get("head") or {}).get("sha")
        obs = Observation(exists=True, open=pull.get("state") == "open", head_sha=head, draft=bool(pull.get("draft")))
        if not obs.open:
            obs.detail = f"{target} is {pull.get('state')}"
            return obs
        obs.holds, obs.detail = await self._check(req, req.condition, pull, head)
        return obs

    async def _check(self, req: ObserveRequest, cond: GoalCondition, pull: dict, head: str | None) -> tuple[bool, str]:
        if cond.kind == "head":
            ok = head_matches(head, cond.value or "")
            return ok, f"head is {(head or '?')[:12]}" + ("" if ok else f", waiting for {(cond.value or '')[:12]}")
        if cond.kind == "ready":
            title = (pull.get("title") or "").strip()
            wip = title.lower().startswith(WIP_PREFIXES)
            ok = not wip and not pull.get("draft")
            return ok, "ready" if ok else ("draft" if pull.get("draft") else f"title is {title[:60]!r}")
        if cond.kind == "comment":
            try:
                async for comment in self._forge.iter_comments(req.owner, req.repo, req.number,
                                                               tenant=req.tenant or None):
                    body = comment.get("body") or ""
                    if not self._marks.is_own(comment) and (cond.value or "") in body:
                        who = (comment.get("user") or {}).get("login", "?")
                        return True, f"comment {comment.get('id')} by {who} contains {cond.value!r}"
            except ForgeError as exc:
                raise forge_activity_error(exc, f"cannot read comments of {req.owner}/{req.repo}#{req.number}") from None
            return False, f"no comment contains {cond.value!r}"
        return False, f"unknown condition {cond.kind!r}"

    @activity.defn(name=GOAL_BOUND_ACTIVITY)
    async def record_bound_reached(self, req: ReceiptRequest) -> ReceiptRef:
        if req.work_key is None and req.target_id:
            req.work_key = review_work_key(req.tenant, parse_target(req.target_id))
        return await asyncio.to_thread(record_receipt_once, self._store, self._engine, req)
