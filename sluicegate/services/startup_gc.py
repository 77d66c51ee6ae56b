"""Keep what start-up built out of the garbage collector's full passes (``gc.freeze``).

CPython's full collection (generation 2) walks every tracked object, and most of a server's are what
start-up built and never frees: modules, SQLAlchemy and pydantic models, the Temporal SDK's types.
Each full pass stops the process's event loop. Measured 2026-12-07 in the webhook API under admissions
(``bench.intake_bench``, 16 in flight): 2 full collections of 105–109 ms each in a 70 s run, every
request in flight stalled that long; with :func:`freeze_after_startup` they took 11 ms each.
``gc.freeze`` moves every object alive now into a permanent generation the collector skips; a frozen
object is still freed when its reference count drops to zero, only cycles among frozen objects stay.
The ``collect`` first keeps start-up's own garbage out of the frozen set. (Python's documentation
describes ``gc.freeze`` for servers that fork, against copy-on-write; here it is for the shorter full
passes, measured in the API only.) Called once by the API's and the worker's entry points, after their
start-up, never in a test process (it would freeze every test's objects).
"""

from __future__ import annotations

import gc


def freeze_after_startup() -> int:
    """Collect, then freeze every object alive; returns how many are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
