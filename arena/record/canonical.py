"""Canonical JSON and the chain's hash.

A record's bytes are the RFC 8785 canonical JSON of its envelope (``rfc8785``): keys sorted,
no whitespace, numbers in their shortest round-trip form, UTF-8. Its hash links it to the one
before::

    hash = sha256(bytes.fromhex(prev_hash) || canonical bytes)      (hex, lower case)

The first record's ``prev_hash`` is :data:`GENESIS_HASH` (64 zeros). Values RFC 8785 cannot
carry are made storable first by :func:`storable`, the same way on every side: an integer
beyond ±(2^53 - 1) or a float that is not finite becomes its text (``"1152921504606846976"``,
``"inf"``), a lone surrogate in a string becomes ``?``. Model answers are outside input and
may hold any of these.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import rfc8785

GENESIS_HASH = "0" * 64
SAFE_INTEGER = 2**53 - 1


def storable(value: Any) -> Any:
    """``value`` with every part RFC 8785 refuses replaced by its text (see the module)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -SAFE_INTEGER <= value <= SAFE_INTEGER else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {storable(str(key)): storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def canonical(value: Any) -> bytes:
    """The RFC 8785 bytes of a JSON value made :func:`storable` (which changes nothing in a
    value RFC 8785 takes as it is, so only a refused value pays for the pass)."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, UnicodeEncodeError):
        return rfc8785.dumps(storable(value))


def sha256_hex(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def link_hash(prev_hash: str, body: bytes) -> str:
    """The hash of a record whose canonical bytes are ``body``, after ``prev_hash``."""
    return hashlib.sha256(bytes.fromhex(prev_hash) + body).hexdigest()
