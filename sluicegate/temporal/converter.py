"""The payload converter: Temporal's default, with each dataclass's field types resolved once and
dataclasses encoded without a deep copy.

Decoding a payload into a dataclass, the SDK's ``value_to_type`` calls ``typing.get_type_hints`` on
the class every time, and with ``from __future__ import annotations`` (every Sluicegate module) that
re-evaluates each field's annotation string — a ``ForwardRef`` compiled per field per decode, inside
the workflow sandbox through its restricted builtins. It was most of a work order's decode (0.22 ms;
0.03 ms with the hints cached), and the worker decodes a dozen dataclasses per loop step (activity
inputs, results in the workflow, local activities; issue 11 item 6, ``docs/performance.md``).

:class:`DataclassHints` is a ``JSONTypeConverter`` (the SDK's hook for custom types, tried before its
own rules) that does what the SDK's dataclass rule does, with the hints cached on the class itself (a
class defined in a sandboxed workflow module is a new class per run, and must not be kept alive).

Encoding, the SDK's JSON encoder turns a dataclass into a dict with ``dataclasses.asdict``, which
deep-copies every value (the model request's whole conversation, each step) only for ``json`` to
read it once. :class:`DataclassFieldsEncoder` hands ``json`` the fields as they are: nested
dataclasses come back to it, every other value is encoded as before, so the bytes written are the
SDK's (same keys, sorted; ``tests/workflows/test_payload_converter.py``); a 10 kB model request
encodes in 0.03 ms instead of 0.12.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import typing
from typing import Any

from temporalio.converter import (
    AdvancedJSONEncoder, CompositePayloadConverter, DefaultPayloadConverter, JSONPlainPayloadConverter,
    JSONTypeConverter, value_to_type,
)

HINTS_ATTR = "_sluicegate_field_hints"
"""Where a dataclass keeps its resolved field types: on the class itself, so they live and die with it."""


def field_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, computed once per class (a failure is not cached).

    Kept in the class's own ``__dict__`` (not inherited by a subclass), not in a table keyed by the class:
    the hints name other classes, and a class of a sandboxed workflow module (a new one per run) reaches
    its module, and so itself, through any sibling class's methods. A weak-keyed table would hold that
    value strongly and keep every run's module alive."""
    hints = cls.__dict__.get(HINTS_ATTR)
    if hints is None:
        hints = typing.get_type_hints(cls)
        type.__setattr__(cls, HINTS_ATTR, hints)
    return hints


class DataclassHints(JSONTypeConverter):
    """The SDK's dataclass rule (every known field converted to its type, unknown keys ignored, a
    missing required field left to the constructor to refuse, ``init=False`` fields set after), with
    the class's type hints cached. Anything that is not a plain dataclass class is left to the SDK."""

    def to_typed_value(self, hint: type, value: Any) -> Any | None:
        if (not isinstance(hint, type) or not dataclasses.is_dataclass(hint) or not isinstance(value, dict)
                or issubclass(hint, collections.abc.Mapping)):
            return JSONTypeConverter.Unhandled  # the SDK decides (and words the error for a non-dict)
        hints = field_hints(hint)
        init: dict[str, Any] = {}
        late: dict[str, Any] = {}
        for field in dataclasses.fields(hint):
            raw = value.get(field.name, dataclasses.MISSING)
            if raw is dataclasses.MISSING:
                continue
            try:
                converted = value_to_type(hints[field.name], raw, CONVERTERS)
            except Exception as err:
                raise TypeError(f"Failed converting field {field.name} on dataclass {hint}") from err
            (init if field.init else late)[field.name] = converted
        obj = hint(**init)
        for name, converted in late.items():
            object.__setattr__(obj, name, converted)
        return obj


CONVERTERS: list[JSONTypeConverter] = [DataclassHints()]


_ATOMS = (str, int, float, bool, type(None))
_NATIVE = (dict, list, tuple, str, int, float)


def _fields_as_json_reads_them(value: Any) -> bool:
    """Does ``json`` write ``value`` as ``dataclasses.asdict`` would leave it? Not when, inside the plain
    containers ``asdict`` walks, there is a dataclass ``json`` writes itself (a ``dict`` or ``list``
    subclass: ``asdict`` writes its fields, ``json`` its items) or a container subclass ``asdict``
    rebuilds through its constructor (a ``defaultdict`` fails there). Nested dataclasses are not walked:
    ``json`` hands them back to :meth:`DataclassFieldsEncoder.default`, which asks again."""
    kind = type(value)
    if kind in _ATOMS:
        return True
    if kind is list or kind is tuple:
        return all(_fields_as_json_reads_them(item) for item in value)
    if kind is dict:
        return all(_fields_as_json_reads_them(k) and _fields_as_json_reads_them(v) for k, v in value.items())
    if dataclasses.is_dataclass(value):
        return not isinstance(value, _NATIVE)
    return not isinstance(value, (dict, list, tuple))


class DataclassFieldsEncoder(AdvancedJSONEncoder):
    """The SDK's encoder, a dataclass given to ``json`` as its fields (no ``asdict`` deep copy) unless its
    values hold something ``json`` would write otherwise than ``asdict`` leaves it (then ``asdict``)."""

    def default(self, o: Any) -> Any:
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            fields = {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
            return fields if _fields_as_json_reads_them(fields) else dataclasses.asdict(o)
        return super().default(o)


class PayloadConverter(CompositePayloadConverter):
    """The SDK's default encoding converters, the JSON one with :class:`DataclassHints` and
    :class:`DataclassFieldsEncoder`."""

    def __init__(self) -> None:
        super().__init__(*(JSONPlainPayloadConverter(encoder=DataclassFieldsEncoder, custom_type_converters=CONVERTERS)
                           if isinstance(c, JSONPlainPayloadConverter) else c
                           for c in DefaultPayloadConverter.default_encoding_payload_converters))
