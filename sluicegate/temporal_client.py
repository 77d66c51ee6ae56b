"""Connecting to Temporal: dev server, self-hosted cluster (mTLS) or Temporal Cloud (API key)."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.service import TLSConfig

from sluicegate.config import ConfigError, Settings
from sluicegate.telemetry import tracing_interceptor


async def connect(settings: Settings) -> Client:
    cfg = settings.temporal
    tls: TLSConfig | bool = cfg.tls
    if bool(cfg.tls_client_cert) != bool(cfg.tls_client_key):
        raise ConfigError("temporal.tls_client_cert and temporal.tls_client_key must be set together "
                          "(TEMPORAL_TLS_CLIENT_CERT_PATH / TEMPORAL_TLS_CLIENT_KEY_PATH)")
    if cfg.tls_client_cert and cfg.tls_client_key:
        tls = TLSConfig(client_cert=settings.path(cfg.tls_client_cert).read_bytes(),
                        client_private_key=settings.path(cfg.tls_client_key).read_bytes())
    return await Client.connect(cfg.address, namespace=cfg.namespace, tls=tls or bool(cfg.api_key),
                                api_key=cfg.api_key, interceptors=[tracing_interceptor()])
