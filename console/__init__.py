"""The operator console: server-rendered pages at ``/console``, served by the API process.

``create_console(settings, ports)`` returns an ASGI app the API mounts at ``/console``. Pages
are Jinja2 templates with plain HTML forms (no script, no front-end build, nothing from a CDN);
charts are SVG drawn on the server. Actors sign in with their token for a signed session cookie;
operators see their tenants' data, admins also act (kill, unkill, dead-letter retry and
resolve), every action recorded with the actor (``docs/console.md``, ``docs/security.md``).

Without ``console.session_key`` the console is off: every path answers a page saying how to
turn it on, and nothing else is served.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from console._core import Console, ConsolePorts
from console._render import STATIC, render
from sluicegate.config.settings import Settings

__all__ = ["ConsolePorts", "create_console"]


def create_console(settings: Settings, ports: Callable[[], ConsolePorts]) -> FastAPI:
    """The console app; ``ports`` is called per request (the API fills them in at start-up)."""
    app = FastAPI(title="Sluicegate console", docs_url=None, redoc_url=None, openapi_url=None)
    if settings.console.session_key is None:
        @app.api_route("/{path:path}", methods=["GET", "POST"])
        def disabled(path: str) -> HTMLResponse:
            return render("disabled.html", 404)
        return app

    from console import _actions, _pages, _signin

    console = Console(settings, ports)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    _signin.register(app, console)
    _pages.register(app, console)
    _actions.register(app, console)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> Response:
        message = {404: "There is no such console page.", 405: "That page does not take this method."}
        return console.refuse(request, console.viewer(request), exc.status_code,
                              message.get(exc.status_code, "The console cannot answer that."))

    @app.exception_handler(RequestValidationError)
    async def _unvalidated(request: Request, exc: RequestValidationError) -> Response:
        return console.refuse(request, console.viewer(request), 422, "The request does not match this page.")

    return app
