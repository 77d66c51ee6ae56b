"""From a generic event payload to the work it names: paths, actionable types, the candidate.

Generic sources (Standard Webhooks, CloudEvents) carry no fixed shape, so each configured
source says where its owner, repository, number and version live. A path is either an RFC
6901 JSON Pointer (``/data/pull_request/head/sha``; ``~1`` is ``/``, ``~0`` is ``~``) or a
dotted path (``data.pull_request.head.sha``); a segment of digits indexes a list. Paths are
resolved against the event as a JSON object: the body for Standard Webhooks; the
structured-mode form (attributes plus ``data``) for CloudEvents, in either HTTP mode.

The candidate uses :func:`intake.identity.review_candidate`, the one key GitHub and manual
triggers use, so acme/api#44 at one sha is one work item per tenant whichever source reports it.
Values are checked with :mod:`intake.hygiene` before they reach the forge URL or the ledger:
owner/repo ``[A-Za-z0-9_.-]`` and never ``.`` or ``..``, number a JSON integer in
1..2**31-1, version printable ASCII up to 128. Error messages name the mapping path and the
JSON type found, never the value.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from intake.decision import Reason
from intake.envelope import PullRequestRef, WorkCandidate
from intake.errors import InvalidDelivery
from intake.hygiene import input_version, pr_number, repo_name
from intake.identity import review_candidate
from intake.sources.paths import _MISSING, is_missing, parse_path, resolve
from intake.sources.schema_version import SchemaVersions

__all__ = ["PayloadMapping", "is_missing", "parse_path", "resolve", "resolve_candidate"]

class PayloadMapping(BaseModel):
    """Where a generic source's payload says which pull request and version it is about."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    owner: str
    """Path to the repository owner (``acme``)."""
    repo: str
    """Path to the repository name (``api``)."""
    number: str
    """Path to the pull request number (a JSON integer)."""
    version: str
    """Path to the input version, the head sha."""
    actionable_types: list[str] = Field(min_length=1)
    """Event types that ask for work; any other type is answered ``no-work``."""
    type: str = "type"
    """Standard Webhooks only: path to the event type (the spec's ``type``)."""
    time: str | None = "timestamp"
    """Standard Webhooks only: path to the event time (ISO 8601 or Unix seconds); when absent
    from a payload, the ``webhook-timestamp`` header is used."""

    schema_versions: SchemaVersions | None = None
    """Which payload schema versions this mapping was written for, read from a header or a field
    (``intake/sources/schema_version.py``); ``null``: the payload is not versioned."""

    @field_validator("owner", "repo", "number", "version", "type", "time")
    @classmethod
    def _valid_path(cls, value: str | None) -> str | None:
        if value is not None:
            parse_path(value)
        return value

    @field_validator("actionable_types")
    @classmethod
    def _non_empty_types(cls, value: list[str]) -> list[str]:
        for i, item in enumerate(value):
            if not item.strip():
                raise ValueError(f"actionable_types[{i}] must not be blank")
        return value


def resolve_candidate(document: Any, mapping: PayloadMapping, tenant: str, delivery_id: str | None,
                      event_type: str) -> WorkCandidate:
    """The work candidate named by ``document``; ``bad-input`` 422 naming every bad path."""
    values = {name: resolve(document, getattr(mapping, name)) for name in ("owner", "repo", "number", "version")}
    problems = []
    for name in ("owner", "repo"):
        if repo_name(values[name]) is None:
            problems.append(f"{getattr(mapping, name)} ({name}: {_why(values[name], 'a name of [A-Za-z0-9_.-]')})")
    number = values["number"]
    if pr_number(number) is None:
        problems.append(f"{mapping.number} (number: {_why(number, 'an integer in 1..2**31-1')})")
    if input_version(values["version"]) is None:
        problems.append(f"{mapping.version} (version: {_why(values['version'], 'printable ASCII, 1-128 chars')})")
    if problems:
        raise InvalidDelivery(Reason.BAD_INPUT, f"{event_type} payload invalid at: {', '.join(problems)}", 422,
                              delivery_id, event_type)
    ref = PullRequestRef(values["owner"], values["repo"], number)
    return review_candidate(tenant, ref, values["version"])


def _why(value: Any, expected: str) -> str:
    return "missing" if value is _MISSING else f"expected {expected}, got {type(value).__name__}"
