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
lines of ``re``. Every rule below holds whatever the surrounding Markdown is (inside a code span too,
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

import re
import unicodedata

MAX_COMMENT_CHARS = 3_000
"""The sanitised comment's bound (characters), before our marker is appended."""
MAX_COMMENT_LINES = 40
MAX_INPUT_CHARS = 4 * MAX_COMMENT_CHARS
"""What of the model's text is read at all: the patterns never run over more."""
TRUNCATED = "(... truncated)"

_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_IMAGE = re.compile(r"!\[([^\[\]\n]*)\]\([^()\n]*\)")
_LINK = re.compile(r"\[([^\[\]\n]*)\]\([^()\n]*\)")
_REFERENCE = re.compile(r"!?\[([^\[\]\n]*)\]\[[^\[\]\n]*\]")
_DEFINITION = re.compile(r"^[ \t>]*\[[^\]\n]+\]:.*$", re.M)
_SCHEME = re.compile(r"(?i)([a-z][a-z0-9+.-]{0,31}):(?=//)")
_WWW = re.compile(r"(?i)www\.")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_REFERENCE_NUMBER = re.compile(r"#(?=[0-9])")
_GH_REFERENCE = re.compile(r"(?i)(gh)-(?=[0-9])")
_LEADING_SLASH = re.compile(r"^((?:[^\S\n]|>|(?:[-*+]|[0-9]{1,9}[.)])(?=[^\S\n]))*)/", re.M)
_HALF_ESCAPE = re.compile(r"(?:\\|&(?:l|lt|a|am|amp)?)\Z")


def _visible(text: str) -> str:
    """Newlines and tabs kept; other control characters and every format character (Cc, Cf) dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf"))


def _bounded(text: str) -> str:
    lines = text.split("\n")
    cut = len(lines) > MAX_COMMENT_LINES or len(text) > MAX_COMMENT_CHARS
    if cut:
        text = "\n".join(lines[:MAX_COMMENT_LINES])[:MAX_COMMENT_CHARS - len(TRUNCATED) - 1]
        text = _HALF_ESCAPE.sub("", text)
    return f"{text.rstrip()}\n{TRUNCATED}" if cut else text.rstrip()


def sanitise_comment(text: object) -> str:
    """The model's comment ``text`` as it may be posted under our name (module docstring); ``""`` when
    nothing is left (not a string, or empty once cleaned)."""
    if not isinstance(text, str):
        return ""
    text = _visible(text[:MAX_INPUT_CHARS])
    text = _HTML_COMMENT.sub("", text)
    text = _IMAGE.sub(lambda m: m.group(1), text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _REFERENCE.sub(lambda m: m.group(1), text)
    text = _DEFINITION.sub("", text)
    text = text.replace("\\", "\\\\").replace("[", "\\[").replace("&", "&amp;").replace("<", "&lt;")
    text = _SCHEME.sub(r"\1\\[:]", text)
    text = _WWW.sub(r"www\\[.]", text)
    text = _MENTION.sub("\uff20", text)
    text = _REFERENCE_NUMBER.sub("\uff03", text)
    text = _GH_REFERENCE.sub("\\1\uff0d", text)
    text = _LEADING_SLASH.sub(lambda m: f"{m.group(1)}\\/", text)
    text = _bounded(text.strip("\n"))
    return text if text.strip() else ""
