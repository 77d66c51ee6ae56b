"""A second tenant for tests: ``beta``, with its own GitHub source and actors, sharing one owner with ``acme``.

Applied as environment overrides on top of temporal-dev.yaml (JSON is YAML), so the API,
worker and CLI processes of an end-to-end stack read the same configuration.
"""

from __future__ import annotations

import json

SHARED_OWNER = "shared"
"""Repositories of this owner are served by both tenants' GitHub sources."""
BETA_SOURCE, BETA_SECRET = "beta", "beta-webhook-secret"
"""Tenant beta's GitHub source (``POST /webhooks/beta``) and its secret."""
TOKENS = {
    "bob": "test-token-bob-admin-of-beta",         # admin in beta only
    "dana": "test-token-dana-acme-op-beta-admin",  # operator in acme, admin in beta
    "root": "test-token-root-platform-admin",      # admin in every tenant ("*")
}
GRANTS = {"bob": {"beta": "admin"}, "dana": {"acme": "operator", "beta": "admin"}, "root": {"*": "admin"}}


def two_tenants() -> dict[str, str]:
    """Overrides adding tenant ``beta`` (source ``beta``: ``beta/*`` and ``shared/*``) and the
    actors bob, dana and root; acme's ``github`` source also serves ``shared/*``."""
    env = {
        "SLUICEGATE__SOURCES__GITHUB__REPOSITORIES": json.dumps(["acme/*", f"{SHARED_OWNER}/*"]),
        f"SLUICEGATE__SOURCES__{BETA_SOURCE.upper()}": json.dumps(
            {"kind": "github", "tenant": "beta", "secrets": [BETA_SECRET],
             "repositories": ["beta/*", f"{SHARED_OWNER}/*"]}),
    }
    for name, token in TOKENS.items():
        env[f"SLUICEGATE__ACTORS__{name.upper()}"] = json.dumps({"token": token, "tenants": GRANTS[name]})
    return env


def bearer(actor: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[actor]}"}
