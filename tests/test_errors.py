"""One exception base: every exception class Sluicegate defines derives from ``SluicegateError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from sluicegate.errors import SluicegateError

PACKAGES = ["activities", "console", "intake", "ledger", "sluicegate", "webhook_api", "workflows"]


def _project_exceptions() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in PACKAGES:
        pkg = importlib.import_module(name)
        for mod in pkgutil.walk_packages(pkg.__path__, prefix=f"{name}."):
            if mod.name.endswith("__main__") or ".migrations" in mod.name:
                continue
            module = importlib.import_module(mod.name)
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ == module.__name__ and issubclass(cls, BaseException):
                    found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[k] for k in sorted(found)]


EXCEPTIONS = _project_exceptions()


def test_the_project_defines_exceptions():
    assert len(EXCEPTIONS) >= 14


@pytest.mark.parametrize("cls", EXCEPTIONS, ids=[f"{c.__module__}.{c.__qualname__}" for c in EXCEPTIONS])
def test_exception_derives_from_the_one_base(cls: type[BaseException]):
    assert cls is SluicegateError or issubclass(cls, SluicegateError)
