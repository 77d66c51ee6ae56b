"""Tenancy in the configuration: refused at load, with the dotted path, before any process starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sluicegate.config.settings import DEFAULT_CONFIG_FILE, ConfigError, load_settings
from sluicegate.config.tenancy import configured_tenants, scope_rules
from tests.support.tenants import two_tenants

EVE_TOKEN, ROOT_TOKEN = "test-token-eve-0123456789", "test-token-root-0123456789"  # long enough to be valid


def _load(tmp_path: Path, change, env: dict | None = None):
    tree = yaml.safe_load(DEFAULT_CONFIG_FILE.read_text())
    change(tree)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(tree))
    return load_settings(cfg, env=env or {})


def _refused(tmp_path: Path, change) -> str:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, change)
    return str(info.value)


def test_a_tenant_exists_by_its_sources_and_its_scope_is_their_union():
    s = load_settings(DEFAULT_CONFIG_FILE, env=two_tenants())
    assert configured_tenants(s) == {"acme", "beta"}
    rules = scope_rules(s)
    assert rules.tenant_globs("acme") == ("acme/*", "shared/*") and rules.tenant_globs("beta") == ("beta/*", "shared/*")
    assert rules.by_source["stdhooks"] == ("acme/*",)  # a source keeps its own, narrower list


def test_the_old_single_role_is_refused_with_the_new_shape(tmp_path):
    text = _refused(tmp_path, lambda t: t["actors"].update(eve={"token": EVE_TOKEN, "role": "admin"}))
    assert "actors.eve" in text and "tenants: {<tenant>: admin}" in text


@pytest.mark.parametrize("grants, problem", [
    ({"globex": "admin"}, "actors.eve.tenants: 'globex' is not a tenant of any source"),
    ({"acme": "owner"}, "actors.eve.tenants.acme"),
    ({}, "actors.eve.tenants"),
])
def test_an_actor_is_granted_known_roles_in_known_tenants(tmp_path, grants, problem):
    text = _refused(tmp_path, lambda t: t["actors"].update(eve={"token": EVE_TOKEN, "tenants": grants}))
    assert problem in text, text


def test_a_platform_wide_grant_is_accepted(tmp_path):
    s = _load(tmp_path, lambda t: t["actors"].update(root={"token": ROOT_TOKEN, "tenants": {"*": "admin"}}))
    assert s.actors["root"].tenants == {"*": "admin"}


@pytest.mark.parametrize("change, problem", [
    (lambda t: t["sources"]["github"].pop("repositories"), "sources.github.repositories: Field required"),
    (lambda t: t["sources"]["github"].update(repositories=[]), "sources.github.repositories"),
    (lambda t: t["sources"]["github"].update(repositories=["acme"]), "exactly one '/'"),
    (lambda t: t["sources"]["github"].update(tenant="Acme Corp"), "sources.github.tenant"),
    (lambda t: t["schedules"]["scan-acme"].update(repos=["acme/api", "globex/site"]),
     "schedules.scan-acme.repos: globex/site not in tenant 'acme''s scope"),
    (lambda t: t["schedules"]["scan-acme"].update(tenant="globex"), "schedules.scan-acme.tenant: 'globex'"),
    (lambda t: t["goals"].update(tenant="globex"), "goals.tenant: 'globex'"),
])
def test_scope_problems_name_their_path(tmp_path, change, problem):
    text = _refused(tmp_path, change)
    assert problem in text, text


def test_source_globs_are_stored_lower_case(tmp_path):
    s = _load(tmp_path, lambda t: t["sources"]["github"].update(repositories=["ACME/Api-*"]))
    assert s.sources["github"].repositories == ["acme/api-*"]


def test_an_environment_override_can_widen_a_source(tmp_path):
    s = _load(tmp_path, lambda t: None, env={"SLUICEGATE__SOURCES__GITHUB__REPOSITORIES": json.dumps(["*/*"])})
    assert scope_rules(s).tenant_covers("acme", "anyone", "anything")
