"""Workflow modules compiled once per process, for the sandbox's re-import of them on every run.

Temporal's sandbox imports a workflow's module afresh for each workflow run (its globals must not
leak between runs). Without bytecode on disk — ``PYTHONDONTWRITEBYTECODE=1``, a read-only tree —
every such import compiles the source again: 1.9 ms of the 4.1–4.6 ms an ``AgentLoop`` sandbox costs
(issue 11 item 6, ``docs/performance.md``). :func:`cache_module_code` gives the module's directory an
ordinary ``FileFinder`` whose source loader keeps the code it compiled, keyed by the source bytes it
read (an edited file compiles again). The module still executes from the top in each sandbox, with its
own globals and the sandbox's restrictions: only the compile is shared, as a ``.pyc`` would share it.
"""

from __future__ import annotations

import functools
import sys
from importlib.machinery import (
    BYTECODE_SUFFIXES, EXTENSION_SUFFIXES, SOURCE_SUFFIXES, ExtensionFileLoader, FileFinder, SourceFileLoader,
    SourcelessFileLoader,
)
from types import CodeType, ModuleType
from typing import Any

_cached_dirs: set[str] = set()


@functools.lru_cache(maxsize=64)
def compiled_source(data: bytes, path: str) -> CodeType:
    """``data`` compiled as ``SourceFileLoader`` compiles a module's source, once per (source, path)."""
    return compile(data, path, "exec", dont_inherit=True)


class CachedSourceLoader(SourceFileLoader):
    """``SourceFileLoader`` whose compile step is :func:`compiled_source` (bytecode files still win)."""

    def source_to_code(self, data: Any, path: Any, *, _optimize: int = -1) -> CodeType:  # type: ignore[override]
        if _optimize != -1:
            return super().source_to_code(data, path, _optimize=_optimize)
        return compiled_source(bytes(data), str(path))


def cache_module_code(module: ModuleType) -> bool:
    """Serve later imports from ``module``'s package directory through :class:`CachedSourceLoader`.
    False (nothing changed) for a module that is not a package's source file found by the standard
    ``FileFinder`` (a zip, a frozen or ``__main__`` module, a custom importer)."""
    package = sys.modules.get(module.__name__.rpartition(".")[0])
    spec = getattr(module, "__spec__", None)
    if package is None or spec is None or type(spec.loader) not in (SourceFileLoader, CachedSourceLoader):
        return False
    done = False
    for directory in getattr(package, "__path__", []):
        if directory in _cached_dirs:
            done = True
            continue
        if type(sys.path_importer_cache.get(directory)) is not FileFinder:
            continue
        sys.path_importer_cache[directory] = FileFinder(
            directory, (ExtensionFileLoader, EXTENSION_SUFFIXES), (CachedSourceLoader, SOURCE_SUFFIXES),
            (SourcelessFileLoader, BYTECODE_SUFFIXES))
        _cached_dirs.add(directory)
        done = True
    return done
