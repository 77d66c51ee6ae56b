"""The console's pages (GET): overview, receipts, work key, queue, dead letters, kills, costs.

Each page checks the session first (none: counted, then sent to sign in), reads only what the
viewer's tenants cover, and never changes anything. Routes are plain functions: FastAPI runs
them in its thread pool, so the ledger reads (synchronous SQLAlchemy) never block the event
loop that serves webhooks.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response

import ledger
from console._core import Console
from console._costs import MAX_DAYS, costs
from console._forms import decode_cursor, encode_cursor, query_int, query_text, query_time
from console._overview import overview
from console._render import utc
from console._work import temporal_run_url, work_view
from intake.decision import Outcome
from sluicegate.operations.actions import KILL_SCOPES, kill_tenant
from sluicegate.operations.status import gather

OUTCOMES = tuple(str(o) for o in Outcome)
LETTER_STATUSES = ("open", "retried", "resolved", "all")


def register(app: FastAPI, console: Console) -> None:
    settings = console.settings

    def tenant_filter(request: Request, viewer, errors: list[str]) -> str | None:
        tenant = query_text(request.query_params, "tenant", errors, 64)
        if tenant is not None and not viewer.sees(tenant):
            errors.append("tenant: not one of the tenants you hold a role in")
            return None
        return tenant

    @app.get("/")
    def overview_page(request: Request) -> Response:
        if (viewer := console.viewer(request)) is None:
            return console.to_sign_in(request)
        data = overview(console.ports.engine, settings, viewer, console.now())
        return console.page(request, viewer, "overview.html", "overview", o=data)

    @app.get("/receipts")
    def receipts_page(request: Request) -> Response:
        if (viewer := console.viewer(request)) is None:
            return console.to_sign_in(request)
        q, errors = request.query_params, list[str]()
        filters = {"work_key": query_text(q, "work_key", errors, 512),
                   "tenant": tenant_filter(request, viewer, errors),
                   "outcome": query_text(q, "outcome", errors, 16, OUTCOMES),
                   "reason": query_text(q, "reason", errors, 64),
                   "source": query_text(q, "source", errors, 128)}
        since, until = query_time(q, "since", errors), query_time(q, "until", errors)
        limit = query_int(q, "limit", errors, settings.console.page_size, 1, 200)
        before = decode_cursor(query_text(q, "before", errors, 128), errors)
        page = ledger.receipts_page(console.ports.engine, ledger.ReceiptQuery(
            **filters, since=since, until=until, visible=viewer.visible, before=before, limit=limit))
        echo = {**filters, "since": q.get("since") if since else None, "until": q.get("until") if until else None,
                "limit": limit if limit != settings.console.page_size else None}
        next_cursor = encode_cursor(page.next_cursor) if page.next_cursor else None
        return console.page(request, viewer, "receipts.html", "receipts", page=page, filters=echo, errors=errors,
                            outcomes=OUTCOMES, next_cursor=next_cursor, paged=before is not None)

    @app.get("/work")
    def work_page(request: Request) -> Response:
        if (viewer := console.viewer(request)) is None:
            return console.to_sign_in(request)
        errors: list[str] = []
        key = query_text(request.query_params, "key", errors, 512)
        view = work_view(console.ports.engine, settings, viewer, key) if key else None
        if view is None:
            return console.refuse(request, viewer, 404, "Nothing you may see is recorded for that work key "
                                                        "(keys look like acme/github:acme/api#42:review).")
        return console.page(request, viewer, "work.html", "", w=view,
                            workflow_url=temporal_run_url(settings, view.chain.items[0].workflow_id
                                                          if view.chain.items else None))

    @app.get("/queue")
    def queue_page(request: Request) -> Response:
        if (viewer := console.viewer(request)) is None:
            return console.to_sign_in(request)
        errors: list[str] = []
        tenant = tenant_filter(request, viewer, errors)
        now = console.now()
        status = gather(console.ports.engine, ledger.BreakerBoard(console.ports.engine,
                                                                  settings.capacity.breaker_policy()), now,
                        settings.capacity.aging_seconds)
        rows = [(pos, item, (now - utc(item.enqueued_at)).total_seconds()) for pos, item in status.positions
                if viewer.sees(item.tenant) and tenant in (None, item.tenant)]
        return console.page(request, viewer, "queue.html", "queue", rows=rows, errors=errors, tenant=tenant,
                            summary=[q for q in status.queue if viewer.sees(q.tenant)])

    @app.get("/dead-letters")
    def dead_letters_page(request: Request) -> Response:
        if (viewer := console.viewer(request)) is None:
            return console.to_sign_in(request)
        errors: list[str] = []
        status = query_text(request.query_params, "status", errors, 16, LETTER_STATUSES) or "open"
        tenant = tenant_filter(request, viewer, errors)
        letters = ledger.dead_letters_page(console.ports.engine, None if status == "all" else status, viewer.visible,
                                           tenant=tenant, limit=200)
        return console.page(request, viewer, "dead_letters.html", "dead-letters", letters=letters, letter_status=status,
                            statuses=LETTER_STATUSES, tenant=tenant, errors=errors)

    @app.get("/kills")
    def kills_page(request: Request) -> Response:
        if (viewer := console.viewer(request)) is None:
            return console.to_sign_in(request)
        kills = [k for k in ledger.recent_kills(console.ports.engine, 200) if _sees_kill(viewer, k)]
        return console.page(request, viewer, "kills.html", "kills", in_force=[k for k in kills if k.lifted_at is None],
                            lifted=[k for k in kills if k.lifted_at is not None], scopes=KILL_SCOPES,
                            can_lift={k.id: viewer.admin_in(_kill_tenant(k)) for k in kills})

    @app.get("/costs")
    def costs_page(request: Request) -> Response:
        if (viewer := console.viewer(request)) is None:
            return console.to_sign_in(request)
        errors: list[str] = []
        days = query_int(request.query_params, "days", errors, 7, 1, MAX_DAYS)
        tenant = tenant_filter(request, viewer, errors)
        data = costs(console.ports.engine, settings, viewer, console.now(), days, tenant)
        return console.page(request, viewer, "costs.html", "costs", c=data, days=days, tenant=tenant, errors=errors)


def _kill_tenant(kill: ledger.Kill) -> str | None:
    try:
        return kill_tenant(kill.scope, kill.target)
    except ValueError:  # a key from before tenancy: only a platform-wide actor covers it
        return None


def _sees_kill(viewer, kill: ledger.Kill) -> bool:
    """Everyone sees a kill of everything (it stops their work too); others by their tenant."""
    return kill.scope == "all" or viewer.sees(_kill_tenant(kill))

