"""A Temporal codec server: lets the Temporal UI and CLI show encrypted payloads in clear.

    SLUICEGATE_PAYLOAD_KEY=... python -m sluicegate.codec_server --port 8888
    temporal workflow show -w 'agent/github:acme/api#42:review' --codec-endpoint http://127.0.0.1:8888
    Temporal UI: Settings → Data Encoder → http://127.0.0.1:8888

Implements Temporal's remote codec protocol: ``POST /decode`` and ``POST /encode`` with a JSON
body ``{"payloads": [...]}`` (protobuf JSON). Run it only where the people who may read
prompts and diffs can reach it; it holds the key.
"""

from __future__ import annotations

import argparse

import uvicorn
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from sluicegate.codec import EncryptionCodec
from sluicegate.config import ConfigError, load_settings
from sluicegate.temporal_client import payload_codec


def create_codec_app(codec: EncryptionCodec, ui_origin: str = "http://127.0.0.1:8233") -> FastAPI:
    app = FastAPI(title="Sluicegate codec server")
    app.add_middleware(CORSMiddleware, allow_origins=[ui_origin], allow_methods=["POST"],
                       allow_headers=["content-type", "x-namespace"])

    async def apply(request: Request, decode: bool) -> JSONResponse:
        payloads = json_format.Parse(await request.body(), Payloads())
        fn = codec.decode if decode else codec.encode
        out = Payloads(payloads=await fn(payloads.payloads))
        return JSONResponse(json_format.MessageToDict(out))

    @app.post("/decode")
    async def decode(request: Request) -> JSONResponse:
        return await apply(request, True)

    @app.post("/encode")
    async def encode(request: Request) -> JSONResponse:
        return await apply(request, False)

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8888)
    args = parser.parse_args()
    settings = load_settings()
    codec = payload_codec(settings)
    if codec is None:
        raise ConfigError("no payload key configured (temporal.payload_key or SLUICEGATE_PAYLOAD_KEY)")
    ui = f"http://{settings.dev_server.ip}:{settings.dev_server.ui_port}"
    uvicorn.run(create_codec_app(codec, ui), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
