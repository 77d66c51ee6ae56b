"""Review finding (fixed): the pull-request review comment was posted as the model wrote it.

The review model reads a diff anyone who opens a pull request controls, exactly as the triage model
reads an issue; ``tasks/triage/comment.py`` sanitises the triage comment, but
``activities.forge_tools._comment_body`` only bounded the review's (60,000 characters). A steered
review could post a chat-ops command under the bot's name (a bot that grants ``/approve`` or
``/lgtm`` to our account acts on it) or ping people. Now ``_comment_body`` runs the review-aware
filter ``tasks.review.comment`` (code blocks keep ``@decorator`` and ``<`` readable); its own tests
are ``tests/tasks/test_review_comment.py``.
"""

from __future__ import annotations

import json
import re

from activities.forge_tools import _comment_body


def test_a_review_comment_has_no_line_starting_a_chat_ops_command():
    body = _comment_body(json.dumps({"body": "Looks fine.\n/approve\n> /lgtm"}))
    assert not re.search(r"(?m)^[ \t>]*/", body), body


def test_a_review_comment_pings_nobody_outside_code():
    body = _comment_body(json.dumps({"body": "Please look, @acme/security-team and @alice."}))
    assert not re.search(r"(?<![A-Za-z0-9`])@[A-Za-z0-9]", body), body
