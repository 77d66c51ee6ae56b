"""Every registered name in one place: workflow types, activity types, signals, queries, schedule ids.

These strings are written into Temporal histories and schedules. NEVER change a value: a running
workflow, a committed replay history (tests/workflows/histories/) or an existing schedule would
stop matching. Add a new constant for a new name; the modules that register or call a name import
it from here. Pure: no imports at all, so every layer may use it.
"""

from __future__ import annotations

# --- workflow types ---------------------------------------------------------------------------
AGENT_WORKFLOW = "AgentLoop"
SCAN_WORKFLOW = "Scan"
GOAL_WORKFLOW = "Goal"
OUTBOX_RELAY_WORKFLOW = "OutboxRelay"
PRUNE_DELIVERIES_WORKFLOW = "PruneDeliveries"
SETTLE_STALE_WORKFLOW = "SettleStaleReservations"
DISPATCH_WORKFLOW = "DispatchDeferred"
REAP_WORKFLOW = "ReapCapacity"
RECONCILE_WORKFLOW = "ReconcileRuns"

# --- signals and queries ----------------------------------------------------------------------
WORK_ORDER_SIGNAL = "work_order"
KILL_SIGNAL = "kill"
PROGRESS_QUERY = "progress"
"""The agent workflow's progress query."""
GOAL_PROGRESS_QUERY = "progress"
"""The goal workflow's progress query (same string, another workflow type)."""

# --- activity types ---------------------------------------------------------------------------
MODEL_ACTIVITY = "sluicegate.model.chat_completion"
CLAIM_ORDER_ACTIVITY = "sluicegate.ledger.claim_order"
RECORD_OUTCOME_ACTIVITY = "sluicegate.ledger.record_run_outcome"
RELEASE_CAPACITY_ACTIVITY = "sluicegate.capacity.release"
DISPATCH_ACTIVITY = "sluicegate.capacity.dispatch"
REAP_ACTIVITY = "sluicegate.capacity.reap"
GET_DIFF_ACTIVITY = "sluicegate.tool.get_pull_request_diff"
POST_COMMENT_ACTIVITY = "sluicegate.tool.post_review_comment"
READ_ARTIFACT_ACTIVITY = "sluicegate.tool.read_artifact"
# The issue-triage task's tools (declared by tasks/triage, hosted by activities/task_tools.py).
GET_ISSUE_ACTIVITY = "sluicegate.tool.get_issue"
ADD_ISSUE_LABELS_ACTIVITY = "sluicegate.tool.add_issue_labels"
POST_TRIAGE_COMMENT_ACTIVITY = "sluicegate.tool.post_triage_comment"
RECHECK_POLICY_ACTIVITY = "sluicegate.intake.recheck_policy"
RELAY_OUTBOX_ACTIVITY = "sluicegate.maintenance.relay_outbox"
PRUNE_DELIVERIES_ACTIVITY = "sluicegate.maintenance.prune_deliveries"
PRUNE_RETENTION_ACTIVITY = "sluicegate.maintenance.prune_retention"
SETTLE_STALE_ACTIVITY = "sluicegate.maintenance.settle_stale_reservations"
RECONCILE_ACTIVITY = "sluicegate.maintenance.reconcile_runs"
INTAKE_SUBMIT_ACTIVITY = "sluicegate.intake.submit"
SCAN_LIST_ACTIVITY = "sluicegate.scan.list_candidates"
SCAN_ADVANCE_ACTIVITY = "sluicegate.scan.advance_watermark"
SCAN_NO_WORK_ACTIVITY = "sluicegate.scan.record_no_work"
GOAL_OBSERVE_ACTIVITY = "sluicegate.goal.observe"
GOAL_BOUND_ACTIVITY = "sluicegate.goal.record_bound_reached"

# --- schedule ids (maintenance; configured scans use their own ids) ---------------------------
OUTBOX_RELAY_SCHEDULE = "sluicegate-outbox-relay"
PRUNE_DELIVERIES_SCHEDULE = "sluicegate-prune-deliveries"
DISPATCH_SCHEDULE = "sluicegate-dispatch-deferred"
REAP_SCHEDULE = "sluicegate-reap-capacity"
RECONCILE_SCHEDULE = "sluicegate-reconcile-runs"
STALE_RESERVATIONS_SCHEDULE = "sluicegate-settle-stale-reservations"

WORKFLOWS = frozenset({AGENT_WORKFLOW, SCAN_WORKFLOW, GOAL_WORKFLOW, OUTBOX_RELAY_WORKFLOW, PRUNE_DELIVERIES_WORKFLOW,
                       SETTLE_STALE_WORKFLOW, DISPATCH_WORKFLOW, REAP_WORKFLOW, RECONCILE_WORKFLOW})
ACTIVITIES = frozenset({
    MODEL_ACTIVITY, CLAIM_ORDER_ACTIVITY, RECORD_OUTCOME_ACTIVITY, RELEASE_CAPACITY_ACTIVITY, DISPATCH_ACTIVITY,
    REAP_ACTIVITY, GET_DIFF_ACTIVITY, POST_COMMENT_ACTIVITY, READ_ARTIFACT_ACTIVITY, RELAY_OUTBOX_ACTIVITY,
    PRUNE_DELIVERIES_ACTIVITY, PRUNE_RETENTION_ACTIVITY, SETTLE_STALE_ACTIVITY, RECONCILE_ACTIVITY,
    INTAKE_SUBMIT_ACTIVITY, SCAN_LIST_ACTIVITY, SCAN_ADVANCE_ACTIVITY, SCAN_NO_WORK_ACTIVITY, GOAL_OBSERVE_ACTIVITY,
    GOAL_BOUND_ACTIVITY, RECHECK_POLICY_ACTIVITY, GET_ISSUE_ACTIVITY, ADD_ISSUE_LABELS_ACTIVITY,
    POST_TRIAGE_COMMENT_ACTIVITY})
"""What the worker registers; ``tests/workflows/test_names.py`` checks the worker agrees (a registered
task's hosted tools count: ``tasks.registry``)."""
