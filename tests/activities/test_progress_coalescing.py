"""``Progress`` folds beats closer together than its spacing into one trailing beat with the newest
details (``activities/heartbeat.py``): the SDK is handed one beat where a model call's phases and
body chunks made several, and the last progress is still sent while the work is stuck.

Run in the SDK's own activity test environment (its ``on_heartbeat`` receives what the worker would
hand to core) and, for the end of an attempt (:class:`HeldBeatsInterceptor`), on a real worker and
dev server."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from typing import Any, Callable

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import ActivityInboundInterceptor, ActivityOutboundInterceptor, Interceptor, Worker

from activities.heartbeat import COALESCE_SECONDS, HeldBeatsInterceptor, Progress, beat_spacing

TIMEOUT = timedelta(seconds=0.4)  # spacing 0.1 s: a quarter of the heartbeat timeout


def _env(timeout: timedelta | None = TIMEOUT) -> tuple[ActivityEnvironment, list[dict[str, object]]]:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timeout)
    beats: list[dict[str, object]] = []
    env.on_heartbeat = lambda *details: beats.append(details[0])
    return env, beats


async def _until(done: Callable[[], bool], seconds: float = 10.0) -> None:
    """Wait for ``done`` (a loaded machine may run the trailing beat's timer late), bounded."""
    async with asyncio.timeout(seconds):
        while not done():
            await asyncio.sleep(0.01)


def test_spacing_is_the_coalesce_window_or_a_quarter_of_the_heartbeat_timeout():
    assert beat_spacing(None) == COALESCE_SECONDS
    assert beat_spacing(timedelta(seconds=60)) == COALESCE_SECONDS
    assert beat_spacing(timedelta(seconds=1)) == 0.25


async def test_a_burst_sends_its_first_beat_then_one_trailing_beat_with_the_newest_details():
    env, beats = _env()

    async def work() -> list[dict[str, object]]:
        progress = Progress(step=3)
        progress.beat(phase="journal")
        for chunks in range(1, 6):
            progress.beat(phase="receiving", chunks=chunks)
        sent_in_burst = list(beats)
        await _until(lambda: len(beats) > 1)  # stuck: no more progress; the held beat goes out
        await asyncio.sleep(beat_spacing(TIMEOUT) * 2)  # and nothing after it
        return sent_in_burst

    in_burst = await env.run(work)
    assert in_burst == [{"attempt": 1, "step": 3, "phase": "journal"}]
    assert beats == [{"attempt": 1, "step": 3, "phase": "journal"},
                     {"attempt": 1, "step": 3, "phase": "receiving", "chunks": 5}]


async def test_beats_spaced_wider_than_the_spacing_are_each_sent():
    env, beats = _env()

    async def work() -> None:
        progress = Progress(tool="t")
        for page in range(1, 4):
            progress.beat(pages=page)
            await asyncio.sleep(beat_spacing(TIMEOUT) * 1.5)

    await env.run(work)
    assert [b["pages"] for b in beats] == [1, 2, 3]


async def test_a_beat_after_the_spacing_takes_the_place_of_the_trailing_one():
    env, beats = _env()

    async def work() -> None:
        progress = Progress(tool="t")
        progress.beat(pages=1)
        progress.beat(pages=2)  # held back
        progress.beat(pages=3)  # still inside: replaces 2 in the trailing beat
        await _until(lambda: len(beats) == 2)  # the trailing beat went out
        await asyncio.sleep(beat_spacing(TIMEOUT) * 1.5)
        progress.beat(pages=4)  # a spacing after the trailing beat: sent at once

    await env.run(work)
    assert [b["pages"] for b in beats] == [1, 3, 4]


async def test_waiting_beats_on_its_timer_through_the_folding():
    env, beats = _env(timedelta(seconds=2))  # spacing 0.5 s

    async def work() -> None:
        progress = Progress(step=1)
        progress.beat(phase="reserve")
        async with progress.waiting("awaiting-response", limit_seconds=10, every_seconds=0.3):
            await asyncio.sleep(1.3)

    await env.run(work)
    # reserve at 0, the timer's beats at 0 (held) / 0.3 (held) / 0.6 / 0.9 (held) / 1.2: the held
    # ones go out as trailing beats, so one reaches the SDK at least every 0.5 s.
    assert beats[0]["phase"] == "reserve"
    assert all(b["phase"] == "awaiting-response" for b in beats[1:])
    assert 2 <= len(beats) <= 4  # 3 when the loop keeps time; a stalled loop only merges more of them


def test_a_beat_off_the_event_loop_is_sent_at_once():
    env, beats = _env()

    def work() -> None:
        progress = Progress(step=1)
        progress.beat(phase="a")
        progress.beat(phase="b")

    env.run(work)
    assert [b["phase"] for b in beats] == ["a", "b"]


# --- the held beat at the end of an attempt, on a real worker and dev server -----------------------

@activity.defn(name="progress-then-fail")
async def _progress_then_fail() -> list:
    info = activity.info()
    if info.attempt == 1:
        progress = Progress(step=1)
        progress.beat(phase="journal")
        progress.beat(phase="receiving", chunks=7)  # inside the spacing: held back
        raise ApplicationError("the answer could not be read")
    return list(info.heartbeat_details)


@activity.defn(name="progress-then-return")
async def _progress_then_return() -> str:
    progress = Progress(step=1)
    progress.beat(phase="journal")
    progress.beat(phase="answered")  # held back, then the attempt returns
    return "answered"


@workflow.defn(name="ProgressAtTheEnd", sandboxed=False)
class _ProgressAtTheEnd:
    @workflow.run
    async def run(self, name: str) -> Any:
        return await workflow.execute_activity(
            name, start_to_close_timeout=timedelta(seconds=30), heartbeat_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=2))


async def test_an_attempt_that_raises_sends_its_held_beat_so_the_retry_sees_the_last_progress(dev_env, task_queue):
    async with Worker(dev_env.client, task_queue=task_queue, workflows=[_ProgressAtTheEnd],
                      activities=[_progress_then_fail], interceptors=[HeldBeatsInterceptor()]):
        seen = await dev_env.client.execute_workflow(_ProgressAtTheEnd.run, "progress-then-fail",
                                                     id=f"wf-{task_queue}", task_queue=task_queue)
    assert seen == [{"attempt": 1, "step": 1, "phase": "receiving", "chunks": 7}]


async def test_an_attempt_that_returns_drops_its_held_beat(dev_env, task_queue):
    beats: list[object] = []

    class _Count(Interceptor):
        def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
            return _CountInbound(next)

    class _CountInbound(ActivityInboundInterceptor):
        def init(self, outbound: ActivityOutboundInterceptor) -> None:
            super().init(_CountOutbound(outbound))

    class _CountOutbound(ActivityOutboundInterceptor):
        def heartbeat(self, *details: object) -> None:
            beats.append(details[0])
            super().heartbeat(*details)

    async with Worker(dev_env.client, task_queue=task_queue, workflows=[_ProgressAtTheEnd],
                      activities=[_progress_then_return], interceptors=[_Count(), HeldBeatsInterceptor()]):
        answer = await dev_env.client.execute_workflow(_ProgressAtTheEnd.run, "progress-then-return",
                                                       id=f"wf-{task_queue}", task_queue=task_queue)
        await asyncio.sleep(beat_spacing(timedelta(seconds=10)) * 2)  # past when the trailing beat was due
    assert answer == "answered"
    assert beats == [{"attempt": 1, "step": 1, "phase": "journal"}]
