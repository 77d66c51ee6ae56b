"""Optional payload encryption: an AES-GCM Temporal payload codec, and the keys artifacts share.

With ``temporal.payload_key`` set (base64 of 32 random bytes; from the environment as
``SLUICEGATE_PAYLOAD_KEY``), every payload the client and workers write — work orders,
prompts, diffs, model answers, tool results — is encrypted before it reaches Temporal,
so histories hold ciphertext only; large diffs stored as artifacts are sealed with the same
keys (``activities/artifacts.py``). Each sealed value records its key id, so keys can be
rotated: list the old key in ``temporal.payload_old_keys`` to keep decrypting old histories
and artifacts while new ones use the new key. To read histories, run the codec server
(``python -m sluicegate.temporal.codec_server``) and point the Temporal UI or CLI at it.

Failure modes this is written against:

* **Plaintext from outside.** With encryption configured, a payload that is not sealed did not
  come from a holder of the key: anyone with namespace access could signal-with-start a
  ``WorkOrder`` naming any tenant and repository. Decoding refuses it with a non-retryable
  ``PlaintextPayloadRefused``: a workflow activation carrying one fails the workflow at once
  (the SDK fails the execution, not just the task). Activities only get inputs their own
  workflows wrote, which are sealed; the SDK would report one as "Failed decoding arguments". ``temporal.accept_plaintext_payloads: true`` lets plaintext through while
  a fleet switches over (histories and schedules written before the key was set).
* **A key that is not configured** (rotated away, or another deployment's): ``PayloadKeyError``
  naming the key id; nothing is silently returned undecrypted.
* **Tampering**: AES-GCM authenticates each value and binds it to its key id (and an artifact to
  its handle); a modified value fails with ``PayloadKeyError``.

Losing the key makes encrypted histories and artifacts unreadable; store it like a database password.
"""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Iterable, Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec
from temporalio.exceptions import ApplicationError

from sluicegate.errors import SluicegateError

ENCODING = b"binary/encrypted"
NONCE_BYTES = 12
PLAINTEXT_REFUSED = "PlaintextPayloadRefused"


class PayloadKeyError(SluicegateError):
    """A payload key is malformed, or a value was encrypted with a key that is not configured."""


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
    """A fresh key, base64 (``python -c 'from sluicegate.temporal.codec import new_key; print(new_key())'``)."""
    return base64.b64encode(os.urandom(32)).decode()


class PayloadKeys:
    """The current AES-256-GCM key (seals) and retired ones (still open), by key id."""

    def __init__(self, key: bytes, old_keys: Iterable[bytes] = ()) -> None:
        self.key_id = key_id(key)
        self._current = AESGCM(key)
        self._by_id = {key_id(k): AESGCM(k) for k in (key, *old_keys)}

    def seal(self, plain: bytes, aad: bytes) -> bytes:
        """``nonce || ciphertext`` under the current key (its id is :attr:`key_id`)."""
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._current.encrypt(nonce, plain, aad)

    def open(self, kid: str, sealed: bytes, aad: bytes) -> bytes:
        cipher = self._by_id.get(kid)
        if cipher is None:
            raise PayloadKeyError(f"value encrypted with key {kid!r}, which is not configured")
        try:
            return cipher.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], aad)
        except (InvalidTag, ValueError):  # ValueError: a nonce too short to be one
            raise PayloadKeyError(f"value under key {kid!r} does not authenticate (corrupt or tampered)") from None


def plaintext_refused(encoding: bytes | None) -> ApplicationError:
    what = (encoding or b"none").decode(errors="replace")[:40]
    return ApplicationError(
        f"refused a plaintext payload (encoding {what}): payload encryption is configured (temporal.payload_key), "
        "so only payloads sealed with its key are accepted. While a fleet switches over, set "
        "temporal.accept_plaintext_payloads: true (SLUICEGATE__TEMPORAL__ACCEPT_PLAINTEXT_PAYLOADS=true)",
        type=PLAINTEXT_REFUSED, non_retryable=True)


class EncryptionCodec(PayloadCodec):
    def __init__(self, keys: PayloadKeys, accept_plaintext: bool = False) -> None:
        self._keys = keys
        self._accept_plaintext = accept_plaintext

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        kid = self._keys.key_id
        return [Payload(metadata={"encoding": ENCODING, "encryption-key-id": kid.encode()},
                        data=self._keys.seal(p.SerializeToString(), kid.encode())) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for p in payloads:
            if p.metadata.get("encoding") != ENCODING:
                if not self._accept_plaintext:
                    raise plaintext_refused(p.metadata.get("encoding"))
                out.append(p)  # written before encryption was turned on (migration flag)
                continue
            raw_kid = p.metadata.get("encryption-key-id", b"")
            try:
                kid = raw_kid.decode("ascii")
            except UnicodeDecodeError:
                raise PayloadKeyError("value names a key id that is not ASCII (corrupt or forged)") from None
            try:
                out.append(Payload.FromString(self._keys.open(kid, p.data, raw_kid)))
            except DecodeError:
                raise PayloadKeyError(f"value under key {kid!r} is not a payload once opened") from None
        return out
