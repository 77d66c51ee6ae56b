"""Signing in and out: an actor's token for a session cookie.

``GET /console/sign-in`` sets a short-lived ``SameSite=Strict`` nonce cookie and puts the same
nonce in the form; ``POST`` checks the nonce (so another site cannot sign a browser in as its
own actor), then the token against every configured actor's in constant time
(``intake.actors.actor_for_token``). A wrong token is counted and logged at a bounded rate,
never recorded, and answered 401 without saying whether any actor exists. Only then is the
session cookie set; the actor's roles are read from the config on every later request.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response

from console._core import Console
from console._forms import FormRefused, declared_size_ok, read_form, safe_next, text
from console._session import COOKIE, SIGNIN_COOKIE, SIGNIN_MAX_AGE
from intake.actors import actor_for_token
from intake.decision import Reason

MAX_TOKEN_CHARS = 512


def register(app: FastAPI, console: Console) -> None:
    def form(request: Request, status: int = 200, error: str | None = None, next_path: str = "/console/") -> Response:
        cookie, nonce = console.signer.signin_nonce()
        response = console.page(request, None, "sign_in.html", status=status, error=error, nonce=nonce,
                                next_path=next_path)
        response.set_cookie(SIGNIN_COOKIE, cookie, **console.signer.cookie_args(SIGNIN_MAX_AGE))
        return response

    @app.get("/sign-in")
    def sign_in_page(request: Request) -> Response:
        next_path = safe_next(request.query_params.get("next"))
        if console.viewer(request) is not None:
            return RedirectResponse(next_path, status_code=303)
        return form(request, next_path=next_path)

    @app.post("/sign-in")
    async def sign_in(request: Request) -> Response:
        if not declared_size_ok(request):
            console.unauthenticated(request, 413, "declared body over the form cap", Reason.BAD_INPUT)
            return form(request, 413, "The form is larger than the console accepts.")
        try:
            fields = await read_form(request)
            token = text(fields, "token", MAX_TOKEN_CHARS)
        except FormRefused as refused:
            console.unauthenticated(request, refused.status, refused.message, Reason.BAD_INPUT)
            return form(request, refused.status, refused.message)
        next_path = safe_next(fields.get("next"))
        if not console.signer.signin_nonce_matches(request.cookies.get(SIGNIN_COOKIE), fields.get("nonce")):
            console.unauthenticated(request, 403, "sign-in nonce missing or wrong", Reason.BAD_SIGNATURE)
            return form(request, 403, "This sign-in form expired or did not come from this console: try again.",
                        next_path)
        actor = actor_for_token(token or "", console.settings.actors)
        if actor is None:
            console.unauthenticated(request, 401, "token matches no actor")
            return form(request, 401, "That token does not sign anyone in.", next_path)
        cookie, _ = console.signer.issue(actor, token or "")
        response = RedirectResponse(next_path, status_code=303)
        response.set_cookie(COOKIE, cookie, **console.signer.cookie_args(console.signer.max_age))
        response.delete_cookie(SIGNIN_COOKIE, path="/console")
        return response

    @app.post("/sign-out")
    async def sign_out(request: Request) -> Response:
        checked = await console.authenticated_form(request)
        if isinstance(checked, Response):
            return checked
        response = RedirectResponse("/console/sign-in", status_code=303)
        response.delete_cookie(COOKIE, path="/console")
        return response
