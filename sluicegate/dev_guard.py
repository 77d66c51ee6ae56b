"""Refuse to serve with the secrets published in ``temporal-dev.yaml``, outside explicit dev mode.

``temporal-dev.yaml`` is committed: its webhook secrets, bearer tokens (an admin's among them),
forge token and model key are known to anyone who has read the repository. A deployment that
overrides some settings from the environment and forgets one keeps that one live. So the API
and the worker check, at start-up, every secret in their settings against the committed file
and refuse to start when one matches — unless ``dev_mode`` is on (``SLUICEGATE_DEV_MODE=1``,
set by the dev stack, the tests and the benches) *and* the process is bound to loopback: the
API's ``webhook_api.host``; for the worker, the Temporal server it polls.

The error names every setting to change, with the environment variable that sets it, and
never the value.
"""

from __future__ import annotations

import ipaddress

from sluicegate.config import DEFAULT_CONFIG_FILE, ENV_OVERRIDES, GENERIC_PREFIX, ConfigError, Settings, load_settings
from sluicegate.secret_fields import secret_fields

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
_ENV_FOR = {dotted: var for var, dotted in ENV_OVERRIDES.items()}


def published_secrets() -> set[str]:
    """Every secret value committed in the repository's ``temporal-dev.yaml``."""
    try:
        dev = load_settings(DEFAULT_CONFIG_FILE, env={})
    except ConfigError:
        return set()  # no committed dev file next to this code: nothing was published with it
    return {value.get_secret_value().strip() for _, value in secret_fields(dev)}


def published_in_use(settings: Settings) -> list[str]:
    """Dotted paths of the settings whose secret is one of :func:`published_secrets`."""
    published = published_secrets()
    return [path for path, value in secret_fields(settings) if value.get_secret_value().strip() in published]


def is_loopback(host: str) -> bool:
    host = host.strip().strip("[]")
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def env_name(path: str) -> str:
    """The environment variable that sets ``path`` (``sources.stdhooks.secrets[0]`` → the list)."""
    base = path.split("[", 1)[0]
    return _ENV_FOR.get(base) or GENERIC_PREFIX + base.upper().replace(".", "__")


def refuse_published_secrets(settings: Settings, role: str, bound_to: str) -> None:
    """Raise :class:`ConfigError` when ``role`` (``api``, ``worker``) would run with published
    secrets outside dev mode on loopback; ``bound_to`` is the host it listens on or talks to."""
    in_use = published_in_use(settings)
    if not in_use or (settings.dev_mode and is_loopback(bound_to)):
        return
    settings_list = ", ".join(f"{path} ({env_name(path)})" for path in in_use)
    why = (f"dev_mode is on but {bound_to!r} is not a loopback address" if settings.dev_mode
           else "dev_mode is off")
    raise ConfigError(
        f"refusing to start the {role}: these settings still hold secrets published in temporal-dev.yaml: "
        f"{settings_list}. Set your own values (see docs/security.md, \"Rotating secrets\"); for local "
        f"development only, set SLUICEGATE_DEV_MODE=1 and bind to loopback ({why}).")
