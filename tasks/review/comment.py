"""The model's pull-request review comment, made safe to post under our name. Pure: no I/O.

The review model reads a diff that anyone who opens a pull request writes, so its comment is as
hostile as the triage comment (``tasks.triage.comment``): a steered review can post a chat-ops
command (``/approve``, ``/lgtm``, ``> /approve``, ``- /retest``) that a bot on the repository runs as
if we had asked, ping people or teams (``@alice``, ``@acme/security-team``), cross-reference issues,
link a phishing page, or hide text (and a forged reconcile marker, ``activities/markers.py``) in an
HTML comment. Unlike a triage comment a review legitimately quotes code, where ``@decorator``,
``<T>``, ``a[i]`` and ``#12`` must stay readable. So the text is split in two:

* **code**: the lines of fenced code blocks (``````` / ``~~~``, found by markdown-it-py's CommonMark
  block parser, raw HTML off: exactly how GitHub's cmark-gfm sees our *output*, where no raw HTML
  is left) and single-line code spans. Left as written, except (a) a line whose first character
  after blanks, ``>`` quotes and list markers is ``/`` gets a ZERO WIDTH SPACE (U+200B) before that
  ``/``: raw-text bots such as Prow match ``(?m)^/approve`` on the raw body, code fences or not; the
  invisible character keeps the code readable where ``\\/`` would show a backslash inside code, and
  is no whitespace to ``\\s`` in Python, Go or JavaScript, so ``^\\s*/`` misses it too; (b)
  ``sluicegate:op=`` gets a U+200B before its ``=``: the marker regex runs on the raw body, code or
  not (in text too, though there its ``<`` is already ``&lt;``).
* **everything else**: the triage rules (``tasks._markdown_safety``): links and images to their
  text, backslashes doubled, ``[`` escaped, ``&``/``<`` as references (raw HTML and HTML comments are
  *escaped*, shown as text, rather than dropped: dropping a multi-line comment would move lines and
  change which lines are fenced), URL schemes defanged, ``＠``/``＃``/``GH－``, a line-leading ``/``
  escaped ``\\/``; and every backtick escaped ``\\```.

Why the split holds against a mismatch with GitHub's parser, which is the attack surface:

* a code span is only trusted within one line, with no ``|`` in it (GFM splits table cells before
  code spans), and every other backtick outside code is escaped: the output then has *no* code span
  but ours, each opened by a backtick run not preceded by an odd backslash run (backslashes in text
  are doubled) and closed by the first run of its length, which is what CommonMark requires. A span
  that fails these checks is text (its backticks escaped, its contents neutralised);
* fences are found on the input, then the output is parsed again and a fence whose lines are not all
  fenced there is demoted to text and the output rebuilt (:data:`MAX_PASSES`, then all text):
  treating code as text costs readability (a visible ``＠``, ``&amp;``), the other way round a ping.
  The residual risk is a block-structure disagreement between markdown-it-py and cmark-gfm (both
  CommonMark; containers and fences are in the shared spec tests);
* a cut (:data:`MAX_COMMENT_CHARS`) never ends inside a kept code span (its text would render as text).

Mentions inside code are left as written: GitHub does not notify from code, but a bot that greps
the raw body for ``@name`` would still see them.
"""

from __future__ import annotations

import re
from functools import cache

from markdown_it import MarkdownIt

from tasks._markdown_safety import TRUNCATED, escape_leading_slash, neutralise, unlink, visible

MAX_COMMENT_CHARS = 60_000
"""The sanitised comment's bound (characters), before our marker is appended (GitHub takes 65,536)."""
MAX_INPUT_CHARS = MAX_COMMENT_CHARS
"""What of the model's text is read at all (a longer text ends with the truncation note)."""
MAX_PASSES = 4
"""Rebuilds after a fence found on the input is not a fence in the output; then everything is text."""

ZWSP = "\u200b"
_RUN = re.compile(r"`+")
_MARKER_WORD = re.compile(r"(?i)(sluicegate:op)=")
_HALF_ESCAPE = re.compile(r"(?:\\|&(?:l|lt|a|am|amp)?)\Z")


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _fences(text: str) -> list[range]:
    """The line ranges of the fenced code blocks in ``text`` (fence lines included)."""
    return [range(*t.map) for t in _parser().parse(text) if t.type == "fence" and t.map]


def _text(part: str) -> str:
    """Text between code spans, neutralised; never emptied (``[](x)`` and a reference definition
    unlink to nothing): two spans with nothing between them would merge into one backtick run."""
    return _code(neutralise(unlink(part)).replace("`", "\\`")) or " "


def _code(part: str) -> str:
    return _MARKER_WORD.sub(f"\\1{ZWSP}=", part)


TEXT, SPAN, FENCE = "text", "span", "fence"
Pieces = list[tuple[str, str]]
"""One output line: (kind, output) pieces."""


def _line_pieces(line: str) -> Pieces:
    """A non-fenced line as pieces: trusted code spans kept, the rest neutralised."""
    pieces: Pieces = []
    start = pos = 0
    while (opener := _RUN.search(line, pos)) is not None:
        closer = next((m for m in _RUN.finditer(line, opener.end()) if len(m.group()) == len(opener.group())), None)
        if closer is None or "|" in line[opener.end():closer.start()]:
            pos = opener.end()  # a literal run (escaped in the output); the next run may open a span
            continue
        if opener.start() > start:
            pieces.append((TEXT, _text(line[start:opener.start()])))
        pieces.append((SPAN, _code(line[opener.start():closer.end()])))
        start = pos = closer.end()
    if start < len(line):
        pieces.append((TEXT, _text(line[start:])))
    return pieces


def _render(lines: list[str], fenced: set[int]) -> list[Pieces]:
    out = []
    for i, line in enumerate(lines):
        if i in fenced:
            out.append([(FENCE, escape_leading_slash(_code(line), lambda lead: f"{lead}{ZWSP}/"))])
            continue
        pieces = _line_pieces(line)
        if pieces and pieces[0][0] == TEXT:  # a line starting in text: the only place its leading ``/`` can be
            pieces[0] = (TEXT, escape_leading_slash(pieces[0][1]))
        out.append(pieces)
    return out


def _joined(rendered: list[Pieces]) -> str:
    return "\n".join("".join(p for _, p in pieces) for pieces in rendered)


def _bounded(rendered: list[Pieces], cut_already: bool) -> str:
    """The output cut to :data:`MAX_COMMENT_CHARS` (note included) between pieces or inside a text
    piece or fenced line, never inside a code span or half an escape."""
    text = _joined(rendered)
    if len(text) <= MAX_COMMENT_CHARS - (len(TRUNCATED) + 1 if cut_already else 0):
        return f"{text.rstrip()}\n{TRUNCATED}" if cut_already else text.rstrip()
    room, kept = MAX_COMMENT_CHARS - len(TRUNCATED) - 1, []
    for n, pieces in enumerate(rendered):
        if n:
            if room < 1:
                break
            kept.append("\n")
            room -= 1
        for kind, piece in pieces:
            if len(piece) <= room:
                kept.append(piece)
                room -= len(piece)
                continue
            if kind != SPAN:  # a fenced line cut stays code (an unclosed fence runs to the end)
                kept.append(_HALF_ESCAPE.sub("", piece[:room]))
            return f"{''.join(kept).rstrip()}\n{TRUNCATED}"
    return f"{''.join(kept).rstrip()}\n{TRUNCATED}"


def sanitise_review_comment(text: str) -> str:
    """The model's review ``text`` as it may be posted under our name (module docstring); ``""``
    when nothing visible is left."""
    cut_already = len(text) > MAX_INPUT_CHARS
    text = visible(text[:MAX_INPUT_CHARS]).strip("\n")
    lines = text.split("\n")
    fences = _fences(text)
    for _ in range(MAX_PASSES):
        rendered = _render(lines, {i for f in fences for i in f})
        still = {i for f in _fences(_joined(rendered)) for i in f}
        demoted = [f for f in fences if not set(f) <= still]
        if not demoted:
            break
        fences = [f for f in fences if f not in demoted]
    else:
        rendered = _render(lines, set())
    out = _bounded(rendered, cut_already)
    return out if out.strip() else ""
