"""The console's request plumbing: who is asking, pages, refusals, and the POST gate.

Every POST goes through :meth:`Console.authenticated_form`, in this order: the declared body
size, then the session cookie (no session: counted, never recorded, and sent to sign in, body
unread), then the body under its cap, then the CSRF token against the session's — only then
does a route look at a field. Every refusal is a page with the status it means (401, 403, 404,
409, 413, 415, 422) and a message that names fields and roles, never the values sent.

Requests refused before authentication add to ``sluicegate.intake.unauthenticated`` with
``source=console`` and go to the same rate-limited ``sluicegate.refusals`` log as the API's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

from console._access import Viewer, viewer_for
from console._forms import FormRefused, declared_size_ok, read_form
from console._render import render
from console._session import COOKIE, FLASH_COOKIE, SessionSigner, csrf_matches
from intake.decision import Reason
from sluicegate.config.settings import Settings
from sluicegate.observability.metrics import record_unauthenticated
from sluicegate.config.tenancy import configured_tenants

SOURCE = "console"
"""The ``source`` of the console's unauthenticated-request counter."""
log = logging.getLogger("sluicegate.refusals")  # the API's rate-limited refusal log (webhook_api/_refusals.py)

NAV = (("overview", "/console/", "Overview"), ("receipts", "/console/receipts", "Receipts"),
       ("queue", "/console/queue", "Queue"), ("dead-letters", "/console/dead-letters", "Dead letters"),
       ("kills", "/console/kills", "Kills"), ("costs", "/console/costs", "Costs"))


@dataclass
class ConsolePorts:
    """What the console needs from the process serving it (the API fills it in at start-up)."""

    engine: Any
    """The ledger's SQLAlchemy engine."""
    temporal: Any | None
    """A ``temporalio.client.Client`` for signalling kills; ``None``: kills are recorded, not signalled."""
    submit_manual: Callable[[str, Any], Awaitable[Response]]
    """``(actor, ManualTrigger) -> response``: the manual-trigger pipeline after authentication
    (``webhook_api._manual.submit_manual``), used to retry a dead letter as the signed-in actor."""


class Console:
    def __init__(self, settings: Settings, ports: Callable[[], ConsolePorts]) -> None:
        self.settings = settings
        self.signer = SessionSigner(settings.console)
        self._ports = ports

    @property
    def ports(self) -> ConsolePorts:
        return self._ports()

    @staticmethod
    def now() -> datetime:
        return datetime.now(UTC)

    def viewer(self, request: Request) -> Viewer | None:
        session = self.signer.read(request.cookies.get(COOKIE), self.settings.actors)
        if session is None:
            return None
        return viewer_for(session.actor, self.settings.actors[session.actor].tenants,
                          configured_tenants(self.settings), session.csrf)

    def unauthenticated(self, request: Request, status: int, why: str, reason: str = Reason.UNAUTHORIZED_ACTOR) -> None:
        record_unauthenticated(SOURCE, str(reason), status)
        client = request.client.host if request.client else "-"
        log.warning("refused unauthenticated console request %s %s from %s: %s %s", request.method,
                    request.url.path[:64], client, status, why)

    def to_sign_in(self, request: Request) -> RedirectResponse:
        """No valid session: counted, then sent to sign in (and back here afterwards)."""
        self.unauthenticated(request, 303, "no valid session")
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/console/sign-in?next={quote(here, safe='')}", status_code=303)

    def page(self, request: Request, viewer: Viewer | None, template: str, nav: str = "", status: int = 200,
             **context: Any) -> Response:
        flash = self.signer.read_flash(request.cookies.get(FLASH_COOKIE))
        response = render(template, status, viewer=viewer, nav=NAV, current=nav, flash=flash, **context)
        if request.cookies.get(FLASH_COOKIE) is not None:
            response.delete_cookie(FLASH_COOKIE, path="/console")
        return response

    def refuse(self, request: Request, viewer: Viewer | None, status: int, message: str) -> Response:
        titles = {401: "Not signed in", 403: "Not allowed", 404: "Not found", 409: "Already done",
                  413: "Too large", 415: "Not a form", 422: "Cannot use that"}
        return self.page(request, viewer, "refused.html", status=status, title=titles.get(status, "Refused"),
                         message=message)

    def done(self, path: str, message: str) -> RedirectResponse:
        """After an action: back to ``path`` (Post/Redirect/Get) with a one-time message."""
        response = RedirectResponse(path, status_code=303)
        response.set_cookie(FLASH_COOKIE, self.signer.flash(message), **self.signer.cookie_args(120))
        return response

    async def authenticated_form(self, request: Request) -> tuple[Viewer, dict[str, str]] | Response:
        """The signed-in viewer and the form, or the response refusing the request."""
        if not declared_size_ok(request):
            self.unauthenticated(request, 413, "declared body over the form cap", Reason.BAD_INPUT)
            return self.refuse(request, None, 413, "The form is larger than the console accepts.")
        viewer = self.viewer(request)
        if viewer is None:
            return self.to_sign_in(request)
        try:
            form = await read_form(request)
        except FormRefused as refused:
            return self.refuse(request, viewer, refused.status, refused.message)
        if not csrf_matches(viewer.csrf, form.get("csrf")):
            self.unauthenticated(request, 403, "CSRF token missing or wrong", Reason.BAD_SIGNATURE)
            return self.refuse(request, viewer, 403, "This form is not from your console session (CSRF token "
                                                     "missing or wrong). Reload the page and try again.")
        return viewer, form

