"""Comment markers (pure): signed with the current secret, verified with any, only from the bot."""

from __future__ import annotations

from activities.keys import marker_for, operation_key
from activities.markers import CommentMarks

OP = operation_key("github:acme/api#42:review", "post_review_comment", "a" * 40)
OTHER_OP = operation_key("github:acme/api#42:review", "post_review_comment", "b" * 40)


def _comment(body: str, login: str = "review-bot") -> dict:
    return {"body": body, "user": {"login": login}}


def test_signed_by_any_configured_secret_and_posted_by_the_bot():
    old = CommentMarks.from_values("old-secret-0123456789", bot_login="review-bot")
    new = CommentMarks.from_values("new-secret-0123456789", ["old-secret-0123456789"], "Review-Bot")
    assert new.marker(OP).startswith(marker_for(OP)) and new.marker(OP) != old.marker(OP)
    for marks in (old, new):
        assert new.is_effect_of(_comment(f"LGTM\n\n{marks.marker(OP)}"), OP)  # rotation: the old one still counts
        assert new.is_own(_comment(marks.marker(OP)))
    assert not old.is_effect_of(_comment(new.marker(OP)), OP)  # the new secret is unknown to the old config


def test_what_is_not_ours():
    marks = CommentMarks.from_values("secret-0123456789abc", bot_login="review-bot")
    genuine = marks.marker(OP)
    assert not marks.is_effect_of(_comment(genuine, login="mallory"), OP)
    assert not marks.is_effect_of(_comment(genuine), OTHER_OP)
    assert not marks.is_effect_of(_comment(f"<!-- sluicegate:op={OP} -->"), OP)  # unsigned (the old format)
    forged = genuine.replace(genuine[-10:-4], "000000")
    assert not marks.is_effect_of(_comment(forged), OP)
    assert not marks.is_effect_of({"body": genuine}, OP)  # no author at all
    assert not marks.is_own(_comment("plain text"))


def test_without_a_secret_or_a_bot_login_nothing_is_trusted():
    for marks in (CommentMarks.from_values(None, bot_login="review-bot"),
                  CommentMarks.from_values("secret-0123456789abc", bot_login=None)):
        assert not marks.trusting
        assert not marks.is_effect_of(_comment(marks.marker(OP)), OP)
