"""Model simulator: an OpenAI-compatible Chat Completions endpoint.

A deterministic "reviewer" answers ``POST /v1/chat/completions``: it asks
for the pull-request diff, then posts a review derived from it, then says
"Review posted." (``_policy``). When ``get_issue`` is offered it triages an
issue instead: reads it, adds labels, posts one triage comment (``_triage``). Responses use the exact OpenAI shapes,
including tool calls and ``usage`` with cached and reasoning token details
(``_usage``). Requests are counted per work item, and faults (429 with
``retry-after``, 5xx, slow answers) are injected through ``/_sim/``.

    app = create_model_app(api_key="k")
    python -m simulators.model --port 8302 --api-key k

It never calls a real model; every fault message says "simulated fault".
"""

from simulators.model._app import create_model_app
from simulators.model._state import ModelState

__all__ = ["ModelState", "create_model_app"]
