"""A spinner with a progress line for long operations, shown only when stdout is a terminal.

The demo's wait and the drills use it. In a pipe, a log or a test the spinner is absent and
``update`` does nothing, so captured output holds only what the command printed. Lines printed
while it spins appear above it (Rich's live display redirects stdout).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from rich.console import Console


class Status(Protocol):
    def update(self, text: str) -> None: ...


class _Silent:
    def update(self, text: str) -> None:
        pass


SILENT: Status = _Silent()
"""A status that shows nothing (off a terminal, or where a caller has no spinner running)."""


class _Spinning:
    """Keeps the current text; ``show`` redraws it with the elapsed time when ticking."""

    def __init__(self, status, text: str, timed: bool) -> None:
        self._status, self._text, self._timed, self._started = status, text, timed, time.monotonic()

    def update(self, text: str) -> None:
        self._text = text
        self.show()

    def show(self) -> None:
        elapsed = f" ({time.monotonic() - self._started:.0f}s)" if self._timed else ""
        self._status.update(self._text + elapsed)


@contextmanager
def spinner(text: str, console: Console | None = None, tick: float | None = None) -> Iterator[Status]:
    """A Rich status reading ``text``; ``update`` replaces the text. With ``tick`` (seconds) the
    elapsed time is appended and refreshed, so a step that prints nothing still shows it is alive."""
    if not sys.stdout.isatty():
        yield _Silent()
        return
    done = threading.Event()
    with (console or Console()).status(text) as status:
        spinning = _Spinning(status, text, bool(tick))

        def beat() -> None:
            while not done.wait(tick):
                spinning.show()

        ticker = threading.Thread(target=beat, name="spinner-tick", daemon=True) if tick else None
        if ticker is not None:
            ticker.start()
        try:
            yield spinning
        finally:
            done.set()
            if ticker is not None:
                ticker.join()
