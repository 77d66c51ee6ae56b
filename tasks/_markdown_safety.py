"""The rules that make a model's Markdown safe to post under our name, shared by the triage comment
(``tasks.triage.comment``) and the review comment (``tasks.review.comment``). Pure: ``re`` only.

Each rule is context-free (it holds whatever Markdown surrounds the text it is given); the callers
decide *which* text they are given: triage applies them to the whole comment, the review to the text
outside the code it can prove GitHub renders as code. Why each rule exists, and why no Markdown or
HTML library replaces them, is in ``tasks.triage.comment``'s docstring (rules 1-8).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

TRUNCATED = "(... truncated)"

HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_IMAGE = re.compile(r"!\[([^\[\]\n]*)\]\([^()\n]*\)")
_LINK = re.compile(r"\[([^\[\]\n]*)\]\([^()\n]*\)")
_REFERENCE = re.compile(r"!?\[([^\[\]\n]*)\]\[[^\[\]\n]*\]")
_DEFINITION = re.compile(r"^[ \t>]*\[[^\]\n]+\]:.*$", re.M)
_SCHEME = re.compile(r"(?i)([a-z][a-z0-9+.-]{0,31}):(?=//)")
_WWW = re.compile(r"(?i)www\.")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_REFERENCE_NUMBER = re.compile(r"#(?=[0-9])")
_GH_REFERENCE = re.compile(r"(?i)(gh)-(?=[0-9])")
LEADING_SLASH = re.compile(r"^((?:[^\S\n]|>|(?:[-*+]|[0-9]{1,9}[.)])(?=[^\S\n]))*)/", re.M)
"""A ``/`` starting a line after any mix of whitespace (Unicode spaces too), ``>`` quotes and list
markers: where a chat-ops bot (``/approve``, ``/lgtm``, ``/retest``) looks for a command."""
_HALF_ESCAPE = re.compile(r"(?:\\|&(?:l|lt|a|am|amp)?)\Z")


def visible(text: str) -> str:
    """Newlines and tabs kept; other control characters and every format character (Cc, Cf) dropped;
    CR, CRLF, U+2028 and U+2029 become ``\\n`` (JavaScript's multiline ``^`` starts a line after them)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf"))


def unlink(text: str) -> str:
    """Images become their alt text, links their text; reference definitions are emptied (the line
    stays, so line numbers do not move)."""
    text = _IMAGE.sub(lambda m: m.group(1), text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _REFERENCE.sub(lambda m: m.group(1), text)
    return _DEFINITION.sub("", text)


def neutralise(text: str) -> str:
    """Rules 3-7 of ``tasks.triage.comment``: backslashes doubled, then ``[`` escaped (no link or
    image), ``&`` and ``<`` as character references (no entity for GitHub's filters to decode, no raw
    HTML, no autolink, no HTML comment, hence no marker), URL schemes and ``www.`` defanged, ``@``
    before a letter or digit the full-width ``＠``, ``#`` / ``GH-`` before a digit ``＃`` / ``GH－``.
    Keeps every newline where it was."""
    text = text.replace("\\", "\\\\").replace("[", "\\[").replace("&", "&amp;").replace("<", "&lt;")
    text = _SCHEME.sub(r"\1\\[:]", text)
    text = _WWW.sub(r"www\\[.]", text)
    text = _MENTION.sub("\uff20", text)
    text = _REFERENCE_NUMBER.sub("\uff03", text)
    return _GH_REFERENCE.sub("\\1\uff0d", text)


def escape_leading_slash(text: str, escape: Callable[[str], str] = lambda lead: f"{lead}\\/") -> str:
    """Every line-leading ``/`` (:data:`LEADING_SLASH`) rewritten by ``escape(lead)`` (``lead``: what
    stood before the ``/``); by default ``\\/``, which renders as ``/``."""
    return LEADING_SLASH.sub(lambda m: escape(m.group(1)), text)


def bounded(text: str, max_chars: int, max_lines: int | None = None) -> str:
    """``text`` cut to ``max_lines`` lines and ``max_chars`` characters (the note included), never
    leaving half an escape, with a visible truncation note when cut."""
    lines = text.split("\n")
    cut = (max_lines is not None and len(lines) > max_lines) or len(text) > max_chars
    if cut:
        text = "\n".join(lines[:max_lines])[:max_chars - len(TRUNCATED) - 1]
        text = _HALF_ESCAPE.sub("", text)
    return f"{text.rstrip()}\n{TRUNCATED}" if cut else text.rstrip()
