"""Canonical JSON and the chain's hash (arena.record.canonical): RFC 8785 bytes, and values a
hostile model answer may hold made storable the same way on every side, never a failure."""

from __future__ import annotations

import hashlib
import json

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
