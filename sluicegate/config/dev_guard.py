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

Fail closed: the published values are known to the code itself, as SHA-256 digests
(:data:`PUBLISHED_SECRET_DIGESTS`), so the guard holds when ``temporal-dev.yaml`` is absent (an
image that does not ship it), unreadable, or edited — a deployment whose own config was copied
from the dev file is refused either way. Values in the dev file are added to the list, never
substituted for it. ``tests/security/test_secrets.py`` fails when the dev file gains a secret
the list lacks.
"""

from __future__ import annotations

import hashlib
import ipaddress
from pathlib import Path

from sluicegate.config.settings import DEFAULT_CONFIG_FILE, ENV_OVERRIDES, GENERIC_PREFIX, ConfigError, Settings, load_settings
from sluicegate.config.secret_fields import secret_fields

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
_ENV_FOR = {dotted: var for var, dotted in ENV_OVERRIDES.items()}


PUBLISHED_SECRET_DIGESTS = frozenset({
    # SHA-256 of every secret ever committed in temporal-dev.yaml (git log -p -- temporal-dev.yaml).
    "ca70d2721e0cfe2feff3dca19a254668366517cd9fc8ea1f8543f0341c3c833e",  # console.session_key
    "3d2a5532df4637e6a59a2105aac215fa5e95b50b98c21d480b50510e96d7ee30",  # sources.github.secrets
    "2a1d50f9759b3b8585f0bc52f77832be6c7e563e478d9616ffb01266d166c68a",  # sources.stdhooks.secrets[0]
    "73f4c5208a1065cca39a5aff66f39e918b40064628aeffe6238c91e88d34e0fc",  # sources.stdhooks.secrets[1]
    "78f54a5eb59488b25bf1b0584c14987f435c9452e0b114b1062e94ce096b37a2",  # sources.events.secrets
    "9c45850670b08f9749c89303a0bc0648789fc08ea8945495beb432d1b35fe90b",  # actors.alice.token
    "1abacb1b442a2d4056a73c757b193b66b7e9b1a338d25da06c56aeac264e2170",  # actors.carol.token (admin)
    "debc6385d08bae276499bbc73b7d04dbcda8dd1c034cc82444d2fb893a6949ae",  # forge.token
    "ea5d32b37020a9eed512e7399035739790431fffdb86c2c4b2c7ef69780f326d",  # forge.marker_secret
    "2e143c64597e3c89a95bbcadbcfd0ae6eb5ffb2df3d0a7d02f7ac3dd4ec1bc7c",  # model.api_key
})


def _digest(value: str) -> str:
    return hashlib.sha256(value.strip().encode()).hexdigest()


def published_digests(dev_file: Path = DEFAULT_CONFIG_FILE) -> frozenset[str]:
    """:data:`PUBLISHED_SECRET_DIGESTS`, plus the digest of every secret in ``dev_file`` when it
    loads (a secret added to the dev file is published too); never fewer."""
    try:
        dev = load_settings(dev_file, env={})
    except ConfigError:
        return PUBLISHED_SECRET_DIGESTS  # missing, unreadable or invalid: the list in code still holds
    return PUBLISHED_SECRET_DIGESTS | {_digest(value.get_secret_value()) for _, value in secret_fields(dev)}


def published_in_use(settings: Settings, dev_file: Path = DEFAULT_CONFIG_FILE) -> list[str]:
    """Dotted paths of the settings whose secret is a published one (:func:`published_digests`)."""
    published = published_digests(dev_file)
    return [path for path, value in secret_fields(settings) if _digest(value.get_secret_value()) in published]


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


def refuse_published_secrets(settings: Settings, role: str, bound_to: str,
                             dev_file: Path = DEFAULT_CONFIG_FILE) -> None:
    """Raise :class:`ConfigError` when ``role`` (``api``, ``worker``) would run with published
    secrets outside dev mode on loopback; ``bound_to`` is the host it listens on or talks to."""
    in_use = published_in_use(settings, dev_file)
    if not in_use or (settings.dev_mode and is_loopback(bound_to)):
        return
    settings_list = ", ".join(f"{path} ({env_name(path)})" for path in in_use)
    why = (f"dev_mode is on but {bound_to!r} is not a loopback address" if settings.dev_mode
           else "dev_mode is off")
    raise ConfigError(
        f"refusing to start the {role} ({why}): these settings still hold secrets published in "
        f"temporal-dev.yaml: {settings_list}. Set your own values (see docs/security.md, \"Rotating "
        f"secrets\"); for local development only, set SLUICEGATE_DEV_MODE=1 and bind to loopback.")


def refuse_insecure_cookie(settings: Settings, bound_to: str) -> None:
    """Raise :class:`ConfigError` when the console would send its session cookie without ``Secure``
    (``console.secure_cookie: false``) outside dev mode on loopback: the setting exists for the dev
    stack's plain HTTP, and a session cookie sent over plain HTTP is an actor's session for whoever
    reads the wire. Behind a proxy that terminates TLS keep it on: the browser sees HTTPS."""
    console = settings.console
    if console.session_key is None or console.secure_cookie or (settings.dev_mode and is_loopback(bound_to)):
        return
    raise ConfigError(
        "refusing to start the api: console.secure_cookie is false (SLUICEGATE__CONSOLE__SECURE_COOKIE) outside "
        f"dev mode on loopback (webhook_api.host {bound_to!r}); serve the console over HTTPS and leave it true, "
        "or turn the console off (no console.session_key).")
