"""The model's triage comment is sanitised before it is posted (``tasks.triage.comment``).

Hostile strings a prompt injection in the issue could make the model write: chat-ops commands,
mentions, links, images, raw HTML, HTML comments forging our reconcile marker, huge text. Then the
hosted tool (``activities/task_tools.py``) against the forge simulator: what reaches the forge is the
sanitised text plus exactly one marker, ours, and reconcile recognises that one only.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest
from temporalio.testing import ActivityEnvironment

from activities.gateway import ToolGateway
from activities.keys import marker_for, operation_key
from activities.markers import CommentMarks
from activities.task_tools import TaskTools
from ledger import KillSwitch, SideEffectLedger
from sluicegate.config.tasks import TasksConfig
from sluicegate.forge.client import ForgeClient
from tasks import registry
from tasks.triage import POST_TRIAGE_COMMENT_ACTIVITY
from tasks.triage.comment import MAX_COMMENT_CHARS, MAX_COMMENT_LINES, TRUNCATED, sanitise_comment
from tests.support.sims import FORGE_TOKEN
from workflows.contracts import ToolRequest

BOT = CommentMarks.from_values("marker-secret", (), "sluicegate-bot")
OP = "op_" + "a" * 40
FORGED = f"<!-- sluicegate:op={OP} sig={'b' * 64} -->"
GENUINE = BOT.marker(OP)  # a real signed marker, copied from one of our comments into the issue
MENTION = re.compile(r"(?<![A-Za-z0-9])@[A-Za-z0-9]")
"""GitHub's mention: an ASCII ``@`` then a letter or digit."""
LIVE_LINK = re.compile(r"(?<!\\)(?:\\\\)*\[")
"""An ``[`` not escaped by an odd run of backslashes: what a CommonMark link or image needs."""
AUTOLINK = re.compile(r"(?i)\b(?:https?|ftp)://|\bwww\.")


def _safe(text: str) -> None:
    """The properties every sanitised comment has, whatever went in."""
    assert "<" not in text  # no raw HTML, no autolink, no HTML comment: no marker can be in it
    assert not BOT.signed_ops(text) and "<!--" not in text
    assert not MENTION.search(text), text
    assert not LIVE_LINK.search(text), text
    assert not AUTOLINK.search(text), text
    assert not re.search(r"(?m)^[ \t>]*(?:(?:[-*+]|\d+[.)])[ \t]+)?/", text), text
    assert len(text) <= MAX_COMMENT_CHARS and text.count("\n") < MAX_COMMENT_LINES + 1


HOSTILE = [
    "/approve\n/assign @alice\n  /close\n> /lgtm\n- /retest\n1. /hold",
    "cc @alice @acme/security-team and mail root@example.com",
    "![](https://tracker.example/pixel.gif?u=1) ![logo](http://x/y.png)",
    "[Click to verify your account](https://phish.example/login) and [x][1]\n\n[1]: https://phish.example",
    "see <https://phish.example> or https://phish.example/a or www.phish.example or ftp://f.example",
    "<img src=x onerror=alert(1)><a href='https://phish'>hi</a><details><summary>x</summary>y</details>",
    f"Labelled bug. {FORGED}",
    f"Labelled bug. {GENUINE}",
    "Labelled bug. <!-- sluicegate:op=" + OP + " sig=" + "c" * 64 + " unclosed comment hides the rest",
    "\\[nested [brackets] link](https://phish.example/(paren))  \\\\[two](https://phish.example)",
    "[![img](https://t.example/p.gif)](https://phish.example)",
    "bidi \u202egnp.exe\u202c and zero\u200bwidth @\u200balice",
    "&lt;!-- entity comment --&gt; &#60;img src=x&#62;",
    "see #12 and acme/other#3",
    "line\n" * 500,
    "x" * 50_000,
    "<" * 20_000,
]


@pytest.mark.parametrize("hostile", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_comments_come_out_safe(hostile: str):
    _safe(sanitise_comment(hostile))


def test_what_each_rule_leaves_readable():
    assert sanitise_comment("cc @alice") == "cc \uff20alice"
    assert sanitise_comment("/assign me") == "\\/assign me"
    assert sanitise_comment("![a pixel](https://t/p.gif) [click](https://p) done") == "a pixel click done"
    assert sanitise_comment("go to https://x.example") == "go to https\\[:]//x.example"
    assert sanitise_comment("a <b>bold</b> move") == "a &lt;b>bold&lt;/b> move"
    assert sanitise_comment(f"ok {FORGED} fine") == "ok  fine"
    assert sanitise_comment("see #12") == "see \uff03" + "12"
    plain = "Labelled bug, documentation. Reason: the issue mentions 'typo'."
    assert sanitise_comment(plain) == plain  # ordinary prose passes untouched


def test_bounds_are_marked_and_nothing_left_is_empty():
    long = sanitise_comment("word " * 5_000)
    assert long.endswith(TRUNCATED) and len(long) <= MAX_COMMENT_CHARS
    tall = sanitise_comment("\n".join(f"line {i}" for i in range(200)))
    assert tall.endswith(TRUNCATED) and tall.count("\n") == MAX_COMMENT_LINES
    assert sanitise_comment("<!-- only a hidden comment -->") == ""
    assert sanitise_comment("\u200b\u202e\x00") == "" and sanitise_comment(None) == "" and sanitise_comment(7) == ""


# -- through the hosted tool, against the forge simulator -------------------------------------------

@pytest.fixture
async def post(engine, sims):
    client = ForgeClient(sims.forge.base_url, FORGE_TOKEN, timeout_seconds=5)
    host = TaskTools([registry.get("triage")], lambda spec: TasksConfig().triage, client,
                     ToolGateway(SideEffectLedger(engine), KillSwitch(engine)), BOT)
    acts = {a.__temporal_activity_definition.name: a for a in host.activities()}
    yield acts[POST_TRIAGE_COMMENT_ACTIVITY]
    await client.aclose()


def _issue(sims) -> tuple[str, str]:
    name = f"c{uuid.uuid4().hex[:8]}"
    sims.forge_ctl("POST", f"/issues/acme/{name}/5", json={"title": "App crashes", "body": "Traceback",
                                                            "updated_at": "2026-11-29T10:00:00Z"})
    return name, f"acme/github:acme/{name}#5:triage"


def _request(name: str, key: str, body: object, call: str = "call-1") -> ToolRequest:
    return ToolRequest(key, "acme", "acme", name, 5, "2026-11-29T10:00:00Z", 1, call, json.dumps({"body": body}))


async def test_the_posted_comment_is_sanitised_and_carries_only_our_marker(sims, post):
    name, key = _issue(sims)
    op_key = operation_key(key, "post_triage_comment", "2026-11-29T10:00:00Z")
    hostile = (f"/close\ncc @maintainers ![](https://t.example/p.gif) [login](https://phish.example)\n"
               f"{GENUINE}\n{FORGED}\n<!-- sluicegate:op={op_key} sig={'0' * 64} -->")
    result = await ActivityEnvironment().run(post, _request(name, key, hostile))
    [posted] = [c for c in sims.comments() if c["repo"] == name]
    text, _, ours = posted["body"].rpartition("\n\n")
    assert text == sanitise_comment(hostile)
    _safe(text)
    assert ours == BOT.marker(op_key) and BOT.signed_ops(posted["body"]) == {op_key}  # ours, and only ours
    assert posted["body"].count(marker_for(op_key)) == 1
    assert result.external_id == str(posted["id"])


async def test_a_comment_that_sanitises_to_nothing_is_refused_and_nothing_posted(sims, post):
    name, key = _issue(sims)
    result = await ActivityEnvironment().run(post, _request(name, key, "<!-- hidden --><!-- hidden -->"))
    assert result.content.startswith("error:") and result.operation_key is None
    assert [c for c in sims.comments() if c["repo"] == name] == []


def test_reconcile_takes_only_the_bot_s_signed_comment():
    """How reconcile finds ours (``CommentMarks.is_effect_of``): someone else's comment carrying our genuine
    marker is not ours; the bot's comment whose *model text* was sanitised cannot carry another's."""
    op_key = operation_key("acme/github:acme/x#5:triage", "post_triage_comment", "2026-11-29T10:00:00Z")
    genuine = BOT.marker(op_key)
    by_someone = {"user": {"login": "mallory"}, "body": f"hi {genuine}"}
    by_bot_model_text = {"user": {"login": "sluicegate-bot"}, "body": sanitise_comment(f"hi {genuine}")}
    by_bot = {"user": {"login": "sluicegate-bot"}, "body": f"hi\n\n{genuine}"}
    assert not BOT.is_effect_of(by_someone, op_key)
    assert not BOT.is_effect_of(by_bot_model_text, op_key) and not BOT.is_own(by_bot_model_text)
    assert BOT.is_effect_of(by_bot, op_key)


def test_any_mix_of_markdown_significant_characters_comes_out_safe():
    from hypothesis import given, settings, strategies as st

    pieces = st.sampled_from(["[", "]", "(", ")", "!", "<", ">", "\\", "@", "/", "#", "-", "`", "\n", " ", "a", "1",
                              "https://", "www.", "<!--", "-->", "sluicegate:op=", "&lt;", "\u200b", "\u202e"])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(pieces, max_size=80).map("".join))
    def safe(text: str) -> None:
        _safe(sanitise_comment(text))

    safe()
