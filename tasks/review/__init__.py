"""The pull-request review, as one registered task (``docs/tasks.md``).

Trigger: GitHub ``pull_request`` (``intake.github.map_pull_request``: opened, reopened,
synchronize, ready_for_review, closed), scans and goals. Work key
``<tenant>/github:<owner>/<repo>#<n>:review`` at the head sha (``intake.identity``). Freshness: the
pull request re-read (``intake.forge_reader``, ``intake.freshness.assess_freshness``). Policy: the
intake policy's draft and repository rules. Tools: read the diff, read a stored artifact, post one
review comment (effect ``post_review_comment``, exactly once through the side-effect ledger).

Its tool activities are the built-in ones (``activities/forge_tools.py``,
``activities/artifact_tools.py``) and the agent loop keeps its own, patched review path
(``workflows/review_task.py``), so histories recorded before the registry replay unchanged.
"""

from __future__ import annotations

from intake.forge_reader import ForgeTargetReader
from intake.freshness import assess_freshness
from intake.github import map_pull_request
from intake.identity import REVIEW_TASK, review_candidate
from tasks.review import loop
from tasks.spec import LoopSpec, TaskSpec, ToolSpec

SPEC = TaskSpec(
    name=REVIEW_TASK,
    candidate=lambda tenant, ref, version: review_candidate(tenant, ref, version),
    github={"pull_request": map_pull_request},
    reader=ForgeTargetReader,
    freshness=assess_freshness,
    loop=LoopSpec(
        system_prompt=loop.SYSTEM_PROMPT_WITH_READ,
        tools=(ToolSpec(loop.GET_DIFF_TOOL, loop.GET_DIFF_ACTIVITY),
               ToolSpec(loop.POST_COMMENT_TOOL, loop.POST_COMMENT_ACTIVITY, effect=loop.POST_COMMENT),
               ToolSpec(loop.READ_ARTIFACT_TOOL, loop.READ_ARTIFACT_ACTIVITY)),
        first_message=loop.first_message),
    effects=(loop.POST_COMMENT,),
    scans=True,
    description="Review a pull request's diff and post one review comment.",
)
