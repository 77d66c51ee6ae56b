"""``read_artifact``: the model reads a stored artifact (a large diff) by character range.

A large diff reaches the model as a preview plus its handle (``activities/forge_tools.py``); this
tool lets the model read the rest, ``length`` characters from ``offset`` at a time, bounded by
``artifacts.read_max_chars``. Access is limited to artifacts stored *for the same work item and
tenant* (a grant written when the diff was stored, ``ArtifactStore.granted``): the work key and
tenant come from the work order, never from the model's arguments, so a handle copied from another
run, another tenant, or invented, is refused.

Every refusal is a tool answer starting ``error:`` — the model sees it and the run goes on — never
an exception that fails the run. The one exception is a kill: like every model and tool call, a
read refuses while a kill covers the work item (``Killed``, non-retryable; the run ends ``killed``).
Sealed (encrypted) artifacts are opened with the payload keys; one that cannot be opened (retired
key dropped, tampered file) is answered as unreadable, naming no key.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from temporalio import activity

from activities.artifacts import PREFIX, ArtifactStore
from activities.gateway import refuse_if_killed
from intake.identity import with_tenant
from ledger import KillSwitch
from workflows.contracts import ToolRequest, ToolResult
from workflows.names import READ_ARTIFACT_ACTIVITY

MAX_HANDLE_CHARS = len(PREFIX) + 64


@dataclass(frozen=True)
class ReadArgs:
    handle: str
    offset: int
    length: int


def parse_read_args(arguments: str, max_chars: int) -> ReadArgs | str:
    """The model's arguments, or the error message it gets back. ``length`` defaults to the maximum
    and is clamped to it (asking for more is not a mistake worth a round trip)."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return "error: read_artifact arguments are not JSON"
    if not isinstance(args, dict):
        return "error: read_artifact arguments must be an object {handle, offset, length}"
    handle, offset, length = args.get("handle"), args.get("offset", 0), args.get("length", max_chars)
    if not isinstance(handle, str) or not handle.startswith(PREFIX) or len(handle) != MAX_HANDLE_CHARS:
        return f"error: 'handle' must be an artifact handle ({PREFIX}<64 hex digits>) from a tool result"
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        return "error: 'offset' must be a non-negative integer (characters)"
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        return "error: 'length' must be a positive integer (characters)"
    return ReadArgs(handle, offset, min(length, max_chars))


def excerpt(text: str, args: ReadArgs) -> str:
    """The requested range with a header saying where it is and where to continue."""
    total = len(text)
    if args.offset >= total:
        return f"error: offset {args.offset} is past the end of {args.handle} ({total} characters)"
    end = min(args.offset + args.length, total)
    more = f"next offset {end}" if end < total else "end of artifact"
    return f"[{args.handle} characters {args.offset}-{end} of {total}; {more}]\n{text[args.offset:end]}"


class ArtifactTools:
    def __init__(self, store: ArtifactStore | None, kills: KillSwitch | None = None,
                 max_chars: int = 16_000) -> None:
        self._store = store
        self._kills = kills
        self._max = max_chars

    @activity.defn(name=READ_ARTIFACT_ACTIVITY)
    async def read_artifact(self, req: ToolRequest) -> ToolResult:
        work_key = with_tenant(req.work_key, req.tenant)
        await refuse_if_killed(self._kills, work_key, req.tenant)
        return ToolResult(content=await self._answer(req, work_key), attempt=activity.info().attempt)

    async def _answer(self, req: ToolRequest, work_key: str) -> str:
        args = parse_read_args(req.arguments, self._max)
        if isinstance(args, str):
            return args
        if self._store is None:
            return "error: no artifact store is configured on this worker"
        # One answer for "not yours" and "does not exist": a refusal must not confirm another
        # work item's handle.
        if not await asyncio.to_thread(self._store.granted, args.handle, (req.tenant, work_key)):
            activity.logger.warning("read_artifact refused: %s was not stored for this work item", args.handle,
                                    extra={"work_key": work_key})
            return f"error: no artifact {args.handle} was stored for this work item"
        try:
            data = await asyncio.to_thread(self._store.get, args.handle)
        except FileNotFoundError:
            return f"error: artifact {args.handle} is no longer stored (retention)"
        except Exception as exc:  # noqa: BLE001 - corrupt, or sealed with a key this worker lacks
            activity.logger.warning("read_artifact cannot open %s: %s", args.handle, type(exc).__name__,
                                    extra={"work_key": work_key})
            return f"error: artifact {args.handle} cannot be read on this worker ({type(exc).__name__})"
        return excerpt(data.decode("utf-8", errors="replace"), args)
