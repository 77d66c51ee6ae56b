"""Fixtures for the simulator tests: real uvicorn servers on port 0.

One forge and one model server per session (reset before every test);
tests that need a token/API key start their own server.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from simulators import ServerThread, serve_in_thread
from simulators.forge import ForgeState, create_forge_app
from simulators.model import ModelState, create_model_app

FIXTURES = Path(__file__).resolve().parents[2] / "simulators" / "fixtures" / "forge"

REVIEWER_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_pull_request_diff",
            "description": "Fetch the unified diff of the pull request under review.",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "post_review_comment",
            "description": "Post the review as a comment on the pull request.",
            "parameters": {
                "type": "object",
                "properties": {"body": {"type": "string"}},
                "required": ["body"],
                "additionalProperties": False,
            },
        },
    },
]


@pytest.fixture
def fixture_pulls() -> dict[tuple[str, str, int], dict[str, Any]]:
    """The raw fixture data, read independently of the simulator code."""
    pulls = {}
    for path in FIXTURES.glob("*.json"):
        data = json.loads(path.read_text())
        for pull in data["pulls"]:
            pulls[(data["owner"], data["repo"], pull["number"])] = pull
    return pulls


@pytest.fixture(scope="session")
def forge_server() -> Iterator[tuple[ServerThread, ForgeState]]:
    state = ForgeState()
    with serve_in_thread(create_forge_app(state), name="forge-sim") as server:
        yield server, state


@pytest.fixture
def forge_state(forge_server: tuple[ServerThread, ForgeState]) -> ForgeState:
    forge_server[1].reset()
    return forge_server[1]


@pytest.fixture
def forge_http(forge_server: tuple[ServerThread, ForgeState], forge_state: ForgeState) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=forge_server[0].base_url, timeout=5.0) as client:
        yield client


@pytest.fixture(scope="session")
def model_server() -> Iterator[tuple[ServerThread, ModelState]]:
    state = ModelState()
    with serve_in_thread(create_model_app(state), name="model-sim") as server:
        yield server, state


@pytest.fixture
def model_state(model_server: tuple[ServerThread, ModelState]) -> ModelState:
    model_server[1].reset()
    return model_server[1]


@pytest.fixture
def model_http(model_server: tuple[ServerThread, ModelState], model_state: ModelState) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=model_server[0].base_url, timeout=5.0) as client:
        yield client


@pytest.fixture
async def model_client(
    model_server: tuple[ServerThread, ModelState], model_state: ModelState
) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=f"{model_server[0].base_url}/v1", api_key="k", max_retries=0)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def reviewer_tools() -> list[dict[str, Any]]:
    return json.loads(json.dumps(REVIEWER_TOOLS))
