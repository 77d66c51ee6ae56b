"""Tenancy's pure rules: the work key, repository scope globs, which tenant an actor acts in."""

from __future__ import annotations

import pytest

from intake.actors import choose_tenant, role_in
from intake.envelope import PullRequestRef, TriggerKind
from intake.identity import parse_work_key, review_candidate, review_work_key, with_tenant, workflow_id_for
from intake.scope import ScopeRules, check_glob, repository_in_scope, repository_matches

REF = PullRequestRef("Acme", "API", 42)


def test_the_work_key_starts_with_the_tenant_and_parses_back():
    key = review_work_key("acme", REF)
    assert key == "acme/github:acme/api#42:review" and workflow_id_for(key) == "agent/acme/github:acme/api#42:review"
    parts = parse_work_key(key)
    assert (parts.tenant, parts.forge, parts.target, parts.task) == ("acme", "github", PullRequestRef("acme", "api", 42),
                                                                      "review")
    assert review_work_key("beta", REF) != key  # one pull request, two tenants: two work items
    cand = review_candidate("beta", REF, "sha1", draft=True)
    assert (cand.work_key, cand.tenant, cand.input_version, cand.draft) == (review_work_key("beta", REF), "beta",
                                                                            "sha1", True)


@pytest.mark.parametrize("tenant", ["", "Acme", "a/b", "a:b", "-x", "x" * 64, "a b", "a\x00"])
def test_a_tenant_name_that_would_make_the_key_ambiguous_is_refused(tenant):
    with pytest.raises(ValueError, match="not a tenant name"):
        review_work_key(tenant, REF)


def test_a_key_written_before_tenancy_parses_without_a_tenant_and_is_upgraded_once():
    legacy = "github:acme/api#42:review"
    assert parse_work_key(legacy).tenant is None
    assert with_tenant(legacy, "acme") == "acme/github:acme/api#42:review"
    assert with_tenant("acme/github:acme/api#42:review", "beta") == "acme/github:acme/api#42:review"  # never twice
    assert with_tenant(legacy, "") == legacy  # histories recorded before the tenant field: left alone


@pytest.mark.parametrize("text", ["", "acme", "acme/api#x:review", 'acme/github:a"b/c#1:review',
                                  "acme/github:acme/api#0:review", "acme/github:acme/api/x#1:review"])
def test_anything_else_is_not_a_work_key(text):
    with pytest.raises(ValueError, match="not a work key"):
        parse_work_key(text)


@pytest.mark.parametrize("glob, owner, repo, matches", [
    ("acme/*", "acme", "api", True),
    ("acme/*", "ACME", "Api", True),           # GitHub names are case-insensitive
    ("acme/*", "acme-evil", "api", False),     # * never crosses the /
    ("acme*/*", "acme-evil", "api", True),
    ("acme/api-?", "acme", "api-1", True),
    ("acme/api-?", "acme", "api-10", False),
    ("*/*", "anyone", "anything", True),
    ("acme/api", "acme", "api2", False),
    ("acme/a.i", "acme", "aXi", False),        # '.' is literal, not a regex wildcard
])
def test_globs_match_owner_and_repository_separately(glob, owner, repo, matches):
    assert repository_matches(owner, repo, check_glob(glob)) is matches


@pytest.mark.parametrize("glob", ["acme", "acme/*/x", "/api", "acme/", "acme/[ab]pi", "acme/**", "../api", "acme/.."])
def test_unreadable_globs_are_refused(glob):
    with pytest.raises(ValueError):
        check_glob(glob)


def test_a_webhook_is_held_to_its_source_and_every_other_trigger_to_its_tenant():
    rules = ScopeRules(by_source={"github": ("acme/api",), "hooks": ("acme/*",)}, by_tenant={"acme": ("acme/*",)})
    web = PullRequestRef("acme", "web", 1)
    assert rules.refusal(TriggerKind.EVENT, "hooks", "acme", web) is None
    assert "source 'github' serves (acme/api)" in rules.refusal(TriggerKind.EVENT, "github", "acme", web)
    for kind in (TriggerKind.MANUAL, TriggerKind.SCHEDULE, TriggerKind.GOAL):
        assert rules.refusal(kind, "manual", "acme", web) is None
        assert "tenant 'beta'" in rules.refusal(kind, "manual", "beta", web)  # no scope: nothing in it
    assert "none declared" in rules.refusal(TriggerKind.EVENT, "unknown", "acme", web)
    assert ScopeRules.everything().refusal(TriggerKind.EVENT, "unknown", "x", web) is None
    assert repository_in_scope("acme", "web", ()) is False


def test_roles_are_per_tenant_and_star_is_every_tenant():
    grants = {"acme": "operator", "*": "admin"}
    assert role_in(grants, "acme") == "admin"  # the stronger grant counts
    assert role_in({"acme": "admin"}, "beta") is None
    assert role_in({"*": "operator"}, "beta") == "operator"


TENANTS = {"acme", "beta"}


@pytest.mark.parametrize("grants, requested, tenant, role, ambiguous", [
    ({"acme": "operator"}, None, "acme", "operator", False),      # one tenant: implied
    ({"acme": "operator"}, "acme", "acme", "operator", False),
    ({"acme": "operator"}, "beta", None, None, False),            # not its tenant
    ({"acme": "operator"}, "nobody", None, None, False),          # not a tenant at all
    ({"acme": "operator", "beta": "admin"}, None, None, None, True),
    ({"acme": "operator", "beta": "admin"}, "beta", "beta", "admin", False),
    ({"*": "admin"}, None, None, None, True),                     # platform-wide: must name one
    ({"*": "admin"}, "beta", "beta", "admin", False),
    ({"*": "admin"}, "nobody", None, None, False),
    ({"gone": "admin"}, None, None, None, False),                 # granted only a tenant that no longer exists
])
def test_the_tenant_of_a_manual_trigger_comes_from_the_actor(grants, requested, tenant, role, ambiguous):
    choice = choose_tenant("x", grants, requested, TENANTS)
    assert (choice.tenant, choice.role, choice.ambiguous) == (tenant, role, ambiguous)
    assert (choice.refusal is None) == (tenant is not None)
