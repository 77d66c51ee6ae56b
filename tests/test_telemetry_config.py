"""``telemetry.prometheus``: listeners off by default; a bind address that is not ``host:port`` is
refused when the config loads, not when the process tries to listen."""

from __future__ import annotations

import pytest

from sluicegate.config.settings import ConfigError, load_settings

VAR = "SLUICEGATE__TELEMETRY__PROMETHEUS__WORKER_BIND"


def test_listeners_are_off_by_default():
    p = load_settings(env={}).telemetry.prometheus
    assert (p.api_bind, p.worker_bind, p.temporal_bind) == (None, None, None)


@pytest.mark.parametrize("bad", ["localhost", "127.0.0.1:99999", ":9465", "127.0.0.1:http"])
def test_a_bind_that_is_not_host_port_is_a_config_error(bad):
    with pytest.raises(ConfigError, match="worker_bind"):
        load_settings(env={VAR: bad})


def test_a_bind_is_taken_from_the_environment():
    assert load_settings(env={VAR: "0.0.0.0:19465"}).telemetry.prometheus.worker_bind == "0.0.0.0:19465"
