"""The schema-version rule on its own (pure): where the version is read, what is accepted, how an
unversioned delivery is answered, and that errors never quote the value sent."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from intake.decision import Reason
from intake.errors import InvalidDelivery
from intake.sources.schema_version import SchemaVersions, schema_version

FIELD = SchemaVersions(field="data.schema", accepted=["1", "2"])
HEADER = SchemaVersions(header="X-Schema-Version", accepted=["2024-01"], unversioned="2024-01")


@pytest.mark.parametrize("rules, headers, doc, expected", [
    (FIELD, {}, {"data": {"schema": "2"}}, "2"),
    (FIELD, {}, {"data": {"schema": 1}}, "1"),  # a JSON integer is compared as its decimal text
    (HEADER, {"x-schema-version": " 2024-01 "}, {}, "2024-01"),
    (HEADER, {}, {}, "2024-01"),  # unversioned: read as the configured version
    (None, {}, {}, None),  # an unversioned mapping accepts everything
])
def test_accepted_versions(rules, headers, doc, expected):
    assert schema_version(rules, headers, doc, "d1") == expected


@pytest.mark.parametrize("rules, headers, doc", [
    (FIELD, {}, {"data": {"schema": "3-secret-value"}}),
    (FIELD, {}, {"data": {"schema": True}}),
    (FIELD, {}, {"data": {"schema": 2.0}}),
    (FIELD, {}, {"data": {"schema": ["1"]}}),
    (FIELD, {}, {"data": {}}),  # unversioned, and the mapping reads none as a version
    (FIELD, {}, {"data": {"schema": None}}),
    (HEADER, {"x-schema-version": "2025-06"}, {}),
])
def test_other_versions_are_unsupported_schema(rules, headers, doc):
    with pytest.raises(InvalidDelivery) as exc:
        schema_version(rules, headers, doc, "d1", "pr.sync")
    err = exc.value
    assert (err.reason, err.http_status, err.delivery_id, err.event_type) == (
        Reason.UNSUPPORTED_SCHEMA, 422, "d1", "pr.sync")
    assert "secret-value" not in err.message and rules.where() in err.message


@pytest.mark.parametrize("bad", [
    {"accepted": ["1"]},  # neither header nor field
    {"header": "x-v", "field": "v", "accepted": ["1"]},
    {"field": "v", "accepted": []},
    {"field": "v", "accepted": ["1"], "unversioned": "2"},  # must be an accepted version
    {"field": "a..b", "accepted": ["1"]},
    {"header": "x v", "accepted": ["1"]},
    {"field": "v", "accepted": [" 1"]},
])
def test_unusable_rules_are_refused_at_startup(bad):
    with pytest.raises(ValidationError):
        SchemaVersions.model_validate(bad)
