"""Optional payload encryption: an AES-GCM Temporal payload codec.

With ``temporal.payload_key`` set (base64 of 32 random bytes; from the environment as
``SLUICEGATE_PAYLOAD_KEY``), every payload the client and workers write — work orders,
prompts, diffs, model answers, tool results — is encrypted before it reaches Temporal,
so histories hold ciphertext only. Each payload records the key id, so keys can be
rotated: list the old key in ``temporal.payload_old_keys`` to keep decrypting old
histories while new payloads use the new key. To read histories, run the codec server
(``python -m sluicegate.codec_server``) and point the Temporal UI or CLI at it.

Losing the key makes encrypted histories unreadable; store it like a database password.
"""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Iterable, Sequence

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

ENCODING = b"binary/encrypted"
NONCE_BYTES = 12


class PayloadKeyError(Exception):
    """A payload key is malformed, or a payload was encrypted with a key that is not configured."""


def key_id(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:16]


def parse_key(text: str) -> bytes:
    try:
        key = base64.b64decode(text, validate=True)
    except ValueError:
        raise PayloadKeyError("payload key must be base64") from None
    if len(key) != 32:
        raise PayloadKeyError(f"payload key must be 32 bytes (AES-256), got {len(key)}")
    return key


def new_key() -> str:
    """A fresh key, base64 (``python -c 'from sluicegate.codec import new_key; print(new_key())'``)."""
    return base64.b64encode(os.urandom(32)).decode()


class EncryptionCodec(PayloadCodec):
    def __init__(self, key: bytes, old_keys: Iterable[bytes] = ()) -> None:
        self._key_id = key_id(key)
        self._current = AESGCM(key)
        self._by_id = {key_id(k): AESGCM(k) for k in (key, *old_keys)}

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for p in payloads:
            nonce = os.urandom(NONCE_BYTES)
            sealed = self._current.encrypt(nonce, p.SerializeToString(), self._key_id.encode())
            out.append(Payload(metadata={"encoding": ENCODING, "encryption-key-id": self._key_id.encode()},
                               data=nonce + sealed))
        return out

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for p in payloads:
            if p.metadata.get("encoding") != ENCODING:
                out.append(p)  # written before encryption was turned on
                continue
            kid = p.metadata.get("encryption-key-id", b"").decode()
            cipher = self._by_id.get(kid)
            if cipher is None:
                raise PayloadKeyError(f"payload encrypted with key {kid!r}, which is not configured")
            plain = cipher.decrypt(p.data[:NONCE_BYTES], p.data[NONCE_BYTES:], kid.encode())
            out.append(Payload.FromString(plain))
        return out
