"""Commitments, pure: the signed bytes rebuilt from a published line, and the commitment that
covers a record."""

from __future__ import annotations

import json
from types import SimpleNamespace

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from arena.record.commitments import (
    commitment_body,
    commitment_entry,
    covering,
    entry_line,
    signed_bytes,
)
from arena.record.signing import key_id, sign, signature_holds


def test_a_line_rebuilds_the_bytes_its_signature_is_of() -> None:
    key = Ed25519PrivateKey.generate()
    body = commitment_body(7, "ab" * 32, 3, "2026-11-22T00:10:00Z", key_id(key))
    assert json.loads(body) == {
        "seq": 7,
        "head_hash": "ab" * 32,
        "count": 3,
        "committed_at": "2026-11-22T00:10:00Z",
        "key_id": key_id(key),
    }
    line = entry_line(commitment_entry(body, sign(key, body)))
    entry = json.loads(line)
    assert signed_bytes(entry) == body
    assert signature_holds(key.public_key(), signed_bytes(entry), entry["signature"])
    forged = {**entry, "head_hash": "cd" * 32}
    assert not signature_holds(key.public_key(), signed_bytes(forged), entry["signature"])


def test_an_unsigned_commitment_says_so() -> None:
    body = commitment_body(1, "00" * 32, 1, "2026-11-22T00:10:00Z", None)
    entry = commitment_entry(body, None)
    assert entry["key_id"] is None and entry["signature"] is None


def test_a_record_is_covered_by_the_first_commitment_at_or_after_it() -> None:
    made = [{"seq": 3}, {"seq": 5}, {"seq": 9}]
    assert covering(made, 1) == {"seq": 3}
    assert covering(made, 3) == {"seq": 3}
    assert covering(made, 4) == {"seq": 5}
    assert covering(made, 9) == {"seq": 9}
    assert covering(made, 10) is None
    assert covering([], 1) is None
    rows = [SimpleNamespace(seq=2), SimpleNamespace(seq=4)]
    assert covering(rows, 3) is rows[1]
