"""``tasks.review.comment``: the review comment keeps code readable and nothing outside code can
command a bot, ping, cross-reference, link or hide HTML (a marker) under our name.

The oracle for "outside code" is independent of the sanitiser's own segmentation: the posted text
is rendered by markdown-it-py with raw HTML *on* (as GitHub renders what we post), ``<code>`` and
``<pre>`` elements are cut out, and GitHub's post-render filters are modelled on the rest with
character references decoded (``tests/tasks/test_triage_comment_bypasses.py``).
"""

from __future__ import annotations

import html
import json
import re

import pytest
from markdown_it import MarkdownIt

from activities.forge_tools import _comment_body
from activities.markers import CommentMarks
from tasks.review.comment import MAX_COMMENT_CHARS, ZWSP, sanitise_review_comment

MENTION = re.compile(r"(?<![A-Za-z0-9])@[A-Za-z0-9]")
REFERENCE = re.compile(r"(?<![A-Za-z0-9])#[0-9]|\b[Gg][Hh]-[0-9]")
CHAT_OPS = re.compile(r"^(?:[\s>]|[-*+](?=\s)|\d+[.)](?=\s))*/")
"""A line starting with ``/`` after blanks, quotes and list markers (a marker is followed by a blank, as
in CommonMark: ``*/`` closing a C comment is no list item, and is left alone)."""
_RENDER = MarkdownIt("commonmark", {"html": True}).enable("table")
_CODE = re.compile(r"<(code|pre)\b[^>]*>.*?</\1>", re.S)


def _outside_code(posted: str) -> str:
    return html.unescape(_CODE.sub(" ", _RENDER.render(posted)))  # a code element splits the text nodes


def _safe(posted: str) -> None:
    rendered = _RENDER.render(posted)
    text = _outside_code(posted)
    assert not MENTION.search(text) and not REFERENCE.search(text), (posted, text)
    assert "<!--" not in rendered and "<a " not in rendered and "<img" not in rendered, (posted, rendered)
    assert "sluicegate:op=" not in posted
    for line in re.split(r"[\n\u2028\u2029]", posted):
        assert not CHAT_OPS.match(line), (posted, line)


@pytest.mark.parametrize("written", [
    "Looks fine.\n/approve", "> /lgtm", "- /retest", "* > /approve", "1. /hold", "\u00a0/approve", "\u3000/lgtm",
    "ok\u2028/approve", "ok\u2029/close", "ok\r/approve", "```\n/approve\n```", "```\n> - /retest\n```",
    "~~~\n  /lgtm\n~~~", "`/approve`\n/approve", "Please look, @acme/security-team and @alice.",
    "cc &#64;alice and &commat;bob", "see #12, &#35;13 and GH-14", "`a`@alice`b`", "`x` #12 `y`",
    "`foo\n`@alice`", "| `x | @y` |\n|---|---|\n| `a | @b` |", " ```\n```\n@alice\n", "- a\n\n  ```\n\n@alice\n```",
    "- ```\n  ```\n  @alice", "<div>\n```\n\n@alice\n```\n@bob\n", "[x](/u \"`\") @alice `\"`",
    "www.x.com/`@alice`", "https://phish.example/`a`", "[click](https://phish.example)", "![](https://t/p.gif)",
    "<img src=x onerror=alert(1)>", "<!-- sluicegate:op=op_" + "a" * 40 + " sig=" + "b" * 64 + " -->",
    "```\n<!-- sluicegate:op=op_" + "a" * 40 + " sig=" + "b" * 64 + " -->\n```", "\\`@alice`", "``@alice`",
    "<!--\n```\n-->\n@alice\n```", "<https://phish.example>", "a\u202e@alice\u200b",
    "``a``[x]: /y```@alice```", "`a`[](x)`` @bob ``", "``a``![](x)```@carol```",
])
def test_hostile_review_text_comes_out_safe(written: str):
    _safe(sanitise_review_comment(written))


def test_code_stays_as_written_and_only_a_leading_slash_in_it_is_touched():
    code = '@app.get("/x")\ndef f(a: list[int]) -> dict[str, int]:  # see #12\n    return {"<": a[0] & 1}'
    written = f"Use `@decorator` and `a<b` (#12).\n\n```python\n{code}\n/approve\n  > - /retest\n```\n"
    posted = sanitise_review_comment(written)
    assert f"```python\n{code}\n{ZWSP}/approve\n  > - {ZWSP}/retest\n```" in posted, posted
    assert "`@decorator`" in posted and "`a<b`" in posted and "(＃12)" in posted, posted
    assert "<code>@decorator</code>" in _RENDER.render(posted)
    _safe(posted)


def test_a_fence_markdown_it_and_the_output_disagree_on_is_treated_as_text():
    # A fence opened inside a list item closes with the item: "@alice" below it is a paragraph.
    posted = sanitise_review_comment("- a\n\n  ```\n\n@alice\n```\n@bob")
    assert "＠alice" in posted and "@alice" not in posted
    assert posted.endswith("```\n@bob")  # a real top-level fence: left as written


def test_the_marker_is_appended_after_the_text_and_cannot_be_forged_by_it():
    bot = CommentMarks.from_values("s3cret", bot_login="sluicegate-bot")
    op_key = "op_" + "c" * 40
    genuine = bot.marker(op_key)
    for written in (f"hi {genuine}", f"```\n{genuine}\n```", f"`{genuine}`", f"~~~\n{genuine}"):
        body = _comment_body(json.dumps({"body": written}))
        comment = {"user": {"login": "sluicegate-bot"}, "body": body}
        assert not bot.is_effect_of(comment, op_key) and not bot.is_own(comment), body


def test_an_empty_or_invisible_body_is_refused():
    from temporalio.exceptions import ApplicationError

    for written in ("", "   ", "\u200b\u202e", 7):
        with pytest.raises(ApplicationError):
            _comment_body(json.dumps({"body": written}))


def test_a_long_review_is_cut_to_the_bound_never_inside_a_code_span():
    span = "`@" + "x" * 50 + "`"
    posted = sanitise_review_comment(" ".join([span] * 5_000))
    assert len(posted) <= MAX_COMMENT_CHARS and posted.endswith("(... truncated)")
    _safe(posted)
    fenced = sanitise_review_comment("```\n" + "@alice & <b>\n" * 10_000 + "```")
    assert len(fenced) <= MAX_COMMENT_CHARS and fenced.endswith("(... truncated)")
    escaped = sanitise_review_comment("&" * 70_000)
    assert len(escaped) <= MAX_COMMENT_CHARS and not re.search(r"&(?:a|am|amp)?\n", escaped)


def test_any_mix_of_markdown_code_and_command_pieces_comes_out_safe():
    from hypothesis import given, settings, strategies as st

    pieces = st.sampled_from(["`", "``", "```", "~~~", "\n", " ", "   ", "    ", ">", "- ", "1. ", "|", "|---|",
                              "/", "approve", "@", "a", "#", "1", "GH-", "<", "!--", "-->", "sluicegate:op=", "&",
                              "&#64;", "\\", "[", "]", "(", ")", "https://", "www.", "\u2028", "\u00a0", "\u200b",
                              "_", "*", "<div>", "python", "[x]: /y", "[](x)", "![](x)", "\\`", "\t"])

    @settings(max_examples=400, deadline=None)
    @given(st.lists(pieces, max_size=60).map("".join))
    def safe(text: str) -> None:
        _safe(sanitise_review_comment(text))

    safe()
