"""A Temporal codec server: lets the Temporal UI and CLI show encrypted payloads in clear.

    SLUICEGATE_PAYLOAD_KEY=... SLUICEGATE_CODEC_TOKEN=... sluicegate codec-server [--host H] [--port P]
    (or python -m sluicegate.temporal.codec_server; a missing key or token exits 3 with one line)
    temporal workflow show -w 'agent/github:acme/api#42:review' \\
        --codec-endpoint http://127.0.0.1:8888 --codec-auth "Bearer $SLUICEGATE_CODEC_TOKEN"
    Temporal UI: --ui-codec-endpoint http://127.0.0.1:8888/ui/<token> (``make up`` sets it)

Implements Temporal's remote codec protocol: ``POST /decode`` and ``POST /encode`` with a JSON
body ``{"payloads": [...]}`` (protobuf JSON). It holds the payload keys, so:

* **Bearer token** (``codec_server.token``, ``SLUICEGATE_CODEC_TOKEN``): every ``/encode`` and
  ``/decode`` needs ``Authorization: Bearer <token>`` (the CLI's ``--codec-auth``). The Temporal
  UI cannot send a header of its own choosing (it forwards only its own OIDC access token), so
  the token may instead be the path prefix ``/ui/<token>/`` — for ``/decode`` only: whoever can
  open that UI can read the endpoint from its settings (and could decode through the UI anyway),
  but the UI never encodes, so the path token must not let anyone seal payloads with the fleet's
  key (a sealed, forged ``WorkOrder`` would pass the workers' plaintext refusal). ``/encode``
  takes the bearer header only. Refused: 401, the body never read. Preflight (``OPTIONS``) needs no token, as browsers send none.
* **CORS** for the UI's origins (``codec_server.ui_origins``; default the dev server's UI):
  methods ``POST, GET, OPTIONS``, headers ``Content-Type, X-Namespace, Authorization``, as
  Temporal's codec-server guide asks. Other origins get no CORS headers.
* **Bound, then authenticate, then parse**: the token is checked before the body is read; the
  body is read up to ``codec_server.max_body_bytes`` (413 past it) within 30 s (408); a malformed body is 400
  without echoing it. Access logs are off (a UI endpoint carries the token in its path).
* It decodes plaintext payloads as they are (a history may predate encryption); refusing
  plaintext is the workers' job (``sluicegate.temporal.codec``).
"""

from __future__ import annotations

import argparse

import hmac

import uvicorn
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payloads

from sluicegate.web.bounded_body import BodyNotReceived, read_limited
from sluicegate.temporal.codec import EncryptionCodec, PayloadKeyError
from sluicegate.config.settings import ConfigError, Settings, load_settings
from sluicegate.temporal.client import payload_codec

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
BODY_READ_SECONDS = 30.0
"""A whole body (up to 16 MB of payloads from the UI or CLI) must arrive within this."""


def _message(status: int, text: str, **headers: str) -> JSONResponse:
    return JSONResponse({"message": text}, status_code=status, headers=headers)


def create_codec_app(codec: EncryptionCodec, token: str, ui_origins: list[str] | None = None,
                     max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    if not token:
        raise ConfigError("the codec server needs a token (codec_server.token / SLUICEGATE_CODEC_TOKEN)")
    app = FastAPI(title="Sluicegate codec server", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(CORSMiddleware, allow_origins=list(ui_origins or ["http://127.0.0.1:8233"]),
                       allow_methods=["POST", "GET", "OPTIONS"],
                       allow_headers=["content-type", "x-namespace", "authorization"])
    expected = token.encode()

    def authorized(request: Request, path_token: str | None) -> bool:
        if path_token is not None:
            return hmac.compare_digest(path_token.encode(), expected)
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), expected)

    async def apply(request: Request, decode: bool, path_token: str | None = None) -> Response:
        if not authorized(request, path_token):
            return _message(401, "missing or wrong codec token", **{"WWW-Authenticate": "Bearer"})
        try:
            body = await read_limited(request, max_body_bytes, BODY_READ_SECONDS)
        except BodyNotReceived as unread:
            return _message(unread.status, str(unread))
        if body is None:
            return _message(413, f"body over {max_body_bytes} bytes")
        try:
            payloads = json_format.Parse(body, Payloads())
        except (json_format.ParseError, UnicodeDecodeError, ValueError):
            return _message(400, 'body must be protobuf JSON: {"payloads": [...]}')
        try:
            out = await (codec.decode if decode else codec.encode)(payloads.payloads)
        except PayloadKeyError:
            return _message(422, "a payload is sealed with a key this server does not hold, or does not authenticate")
        except (ValueError, TypeError, DecodeError):  # a payload the codec cannot take apart: the sender's fault
            return _message(400, "a payload is malformed")
        return JSONResponse(json_format.MessageToDict(Payloads(payloads=out)))

    @app.get("/healthz")
    async def healthz() -> dict:
        return {"ok": True}

    @app.post("/decode")
    async def decode(request: Request) -> Response:
        return await apply(request, True)

    @app.post("/encode")
    async def encode(request: Request) -> Response:
        return await apply(request, False)

    @app.post("/ui/{path_token}/decode")
    async def ui_decode(path_token: str, request: Request) -> Response:
        return await apply(request, True, path_token)

    return app


def ui_origins(settings: Settings) -> list[str]:
    """Origins allowed to call the codec server: the configured ones, else the dev server's UI."""
    configured = settings.codec_server.ui_origins
    if configured:
        return list(configured)
    port = settings.dev_server.ui_port
    return [f"http://{settings.dev_server.ip}:{port}", f"http://localhost:{port}"]


def ui_codec_endpoint(settings: Settings) -> str:
    """What the Temporal UI is pointed at (``--ui-codec-endpoint``): the token rides in the path."""
    cs = settings.codec_server
    return f"http://{cs.host}:{cs.port}/ui/{cs.token.get_secret_value() if cs.token else ''}"


def app_from_settings(settings: Settings) -> FastAPI:
    codec = payload_codec(settings, accept_plaintext=True)
    if codec is None:
        raise ConfigError("no payload key configured (temporal.payload_key or SLUICEGATE_PAYLOAD_KEY): "
                          "there is nothing for a codec server to decode")
    cs = settings.codec_server
    if cs.token is None:
        raise ConfigError("codec_server.token (SLUICEGATE_CODEC_TOKEN) is not set: the codec server decrypts "
                          "whatever it is sent and must not run without one")
    return create_codec_app(codec, cs.token.get_secret_value(), ui_origins(settings), cs.max_body_bytes)


def serve(host: str | None = None, port: int | None = None) -> None:
    """Serve the codec from the loaded settings (``host``/``port`` override ``codec_server.*``).
    A missing key or token is a :class:`ConfigError` (exit 3 through ``sluicegate.temporal.exit_codes``)."""
    settings = load_settings()
    app = app_from_settings(settings)
    uvicorn.run(app, host=host or settings.codec_server.host, port=port or settings.codec_server.port,
                access_log=False)


def main(argv: list[str] | None = None) -> None:
    """``python -m sluicegate.temporal.codec_server [--host H] [--port P]`` (= ``sluicegate codec-server``).
    Parsed here, not through ``sluicegate.cli``: the CLI is the layer above this one."""
    parser = argparse.ArgumentParser(prog="python -m sluicegate.temporal.codec_server",
                                     description="Run the Temporal codec server (the UI and CLI show encrypted "
                                                 "payloads in clear).")
    parser.add_argument("--host", default=None, help="default: codec_server.host")
    parser.add_argument("--port", type=int, default=None, help="default: codec_server.port")
    args = parser.parse_args(argv)
    serve(args.host, args.port)


if __name__ == "__main__":
    from sluicegate.temporal.process_exit import run_then_exit

    run_then_exit(main)
