"""The payload converter: Temporal's default, with each dataclass's field types resolved once and
dataclasses encoded without a deep copy.

Decoding a payload into a dataclass, the SDK's ``value_to_type`` calls ``typing.get_type_hints`` on
the class every time, and with ``from __future__ import annotations`` (every Sluicegate module) that
re-evaluates each field's annotation string — a ``ForwardRef`` compiled per field per decode, inside
the workflow sandbox through its restricted builtins. It was most of a work order's decode (0.22 ms;
0.03 ms with the hints cached), and the worker decodes a dozen dataclasses per loop step (activity
inputs, results in the workflow, local activities; issue 11 item 6, ``docs/performance.md``).

:class:`DataclassHints` is a ``JSONTypeConverter`` (the SDK's hook for custom types, tried before its
own rules) that does what the SDK's dataclass rule does, with the hints cached per class (weakly: a
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
import weakref
from typing import Any

from temporalio.converter import (
    AdvancedJSONEncoder, CompositePayloadConverter, DefaultPayloadConverter, JSONPlainPayloadConverter,
    JSONTypeConverter, value_to_type,
)

_hints: weakref.WeakKeyDictionary[type, dict[str, Any]] = weakref.WeakKeyDictionary()


def field_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, computed once per class (a failure is not cached)."""
    hints = _hints.get(cls)
    if hints is None:
        hints = _hints[cls] = typing.get_type_hints(cls)
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


class DataclassFieldsEncoder(AdvancedJSONEncoder):
    """The SDK's encoder, a dataclass given to ``json`` as its fields (no ``asdict`` deep copy)."""

    def default(self, o: Any) -> Any:
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
        return super().default(o)


class PayloadConverter(CompositePayloadConverter):
    """The SDK's default encoding converters, the JSON one with :class:`DataclassHints` and
    :class:`DataclassFieldsEncoder`."""

    def __init__(self) -> None:
        super().__init__(*(JSONPlainPayloadConverter(encoder=DataclassFieldsEncoder, custom_type_converters=CONVERTERS)
                           if isinstance(c, JSONPlainPayloadConverter) else c
                           for c in DefaultPayloadConverter.default_encoding_payload_converters))
