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
import json
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
    """The RFC 8785 bytes of a JSON value (made :func:`storable` first).

    ``rfc8785`` writes in pure Python, too slow for a chain of prompts (``arena verify`` hashes
    every one). Where its output is provably the same, the C encoder of :mod:`json` writes it:
    RFC 8785 escapes in strings exactly what ``json.dumps(ensure_ascii=False)`` escapes, and
    sorts keys by UTF-16 code units, which is code point order for keys without characters
    beyond U+FFFF; its number is an integer's digits, or a finite float's ``repr`` without a
    trailing ``.0`` when that ``repr`` has no exponent. Anything else (a key beyond U+FFFF, a
    float written with an exponent) goes to ``rfc8785``.
    """
    if _simple(value):  # nothing to make storable, no float: written as it is
        try:
            return _dumps(value)
        except UnicodeEncodeError:  # a lone surrogate: storable replaces it
            pass
    try:
        plain = _plain(value)
    except _NeedsRfc8785:
        return rfc8785.dumps(storable(value))
    return _dumps(plain)


def _dumps(value: Any) -> bytes:
    return json.dumps(
        value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")


def _simple(value: Any) -> bool:
    """Whether ``value`` holds only null, booleans, safe integers, strings, lists and objects
    keyed by strings without characters beyond U+FFFF (exact types; no float)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not -SAFE_INTEGER <= item <= SAFE_INTEGER:
                return False
        elif kind is dict:
            for key in item:
                if type(key) is not str or (not key.isascii() and max(key) > "\uffff"):
                    return False
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        else:
            return False
    return True


class _NeedsRfc8785(Exception):
    """A value whose canonical form ``json.dumps`` does not write (see :func:`canonical`)."""


def _plain(value: Any) -> Any:
    """:func:`storable`, with floats as ``json.dumps`` writes them canonically (integral ones
    as integers); :class:`_NeedsRfc8785` where it cannot."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -SAFE_INTEGER <= value <= SAFE_INTEGER else str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        text = repr(value)
        if "e" in text:
            raise _NeedsRfc8785
        return int(value) if text.endswith(".0") else value
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = _plain(str(key))
            if not name.isascii() and max(name) > "\uffff":
                raise _NeedsRfc8785
            out[name] = _plain(item)
        return out
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def sha256_hex(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def link_hash(prev_hash: str, body: bytes) -> str:
    """The hash of a record whose canonical bytes are ``body``, after ``prev_hash``."""
    return hashlib.sha256(bytes.fromhex(prev_hash) + body).hexdigest()
