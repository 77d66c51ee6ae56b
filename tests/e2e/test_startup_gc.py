"""The API's and the worker's entry points freeze what start-up built out of full garbage collections
(``sluicegate/services/startup_gc.py``), and say how much in their log. Real parts: both processes as
the dev stack starts them (``python -m webhook_api``, ``worker.py``); their log files.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from sluicegate.devstack import wait_for

pytestmark = pytest.mark.e2e

FROZE = re.compile(r"froze (\d+) start-up objects out of full garbage collections")


def _frozen(log: str) -> int:
    found = FROZE.search(log)
    return int(found.group(1)) if found else 0


def test_both_processes_freeze_their_start_up_objects(stack_factory):
    stack = stack_factory()
    api, worker = stack.processes["webhook-api"], stack.processes["worker"]
    assert wait_for(lambda: _frozen(api.log_path.read_text()) > 0 and _frozen(worker.log_path.read_text()) > 0,
                    timeout=60), f"API log:\n{api.tail()}\nworker log:\n{worker.tail()}"
    # a server's start-up leaves tens of thousands of objects alive (modules, models, the SDK's types)
    assert min(_frozen(api.log_path.read_text()), _frozen(worker.log_path.read_text())) > 10_000


def test_the_helper_freezes_and_a_test_process_is_never_frozen():
    assert __import__("gc").get_freeze_count() == 0  # create_app(freeze_gc=False) in every test's app
    code = "from sluicegate.services.startup_gc import freeze_after_startup as f; import gc; print(f(), gc.get_freeze_count())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) == int(out[1]) > 0
