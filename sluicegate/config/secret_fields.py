"""Secret-holding config fields: hidden in reprs and tracebacks, refused when empty or short.

Every secret in the config is a pydantic ``SecretStr``: ``repr``/``str`` print ``**********``,
so a settings object in a log line, an error or a traceback's locals shows no secret; code
that needs the value says so with ``.get_secret_value()``.

Two kinds, two rules:

* :data:`VerifierSecret` — what Sluicegate *checks* a caller against (webhook secrets,
  CloudEvents bearer tokens, actor tokens): at least :data:`MIN_SECRET_CHARS` characters and
  not blank, because a short one can be guessed and an empty one must never authenticate.
* :data:`Credential` — what Sluicegate *presents* to another system (forge token, model API
  key, Temporal API key, payload keys, the App's private key): not empty; its format is the
  issuer's (a local OpenAI-compatible server may accept any short key).

Validation messages name the rule, never the value (pydantic's own errors would carry it as
``input``; ``sluicegate.config.settings.load_settings`` reports only locations and messages).
"""

from __future__ import annotations

from typing import Annotated, Any, Iterator

from pydantic import AfterValidator, BaseModel, SecretStr

MIN_SECRET_CHARS = 16
GENERATE_HINT = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


def _long_enough(value: SecretStr) -> SecretStr:
    text = value.get_secret_value()
    if not text.strip():
        raise ValueError("must not be empty")
    if len(text.strip()) < MIN_SECRET_CHARS:
        raise ValueError(f"must be at least {MIN_SECRET_CHARS} characters (generate one: {GENERATE_HINT})")
    return value


def _not_empty(value: SecretStr) -> SecretStr:
    if not value.get_secret_value().strip():
        raise ValueError("must not be empty (leave the setting out instead)")
    return value


VerifierSecret = Annotated[SecretStr, AfterValidator(_long_enough)]
Credential = Annotated[SecretStr, AfterValidator(_not_empty)]


def secret_fields(node: Any, path: str = "") -> Iterator[tuple[str, SecretStr]]:
    """Every ``SecretStr`` in a settings tree, with its dotted path (``sources.github.secrets[0]``)."""
    if isinstance(node, SecretStr):
        yield path, node
    elif isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from secret_fields(getattr(node, name), f"{path}.{name}" if path else name)
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from secret_fields(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            yield from secret_fields(value, f"{path}[{i}]")
