"""Validation of Chat Completions requests, with OpenAI's error wording.

Raises ``InvalidRequest`` (-> 400 ``invalid_request_error``) for what the
real API rejects and the simulator relies on: unknown top-level arguments,
missing/empty ``model``/``messages``, bad roles, tool messages that answer
no preceding ``tool_calls`` (and ``tool_calls`` left unanswered), malformed
``tools``/``tool_choice``, out-of-range ``temperature``/``top_p``, non
positive ``max_tokens``/``max_completion_tokens``. The simulator also
rejects what it cannot simulate: ``stream: true`` and ``n != 1``.
``max_tokens`` limits are validated but not enforced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from simulators.model._errors import InvalidRequest

__all__ = ["ChatRequest", "validate_chat_request"]

_KNOWN = {
    "model", "messages", "tools", "tool_choice", "temperature", "top_p", "n", "stream", "stream_options",
    "stop", "max_tokens", "max_completion_tokens", "presence_penalty", "frequency_penalty", "logit_bias",
    "logprobs", "top_logprobs", "user", "metadata", "seed", "response_format", "parallel_tool_calls", "store",
    "service_tier", "reasoning_effort", "modalities", "audio", "prediction", "prompt_cache_key",
    "prompt_cache_retention", "prompt_cache_options", "safety_identifier", "verbosity", "web_search_options",
    "functions", "function_call", "moderation",
}  # fmt: skip
_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    tool_choice: Any


def _missing(param: str) -> InvalidRequest:
    return InvalidRequest(f"Missing required parameter: '{param}'.", param, "missing_required_parameter")


def _invalid_type(param: str, expected: str) -> InvalidRequest:
    return InvalidRequest(f"Invalid type for '{param}': expected {expected}.", param, "invalid_type")


def _number(body: dict[str, Any], key: str, low: float, high: float) -> None:
    value = body.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _invalid_type(key, "a decimal")
    if not low <= value <= high:
        raise InvalidRequest(
            f"Invalid '{key}': expected a value between {low:g} and {high:g}, but got {value} instead.",
            key,
            "decimal_above_max_value" if value > high else "decimal_below_min_value",
        )


def _positive_int(body: dict[str, Any], key: str) -> None:
    value = body.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidRequest(f"Invalid '{key}': expected an integer >= 1, but got {value!r}.", key, "invalid_value")


def _content_ok(content: Any) -> bool:
    if isinstance(content, str):
        return True
    return isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in content)


def _check_tool_calls(calls: Any, where: str) -> list[str]:
    if not isinstance(calls, list) or not calls:
        raise _invalid_type(f"{where}.tool_calls", "a non-empty array")
    ids = []
    for j, call in enumerate(calls):
        at = f"{where}.tool_calls.[{j}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(call.get("id"), str):
            raise _missing(f"{at}.id" if isinstance(function, dict) else f"{at}.function")
        if not isinstance(function.get("name"), str) or not isinstance(function.get("arguments"), str):
            raise _invalid_type(f"{at}.function", "an object with string 'name' and 'arguments'")
        ids.append(call["id"])
    return ids


def _unanswered(pending: set[str], index: int) -> InvalidRequest:
    return InvalidRequest(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(sorted(pending))}",
        f"messages.[{index}].role",
    )


def _check_messages(messages: Any) -> list[dict[str, Any]]:
    if messages is None:
        raise _missing("messages")
    if not isinstance(messages, list):
        raise _invalid_type("messages", "an array")
    if not messages:
        raise InvalidRequest(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead.",
            "messages",
            "empty_array",
        )
    pending: set[str] = set()
    pending_at = 0
    for i, message in enumerate(messages):
        where = f"messages.[{i}]"
        if not isinstance(message, dict):
            raise _invalid_type(where, "an object")
        role = message.get("role")
        if role not in _ROLES:
            raise InvalidRequest(
                f"Invalid value: {role!r}. Supported values are: 'system', 'assistant', 'user', 'function', "
                "'tool', and 'developer'.",
                f"{where}.role",
                "invalid_value",
            )
        content = message.get("content")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                raise _missing(f"{where}.tool_call_id")
            if call_id not in pending:
                raise InvalidRequest(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'.",
                    f"{where}.role",
                )
            pending.discard(call_id)
        elif pending:
            raise _unanswered(pending, pending_at)
        if role == "assistant" and message.get("tool_calls") is not None:
            pending, pending_at = set(_check_tool_calls(message["tool_calls"], where)), i
            if content is not None and not _content_ok(content):
                raise _invalid_type(f"{where}.content", "a string or array of content parts")
        elif content is None:
            raise _missing(f"{where}.content")
        elif content is not None and not _content_ok(content):
            raise _invalid_type(f"{where}.content", "a string or array of content parts")
    if pending:
        raise _unanswered(pending, pending_at)
    return messages


def _check_tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise _invalid_type("tools", "an array")
    if not tools:
        message = "Invalid 'tools': empty array. Expected an array with minimum length 1."
        raise InvalidRequest(message, "tools", "empty_array")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict):
            raise InvalidRequest(f"Invalid value for 'tools.[{i}]': expected a function tool.", f"tools.[{i}]")
        name = function.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidRequest(
                f"Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string that "
                "matches the pattern '^[a-zA-Z0-9_-]+$'.",
                f"tools[{i}].function.name",
                "invalid_value",
            )
    return tools


def _check_tool_choice(choice: Any, tools: list[dict[str, Any]] | None) -> Any:
    if choice is None:
        return None
    if tools is None:
        raise InvalidRequest(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "tool_choice"
        )
    if choice in ("none", "auto", "required"):
        return choice
    name = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if not isinstance(name, str) or choice.get("type") != "function":
        raise InvalidRequest("Invalid value for 'tool_choice'.", "tool_choice", "invalid_value")
    if name not in {t["function"]["name"] for t in tools}:
        raise InvalidRequest(f"Invalid value for 'tool_choice': no function named '{name}' in 'tools'.", "tool_choice")
    return choice


def validate_chat_request(body: Any) -> ChatRequest:
    if not isinstance(body, dict):
        raise InvalidRequest("We could not parse the JSON body of your request. The body must be a JSON object.")
    unknown = sorted(set(body) - _KNOWN)
    if unknown:
        raise InvalidRequest(f"Unrecognized request argument supplied: {unknown[0]}")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("you must provide a model parameter")
    if body.get("stream"):
        raise InvalidRequest("The model simulator does not support stream=true.", "stream", "unsupported_value")
    if body.get("n") not in (None, 1):
        raise InvalidRequest("The model simulator only supports n=1.", "n", "unsupported_value")
    _number(body, "temperature", 0, 2)
    _number(body, "top_p", 0, 1)
    _positive_int(body, "max_tokens")
    _positive_int(body, "max_completion_tokens")
    for key in ("user", "safety_identifier", "prompt_cache_key"):
        if body.get(key) is not None and not isinstance(body[key], str):
            raise _invalid_type(key, "a string")
    metadata = body.get("metadata")
    if metadata is not None and not (
        isinstance(metadata, dict) and len(metadata) <= 16 and all(isinstance(v, str) for v in metadata.values())
    ):
        raise _invalid_type("metadata", "an object of at most 16 string values")
    messages = _check_messages(body.get("messages"))
    tools = _check_tools(body.get("tools"))
    return ChatRequest(model, messages, tools, _check_tool_choice(body.get("tool_choice"), tools))
