"""Forge tools offered to the review agent: read the diff, post one review comment.

The target (owner/repo/number) always comes from the work order, never from the model's
arguments, so a confused or hostile model cannot write to another repository. Posting
goes through the gateway; the model's text is sanitised first (``tasks.review.comment``: the
diff it read is anyone's, so no chat-ops command, mention or HTML under our name), then the
comment carries a hidden marker with its operation key, signed with the server's marker secret, so a crashed attempt can be reconciled by searching the pull
request's comments — and only a comment by the bot with a valid signature counts
(``activities.markers``): a marker planted by anyone else never suppresses a review.

Heartbeats come from the work (``activities.heartbeat.Progress``): one per diff chunk received,
per page of the reconcile listing, per try of a request, with the progress as the details. A
call stuck inside its client stops beating, Temporal's heartbeat timeout ends the attempt, and
the retry starts over (a post reconciles first, as after any lost attempt). The retry logs the
lost attempt's last progress.
"""

from __future__ import annotations

import asyncio
import json

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.artifacts import ArtifactStore, diff_summary
from activities.egress import EgressPolicy
from activities.forge_failure import as_tool_error, forge_activity_error
from activities.gateway import Mutation, ToolGateway
from activities.heartbeat import Progress
from activities.keys import operation_key
from activities.markers import CommentMarks
from intake.identity import with_tenant
from sluicegate.forge.client import ForgeClient, ForgeError
from tasks.review.comment import sanitise_review_comment
from workflows.contracts import ToolRequest, ToolResult
from workflows.kinds import FailureType
from workflows.names import GET_DIFF_ACTIVITY, POST_COMMENT_ACTIVITY
from workflows.review_task import POST_COMMENT

MAX_DIFF_CHARS = 20_000
PREVIEW_CHARS = 4_000


class ForgeTools:
    def __init__(self, forge: ForgeClient, gateway: ToolGateway, egress: EgressPolicy | None = None,
                 artifacts: ArtifactStore | None = None, inline_limit_chars: int = MAX_DIFF_CHARS,
                 marks: CommentMarks = CommentMarks(), read_max_chars: int = 16_000) -> None:
        self._forge = forge
        self._read_max = read_max_chars
        self._marks = marks
        self._gateway = gateway
        self._egress = egress
        self._artifacts = artifacts
        self._inline_limit = inline_limit_chars

    def _check_egress(self, tenant: str) -> None:
        if self._egress is not None:
            self._egress.check(tenant, self._forge.base_url)

    @activity.defn(name=GET_DIFF_ACTIVITY)
    async def get_pull_request_diff(self, req: ToolRequest) -> ToolResult:
        await self._gateway.refuse_if_killed(with_tenant(req.work_key, req.tenant), req.tenant)
        self._check_egress(req.tenant)
        progress = _progress("get_pull_request_diff", req)
        try:
            diff = await self._forge.get_pull_diff(req.owner, req.repo, req.number, tenant=req.tenant,
                                                   progress=progress)
        except ForgeError as exc:
            raise forge_activity_error(exc, f"cannot read the diff of {req.owner}/{req.repo}#{req.number}",
                                       prefix="Tool") from None
        if len(diff) > self._inline_limit:
            head = diff[:PREVIEW_CHARS]
            if self._artifacts is not None:  # readable back by this work item only (read_artifact)
                scope = (req.tenant, with_tenant(req.work_key, req.tenant))
                handle = await asyncio.to_thread(self._artifacts.put, diff.encode(), scope)
                diff = (f"[diff stored as {handle}: {diff_summary(diff)}; {len(diff)} characters. "
                        f"First {PREVIEW_CHARS} below; read the rest with read_artifact(handle, offset, length), "
                        f"at most {self._read_max} characters a call:]\n{head}")
            else:
                diff = f"{head}\n... [truncated {len(diff) - PREVIEW_CHARS} characters; {diff_summary(diff)}]"
        return ToolResult(content=diff, attempt=activity.info().attempt)

    @activity.defn(name=POST_COMMENT_ACTIVITY)
    async def post_review_comment(self, req: ToolRequest) -> ToolResult:
        self._check_egress(req.tenant)
        body = _comment_body(req.arguments)
        op_key = operation_key(req.work_key, POST_COMMENT, req.input_version, req.effect_discriminator)
        marker = self._marks.marker(op_key)
        # The operation key stays derived from the key the run carries (a run admitted before the
        # tenancy upgrade keeps its keys, so its in-flight effects still match); the ledger row and
        # the kill check use today's form of the key.
        mutation = Mutation(op_key, with_tenant(req.work_key, req.tenant), POST_COMMENT, req.input_version,
                            req.generation, req.tenant)
        progress = _progress("post_review_comment", req)

        async def perform():
            try:
                comment = await self._forge.post_comment(req.owner, req.repo, req.number, f"{body}\n\n{marker}",
                                                         tenant=req.tenant, progress=progress)
            except ForgeError as exc:
                raise as_tool_error(exc) from None
            return str(comment["id"]), {"comment_id": comment["id"], "html_url": comment.get("html_url")}

        async def reconcile():
            try:
                async for comment in self._forge.iter_comments(req.owner, req.repo, req.number, tenant=req.tenant,
                                                               progress=progress):
                    if self._marks.is_effect_of(comment, op_key):
                        return str(comment["id"]), {"comment_id": comment["id"], "html_url": comment.get("html_url")}
            except ForgeError as exc:
                raise as_tool_error(exc) from None
            return None

        progress.beat(phase="ledger")  # then reconcile paging and the post beat from their own progress
        done = await self._gateway.mutate(mutation, perform, reconcile)
        how = "reconciled" if done.reconciled else ("already posted" if done.replayed else "posted")
        return ToolResult(content=f"comment {how}: {done.result.get('html_url') or done.external_id}",
                          operation_key=op_key, external_id=done.external_id, reconciled=done.reconciled,
                          attempt=activity.info().attempt)


def _progress(tool: str, req: ToolRequest) -> Progress:
    """This attempt's progress reporter; a retry logs the progress its lost predecessor last reported."""
    info = activity.info()
    if info.attempt > 1 and info.heartbeat_details:
        activity.logger.info("%s attempt %d; the last attempt's progress: %s", tool, info.attempt,
                             info.heartbeat_details[0], extra={"work_key": req.work_key})
    return Progress(tool=tool)


def _comment_body(arguments: str) -> str:
    """The model's review text as it may be posted under our name (``tasks.review.comment``: no
    chat-ops line, mention, issue reference, link or HTML outside code, at most
    60,000 characters); the marker is appended to it afterwards, so the model cannot forge one."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        raise ApplicationError("post_review_comment arguments are not JSON", type=FailureType.TOOL_REQUEST_REJECTED,
                               non_retryable=True) from None
    body = args.get("body") if isinstance(args, dict) else None
    body = sanitise_review_comment(body) if isinstance(body, str) else ""
    if not body:
        raise ApplicationError("post_review_comment needs a non-empty 'body'", type=FailureType.TOOL_REQUEST_REJECTED,
                               non_retryable=True)
    return body
