"""Startup refusals for ambiguous or unbounded settings (finding 10): actor tokens unique, source
names unique (also in the YAML, where a repeated key would silently win), secrets unique across
sources and actors, ``max_age_seconds`` in (0, 7 days]. Each error names the settings, never a value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluicegate.config.settings import DEFAULT_CONFIG_FILE, ConfigError, load_settings

TOKEN = "shared-token-0123456789-abcdef"


def _refused(env: dict[str, str], *names: str, path: Path | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(path or DEFAULT_CONFIG_FILE, env=env)
    text = str(caught.value)
    for name in names:
        assert name in text, text
    assert TOKEN not in text and "dev-webhook-secret" not in text
    return text


def _actor(token: str, tenants: dict[str, str] | None = None) -> str:
    return json.dumps({"token": token, "tenants": tenants or {"acme": "operator"}})


def test_two_actors_with_one_token_are_refused():
    _refused({"SLUICEGATE__ACTORS__MALLORY": _actor(TOKEN), "SLUICEGATE__ACTORS__ROOTISH": _actor(TOKEN, {"*": "admin"})},
             "actors.mallory.token", "actors.rootish.token")


def test_a_secret_shared_by_two_sources_or_a_source_and_an_actor_is_refused():
    other = json.dumps({"kind": "github", "tenant": "globex", "repositories": ["globex/*"],
                        "secrets": ["dev-webhook-secret"]})
    _refused({"SLUICEGATE__SOURCES__GLOBEX": other}, "sources.github.secrets[0]", "sources.globex.secrets[0]")
    _refused({"SLUICEGATE__ACTORS__HOOKY": _actor("dev-cloudevents-token")}, "sources.events.secrets[0]",
             "actors.hooky.token")


def test_a_source_named_twice_in_the_yaml_is_refused(tmp_path: Path):
    text = DEFAULT_CONFIG_FILE.read_text()
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text.replace("sources:\n", "sources:\n  github:\n    kind: cloudevents\n    tenant: acme\n"
                                "    repositories: ['*/*']\n    secrets: ['attacker-chosen-token-01']\n", 1))
    _refused({}, "github", "more than once", path=cfg)


def test_source_names_differing_only_in_case_are_refused(tmp_path: Path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(DEFAULT_CONFIG_FILE.read_text().replace("sources:\n", "sources:\n  GitHub:\n    kind: github\n"
                   "    tenant: acme\n    repositories: ['acme/*']\n    secrets: ['another-token-0123456789']\n", 1))
    _refused({}, "sources.GitHub", "sources.github", path=cfg)


@pytest.mark.parametrize("value", ["0", "-5", "604801", "1e12", "null"])
def test_max_age_is_bounded(value):
    _refused({"SLUICEGATE__SOURCES__GITHUB__MAX_AGE_SECONDS": value}, "sources.github.max_age_seconds")


def test_the_shipped_config_passes():
    assert load_settings(DEFAULT_CONFIG_FILE, env={}).sources["github"].max_age_seconds == 3600


@pytest.mark.parametrize("name", ["manual", "Goal", "replay", "policy", "scan:nightly"])
def test_a_source_named_like_an_internal_trigger_source_is_refused(name: str):
    """Deliveries dedupe per (source, delivery id), in the ledger and in the in-process cache of
    answers (``intake/seen_deliveries.py``). A webhook source named ``manual`` whose sender picks its
    delivery ids (CloudEvents ``id``) sent ``acme:req-1`` and was answered tenant acme's manual
    trigger's receipt, then kept for a minute; sent first, it took that id and acme's manual request
    was answered as a repeat, never decided."""
    other = json.dumps({"kind": "github", "tenant": "globex", "repositories": ["globex/*"],
                        "secrets": ["globex-only-token-0123456789"]})
    _refused({f"SLUICEGATE__SOURCES__{name.upper()}": other}, "Sluicegate's own triggers")
