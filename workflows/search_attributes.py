"""Sluicegate's Temporal search attributes (registered by the dev-server launcher).

Find runs with e.g. ``temporal workflow list --query 'SluicegateWorkKey="acme/github:acme/api#42:review"'``.
"""

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

WORK_KEY = SearchAttributeKey.for_keyword("SluicegateWorkKey")
TENANT = SearchAttributeKey.for_keyword("SluicegateTenant")
TRIGGER = SearchAttributeKey.for_keyword("SluicegateTrigger")
INPUT_VERSION = SearchAttributeKey.for_keyword("SluicegateInputVersion")
STATUS = SearchAttributeKey.for_keyword("SluicegateStatus")

ALL = (WORK_KEY, TENANT, TRIGGER, INPUT_VERSION, STATUS)


def at_admission(work_key: str, tenant: str, trigger: str, input_version: str) -> TypedSearchAttributes:
    return TypedSearchAttributes([
        SearchAttributePair(WORK_KEY, work_key), SearchAttributePair(TENANT, tenant),
        SearchAttributePair(TRIGGER, trigger), SearchAttributePair(INPUT_VERSION, input_version),
        SearchAttributePair(STATUS, "admitted"),
    ])
