"""Drill: operator cancel. ``python starter.py drill cancel`` (``make drill-cancel``).

The model simulator answers every call after a minute (a stuck provider). One review is
cancelled with the real Temporal CLI (``temporal workflow cancel``) while its model call is in
flight; a second, with a newer version of the same pull request waiting behind it, is cancelled
with ``starter.py cancel``. Checked for each: the workflow closed CANCELED; every version of the
key ended ``cancelled`` saying by whom (``temporal`` / the actor) and why; no dead letter; no
capacity slot and no day-budget hold left; the call in flight was the only model call and
nothing was posted. Then the documented re-delivery rule: a webhook for the cancelled version
is refused (``duplicate-work``), a manual trigger runs it to ``done`` with one comment.
"""

from __future__ import annotations

import subprocess

from drills._harness import (
    DrillReport, brief, comments_for, leftovers, model_call_arrived, run_drill, starter, tail, versions,
    wait_until, workflow_status,
)
from intake.identity import workflow_id_for
from sluicegate.devstack import DevStack, StackHttp, temporal_binary

FIRST, SECOND = ("acme/api", 42), ("acme/api", 44)
ACTOR, WHY = "drill-operator", "drill: wrong pull request"
NEWER_HEAD = "d1e2" * 10


def _key(repo: str, number: int) -> str:
    from intake.envelope import PullRequestRef
    from intake.identity import review_work_key

    owner, name = repo.split("/")
    return review_work_key(PullRequestRef(owner, name, number))


def _check_cancelled(stack: DevStack, web: StackHttp, report: DrillReport, key: str, by: str, calls: int) -> None:
    status = workflow_status(stack, workflow_id_for(key))
    report.check(f"{key}: workflow closed CANCELED", status == "CANCELED", status)
    rows = versions(stack, key)
    wrong = [f"{v.input_version[:8]}={v.status}" for v in rows if v.status != "cancelled"]
    report.check(f"{key}: every version ended cancelled", bool(rows) and not wrong, ", ".join(wrong))
    reasons = sorted({(v.result or {}).get("reason", "") for v in rows})
    report.check(f"{key}: the outcome says cancelled by {by}",
                 bool(reasons) and all(r.startswith(f"cancelled by {by}: ") for r in reasons), "; ".join(reasons))
    slots, holds, letters = leftovers(stack, key)
    report.check(f"{key}: no dead letter", not letters, ", ".join(letters))
    report.check(f"{key}: capacity slots released", not slots, ", ".join(slots))
    report.check(f"{key}: day budget settled (no hold left)", not holds, f"{len(holds)} held")
    made = sum(n for k, n in web.model_stats()["by_work"].items() if k.startswith(key + "@"))
    report.check(f"{key}: the cancelled call was the only model call, nothing posted",
                 made == calls and not any(comments_for(web, key, v.input_version) for v in rows),
                 f"{made} model call(s)")


def _cancel_with_the_temporal_cli(stack: DevStack, web: StackHttp, report: DrillReport) -> None:
    key = _key(*FIRST)
    accepted = web.send_opened(*FIRST).json()
    report.check(f"{key}: delivery admitted", accepted.get("outcome") == "accept", brief(accepted))
    if not wait_until(model_call_arrived(web, key), 30):
        report.check(f"{key}: its model call started", False)
        return
    s = stack.settings
    cli = subprocess.run([temporal_binary(), "workflow", "cancel", "--address", s.temporal.address,
                          "--namespace", s.temporal.namespace, "--workflow-id", workflow_id_for(key)],
                         capture_output=True, text=True, timeout=60)
    report.inject(f"`temporal workflow cancel --workflow-id {workflow_id_for(key)}` during its model call")
    report.check("the Temporal CLI accepted the cancel", cli.returncode == 0, tail(cli))
    wait_until(lambda: workflow_status(stack, workflow_id_for(key)) != "RUNNING", 60)
    _check_cancelled(stack, web, report, key, "temporal", calls=1)


def _cancel_with_starter(stack: DevStack, web: StackHttp, report: DrillReport) -> None:
    key = _key(*SECOND)
    web.send_opened(*SECOND)
    if not wait_until(model_call_arrived(web, key), 30):
        report.check(f"{key}: its model call started", False)
        return
    web.put_pull(SECOND[0], SECOND[1], NEWER_HEAD)  # a push while the review runs: queued behind it
    newer = web.send_opened(*SECOND, sha=NEWER_HEAD, action="synchronize").json()
    report.check(f"{key}: newer version admitted behind the running one", newer.get("outcome") == "accept",
                 brief(newer))
    done = starter(stack, "cancel", key, "--actor", ACTOR, "--reason", WHY, "--wait-seconds", "60")
    report.inject(f"`starter.py cancel {key} --actor {ACTOR}` during its model call, one version pending")
    report.check("starter.py cancel exited 0", done.returncode == 0, tail(done))
    _check_cancelled(stack, web, report, key, ACTOR, calls=1)


def _redelivery_rule(stack: DevStack, web: StackHttp, report: DrillReport) -> None:
    """Documented: an automatic re-delivery of a cancelled version is refused; a manual one runs it."""
    key = _key(*SECOND)
    web.clear_model_faults()
    again = web.send_opened(*SECOND, sha=NEWER_HEAD, action="reopened").json()
    report.check("a webhook for the cancelled version is refused (duplicate-work)",
                 (again.get("outcome"), again.get("reason")) == ("reject", "duplicate-work"), brief(again))
    s = stack.settings
    manual = starter(stack, "trigger", "--repo", SECOND[0], "--pr", str(SECOND[1]), "--reason", "drill: re-run",
                     "--api-url", f"http://{s.webhook_api.host}:{s.webhook_api.port}",
                     env={"SLUICEGATE_ACTOR_TOKEN": s.actors["alice"].token.get_secret_value()})
    report.check("a manual trigger for the cancelled version is accepted", manual.returncode == 0,
                 tail(manual, 120))
    wait_until(lambda: any(v.input_version == NEWER_HEAD and v.status == "done" for v in versions(stack, key)), 60)
    rerun = {v.input_version: v.status for v in versions(stack, key)}
    report.check("the re-run finished done with exactly one comment",
                 rerun.get(NEWER_HEAD) == "done" and comments_for(web, key, NEWER_HEAD) == 1,
                 ", ".join(f"{v[:8]}={st}" for v, st in rerun.items()))


def _drill(stack: DevStack, report: DrillReport) -> None:
    web = StackHttp(stack)
    web.model_fault(delay_seconds=60, times=None)
    report.inject("the model simulator answers every call after 60 s")
    _cancel_with_the_temporal_cli(stack, web, report)
    _cancel_with_starter(stack, web, report)
    _redelivery_rule(stack, web, report)


def run(keep: bool = False) -> DrillReport:
    return run_drill("cancel", _drill, keep=keep)
