"""One filled stack and one browser for every browser test of the console (package scope:
starting the stack and running its reviews is most of the time these tests take)."""

from __future__ import annotations

import pytest

from sluicegate.devstack import StackHttp
from tests.console.browser import SCREENSHOTS, Browser, require_browser
from tests.console.stack import Filled, fill, start


@pytest.fixture(scope="package")
def filled(tmp_path_factory) -> Filled:
    require_browser()
    stack = start(tmp_path_factory.mktemp("console-stack"))
    try:
        yield fill(stack)
    finally:
        stack.stop()


@pytest.fixture(scope="package")
def browser(filled: Filled) -> Browser:
    b = Browser(StackHttp(filled.stack).api)
    print(f"\nconsole screenshots: {SCREENSHOTS}")
    yield b
    b.close()
