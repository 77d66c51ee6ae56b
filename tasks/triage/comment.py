"""The model's triage comment, made safe to post on the issue. Pure: no I/O.

The comment is written by a model that has just read an issue anyone could write, so its text is as
hostile as the issue: a prompt injection can steer it into

* **chat-ops commands**: a line starting with ``/`` (``/assign``, ``/approve``, ``/close``) that a bot
  on the repository runs as if we had asked;
* **mentions**: ``@user``, ``@org/team`` pings (notification spam, social engineering in our name);
* **links and images**: ``[click](https://phish)``, ``![](https://tracker/pixel.gif)`` (a pixel fetched
  by every reader's browser), bare ``https://`` / ``www.`` autolinks, ``<https://...>`` autolinks;
* **raw HTML and HTML comments**: ``<img>``, ``<a>``, ``<details>``, and above all a forged
  ``<!-- sluicegate:op=... -->`` marker (``activities/markers.py``), which reconcile searches for;
* **issue references**: ``#123``, ``owner/repo#123`` put a "mentioned" entry on another issue's timeline;
* **huge text**: thousands of lines under our name.

:func:`sanitise_comment` rewrites the text *context-free*, character by character, instead of parsing
the Markdown and editing the tree. A parser (markdown-it-py is in the lock) sees the text as CommonMark
does, GitHub renders it with cmark-gfm: where the two disagree (nested brackets, HTML blocks, code-span
edge cases) a tree-based filter misses what GitHub renders. HTML sanitisers (nh3, bleach) clean HTML
output, but what we post is Markdown source that GitHub renders; so no library fits and this is ~60
lines of ``re`` (``tasks/_markdown_safety.py``, shared with the review comment). Every rule below holds whatever the surrounding Markdown is (inside a code span too,
where the cost is a visible escape):

1. control and format characters (bidi overrides, zero-width characters) are dropped, line ends
   normalised (U+2028/U+2029 too: JavaScript's multiline ``^`` starts a line after them); the input is
   cut to a bound before any pattern runs;
2. HTML comments are dropped whole (an unclosed one to the end); images become their alt text, links
   their text, reference definitions are dropped (readability; the guarantee is the next rules);
3. every backslash is doubled, then every ``[`` escaped with one: without an unescaped ``[``
   CommonMark has no link or image. Doubling first matters: a model writing a backslash before ``[``
   would otherwise turn our escape into an escaped backslash followed by a live ``[``;
4. every ``&`` becomes ``&amp;``, then every ``<`` ``&lt;``: no character reference survives (GitHub's
   mention and issue-reference filters run on the rendered text, where ``&#64;`` *is* ``@``), and no
   raw HTML, no autolink, no HTML comment, hence **no marker**, can exist in the result (reconcile
   needs ``<!-- sluicegate:op=``; ours is appended after this);
5. URL schemes and ``www.`` are defanged (``https\\[:]//``, ``www\\[.]``, shown as ``https[:]//``,
   ``www[.]``) wherever they stand — GFM autolinks after ``_`` too, a word character for ``\\b`` —:
   never autolinked, and the brackets they add are escaped too;
6. ``@`` before a letter or digit becomes the full-width ``＠`` (U+FF20). Chosen over wrapping in
   backticks (a mention already inside a code span would be *un*-coded by the extra backticks) and over
   an invisible joiner (a reader would still see ``@user`` and believe the person was pinged, and any
   bot reading the raw text would still see a plausible ``@user``): it is visibly not a mention, in
   the rendered page and in the raw body;
7. ``#`` before a digit becomes ``＃``, ``GH-`` before a digit ``GH－`` (no cross-reference);
8. a ``/`` starting a line (after any mix of whitespace, Unicode spaces included, ``>`` quotes and
   list markers) is escaped ``\\/``: it renders as ``/`` but the raw body, which chat-ops bots read,
   no longer starts a line with ``/``;
9. at most :data:`MAX_COMMENT_LINES` lines and :data:`MAX_COMMENT_CHARS` characters, cut without
   leaving half an escape, with a visible truncation note.
"""

from __future__ import annotations

from tasks._markdown_safety import HTML_COMMENT, TRUNCATED, bounded, escape_leading_slash, neutralise, unlink, visible

__all__ = ["MAX_COMMENT_CHARS", "MAX_COMMENT_LINES", "MAX_INPUT_CHARS", "TRUNCATED", "sanitise_comment"]

MAX_COMMENT_CHARS = 3_000
"""The sanitised comment's bound (characters), before our marker is appended."""
MAX_COMMENT_LINES = 40
MAX_INPUT_CHARS = 4 * MAX_COMMENT_CHARS
"""What of the model's text is read at all: the patterns never run over more."""


def sanitise_comment(text: object) -> str:
    """The model's comment ``text`` as it may be posted under our name (module docstring); ``""`` when
    nothing is left (not a string, or empty once cleaned). The rules live in ``tasks._markdown_safety``
    (shared with the review comment, ``tasks.review.comment``)."""
    if not isinstance(text, str):
        return ""
    text = visible(text[:MAX_INPUT_CHARS])
    text = HTML_COMMENT.sub("", text)
    text = escape_leading_slash(neutralise(unlink(text)))
    text = bounded(text.strip("\n"), MAX_COMMENT_CHARS, MAX_COMMENT_LINES)
    return text if text.strip() else ""
