"""The console's actions (POST): kill and unkill, retry and resolve a dead letter. Admins only.

Each action goes through :meth:`Console.authenticated_form` (size, session, body, CSRF), then
checks the role *in the tenant the action touches* — the work key's or the letter's tenant, the
named tenant, or ``*`` for a kill of everything — and only then writes, through the same code
the CLI uses (``sluicegate/operations/actions.py``, ``ledger.KillSwitch``, ``ledger.DeadLetters``),
so the ledger records the signed-in actor exactly as it records the CLI's ``--actor``. An
operator's attempt is answered 403 and changes nothing.

Failure modes: Temporal unreachable during a kill (the kill is recorded and enforced at the
next model or tool call; the page says the running runs were not signalled); a letter closed by
someone else meanwhile (409, the first close stands); intake refusing a retry (the letter stays
open and the page shows intake's answer).
"""

from __future__ import annotations

import asyncio
import json
import logging

from fastapi import FastAPI, Request
from fastapi.responses import Response

import ledger
from console._core import Console
from console._forms import FormRefused, text
from sluicegate.operations.actions import (
    KILL_SCOPES, UNKILL_DISPATCH_FAILED, KillScope, dispatch_now, kill_target, kill_tenant, resolved_note, retried_note,
    retry_took, retry_trigger, signal_kill,
)
from sluicegate.config.tenancy import configured_tenants

log = logging.getLogger("sluicegate.console")
MAX_REASON = 500


def register(app: FastAPI, console: Console) -> None:
    def role_refusal(request: Request, viewer, tenant: str | None, what: str) -> Response:
        where = f"tenant {tenant}" if tenant is not None else "every tenant ('*')"
        held = viewer.role(tenant) or "no role"
        return console.refuse(request, viewer, 403, f"Only an admin in {where} may {what}; "
                                                    f"{viewer.actor} holds {held} there. Nothing was changed.")

    def scope_and_target(form: dict[str, str]) -> tuple[KillScope, str, str | None]:
        given = text(form, "scope", 16)
        scope = next((s for s in KILL_SCOPES if s == given), None)
        if scope is None:
            raise FormRefused(422, f"scope: one of {', '.join(KILL_SCOPES)}")
        try:
            target = kill_target(scope, text(form, "target", 512, required=scope != "all"))
        except ValueError as exc:
            raise FormRefused(422, f"target: {exc}") from None
        tenant = kill_tenant(scope, target)
        if scope == "tenant" and tenant not in configured_tenants(console.settings):
            raise FormRefused(422, "target: no such tenant")
        return scope, target, tenant

    @app.post("/kills")
    async def kill(request: Request) -> Response:
        checked = await console.authenticated_form(request)
        if isinstance(checked, Response):
            return checked
        viewer, form = checked
        try:
            scope, target, tenant = scope_and_target(form)
            reason = text(form, "reason", MAX_REASON)
        except FormRefused as refused:
            return console.refuse(request, viewer, refused.status, refused.message)
        if not viewer.admin_in(tenant):
            return role_refusal(request, viewer, tenant, "kill this")
        engine, temporal = console.ports.engine, console.ports.temporal
        row = await asyncio.to_thread(ledger.KillSwitch(engine).kill, scope, target, viewer.actor, reason)
        signalled = "recorded only (no Temporal client)"
        if temporal is not None:
            try:
                signalled = (f"signalled {await signal_kill(temporal, scope, row.target, viewer.actor, reason)} "
                             "running agent workflow(s) to stop before their next step")
            except Exception as exc:  # noqa: BLE001 - the kill holds anyway; say what did not happen
                log.warning("kill %s recorded but running workflows not signalled: %s", row.id, exc)
                signalled = f"running workflows NOT signalled ({type(exc).__name__}); they stop at their next call"
        return console.done("/console/kills", f"Kill {row.id} recorded: {scope} {row.target} by {viewer.actor}; "
                                              f"model and tool calls are refused now; {signalled}.")

    @app.post("/kills/lift")
    async def unkill(request: Request) -> Response:
        checked = await console.authenticated_form(request)
        if isinstance(checked, Response):
            return checked
        viewer, form = checked
        try:
            scope, target, tenant = scope_and_target(form)
            reason = text(form, "reason", MAX_REASON)
        except FormRefused as refused:
            return console.refuse(request, viewer, refused.status, refused.message)
        if not viewer.admin_in(tenant):
            return role_refusal(request, viewer, tenant, "lift this kill")
        lifted = await asyncio.to_thread(ledger.KillSwitch(console.ports.engine).unkill, scope, target, viewer.actor,
                                         reason)
        if lifted == 0:
            return console.refuse(request, viewer, 409, f"No kill is in force for {scope} {target}.")
        dispatched = "no dispatch pass started (no Temporal client): queued work waits for the next pass"
        if console.ports.temporal is not None:
            try:
                dispatched = await dispatch_now(console.ports.temporal)
            except Exception as exc:  # noqa: BLE001 - the unkill stands; say what did not happen
                log.warning("kill lifted but no dispatch pass started: %s", exc)
                dispatched = UNKILL_DISPATCH_FAILED.format(error=type(exc).__name__)
        return console.done("/console/kills", f"Lifted {lifted} kill(s) for {scope} {target} by {viewer.actor}; "
                                              f"stopped runs stay stopped — re-trigger to resume; {dispatched}.")

    async def open_letter(request: Request):
        checked = await console.authenticated_form(request)
        if isinstance(checked, Response):
            return checked
        viewer, form = checked
        try:
            letter_id = text(form, "letter", 80)
            reason = text(form, "reason", MAX_REASON)
        except FormRefused as refused:
            return console.refuse(request, viewer, refused.status, refused.message)
        letters = ledger.DeadLetters(console.ports.engine)
        letter = await asyncio.to_thread(letters.get, letter_id)
        if letter is None or not viewer.sees(letter.tenant):
            return console.refuse(request, viewer, 404, "No dead letter you may see has that id.")
        if not viewer.admin_in(letter.tenant):
            return role_refusal(request, viewer, letter.tenant, "retry or resolve its dead letters")
        if letter.status != "open":
            return console.refuse(request, viewer, 409, f"Dead letter {letter.id} is already {letter.status}: "
                                                        f"{letter.note or ''}")
        return viewer, letters, letter, reason

    @app.post("/dead-letters/retry")
    async def retry(request: Request) -> Response:
        opened = await open_letter(request)
        if isinstance(opened, Response):
            return opened
        viewer, letters, letter, reason = opened
        try:
            trigger = retry_trigger(letter, reason)
        except ValueError as exc:
            return console.refuse(request, viewer, 422, f"Dead letter {letter.id} has no usable work key: {exc}")
        answer = json.loads(bytes((await console.ports.submit_manual(viewer.actor, trigger)).body))
        said = f"intake answered {answer.get('outcome')} {answer.get('reason')}: {answer.get('message') or ''}"
        if not retry_took(answer):
            return console.done("/console/dead-letters", f"Dead letter {letter.id} NOT retried ({said}); it stays open.")
        note = retried_note(viewer.actor, answer.get("receipt_id"), reason)
        if not await asyncio.to_thread(letters.close, letter.id, "retried", note):
            return console.done("/console/dead-letters", f"Retried, but {letter.id} was closed by someone else "
                                                         f"meanwhile ({said}).")
        return console.done("/console/dead-letters", f"Dead letter {letter.id} retried by {viewer.actor}: "
                                                     f"receipt {answer.get('receipt_id')} ({said}).")

    @app.post("/dead-letters/resolve")
    async def resolve(request: Request) -> Response:
        opened = await open_letter(request)
        if isinstance(opened, Response):
            return opened
        viewer, letters, letter, reason = opened
        if not await asyncio.to_thread(letters.close, letter.id, "resolved", resolved_note(viewer.actor, reason)):
            return console.refuse(request, viewer, 409, f"Dead letter {letter.id} was closed by someone else meanwhile.")
        return console.done("/console/dead-letters", f"Dead letter {letter.id} resolved by {viewer.actor}.")
