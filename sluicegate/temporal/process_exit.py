"""Leave a process that has used a Temporal client without the interpreter-teardown crash.

The Temporal SDK's Rust runtime keeps native threads that can outlive the interpreter;
at finalization one of them may touch the GIL and CPython aborts with
``PyGILState_Release: thread state ... must be current`` (temporalio/sdk-python#300),
turning a command that did its job into exit code -6. We run the ``atexit`` handlers
(span flush, etc.) and flush stdio ourselves, then leave with ``os._exit`` so the
teardown never runs. An expected failure (bad config, ledger or Temporal unreachable, see
``sluicegate.temporal.exit_codes``) ends with its one-line message and documented exit code instead
of a traceback; anything else is a bug: its traceback and exit code 70 (EX_SOFTWARE).
"""

from __future__ import annotations

import atexit
import os
import sys
import traceback
from typing import Callable, NoReturn


def exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # SystemExit("message") convention
    return 1


def run_then_exit(main: Callable[[], object]) -> NoReturn:
    """Run ``main`` (e.g. a Typer app) and end the process with its exit code, skipping teardown."""
    try:
        result = main()
        code = exit_code(result if isinstance(result, int) else None)
    except SystemExit as stop:
        code = exit_code(stop.code)
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # noqa: BLE001 - an expected failure gets one line; a bug keeps its traceback
        from sluicegate.temporal.exit_codes import BUG, report

        known = report(exc)
        if known is None:
            traceback.print_exc()
        code = BUG if known is None else known  # 1 means "the answer is no", never "it crashed"
    finally_exit(code)


def finally_exit(code: int) -> NoReturn:
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed pipe must not change the exit code
            pass
    os._exit(code)
