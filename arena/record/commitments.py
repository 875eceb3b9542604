"""Commitments: signed statements of the chain's head, sent to outside anchors.

A commitment says "the chain held ``count`` more records, up to sequence number ``seq`` whose
hash is ``head_hash``, at ``committed_at``". Its body is the RFC 8785 canonical JSON of those
fields and the signing key's id (:func:`commitment_body`); the signature (Ed25519, base64, see
:mod:`arena.record.signing`) is of those bytes. Without a key, ``key_id`` and the signature are
null: the chain is kept, unsigned.

What an anchor receives and ``commitments.jsonl`` (:data:`arena.config.COMMITMENTS_FILE`)
holds, one line per commitment, is its :func:`commitment_entry`: the body's fields plus
``signature``, as canonical JSON. A reader checks a line with :func:`signed_bytes` (the bytes
signed, rebuilt from the line) and :func:`arena.record.signing.signature_holds`.

A record is covered by the first commitment at or after its sequence number
(:func:`covering`). Pure: no database, no clock.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from arena.record.canonical import canonical

COMMITMENT_FIELDS = ("seq", "head_hash", "count", "committed_at", "key_id")
"""The fields of a commitment's body, the bytes that are signed."""

T = TypeVar("T")


def commitment_body(
    seq: int, head_hash: str, count: int, committed_at: str, key_id: str | None
) -> bytes:
    """The canonical bytes of a commitment (``committed_at``: ISO 8601 UTC, as
    :func:`arena.clock.iso_utc` writes it): what is stored, signed and verified."""
    return canonical(
        {
            "seq": seq,
            "head_hash": head_hash,
            "count": count,
            "committed_at": committed_at,
            "key_id": key_id,
        }
    )


def commitment_entry(body: bytes | str, signature: str | None) -> dict[str, Any]:
    """A commitment as anchors receive it: its body's fields and its signature (or null)."""
    return {**json.loads(body), "signature": signature}


def entry_line(entry: Mapping[str, Any]) -> str:
    """One line of ``commitments.jsonl`` (canonical JSON, no newline)."""
    return canonical(dict(entry)).decode("utf-8")


def signed_bytes(entry: Mapping[str, Any]) -> bytes:
    """The bytes an entry's signature is of, rebuilt from the entry's fields."""
    return commitment_body(*(entry[name] for name in COMMITMENT_FIELDS))


def _seq_of(commitment: Any) -> int:
    seq = commitment["seq"] if isinstance(commitment, Mapping) else commitment.seq
    return int(seq)


def covering(commitments: Sequence[T], seq: int, key: Callable[[T], int] = _seq_of) -> T | None:
    """The commitment that covers the record with sequence number ``seq``: the first (of
    ``commitments``, ordered by sequence number) whose ``seq`` is at or after it; None when
    no commitment has reached it yet. ``key`` reads a commitment's ``seq`` (default: the
    ``seq`` item of a mapping, else the ``seq`` attribute)."""
    index = bisect.bisect_left(commitments, seq, key=key)
    return commitments[index] if index < len(commitments) else None
