"""``python -m simulators.model`` -- run the model simulator.

Flags: ``--host`` (127.0.0.1), ``--port`` (8302), ``--api-key`` (optional;
when given every ``/v1`` request must send ``Authorization: Bearer KEY``),
``--model`` (repeatable; names listed by ``GET /v1/models``, default
``sim-reviewer-1``), ``--tenant-key TENANT=KEY`` (repeatable; each tenant's work must carry
its own key, see ``_app``), ``--log-level`` (info).
"""

from __future__ import annotations

import argparse
import sys

import uvicorn

from simulators.model._app import create_model_app
from simulators.model._state import DEFAULT_MODELS, ModelState


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simulators.model", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8302)
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer <KEY>'")
    parser.add_argument("--model", action="append", dest="models", help="model name to list (repeatable)")
    parser.add_argument("--tenant-key", action="append", default=[], metavar="TENANT=KEY",
                        help="require this key for TENANT's work (repeatable)")
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    tenant_keys = dict(item.split("=", 1) for item in args.tenant_key if "=" in item)
    if len(tenant_keys) != len(args.tenant_key):
        parser.error("--tenant-key takes TENANT=KEY")
    app = create_model_app(ModelState(args.models or DEFAULT_MODELS), api_key=args.api_key, tenant_keys=tenant_keys)
    print(f"model simulator (NOT OpenAI) on http://{args.host}:{args.port}/v1", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
