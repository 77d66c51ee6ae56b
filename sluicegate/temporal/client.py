"""Connecting to Temporal: dev server, self-hosted cluster (mTLS) or Temporal Cloud (API key)."""

from __future__ import annotations

import dataclasses

from temporalio.client import Client
from temporalio.converter import DataConverter
from temporalio.runtime import Runtime
from temporalio.service import TLSConfig

from sluicegate.temporal.converter import PayloadConverter
from sluicegate.temporal.codec import EncryptionCodec, PayloadKeyError, PayloadKeys, parse_key
from sluicegate.config.settings import ConfigError, Settings
from sluicegate.observability.telemetry import tracing_interceptor


async def connect(settings: Settings, runtime: Runtime | None = None) -> Client:
    """``runtime``: a Temporal ``Runtime`` with SDK metrics (the worker's, ``prometheus_export``)."""
    cfg = settings.temporal
    tls: TLSConfig | bool = cfg.tls
    if bool(cfg.tls_client_cert) != bool(cfg.tls_client_key):
        raise ConfigError("temporal.tls_client_cert and temporal.tls_client_key must be set together "
                          "(TEMPORAL_TLS_CLIENT_CERT_PATH / TEMPORAL_TLS_CLIENT_KEY_PATH)")
    if cfg.tls_client_cert and cfg.tls_client_key:
        tls = TLSConfig(client_cert=settings.path(cfg.tls_client_cert).read_bytes(),
                        client_private_key=settings.path(cfg.tls_client_key).read_bytes())
    return await Client.connect(cfg.address, namespace=cfg.namespace, tls=tls or bool(cfg.api_key),
                                api_key=cfg.api_key.get_secret_value() if cfg.api_key else None, interceptors=[tracing_interceptor()],
                                data_converter=data_converter(settings), runtime=runtime)


def payload_keys(settings: Settings) -> PayloadKeys | None:
    """The payload keys (``temporal.payload_key`` + ``payload_old_keys``), or None: no encryption."""
    cfg = settings.temporal
    if not cfg.payload_key:
        return None
    try:
        return PayloadKeys(parse_key(cfg.payload_key.get_secret_value()),
                           [parse_key(k.get_secret_value()) for k in cfg.payload_old_keys])
    except PayloadKeyError as exc:
        raise ConfigError(f"temporal.payload_key / SLUICEGATE_PAYLOAD_KEY: {exc}") from None


def payload_codec(settings: Settings, accept_plaintext: bool | None = None) -> EncryptionCodec | None:
    """The codec when a key is configured; plaintext is refused unless ``temporal.accept_plaintext_payloads``
    (or ``accept_plaintext``, for the codec server, which shows whatever a history holds)."""
    keys = payload_keys(settings)
    if keys is None:
        return None
    accept = settings.temporal.accept_plaintext_payloads if accept_plaintext is None else accept_plaintext
    return EncryptionCodec(keys, accept_plaintext=accept)


def data_converter(settings: Settings) -> DataConverter:
    """The default converter with dataclass field types resolved once (``sluicegate/temporal/converter.py``:
    the same payloads), and the encryption codec when a payload key is configured."""
    return dataclasses.replace(DataConverter.default, payload_converter_class=PayloadConverter,
                               payload_codec=payload_codec(settings))
