"""Tenancy: every work key starts with its tenant (``github:acme/api#42:review`` ->
``acme/github:acme/api#42:review``).

No schema change; existing rows are rewritten so dedupe, generations, fencing, capacity holds,
side effects, budget reservations, dead letters and kills go on matching new work:

* tables with their own ``tenant`` column (receipts, capacity_holds, deferred_items,
  dead_letters, credentials, work_items) take it from there;
* the others (work_versions, side_effects, budget_reservations, cancel_requests, kills on a
  work key, receipts without a tenant) take the tenant of the work item with the same old key —
  so they are rewritten first, and work_items last;
* a row whose tenant cannot be found (no tenant column value, no work item) keeps its old key:
  it is history only (a receipt of a key never admitted, a kill of a key never admitted).

Every table with a work key at this revision is listed above (``tests/ledger/test_tenancy_migration.py``
checks that against the schema, so a table added before this migration cannot be missed).

Left as they are, on purpose: operation keys (a hash of the old work key; a run admitted
before the upgrade still computes them from the old key it carries, so its in-flight effects
match), workflow ids — in work_versions and cancel_requests too — (they name the workflows that
really ran; the reconciler, the capacity reaper and ``starter.py cancel`` use the recorded id),
deferred items' JSON payloads (``intake/capacity/payload.py`` rebuilds the key from tenant and
target), dead letter ids.

Failure mode: a stored tenant name that is not a valid tenant name today (``TENANT_PATTERN``
in ``intake/identity.py``: upper case, ``/``, ``:``, empty...) would produce an ambiguous key;
the upgrade refuses before writing anything and names the values (docs/runbook.md, "Upgrade
to tenancy refuses a tenant name").

Revision ID: 0010_tenancy
Revises: 0011_retention (re-chained at merge: it runs after the trust, outcomes and retention
migrations, so it also rewrites cancel_requests from 0012_outcomes)
Create Date: 2026-12-02
"""
import re

import sqlalchemy as sa
from alembic import op

revision = "0010_tenancy"
down_revision = "0011_retention"
branch_labels = None
depends_on = None

# A copy, not an import: a migration must keep meaning what it meant when it was written.
_TENANT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_OWN_TENANT = ("receipts", "capacity_holds", "deferred_items", "dead_letters", "credentials")
_VIA_WORK_ITEM = ("work_versions", "side_effects", "budget_reservations", "cancel_requests")
KEYED_BY_WORK_KEY = (*_VIA_WORK_ITEM, *_OWN_TENANT, "work_items")
"""Every table with a ``work_key`` column at this revision (kills hold keys in ``target``)."""


def _check_tenant_names(conn) -> None:
    found: set[str] = set()
    for table in (*_OWN_TENANT, "work_items"):
        rows = conn.execute(sa.text(f"SELECT DISTINCT tenant FROM {table} WHERE tenant IS NOT NULL AND tenant <> ''"))
        found.update(r[0] for r in rows)
    bad = sorted(t for t in found if not _TENANT.fullmatch(t))
    if bad:
        raise RuntimeError(
            "cannot partition work keys by tenant: these stored tenant names are not valid tenant names "
            f"(lower-case letters, digits, '_' and '-'; at most 63): {', '.join(repr(t) for t in bad[:10])}"
            f"{' and more' if len(bad) > 10 else ''}. Rename them in the ledger and the config first "
            "(docs/runbook.md: 'Upgrade to tenancy refuses a tenant name').")


def _via_work_item(table: str, column: str, where: str) -> str:
    """Prefix ``table.column`` with the tenant of the work item holding the same (old) key."""
    item = f"FROM work_items w WHERE w.work_key = {table}.{column} AND w.tenant IS NOT NULL AND w.tenant <> ''"
    return (f"UPDATE {table} SET {column} = (SELECT w.tenant || '/' || w.work_key {item}) "
            f"WHERE {where} AND EXISTS (SELECT 1 {item})")


def upgrade() -> None:
    _check_tenant_names(op.get_bind())
    # First everything that needs the work items' old keys to find its tenant...
    for table in _VIA_WORK_ITEM:
        op.execute(_via_work_item(table, "work_key", "1 = 1"))
    op.execute(_via_work_item("kills", "target", "scope = 'work_key'"))
    op.execute(_via_work_item("receipts", "work_key", "(tenant IS NULL OR tenant = '') AND work_key IS NOT NULL"))
    # ...then the rows that carry their own tenant, the work items last.
    for table in (*_OWN_TENANT, "work_items"):
        op.execute(f"UPDATE {table} SET work_key = tenant || '/' || work_key "
                   "WHERE work_key IS NOT NULL AND tenant IS NOT NULL AND tenant <> ''")


def downgrade() -> None:
    """Strip the tenant again. Fails (primary key) if two tenants hold work on one pull request:
    before tenancy they could not be told apart."""
    find = "instr" if op.get_bind().dialect.name == "sqlite" else "strpos"
    targets = [(t, "work_key", "work_key IS NOT NULL") for t in KEYED_BY_WORK_KEY]
    for table, column, where in [*targets, ("kills", "target", "scope = 'work_key'")]:
        slash, colon = f"{find}({column}, '/')", f"{find}({column}, ':')"
        # Only a key whose first '/' comes before its first ':' starts with a tenant.
        op.execute(f"UPDATE {table} SET {column} = substr({column}, {slash} + 1) "
                   f"WHERE {where} AND {slash} > 0 AND {slash} < {colon}")
