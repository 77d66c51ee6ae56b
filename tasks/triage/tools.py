"""The triage task's tools: read the issue, add labels from the allow-list, post one comment.

Hosted as activities by ``activities/task_tools.py``, which refuses every call while a kill covers the
work (reads included) and checks egress before the handler runs. The target always comes from the
work order (:class:`tasks.spec.TaskToolCall`), never from the model's arguments.

* ``get_issue`` — the issue as JSON text; title and body are untrusted and bounded
  (:data:`MAX_TITLE_CHARS`, :data:`MAX_BODY_CHARS`), control characters other than newlines and tabs
  shown as ``?``. The system prompt says the text is data, not instructions.
* ``add_labels`` — the requested labels ∩ ``tasks.triage.labels`` (case-insensitive; the configured
  spelling is applied): prompt injection cannot add a label nobody allowed. GitHub's ``POST .../labels``
  adds to a set, so applying twice changes nothing; it still goes through the side-effect ledger,
  keyed by the label set (reconcile: the labels are all present).
* ``post_triage_comment`` — one comment per (work key, version), exactly once: the operation key
  derives from work key, operation and version (not the body), the body ends with the signed marker,
  and a lost attempt is reconciled by listing the issue's comments (like ``post_review_comment``).
  The model's text is steered by the issue it read, so it is posted only through
  :func:`tasks.triage.comment.sanitise_comment` (no mentions, slash commands, links, images, raw
  HTML, HTML comments — so no forged marker —, bounded); the marker is appended after it.

A malformed argument is answered with an ``error:`` message the model sees (the run goes on).
"""

from __future__ import annotations

import json
from typing import Any

from tasks.spec import Effect, TaskToolCall, ToolAnswer, ToolKit
from tasks.triage.comment import sanitise_comment

GET_ISSUE = "get_issue"
ADD_LABELS = "add_labels"
POST_TRIAGE_COMMENT = "post_triage_comment"

MAX_TITLE_CHARS = 256
MAX_BODY_CHARS = 8_000
MAX_LABELS_ASKED = 20
MAX_LABEL_CHARS = 50


def _printable(text: object, limit: int) -> str:
    """Untrusted text for the model: a string, cut to ``limit``, control characters (but newline and
    tab) as ``?``."""
    if not isinstance(text, str):
        return ""
    cut = text[:limit]
    shown = "".join(c if c.isprintable() or c in "\n\t" else "?" for c in cut)
    return shown + ("\n[... truncated]" if len(text) > limit else "")


def allowed_labels(kit: ToolKit) -> list[str]:
    return list(getattr(kit.options, "labels", None) or [])


def _arguments(call: TaskToolCall) -> dict[str, Any] | None:
    try:
        args = json.loads(call.arguments or "{}")
    except ValueError:
        return None
    return args if isinstance(args, dict) else None


def choose_labels(asked: object, allowed: list[str]) -> tuple[list[str], list[str]] | str:
    """(applied, refused) for the model's ``labels``, or the error message it gets back. Applied:
    those in ``allowed`` (case-insensitive, the allowed spelling, sorted, no repeats); refused: the rest."""
    if not isinstance(asked, list) or not asked or len(asked) > MAX_LABELS_ASKED:
        return f"error: 'labels' must be a list of 1-{MAX_LABELS_ASKED} label names"
    if not all(isinstance(x, str) and 0 < len(x) <= MAX_LABEL_CHARS for x in asked):
        return f"error: every label must be a string of 1-{MAX_LABEL_CHARS} characters"
    by_fold = {a.casefold(): a for a in allowed}
    applied = sorted({by_fold[x.casefold()] for x in asked if x.casefold() in by_fold})
    refused = sorted({_printable(x, MAX_LABEL_CHARS) for x in asked if x.casefold() not in by_fold})
    return applied, refused


async def get_issue(kit: ToolKit, call: TaskToolCall) -> ToolAnswer:
    issue = await kit.forge.read_issue(call.owner, call.repo, call.number, tenant=call.tenant)
    labels = [str(label.get("name")) for label in issue.get("labels") or [] if isinstance(label, dict)]
    content = {"number": call.number, "title": _printable(issue.get("title"), MAX_TITLE_CHARS),
               "body": _printable(issue.get("body"), MAX_BODY_CHARS), "state": str(issue.get("state")),
               "labels": labels[:100], "allowed_labels": allowed_labels(kit)}
    return ToolAnswer(json.dumps(content))


async def add_labels(kit: ToolKit, call: TaskToolCall) -> ToolAnswer:
    args = _arguments(call)
    chosen = choose_labels(args.get("labels") if args is not None else None, allowed_labels(kit))
    if isinstance(chosen, str):
        return ToolAnswer(chosen)
    applied, refused = chosen
    note = f"; refused (not in the allowed labels): {', '.join(refused)}" if refused else ""
    if not applied:
        return ToolAnswer(f"no label applied{note}")
    progress = kit.progress()

    async def perform(op_key: str) -> Effect:
        now = await kit.forge.add_labels(call.owner, call.repo, call.number, applied, tenant=call.tenant,
                                         progress=progress)
        return None, {"labels": now}

    async def reconcile(op_key: str) -> Effect | None:
        now = await kit.forge.issue_labels(call.owner, call.repo, call.number, tenant=call.tenant, progress=progress)
        present = {n.casefold() for n in now}
        return (None, {"labels": now}) if all(a.casefold() in present for a in applied) else None

    done = await kit.mutate(call, ADD_LABELS, perform, reconcile, detail=",".join(applied))
    how = "reconciled" if done.reconciled else ("already applied" if done.replayed else "applied")
    return ToolAnswer(f"labels {how}: {', '.join(applied)}{note}", operation_key=done.operation_key,
                      reconciled=done.reconciled)


async def post_triage_comment(kit: ToolKit, call: TaskToolCall) -> ToolAnswer:
    args = _arguments(call)
    text = sanitise_comment(args.get("body") if args is not None else None)
    if not text:
        return ToolAnswer("error: post_triage_comment needs a non-empty 'body'")
    progress = kit.progress()

    def effect(comment: dict[str, Any]) -> Effect:
        return str(comment["id"]), {"comment_id": comment["id"], "html_url": comment.get("html_url")}

    async def perform(op_key: str) -> Effect:
        return effect(await kit.forge.post_comment(call.owner, call.repo, call.number,
                                                   f"{text}\n\n{kit.marker(op_key)}", tenant=call.tenant,
                                                   progress=progress))

    async def reconcile(op_key: str) -> Effect | None:
        async for comment in kit.forge.iter_comments(call.owner, call.repo, call.number, tenant=call.tenant,
                                                     progress=progress):
            if kit.is_effect_of(comment, op_key):
                return effect(comment)
        return None

    done = await kit.mutate(call, POST_TRIAGE_COMMENT, perform, reconcile)
    how = "reconciled" if done.reconciled else ("already posted" if done.replayed else "posted")
    return ToolAnswer(f"comment {how}: {done.result.get('html_url') or done.external_id}",
                      operation_key=done.operation_key, external_id=done.external_id, reconciled=done.reconciled)
