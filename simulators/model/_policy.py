"""The deterministic reviewer policy (pure functions of the request).

Given the messages, the offered tools and ``tool_choice``:

1. neither reviewer tool offered (or ``tool_choice: "none"``) -> a plain
   answer that describes the last user message (no review is possible);
2. ``get_pull_request_diff`` offered and not yet answered by a ``tool``
   message -> call it with ``{}``;
3. ``post_review_comment`` offered and not yet answered -> call it with
   ``{"body": <review>}``; the review is derived from the latest
   ``get_pull_request_diff`` result: files touched, lines added/removed
   and one rule-based observation;
4. otherwise -> ``"Review posted."`` (or, if the diff was fetched but
   there is no ``post_review_comment`` tool, the review text itself).

With ``read_artifact`` offered and the diff result a stored-diff message (a preview and a handle),
step 3 waits until the reviewer has read the whole artifact in parts (``_artifacts``): it calls
``read_artifact`` from where it stopped, and reviews the preview plus everything it read.

``tool_choice: {"type": "function", "function": {"name": X}}`` forces a
call to X. ``"required"`` is treated like ``"auto"``. Tool-call ids are
``call_`` + a hash of the conversation so far, so a replayed conversation
gets the same ids. A diff tool result may be the raw diff or a JSON
object with a ``"diff"`` field; anything unparsable reads as an empty diff.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from simulators.model._artifacts import READ_TOOL, plan_reads
from simulators.model._usage import REASONING_FINAL, REASONING_TOOL_STEP, canonical_json

__all__ = ["DIFF_TOOL", "POST_TOOL", "DiffSummary", "Reply", "decide", "review_body", "summarize_diff"]

DIFF_TOOL = "get_pull_request_diff"
POST_TOOL = "post_review_comment"
_DEPENDENCY_FILES = ("requirements", "pyproject.toml", "package.json", "poetry.lock", ".lock", "go.mod")


@dataclass(frozen=True)
class Reply:
    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning_tokens: int = REASONING_FINAL

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True)
class DiffSummary:
    files: tuple[str, ...]
    added: int
    removed: int
    added_lines: tuple[tuple[str, str], ...]  # (file, text)


def summarize_diff(diff: str) -> DiffSummary:
    files: list[str] = []
    added = removed = 0
    added_lines: list[tuple[str, str]] = []
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            files.append(line.rsplit(" b/", 1)[-1])
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
            added_lines.append((files[-1] if files else "?", line[1:]))
        elif in_hunk and line.startswith("-"):
            removed += 1
    return DiffSummary(tuple(files), added, removed, tuple(added_lines))


def _observation(summary: DiffSummary) -> str:
    for path, text in summary.added_lines:
        if "TODO" in text or "FIXME" in text:
            return f"a TODO/FIXME is added in {path}; make sure it is tracked before merging."
    if any(any(marker in f for marker in _DEPENDENCY_FILES) for f in summary.files):
        return "dependency versions change; check the upstream changelog for breaking changes."
    if not any("test" in f.lower() or "spec" in f.lower() for f in summary.files):
        return "no tests are touched; consider adding coverage for this change."
    if summary.removed > summary.added:
        return f"net removal of {summary.removed - summary.added} lines; confirm nothing still depends on them."
    return "tests accompany the change."


def review_body(diff: str) -> str:
    summary = summarize_diff(diff)
    if not summary.files:
        return "Automated review (simulated): the diff is empty; nothing to review."
    count = len(summary.files)
    noun = "file" if count == 1 else "files"
    return (
        f"Automated review (simulated): {count} {noun} changed ({', '.join(summary.files)}), "
        f"+{summary.added}/-{summary.removed} lines. Observation: {_observation(summary)}"
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _tool_results(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Latest result text per tool name (only calls that were answered)."""
    names = {
        call.get("id"): call.get("function", {}).get("name")
        for m in messages
        if m.get("role") == "assistant"
        for call in m.get("tool_calls") or []
    }
    results: dict[str, str] = {}
    for m in messages:
        if m.get("role") == "tool" and m.get("tool_call_id") in names:
            results[names[m["tool_call_id"]]] = _text(m.get("content"))
    return results


def _results_of(messages: list[dict[str, Any]], name: str) -> list[str]:
    """Every answered call of tool ``name``, in order."""
    ids = {call.get("id") for m in messages if m.get("role") == "assistant" for call in m.get("tool_calls") or []
           if call.get("function", {}).get("name") == name}
    return [_text(m.get("content")) for m in messages if m.get("role") == "tool" and m.get("tool_call_id") in ids]


def _diff_from_result(result: str) -> str:
    try:
        parsed = json.loads(result)
    except ValueError:
        return result
    if isinstance(parsed, dict) and isinstance(parsed.get("diff"), str):
        return parsed["diff"]
    return parsed if isinstance(parsed, str) else ""


def _call(messages: list[dict[str, Any]], name: str, arguments: dict[str, Any]) -> Reply:
    digest = hashlib.sha256((canonical_json(messages) + "|" + name).encode()).hexdigest()
    function = {"name": name, "arguments": canonical_json(arguments)}
    call = {"id": f"call_{digest[:24]}", "type": "function", "function": function}
    return Reply(content=None, tool_calls=[call], reasoning_tokens=REASONING_TOOL_STEP)


def _arguments(name: str, results: dict[str, str]) -> dict[str, Any]:
    if name == POST_TOOL:
        return {"body": review_body(_diff_from_result(results.get(DIFF_TOOL, "")))}
    return {}


def decide(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, tool_choice: Any = None) -> Reply:
    offered = [t["function"]["name"] for t in tools or [] if t.get("type") == "function"]
    results = _tool_results(messages)
    if isinstance(tool_choice, dict):
        forced = tool_choice["function"]["name"]
        return _call(messages, forced, _arguments(forced, results))
    if tool_choice == "none" or not {DIFF_TOOL, POST_TOOL} & set(offered):
        last_user = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
        return Reply(
            content="Simulated reviewer: no review tools are available, so no review was performed. "
            f"The last user message has {len(last_user)} characters."
        )
    if DIFF_TOOL in results and READ_TOOL in offered and POST_TOOL not in results:
        plan = plan_reads(results[DIFF_TOOL], _results_of(messages, READ_TOOL))
        if plan is not None and plan.next_read is not None:
            return _call(messages, READ_TOOL, plan.next_read)
        if plan is not None:
            results = {**results, DIFF_TOOL: plan.text}
    for name in (DIFF_TOOL, POST_TOOL):
        if name in offered and name not in results:
            return _call(messages, name, _arguments(name, results))
    if DIFF_TOOL in results and POST_TOOL not in offered:
        return Reply(content=review_body(_diff_from_result(results[DIFF_TOOL])))
    return Reply(content="Review posted.")
