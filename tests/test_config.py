"""Config loading: YAML, ${VAR} substitution, environment overrides, validation errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluicegate.config.settings import DEFAULT_CONFIG_FILE, ConfigError, load_settings


def test_repo_config_loads_and_resolves_paths():
    s = load_settings(DEFAULT_CONFIG_FILE, env={})
    assert s.temporal.namespace == "sluicegate"
    assert s.ledger_url().startswith("sqlite:////") and s.ledger_url().endswith("var/ledger.sqlite")
    assert s.model.name in s.model.prices


def test_production_variables_override_the_file():
    env = {"TEMPORAL_ADDRESS": "prod.tmprl.cloud:7233", "TEMPORAL_NAMESPACE": "prod.acct",
           "TEMPORAL_API_KEY": "k", "SLUICEGATE_LEDGER_URL": "postgresql://db/sg", "OPENAI_BASE_URL": "https://x/v1",
           "FORGE_TOKEN": "ghs_x", "SLUICEGATE__BUDGETS__PER_TASK__MAX_USD": "1.5"}
    s = load_settings(DEFAULT_CONFIG_FILE, env=env)
    assert (s.temporal.address, s.temporal.namespace, s.temporal.api_key.get_secret_value()) == (
        "prod.tmprl.cloud:7233", "prod.acct", "k")
    assert s.ledger_url() == "postgresql://db/sg" and s.model.base_url == "https://x/v1"
    assert s.forge.token.get_secret_value() == "ghs_x" and s.budgets.per_task.max_usd == 1.5


def test_undefined_variable_fails_loudly(tmp_path: Path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(DEFAULT_CONFIG_FILE.read_text().replace("dev-webhook-secret", "${HOOK_SECRET}"))
    with pytest.raises(ConfigError, match="HOOK_SECRET"):
        load_settings(cfg, env={})
    assert load_settings(cfg, env={"HOOK_SECRET": "x-secret-0123456789"}).sources["github"].secret == \
        "x-secret-0123456789"


def test_unknown_key_names_its_path(tmp_path: Path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(DEFAULT_CONFIG_FILE.read_text().replace("  max_body_bytes:", "  max_bdy_bytes:"))
    with pytest.raises(ConfigError, match="webhook_api.max_bdy_bytes"):
        load_settings(cfg, env={})


def test_well_known_names_beat_generic_and_database_url():
    env = {"DATABASE_URL": "postgresql://a/x", "SLUICEGATE__LEDGER__URL": "postgresql://b/x",
           "SLUICEGATE_LEDGER_URL": "postgresql://c/x"}
    assert load_settings(DEFAULT_CONFIG_FILE, env=env).ledger_url() == "postgresql://c/x"
    del env["SLUICEGATE_LEDGER_URL"]
    assert load_settings(DEFAULT_CONFIG_FILE, env=env).ledger_url() == "postgresql://b/x"
