"""The reason table in docs/architecture.md is complete and true.

Every enumerated reason (``intake.decision.Reason`` and every ``policy:<rule>`` the code can
produce) has a row; every function a row names exists and its module names that reason; and the
ledger and HTTP layers name no refusal reason of their own (they apply or map intake's).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from intake.decision import Reason

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
SECTION = "## Refusal reasons: where each is decided"
ROW = re.compile(r"^\| `([a-z:-]+)` \| [^|]+ \| (.+) \|$")
FUNCTION = re.compile(r"`([a-z_.]+):([A-Za-z_.]+)`")
POLICY = re.compile(r'policy_reason\("([a-z-]+)"\)')

APPLIED_AT_THE_EDGE = {Reason.BAD_INPUT, Reason.BAD_SIGNATURE, Reason.LEDGER_UNAVAILABLE, Reason.OUT_OF_SCOPE,
                       Reason.TARGET_CLOSED, Reason.UNSUPPORTED_SCHEMA}
"""What ``ledger/`` and ``webhook_api/`` may still name: bounds at the HTTP edge (size, time, a
parser's error as ``bad-input``), the one unauthenticated answer, the 503 that records nothing, the
403 mapping of ``out-of-scope``, the tombstone applied for ``target-closed``, the kept body of an
``unsupported-schema``. A new refusal decided there fails this test: decide it in intake/."""


def _table() -> dict[str, list[tuple[str, str]]]:
    text = DOC.read_text()
    assert SECTION in text, f"{DOC} has no section {SECTION!r}"
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in body.splitlines():
        if (m := ROW.match(line.strip())) is not None:
            rows[m.group(1)] = FUNCTION.findall(m.group(2))
    return rows


def _policy_reasons() -> set[str]:
    found = set()
    for package in ("intake", "ledger", "webhook_api", "console", "activities"):
        for path in (ROOT / package).rglob("*.py"):
            found.update(f"policy:{rule}" for rule in POLICY.findall(path.read_text()))
    return found


TABLE = _table()
ENUMERATED = sorted({str(r) for r in Reason} | _policy_reasons())


def test_the_policy_reasons_are_found():
    assert {"policy:draft", "policy:override-not-permitted", "policy:replay-not-permitted"} <= set(ENUMERATED)


@pytest.mark.parametrize("reason", ENUMERATED)
def test_every_reason_has_a_row_naming_a_function(reason: str):
    assert reason in TABLE, f"{reason!r} has no row in the reason table of {DOC.name}"
    assert TABLE[reason], f"the row of {reason!r} names no module:function"


def test_no_row_for_a_reason_that_does_not_exist():
    assert set(TABLE) <= set(ENUMERATED)


def _tokens(reason: str) -> set[str]:
    if reason.startswith("policy:"):
        return {f'"{reason.removeprefix("policy:")}"'}
    member = Reason(reason).name
    return {f"Reason.{member}", member}


@pytest.mark.parametrize("reason, module, qualname",
                         [(r, m, q) for r, fns in sorted(TABLE.items()) for m, q in fns])
def test_each_named_function_exists_and_its_module_names_the_reason(reason: str, module: str, qualname: str):
    mod = importlib.import_module(module)
    target = mod
    for part in qualname.split("."):
        target = getattr(target, part)
    assert callable(target)
    source = Path(mod.__file__).read_text()
    assert any(t in source for t in _tokens(reason)), f"{module} never names {reason!r}"


def test_refusals_are_decided_in_intake():
    """Every refusal row points into intake/ (the four non-refusals are the documented exceptions)."""
    outside = {r for r, fns in TABLE.items() if any(not m.startswith("intake.") for m, _ in fns)}
    assert outside == {"nothing-changed", "goal-bound-reached", "ledger-unavailable"}


@pytest.mark.parametrize("package", ["ledger", "webhook_api"])
def test_ledger_and_http_layers_only_apply_or_map(package: str):
    named = set()
    for path in (ROOT / package).rglob("*.py"):
        named.update(Reason[m] for m in re.findall(r"\bReason\.([A-Z_]+)", path.read_text()))
    assert named <= APPLIED_AT_THE_EDGE, f"{package} decides {sorted(map(str, named - APPLIED_AT_THE_EDGE))}"
