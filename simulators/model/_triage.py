"""The deterministic issue-triage policy (pure functions of the request).

Selected instead of the reviewer (``_policy``) when ``get_issue`` is among the offered tools; the
reviewer's behaviour is untouched otherwise. Given the messages and the offered tools:

1. ``tool_choice: "none"`` -> a plain answer saying no triage was performed;
2. ``get_issue`` not yet answered by a ``tool`` message -> call it with ``{}``;
3. ``add_labels`` offered and not yet answered -> call it with ``{"labels": [...]}`` (below);
   skipped when the list is empty (nothing may be applied);
4. ``post_triage_comment`` offered and not yet answered -> call it with ``{"body": ...}`` naming
   the labels and the reason for each;
5. otherwise -> ``"Triage done: <labels>"`` (``(no labels)`` when there are none).

Labels come from the issue's title and body (the ``get_issue`` result, a JSON object with
``title``, ``body``, ``labels``, ``allowed_labels``), matched as whole words, case-insensitively,
with an optional ``s``/``es``/``ed``/``ing`` ending, in this order:

* ``bug``: bug, error, crash, exception, traceback, fails
* ``enhancement``: feature, support, add, request, the phrase "would be nice"
* ``question``: a ``?`` in the title, or how, why
* ``documentation``: docs, readme, typo

When ``allowed_labels`` is a list, the labels are intersected with it (case-insensitively, in the
allowed spelling); if nothing remains and something is allowed, the fallback is ``question`` if
allowed, else the first allowed label. With no ``allowed_labels`` the fallback is ``question``.
The comment and the final answer name the labels the ``add_labels`` result reports as
``applied`` (a JSON object with an ``applied`` list) when it does, else the labels asked for.

The issue text is untrusted: nothing in it changes the sequence above, only which labels match
and, to stand for a prompt injection that *worked*, the comment: every line of the issue's body
that starts with ``ECHO: `` is copied into the comment after it (the rest of the line, as is), so
tests can check that the tool sanitises whatever the model was steered into writing.
``tool_choice`` naming a function forces a call to it (with the arguments above). Tool-call ids
are the reviewer's (``call_`` + a hash of the conversation so far), so replays get the same ids.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simulators.model._policy import Reply, _call, _text, _tool_results

__all__ = ["ADD_LABELS_TOOL", "GET_ISSUE_TOOL", "POST_TRIAGE_TOOL", "choose_labels", "decide_triage",
           "obeyed", "offers_triage", "triage_comment"]

GET_ISSUE_TOOL = "get_issue"
ADD_LABELS_TOOL = "add_labels"
POST_TRIAGE_TOOL = "post_triage_comment"
_SUFFIX = r"(?:s|es|ed|ing)?\b"
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("bug", re.compile(r"\b(bug|error|crash|exception|traceback|fails)" + _SUFFIX, re.I)),
    ("enhancement", re.compile(r"\b(feature|support|add|request)" + _SUFFIX + r"|\b(would be nice)\b", re.I)),
    ("question", re.compile(r"\b(how|why)\b", re.I)),
    ("documentation", re.compile(r"\b(docs|readme|typo)" + _SUFFIX, re.I)),
)
FALLBACK = "question"


def offers_triage(tools: list[dict[str, Any]] | None) -> bool:
    return any(t.get("type") == "function" and t.get("function", {}).get("name") == GET_ISSUE_TOOL
               for t in tools or [])


def _issue(result: str | None) -> dict[str, Any]:
    try:
        parsed = json.loads(result or "")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def choose_labels(issue: dict[str, Any]) -> list[tuple[str, str]]:
    """``[(label, reason), ...]`` for a ``get_issue`` result (see the module docstring)."""
    title, body = _string(issue.get("title")), _string(issue.get("body"))
    found: list[tuple[str, str]] = []
    for label, pattern in _RULES:
        if label == FALLBACK and "?" in title:
            found.append((label, "the title asks a question ('?')"))
            continue
        match = pattern.search(title) or pattern.search(body)
        if match:
            found.append((label, f"the issue mentions '{match.group(0).lower()}'"))
    allowed = issue.get("allowed_labels")
    if not isinstance(allowed, list):
        return found or [(FALLBACK, "no keyword matched; fallback label")]
    spelling = {a.lower(): a for a in reversed(allowed) if isinstance(a, str) and a.strip()}
    kept = [(spelling[label], reason) for label, reason in found if label in spelling]
    if kept or not spelling:
        return kept
    first = next(a for a in allowed if isinstance(a, str) and a.strip())
    return [(spelling.get(FALLBACK, first), "no allowed label matched; fallback label")]


def _applied(result: str | None, asked: list[str]) -> list[str]:
    parsed = _issue(result)
    applied = parsed.get("applied")
    if isinstance(applied, list) and all(isinstance(a, str) for a in applied):
        return list(applied)
    return asked


def triage_comment(number: Any, labels: list[str], reasons: list[tuple[str, str]]) -> str:
    named = ", ".join(labels) if labels else "(no labels)"
    why = "; ".join(f"{label}: {reason}" for label, reason in reasons if label in labels) or "nothing matched"
    ref = f" of issue #{number}" if isinstance(number, int) and not isinstance(number, bool) else ""
    return f"Automated triage (simulated){ref}: labels {named}. Reason: {why}."


_ECHO = re.compile(r"^ECHO: (.*)$", re.M)


def obeyed(issue: dict[str, Any]) -> str:
    """What a successful injection made the model write: the body's ``ECHO:`` lines (module docstring)."""
    return "\n".join(_ECHO.findall(_string(issue.get("body"))))


def _arguments(name: str, results: dict[str, str]) -> dict[str, Any]:
    chosen = choose_labels(_issue(results.get(GET_ISSUE_TOOL)))
    asked = [label for label, _ in chosen]
    if name == ADD_LABELS_TOOL:
        return {"labels": asked}
    if name == POST_TRIAGE_TOOL:
        applied = _applied(results.get(ADD_LABELS_TOOL), asked) if ADD_LABELS_TOOL in results else asked
        issue = _issue(results.get(GET_ISSUE_TOOL))
        echoed = obeyed(issue)
        comment = triage_comment(issue.get("number"), applied, chosen)
        return {"body": f"{comment}\n{echoed}" if echoed else comment}
    return {}


def decide_triage(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                  tool_choice: Any = None) -> Reply:
    offered = [t["function"]["name"] for t in tools or [] if t.get("type") == "function"]
    results = _tool_results(messages)
    if isinstance(tool_choice, dict):
        forced = tool_choice["function"]["name"]
        return _call(messages, forced, _arguments(forced, results))
    if tool_choice == "none":
        last_user = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
        return Reply(content="Simulated triager: tools are disabled, so no triage was performed. "
                             f"The last user message has {len(last_user)} characters.")
    if GET_ISSUE_TOOL not in results:
        return _call(messages, GET_ISSUE_TOOL, {})
    asked = _arguments(ADD_LABELS_TOOL, results)["labels"]
    if ADD_LABELS_TOOL in offered and ADD_LABELS_TOOL not in results and asked:
        return _call(messages, ADD_LABELS_TOOL, {"labels": asked})
    if POST_TRIAGE_TOOL in offered and POST_TRIAGE_TOOL not in results:
        return _call(messages, POST_TRIAGE_TOOL, _arguments(POST_TRIAGE_TOOL, results))
    applied = _applied(results.get(ADD_LABELS_TOOL), asked) if ADD_LABELS_TOOL in results else asked
    return Reply(content=f"Triage done: {', '.join(applied) if applied else '(no labels)'}")
