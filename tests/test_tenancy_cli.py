"""Operator commands under tenancy: kill scopes take today's work keys, goals stay in their tenant's scope."""

from __future__ import annotations

import pytest
import typer

from sluicegate.config.settings import DEFAULT_CONFIG_FILE, load_settings
from sluicegate.cli.operator import _scope, running_agents_query
from sluicegate.cli.trigger import goal_request


def test_a_kill_on_a_work_key_needs_the_tenant_in_the_key():
    assert _scope("acme/github:acme/api#42:review", None, False) == ("work_key", "acme/github:acme/api#42:review")
    with pytest.raises(typer.BadParameter, match="start with their tenant"):
        _scope("github:acme/api#42:review", None, False)
    with pytest.raises(typer.BadParameter, match="not a work key"):
        _scope('acme/github:acme/api#42:review" OR x = "y', None, False)  # never reaches a visibility query
    with pytest.raises(typer.BadParameter, match="not a tenant name"):
        _scope(None, 'acme" OR x = "y', False)


def test_the_kill_signal_also_reaches_a_run_admitted_before_the_upgrade_of_that_tenant_only():
    query = running_agents_query("work_key", "acme/github:acme/api#42:review")
    assert 'SluicegateWorkKey = "acme/github:acme/api#42:review"' in query
    assert '(SluicegateWorkKey = "github:acme/api#42:review" AND SluicegateTenant = "acme")' in query


def test_a_goal_is_started_only_inside_its_tenants_scope():
    s = load_settings(DEFAULT_CONFIG_FILE, env={})
    req = goal_request(s, "acme/api", 42, "ready", None, None, None, None)
    assert (req.tenant, req.owner, req.repo) == ("acme", "acme", "api")
    with pytest.raises(typer.BadParameter, match="not in tenant 'acme''s scope"):
        goal_request(s, "globex/site", 1, "ready", None, None, None, None)
    with pytest.raises(typer.BadParameter, match="'globex' is not a tenant"):
        goal_request(s, "acme/api", 42, "ready", None, None, None, "globex")
