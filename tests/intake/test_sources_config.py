"""``sources:`` configuration: kinds, secrets (rotation, legacy key, env override), mapping."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sluicegate.config.settings import DEFAULT_CONFIG_FILE, ConfigError, load_settings


def _load(tmp_path: Path, sources: dict, env: dict | None = None):
    tree = yaml.safe_load(DEFAULT_CONFIG_FILE.read_text())
    tree["sources"] = sources
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(tree))
    return load_settings(cfg, env=env or {})


MAPPING = {"owner": "a", "repo": "b", "number": "c", "version": "d", "actionable_types": ["t"]}
WHSEC = "whsec_Z2H18uWJB4g1CYE08ZfZgiD1SzVLwCa0fJZJbs4sl1A="
X, Y = "x-secret-0123456789", "y-secret-0123456789"
NEW, OLD = "new-secret-0123456789", "old-secret-0123456789"


def test_repo_config_has_one_source_of_each_kind_naming_the_same_work():
    s = load_settings(DEFAULT_CONFIG_FILE, env={})
    assert {name: src.kind for name, src in s.sources.items()} == {
        "github": "github", "stdhooks": "standard-webhooks", "events": "cloudevents"}
    assert len(s.sources["stdhooks"].secrets) == 2
    assert all(src.max_age_seconds == 3600 for src in s.sources.values())


def test_legacy_single_secret_is_a_one_element_list(tmp_path):
    s = _load(tmp_path, {"github": {"kind": "github", "tenant": "acme", "repositories": ["acme/*"], "secret": X}})
    assert s.sources["github"].secret_values() == [X] and s.sources["github"].secret == X


@pytest.mark.parametrize("legacy", [True, False])
def test_env_secret_replaces_the_list(tmp_path, legacy):
    src = {"kind": "github", "tenant": "acme", "repositories": ["acme/*"]} | ({"secret": X} if legacy else {"secrets": [X, Y]})
    s = _load(tmp_path, {"github": src}, env={"SLUICEGATE_GITHUB_WEBHOOK_SECRET": NEW})
    assert s.sources["github"].secret_values() == [NEW]


def test_rotation_from_the_environment_sets_the_whole_list(tmp_path):
    src = {"kind": "github", "tenant": "acme", "repositories": ["acme/*"], "secrets": [X]}
    s = _load(tmp_path, {"github": src}, env={"SLUICEGATE__SOURCES__GITHUB__SECRETS": f"[{NEW}, {OLD}]"})
    assert s.sources["github"].secret_values() == [NEW, OLD]


@pytest.mark.parametrize("source, path, text", [
    ({"kind": "github", "tenant": "acme", "repositories": ["acme/*"], "secret": X, "secrets": [Y]}, "sources.s", "either secret or secrets"),
    ({"kind": "github", "tenant": "acme", "repositories": ["acme/*"], "secrets": []}, "sources.s.secrets", "at least 1"),
    ({"kind": "github", "tenant": "acme", "repositories": ["acme/*"], "secrets": [X, "short"]}, "sources.s.secrets.1", "at least 16 characters"),
    ({"kind": "github", "tenant": "acme", "repositories": ["acme/*"], "secrets": ["  "]}, "sources.s.secrets.0", "must not be empty"),
    ({"kind": "gitlab", "tenant": "acme", "repositories": ["acme/*"], "secrets": [X]}, "sources.s.kind", "github"),
    ({"kind": "standard-webhooks", "tenant": "acme", "repositories": ["acme/*"], "secrets": [WHSEC, "plain-secret-0123456789"], "mapping": MAPPING},
     "sources.s.secrets", "secrets[1] must be whsec_"),
    ({"kind": "standard-webhooks", "tenant": "acme", "repositories": ["acme/*"], "secrets": ["whsec_dHdlbHZlIGJ5dGVz"], "mapping": MAPPING},
     "sources.s.secrets", "at least 24 bytes"),
    ({"kind": "cloudevents", "tenant": "acme", "repositories": ["acme/*"], "secrets": [X]}, "sources.s.mapping", "needs a mapping"),
    ({"kind": "github", "tenant": "acme", "repositories": ["acme/*"], "secrets": [X], "mapping": MAPPING}, "sources.s.mapping", "remove mapping"),
    ({"kind": "cloudevents", "tenant": "acme", "repositories": ["acme/*"], "secrets": [X], "mapping": MAPPING | {"owner": "a..b"}},
     "sources.s.mapping.owner", "empty segment"),
    ({"kind": "cloudevents", "tenant": "acme", "repositories": ["acme/*"], "secrets": [X], "mapping": MAPPING | {"actionable_types": []}},
     "sources.s.mapping.actionable_types", "at least 1"),
    ({"kind": "cloudevents", "tenant": "acme", "repositories": ["acme/*"], "secrets": [X], "mapping": MAPPING | {"type": "kind"}},
     "sources.s.mapping", "remove mapping.type"),
    ({"kind": "cloudevents", "tenant": "acme", "repositories": ["acme/*"], "secrets": [X], "mapping": MAPPING | {"versoin": "d"}},
     "sources.s.mapping.versoin", "Extra inputs"),
    ({"kind": "github", "tenant": "acme", "repositories": ["acme/*"], "secrets": [X], "max_age_seconds": 0}, "sources.s.max_age_seconds", "greater"),
])
def test_invalid_sources_name_their_path(tmp_path, source, path, text):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, {"s": source})
    assert f"  {path}:" in str(info.value) and text in str(info.value), str(info.value)
