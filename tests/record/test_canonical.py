"""The fast path of :func:`arena.record.canonical.canonical` writes exactly RFC 8785's bytes."""

from __future__ import annotations

from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.record.canonical import canonical, storable

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
