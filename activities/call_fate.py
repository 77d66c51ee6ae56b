"""Did a failed model call cost money? Only a failure *proven* to precede billing says no.

* ``unbilled`` — the request never reached the provider (the TCP connection was refused or
  could not be opened, no pooled connection was free), or the provider refused it with a 4xx
  (auth, validation, rate limit: providers do not bill refusals). The reservation is released.
* ``unknown`` — anything after the request may have reached the provider: a read timeout, a
  connection reset mid-answer, a 5xx (the model may have run), a cancelled or crashed
  attempt, an answer we could not parse. The reservation is charged at its estimate: a crash
  must never turn a billed call into a free one, and over-counting is bounded by the estimate.

The openai client wraps transport errors (``APIConnectionError``/``APITimeoutError``) around
the exception of its HTTP library (``httpx2`` for openai 3.x, ``httpx`` before), which tells the
two apart.
"""

from __future__ import annotations

from enum import StrEnum

import httpx
import httpx2
import openai

NEVER_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout,
              httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
"""Transport failures raised before any byte of the request was written."""


class Fate(StrEnum):
    UNBILLED = "unbilled"
    UNKNOWN = "unknown"


def fate_of(exc: BaseException) -> tuple[Fate, str]:
    """The fate of a call that raised ``exc``, and a few words for the reservation's note."""
    if isinstance(exc, openai.APIStatusError):
        if 400 <= exc.status_code < 500:
            return Fate.UNBILLED, f"refused with {exc.status_code} (not billed)"
        return Fate.UNKNOWN, f"answered {exc.status_code} (the model may have run)"
    if isinstance(exc, (openai.APIConnectionError, openai.APITimeoutError)):
        cause = exc.__cause__
        if isinstance(cause, NEVER_SENT):
            return Fate.UNBILLED, f"never sent ({type(cause).__name__})"
        return Fate.UNKNOWN, f"no answer after sending ({type(cause or exc).__name__})"
    return Fate.UNKNOWN, f"attempt ended by {type(exc).__name__} after the request may have been sent"
