"""The forge credentials the configuration asks for: a static token, or GitHub App installation
tokens (``sluicegate.forge.auth``) with the app's key read and checked here, at process start.

An unreadable or non-RSA key, or a tenant named in ``sources``/``schedules``/``goals.tenant``
without an installation -> :class:`ConfigError`.
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from sluicegate.config.settings import ConfigError, Settings
from sluicegate.forge.auth import InstallationTokens, StaticToken
from sluicegate.forge.client import ForgeCredentials

__all__ = ["credentials_from_settings", "tenants_needing_installations"]


def tenants_needing_installations(settings: Settings) -> set[str]:
    """Tenants the configuration names (webhook sources, scan schedules, an explicit goals tenant)."""
    tenants = {s.tenant for s in settings.sources.values()} | {s.tenant for s in settings.schedules.values()}
    if "tenant" in settings.goals.model_fields_set:
        tenants.add(settings.goals.tenant)
    return tenants


def _load_private_key(settings: Settings) -> str:
    app = settings.forge.app
    assert app is not None
    if app.private_key is not None:
        # Environment variables often carry a PEM with literal "\n" sequences.
        given = app.private_key.get_secret_value()
        pem = given if "\n" in given else given.replace("\\n", "\n")
        where = "forge.app.private_key"
    else:
        path = settings.path(Path(app.private_key_file or ""))
        where = f"forge.app.private_key_file ({path})"
        try:
            pem = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {where}: {exc.__class__.__name__}") from None
    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, RSAPrivateKey):
        raise ConfigError(f"{where} is not an unencrypted PEM RSA private key (GitHub App keys are)")
    return pem


def credentials_from_settings(settings: Settings) -> ForgeCredentials:
    """The credentials the configuration asks for; :class:`ConfigError` if the app section is unusable."""
    forge = settings.forge
    if forge.app is None:
        return StaticToken(forge.token.get_secret_value() if forge.token else None)
    missing = sorted(tenants_needing_installations(settings) - set(forge.app.installations))
    if missing:
        raise ConfigError(f"forge.app.installations has no installation for tenant(s) {', '.join(missing)}")
    return InstallationTokens(forge.base_url, app_id=forge.app.app_id, private_key=_load_private_key(settings),
                              installations=forge.app.installations, permissions=forge.app.permissions,
                              refresh_margin_seconds=forge.app.refresh_margin_seconds,
                              timeout_seconds=forge.timeout_seconds)
