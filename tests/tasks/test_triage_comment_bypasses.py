"""Review of ``tasks.triage.comment``: inputs that got past the sanitiser.

GitHub renders with cmark-gfm, then runs its mention and issue-reference filters over the rendered
HTML's *text nodes*, where a character reference (``&#64;``, ``&#35;``) is already decoded; GFM's
extended autolinks are recognised after whitespace or one of ``*``, ``_``, ``~``, ``(`` (the GFM spec),
and ``_`` is a word character for Python's ``\\b``; ``GH-12`` is a cross-reference like ``#12``;
JavaScript's multiline ``^`` (Probot chat-ops bots) starts a line after U+2028/U+2029, and bots
that ``trim()`` a line drop Unicode spaces such as U+00A0 before looking for ``/``.
"""

from __future__ import annotations

import html
import re

import pytest

from tasks.triage.comment import sanitise_comment

MENTION = re.compile(r"(?<![A-Za-z0-9])@[A-Za-z0-9]")
REFERENCE = re.compile(r"(?<![A-Za-z0-9])#[0-9]|\b[Gg][Hh]-[0-9]")


def _rendered_text(posted: str) -> str:
    """The text GitHub's post-render filters see: character references decoded (CommonMark decodes
    every valid entity and numeric reference into the text node)."""
    return html.unescape(posted)


@pytest.mark.parametrize("written", ["cc &#64;alice", "cc &#x40;alice", "cc &commat;alice"])
def test_an_entity_encoded_mention_is_not_left_for_github_to_decode(written: str):
    assert not MENTION.search(_rendered_text(sanitise_comment(written)))


@pytest.mark.parametrize("written", ["see &#35;12", "see &num;12", "see &#x23;12", "see GH-12", "see gh-12"])
def test_an_encoded_or_gh_dash_issue_reference_is_defanged(written: str):
    assert not REFERENCE.search(_rendered_text(sanitise_comment(written)))


@pytest.mark.parametrize("written", ["_https://phish.example_", "_www.phish.example_", "__www.phish.example__",
                                     "a_http://phish.example"])
def test_an_autolink_after_an_underscore_is_defanged(written: str):
    posted = sanitise_comment(written)
    assert "://" not in posted.replace("\\[:]//", "") and not re.search(r"(?i)www\.", posted), posted


@pytest.mark.parametrize("written", ["ok\u2028/approve", "ok\u2029/close", "\u00a0/approve", "\u3000/lgtm",
                                     "* > /approve", "- - /retest", "> - > /hold"])
def test_a_slash_command_after_a_unicode_break_space_or_nested_marker_is_escaped(written: str):
    posted = sanitise_comment(written)
    for line in re.split(r"[\n\u2028\u2029]", posted):
        assert not re.match(r"^[\s>*+\-]*(?:\d+[.)]\s+)?/", line), posted


def test_any_mix_with_entities_underscores_and_unicode_breaks_comes_out_safe():
    from hypothesis import given, settings, strategies as st

    pieces = st.sampled_from(["_", "*", "~", "(", "&", "#", "&#64;", "&#35;", "&num;", "GH-", "gh-", "@", "1", "a",
                              "/", ">", "-", " ", "\n", "\u2028", "\u00a0", "https://", "www.", "\\", "[", "<"])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(pieces, max_size=60).map("".join))
    def safe(written: str) -> None:
        posted = sanitise_comment(written)
        shown = _rendered_text(posted)
        assert not MENTION.search(shown) and not REFERENCE.search(shown), posted
        assert "://" not in posted.replace("\\[:]//", "") and not re.search(r"(?i)www\.", posted), posted
        assert not any(re.match(r"^(?:\s|>|(?:[-*+]|\d+[.)])\s)*/", line) for line in posted.split("\n")), posted

    safe()
