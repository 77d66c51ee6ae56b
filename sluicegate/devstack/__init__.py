"""Start and stop the embedded dev stack (``make up``, ``make demo``, end-to-end tests)."""

from sluicegate.devstack._dev_server import dev_server_argv, temporal_binary
from sluicegate.devstack._processes import ManagedProcess, StackError, free_port, port_in_use
from sluicegate.devstack._stack import STARTUP_SECONDS, DevStack, isolated_overrides, start_isolated, wait_for
from sluicegate.devstack._http import StackHttp

__all__ = ["STARTUP_SECONDS", "DevStack", "StackHttp", "isolated_overrides", "start_isolated", "ManagedProcess", "StackError", "dev_server_argv", "free_port", "port_in_use",
           "temporal_binary", "wait_for"]
