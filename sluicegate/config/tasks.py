"""``tasks:`` — which registered tasks this deployment serves, and each task's options (``docs/tasks.md``).

``enabled`` names task packages (``tasks/<name>/``); the API and the worker check at start that each
is registered (``tasks.registry.enabled``), since configuration cannot import the task code. Intake
accepts triggers only for enabled tasks; the worker registers only their tools' activities.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import Field, field_validator

from sluicegate.config.section import Section

TASK_NAME = r"^[a-z][a-z0-9_-]{0,31}$"
DEFAULT_TRIAGE_LABELS = ["bug", "enhancement", "question", "documentation"]
MAX_LABEL_CHARS = 50
"""GitHub's limit on a label name."""


class TriageOptions(Section):
    labels: list[str] = Field(default_factory=lambda: list(DEFAULT_TRIAGE_LABELS), max_length=100)
    """The only labels triage may apply (the model's choice is intersected with them, case-insensitively)."""

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str]) -> list[str]:
        seen: set[str] = set()
        for label in value:
            if not label.strip() or len(label) > MAX_LABEL_CHARS or label != label.strip():
                raise ValueError(f"a label is 1-{MAX_LABEL_CHARS} characters without surrounding spaces: {label!r}")
            if any(unicodedata.category(c).startswith("C") for c in label) or "," in label:
                raise ValueError(f"a label has no control characters and no ',': {label!r}")
            if label.casefold() in seen:
                raise ValueError(f"label {label!r} is listed twice (labels match case-insensitively)")
            seen.add(label.casefold())
        return value


class TasksConfig(Section):
    enabled: list[Annotated[str, Field(pattern=TASK_NAME)]] = Field(default_factory=lambda: ["review", "triage"])
    """Registered tasks this deployment serves (default: the review and the issue triage)."""
    triage: TriageOptions = Field(default_factory=TriageOptions)

    @field_validator("enabled")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("tasks.enabled lists a task twice")
        return value
