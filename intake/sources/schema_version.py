"""Which payload schema versions a generic source's mapping accepts, and how others are answered.

A mapping (``intake.sources.mapping.PayloadMapping``) reads fixed paths out of a payload. When
a sender changes its payload schema, those paths may point at nothing, or — worse — at a field
that now means something else. So a mapping may name its ``schema_versions``: where a delivery
says which schema it follows (one header, or one payload field), the versions the mapping was
written for, and what an unversioned delivery is read as.

The check runs in the normalize stage, i.e. only for a delivery whose signature or token was
verified, and before any mapping path is read. A version outside ``accepted`` is rejected
``unsupported-schema`` (422) with a receipt; the API keeps the raw body for a bounded time
(``webhook_api/_kept.py``) so it can be replayed once a mapping for that version exists
(docs/webhooks.md, "Evolving a mapping").

Failure modes written against:

* A version that is a JSON number (``2``) and the configuration's string (``"2"``): an integer
  is compared as its decimal text; floats, booleans, objects and lists are never a version.
* A version value that is huge or holds control characters: not one of ``accepted`` anyway, and
  the error names the header or path and the accepted list, never the value that was sent.
* An unversioned delivery: ``unversioned`` says which accepted version it is read as; ``null``
  (the default) rejects it ``unsupported-schema`` like an unknown version, so a sender that
  drops the field is noticed instead of being mapped by guesswork.

Pure: no Temporal, no database, no configuration import.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from intake.decision import Reason
from intake.errors import InvalidDelivery
from intake.sources.paths import is_missing, parse_path, resolve

MAX_VERSION_CHARS = 64
_MISSING = object()


class SchemaVersions(BaseModel):
    """Where a delivery names its payload schema version, and which versions a mapping accepts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    header: str | None = None
    """The HTTP header carrying the version (e.g. ``x-schema-version``; matched case-insensitively)."""
    field: str | None = None
    """Or: the payload path carrying it, in the mapping's path syntax (``data.schema_version`` or
    ``/schemaversion`` — for CloudEvents an extension attribute, in either HTTP mode)."""
    accepted: list[str] = Field(min_length=1)
    """The versions this mapping was written for; any other is ``unsupported-schema``."""
    unversioned: str | None = None
    """The accepted version a delivery without one is read as; ``null``: rejected ``unsupported-schema``."""

    @model_validator(mode="after")
    def _one_place(self) -> SchemaVersions:
        if (self.header is None) == (self.field is None):
            raise ValueError("give exactly one of header or field")
        if self.unversioned is not None and self.unversioned not in self.accepted:
            raise ValueError("unversioned must be one of accepted (or null to reject unversioned deliveries)")
        return self

    @field_validator("header")
    @classmethod
    def _header_name(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or any(c in value for c in " :\t\r\n")):
            raise ValueError("header must be a header name")
        return value.strip().lower() if value is not None else None

    @field_validator("field")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None:
            parse_path(value)
        return value

    @field_validator("accepted")
    @classmethod
    def _versions(cls, value: list[str]) -> list[str]:
        for i, item in enumerate(value):
            if not item or len(item) > MAX_VERSION_CHARS or not item.isprintable() or item != item.strip():
                raise ValueError(f"accepted[{i}] must be 1-{MAX_VERSION_CHARS} printable characters")
        return value

    def where(self) -> str:
        """Where the version is read, for messages: ``header x-schema-version`` / ``field data.v``."""
        return f"header {self.header}" if self.header is not None else f"field {self.field}"


def schema_version(rules: SchemaVersions | None, headers: Mapping[str, str], document: Any,
                   delivery_id: str | None, event_type: str | None = None) -> str | None:
    """The accepted schema version a verified delivery follows (``None`` when ``rules`` is ``None``:
    an unversioned mapping). Raises ``InvalidDelivery`` ``unsupported-schema`` (422) otherwise.
    ``headers`` lower-case; ``document``: the JSON the mapping's paths resolve against."""
    if rules is None:
        return None
    raw = _read(rules, headers, document)
    if raw is _MISSING:
        if rules.unversioned is not None:
            return rules.unversioned
        raise InvalidDelivery(Reason.UNSUPPORTED_SCHEMA, f"no schema version at {rules.where()}; this source "
                              f"accepts {_listed(rules)}", 422, delivery_id, event_type)
    version = _as_text(raw)
    if version is None or version not in rules.accepted:
        raise InvalidDelivery(Reason.UNSUPPORTED_SCHEMA, f"the schema version at {rules.where()} is not one this "
                              f"source accepts ({_listed(rules)}); the delivery is kept for replay once a mapping "
                              "for it exists", 422, delivery_id, event_type)
    return version


def _read(rules: SchemaVersions, headers: Mapping[str, str], document: Any) -> Any:
    if rules.header is not None:
        value = headers.get(rules.header)
        return value.strip() if value is not None and value.strip() else _MISSING
    if rules.field is None:  # the model validator requires exactly one of header and field
        return _MISSING
    value = resolve(document, rules.field)
    return _MISSING if is_missing(value) or value is None else value


def _as_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value if isinstance(value, str) else None


def _listed(rules: SchemaVersions) -> str:
    return ", ".join(rules.accepted[:10]) + (" ..." if len(rules.accepted) > 10 else "")
