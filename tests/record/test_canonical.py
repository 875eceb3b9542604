"""Canonical JSON and the chain's hash (arena.record.canonical): RFC 8785 bytes, and values a
hostile model answer may hold made storable the same way on every side, never a failure."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.record.canonical import GENESIS_HASH, canonical, link_hash, storable


def test_canonical_bytes_follow_rfc_8785() -> None:
    # RFC 8785 section 3.2.2 and 3.2.3: sorted keys, no whitespace, ES6 number forms
    value = {"b": [1e21, 1e-7, 10.0, -0.0, 333333333.3333333], "a": "é\n", "A": None}
    assert canonical(value) == (
        b'{"A":null,"a":"\xc3\xa9\\n","b":[1e+21,1e-7,10,0,333333333.3333333]}'
    )


def test_values_rfc_8785_refuses_are_stored_as_text() -> None:
    hostile = json.loads('{"amount": 1e400, "shares": 123456789012345678901234567890}')
    hostile["note"] = "\ud800 lone"
    assert canonical(hostile) == (
        b'{"amount":"inf","note":"? lone","shares":"123456789012345678901234567890"}'
    )
    assert storable({"ok": [1, 2.5, True]}) == {"ok": [1, 2.5, True]}


def test_each_hash_covers_the_one_before() -> None:
    body = canonical({"seq": 1})
    first = link_hash(GENESIS_HASH, body)
    assert first == hashlib.sha256(bytes(32) + body).hexdigest()
    assert link_hash(first, body) != first


# The fast path of canonical() writes exactly rfc8785's bytes.
TRICKY_TEXT = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()),  # controls, surrogates, astral
    max_size=12,
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([1e16, 1e21, 1e-7, 5e-324, -0.0, 0.1, 123.0, 9.5e15, 1e-5, 0.0001])
    | TRICKY_TEXT
)
NO_FLOATS = st.none() | st.booleans() | st.integers(-(2**60), 2**60) | TRICKY_TEXT
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY_TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=600)
@given(JSON)
def test_canonical_is_rfc8785(value: Any) -> None:
    assert canonical(value) == rfc8785.dumps(storable(value))


@settings(max_examples=400)
@given(
    st.recursive(
        NO_FLOATS,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY_TEXT, inner, max_size=4),
        max_leaves=20,
    )
)
def test_canonical_without_floats_is_rfc8785(value: Any) -> None:
    assert canonical(value) == rfc8785.dumps(storable(value))


def test_keys_beyond_the_basic_plane_sort_by_utf16() -> None:
    """U+10000 sorts before U+FFFF in UTF-16 (a surrogate pair), after it by code point."""
    value = {"\U00010000": 1, "\uffff": 2, "a": 1.0}
    assert canonical(value) == rfc8785.dumps(value)
    assert canonical(value).index("\U00010000".encode()) < canonical(value).index("\uffff".encode())
