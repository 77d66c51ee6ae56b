"""Settings that would be ambiguous at run time are refused at load, naming settings, never values.

* Two actors with one token: the first match would win, so one actor could act with another's
  role (an operator's token that is also an admin's).
* One secret shared by two sources (or a source and an actor): a sender of one source could post
  as the other — into another tenant — or act as an operator.
* A source named twice: in YAML the last key silently wins; names differing only in case are two
  URLs for what readers take to be one source.
* A source named like one of Sluicegate's own trigger sources (:data:`INTERNAL_SOURCES`, a
  ``scan:`` prefix): deliveries are deduplicated per (source, delivery id) in the ledger and in
  ``intake/seen_deliveries.py``, so the sender of a webhook source called ``manual`` who picks its
  delivery ids (a CloudEvents ``id``, a ``webhook-id``) as ``acme:<request id>`` was answered another
  tenant's manual trigger's receipt (kept in process afterwards), and could claim such an id first so
  that tenant's manual request was answered as a repeat and never decided.

:class:`UniqueKeyLoader` refuses a repeated mapping key anywhere in the file.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    from sluicegate.config.settings import Settings

INTERNAL_SOURCES = frozenset({"manual", "replay", "goal", "policy"})
"""The ledger sources of triggers that are not webhooks (``webhook_api/_manual.py``, ``_replay.py``,
``workflows/goal_contracts.py``, ``activities/policy_recheck.py``); scans use ``scan:<schedule id>``."""
INTERNAL_SOURCE_PREFIX = "scan:"


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key repeated within one mapping."""

    def construct_mapping(self, node, deep=False):  # noqa: D102 - PyYAML's hook
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {str(key)[:64]!r} appears more than once in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _verifier_secrets(settings: "Settings") -> list[tuple[str, str]]:
    """(dotted path, value) of every secret Sluicegate checks a caller against."""
    found = [(f"sources.{name}.secrets[{i}]", s.get_secret_value().strip())
             for name, src in settings.sources.items() for i, s in enumerate(src.secrets)]
    found += [(f"actors.{name}.token", actor.token.get_secret_value().strip()) for name, actor in settings.actors.items()]
    return found


def uniqueness_problems(settings: "Settings") -> list[str]:
    problems = []
    by_value: dict[str, list[str]] = defaultdict(list)
    for path, value in _verifier_secrets(settings):
        by_value[value].append(path)
    for paths in by_value.values():
        owners = {p.split("[", 1)[0].rsplit(".", 1)[0] for p in paths}
        if len(owners) > 1:  # one source listing a secret twice is harmless; two owners are not
            problems.append(f"{' and '.join(paths)} hold the same secret: every source and actor needs its own")
    by_name: dict[str, list[str]] = defaultdict(list)
    for name in settings.sources:
        by_name[name.lower()].append(f"sources.{name}")
    problems += [f"{' and '.join(paths)} differ only in case: source names must be unique"
                 for paths in by_name.values() if len(paths) > 1]
    problems += [f"sources.{name}: {name!r} is the ledger source of Sluicegate's own triggers (manual, replay, "
                 "goal, policy, scan:*): its senders could read or take those triggers' delivery ids; rename it"
                 for name in settings.sources
                 if name.lower() in INTERNAL_SOURCES or name.lower().startswith(INTERNAL_SOURCE_PREFIX)]
    return problems
