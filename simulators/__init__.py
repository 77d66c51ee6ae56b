"""Simulators: real HTTP servers that stand in for outside systems.

* :mod:`simulators.forge` -- a subset of GitHub's REST API (pull requests,
  diffs, issue comments), ``python -m simulators.forge``.
* :mod:`simulators.model` -- an OpenAI-compatible Chat Completions endpoint
  driven by a deterministic reviewer policy, ``python -m simulators.model``.

Both are deterministic, count every request and accept fault injection via
a ``/_sim/`` control API. They are test doubles: never point them at, or
mistake them for, the real services.
"""

from simulators._server import ServerThread, free_port, serve_in_thread

__all__ = ["ServerThread", "free_port", "serve_in_thread"]
