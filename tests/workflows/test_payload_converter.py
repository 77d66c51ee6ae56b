"""The payload converter (``sluicegate/temporal/converter.py``): the SDK's default, with each dataclass's
type hints resolved once. It writes the same bytes and reads back what the SDK's own converter reads,
errors included, and a whole review runs through it on a real Temporal server."""

from __future__ import annotations

import gc
import sys
import types
import uuid
import weakref
from datetime import datetime, timezone
from dataclasses import dataclass, field

import ledger
import pytest
from temporalio.client import Client
from temporalio.converter import DefaultPayloadConverter

from sluicegate.temporal import converter as conv
from sluicegate.temporal.client import data_converter
from tests.support.agent_runs import run_orders, work_order
from tests.support.sims import settings_for
from workflows.budget import usage_from_openai
from workflows.contracts import (
    AgentLoopStart, ModelRequest, ModelResponse, RunOutcome, ToolCall, ToolRequest, ToolResult, WorkOrder,
)
from workflows.review_task import TOOLS_WITH_READ, initial_messages

OURS, SDK = conv.PayloadConverter(), DefaultPayloadConverter()


@dataclass
class Inner:
    n: int
    tags: list[str] = field(default_factory=list)


@dataclass
class Odd:
    """Values ``json`` cannot write itself: the SDK's encoder turns them into JSON, after asdict or not."""
    when: datetime
    ids: set[str]
    pair: tuple[int, int]
    uid: uuid.UUID
    nested: list[Inner]


@dataclass
class Outer:
    name: str
    inner: Inner | None = None
    pairs: dict[str, Inner] = field(default_factory=dict)
    seen: int = field(default=0, init=False)


def _samples(settings) -> list[object]:
    order = work_order(settings)
    usage = usage_from_openai(120, 30, 64, 8)
    return [order, AgentLoopStart(order.work_key, order.tenant),
            ModelRequest(order.work_key, order.input_version, order.model, initial_messages(order, True),
                         TOOLS_WITH_READ, "acme", 1, 2),
            ModelResponse("r1", None, [ToolCall("c1", "get_pull_request_diff", "{}")], "tool_calls", usage, 2),
            ToolRequest(order.work_key, "acme", "acme", "api", 42, "v1", 1, "c1", '{"body": "ok"}'),
            ToolResult("comment posted", "op", "7", True, 3)]


def test_it_writes_the_same_bytes_and_reads_back_what_the_sdk_reads(sims, tmp_path):
    settings = settings_for(sims, f"sqlite:///{tmp_path / 'l.sqlite'}")
    outer = Outer("x", Inner(1, ["a"]), {"k": Inner(2)})
    outer.seen = 5
    odd = Odd(datetime(2026, 12, 1, 19, 40, tzinfo=timezone.utc), {"b"}, (1, 2), uuid.UUID(int=7), [Inner(3, ["t"])])
    assert OURS.to_payloads([odd]) == SDK.to_payloads([odd])
    for value in [*_samples(settings), outer, Outer("y")]:
        payloads = OURS.to_payloads([value])
        assert payloads == SDK.to_payloads([value])
        [ours], [sdk] = OURS.from_payloads(payloads, [type(value)]), SDK.from_payloads(payloads, [type(value)])
        assert ours == sdk == value and type(ours) is type(value)
    assert OURS.from_payloads(OURS.to_payloads([outer]), [Outer])[0].seen == 5  # init=False field restored
    assert type(OURS.from_payloads(OURS.to_payloads([outer]), [Outer])[0].pairs["k"]) is Inner


def test_bad_payloads_fail_as_the_sdk_fails():
    unknown_key = OURS.to_payloads([{"name": "x", "later": 1}])
    assert OURS.from_payloads(unknown_key, [Outer]) == [Outer("x")]  # an unknown field is ignored
    for bad in ({"inner": {"n": 1}}, {"name": "x", "inner": {"n": "one"}}, {"name": "x", "inner": 3}):
        payloads = OURS.to_payloads([bad])
        with pytest.raises(Exception) as ours:
            OURS.from_payloads(payloads, [Outer])
        with pytest.raises(Exception) as sdk:
            SDK.from_payloads(payloads, [Outer])
        assert type(ours.value) is type(sdk.value)


def test_hints_are_cached_per_class_and_not_kept_alive():
    @dataclass
    class Passing:  # as a class of a sandboxed workflow module is: a new class per run
        n: int

    @dataclass
    class Later(Passing):  # a subclass resolves its own hints, never its base's
        m: str = ""

    payloads = OURS.to_payloads([{"n": 1, "m": "x"}])
    assert OURS.from_payloads(payloads, [Passing]) == [Passing(1)]
    assert vars(Passing)[conv.HINTS_ATTR] == {"n": int}
    assert OURS.from_payloads(payloads, [Later]) == [Later(1, "x")]
    assert vars(Later)[conv.HINTS_ATTR] == {"n": int, "m": str}
    gone = weakref.ref(Passing)
    del Passing, Later, payloads
    gc.collect()
    assert gone() is None


def test_the_client_converter_is_this_one_with_the_codec_when_keyed(sims, tmp_path):
    settings = settings_for(sims, f"sqlite:///{tmp_path / 'l.sqlite'}")
    dc = data_converter(settings)
    assert dc.payload_converter_class is conv.PayloadConverter and dc.payload_codec is None
    order = work_order(settings)
    if conv.HINTS_ATTR in vars(WorkOrder):
        delattr(WorkOrder, conv.HINTS_ATTR)
    assert dc.payload_converter.from_payloads(dc.payload_converter.to_payloads([order]), [WorkOrder]) == [order]
    assert conv.HINTS_ATTR in vars(WorkOrder)  # decoded by DataclassHints (the SDK's wrapper calls it)


async def test_a_review_runs_through_the_converter(temporal_env, sims, tmp_path, task_queue):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger.upgrade(url)
    settings = settings_for(sims, url)
    client = Client(**{**temporal_env.client.config(), "data_converter": data_converter(settings)})
    order = work_order(settings, search_attributes=not temporal_env.supports_time_skipping)
    comments = len(sims.comments())  # the simulators are shared by the session's tests
    result = await run_orders(client, settings, task_queue, order)
    [outcome] = result.orders
    assert isinstance(outcome, RunOutcome) and (outcome.status, outcome.steps) == ("done", 3)
    assert isinstance(order, WorkOrder) and len(sims.comments()) == comments + 1
    assert outcome.usage.input > 0


_RUN_MODULE = '''
from __future__ import annotations
from dataclasses import dataclass, field

@dataclass
class Leaf:
    n: int

@dataclass
class Branch:
    leaf: Leaf
    kids: list[Branch] = field(default_factory=list)
'''


def test_a_class_whose_hints_name_its_own_module_is_not_kept_alive():
    """A sandboxed workflow module is a new module per run; a dataclass there whose field types name a class
    of that module (itself, a sibling) must not be kept alive by the hint cache, nor its module with it."""
    gone = []
    for run in range(3):
        module = sys.modules["sluicegate_converter_probe"] = types.ModuleType("sluicegate_converter_probe")
        exec(compile(_RUN_MODULE, "sluicegate_converter_probe.py", "exec"), module.__dict__)
        payloads = OURS.to_payloads([{"leaf": {"n": run}, "kids": [{"leaf": {"n": 1}}]}])
        [branch] = OURS.from_payloads(payloads, [module.Branch])
        assert type(branch.kids[0].leaf) is module.Leaf and branch.leaf.n == run
        gone.append(weakref.ref(module.Branch))
        del sys.modules["sluicegate_converter_probe"], module, branch  # the sandbox drops its modules after a run
    gc.collect()
    assert [ref() for ref in gone] == [None, None, None]


@dataclass
class AsDict(dict):
    """A dataclass ``json`` writes itself (a dict): ``asdict`` writes its fields when it is nested."""
    x: int = 0


@dataclass
class AsList(list):
    y: int = 0


@dataclass
class Holder:
    d: AsDict
    items: list[AsList]
    plain: dict[str, AsDict]


def test_nested_dataclasses_json_writes_natively_are_written_as_the_sdk_writes_them():
    value = Holder(AsDict(x=1), [AsList(y=2)], {"k": AsDict(x=3)})
    assert OURS.to_payloads([value]) == SDK.to_payloads([value])
    assert OURS.to_payloads([[value]]) == SDK.to_payloads([[value]])
