"""Ed25519 signatures of commitments (``cryptography``).

The private key comes from the environment only (``ARENA_SIGNING_KEY``: PEM, PKCS#8, what
``openssl genpkey -algorithm ed25519`` writes); it is never stored, logged or published. The
public key is published with the data (``public_key.pem``) and named by its
:func:`key_id`: the sha256 of its 32 raw bytes, in hex.

A signature is base64 (standard alphabet, padded) of the 64-byte Ed25519 signature of a
commitment's canonical JSON bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from arena.config import SIGNING_KEY_ENV


class SigningKeyError(ValueError):
    """``ARENA_SIGNING_KEY`` holds no Ed25519 private key (the message never quotes it)."""


def load_signing_key(pem: str) -> Ed25519PrivateKey:
    """The Ed25519 private key of a PEM text; :class:`SigningKeyError` for anything else."""
    try:
        key = serialization.load_pem_private_key(pem.encode("utf-8"), password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(
            f"{SIGNING_KEY_ENV} is not a PEM private key without a password"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{SIGNING_KEY_ENV} is not an Ed25519 key")
    return key


def public_key_pem(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The public key, as PEM (SubjectPublicKeyInfo): what ``public_key.pem`` holds."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def load_public_key(pem: str) -> Ed25519PublicKey:
    key = serialization.load_pem_public_key(pem.encode("utf-8"))
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError("not an Ed25519 public key")
    return key


def key_id(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """sha256 (hex) of the raw 32-byte public key."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def sign(key: Ed25519PrivateKey, data: bytes) -> str:
    return base64.b64encode(key.sign(data)).decode("ascii")


def signature_holds(public: Ed25519PublicKey, data: bytes, signature: str) -> bool:
    """Whether ``signature`` (base64) is ``public``'s signature of ``data``."""
    try:
        public.verify(base64.b64decode(signature, validate=True), data)
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True


def signing_key_from_env() -> str | None:
    """The PEM text of ``ARENA_SIGNING_KEY``, or None when it is unset or blank."""
    import os

    value = os.environ.get(SIGNING_KEY_ENV, "")
    return value if value.strip() else None
