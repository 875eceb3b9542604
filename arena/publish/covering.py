"""Commitments and timing (``arena verify``): every commitment holds, and every forecast and
bet was committed before its market resolved.

* Each commitment's signature holds for its body under ``public_key.pem`` (unsigned ones are
  counted; a signed one with no key published fails), the body's fields equal the line's, and
  its head hash is the chain's hash at its seq (a seq beyond the chain's end fails).
* A market's resolution time is its ``resolved_at``, or its ``closed_time`` when that is earlier
  (trading stops at the close; either may be missing: an open market constrains nothing). A
  record's commitment time is the ``committed_at`` of the commitment that covers it: the first
  that holds with ``seq`` at or after the record's
  (:func:`arena.record.commitments.covering`); when the dataset holds no commitment at all,
  the record's own ``recorded_at`` (the operator's word). A forecast or BUY is late when that
  time is not before the resolution, or nothing covers it. Records chained
  after the fact (the genesis pass) prove nothing about time: counted apart, never failures.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from arena.clock import iso_utc, parse_timestamp
from arena.publish.findings import Chain, Verification, json_lines
from arena.publish.layout import COMMITMENTS, PUBLIC_KEY
from arena.publish.tables import table_rows
from arena.record.commitments import COMMITMENT_FIELDS, covering
from arena.record.signing import SigningKeyError, key_id, load_public_key, signature_holds

# -- commitments ------------------------------------------------------------------------------


def _public_key(directory: Path, result: Verification) -> Any:
    path = directory / PUBLIC_KEY
    if not path.is_file():
        return None
    try:
        return load_public_key(path.read_text(encoding="utf-8"))
    except (SigningKeyError, ValueError) as exc:
        result.fail("commitment", PUBLIC_KEY, "-", f"not an Ed25519 public key ({exc})")
        return None


def check_commitments(
    directory: Path, chain: Chain, result: Verification
) -> list[tuple[int, datetime]] | None:
    """The (seq, committed_at) of every commitment that holds, sorted by seq; None when the
    dataset holds no commitment at all."""
    public = _public_key(directory, result)
    if public is None and not (directory / PUBLIC_KEY).is_file():
        result.notes.append("no public_key.pem: commitment signatures cannot be checked")
    valid: list[tuple[int, datetime]] = []
    any_line = False
    previous = 0  # the seq of the line before: each commitment counts the records since it
    for number, line in json_lines(directory / COMMITMENTS, result, "commitment"):
        any_line = True
        result.count("commitments")
        holds = _commitment_holds(line, number, public, chain, result)
        counted = _count_holds(line, number, previous, result)
        if holds and counted:
            valid.append((line["seq"], parse_timestamp(line["committed_at"])))
        if isinstance(line.get("seq"), int):
            previous = line["seq"]
    if result.counts.get("commitments_unsigned"):
        result.notes.append(f"{result.counts['commitments_unsigned']} commitments are unsigned")
    return sorted(valid) if any_line else None


def _count_holds(line: dict[str, Any], number: int, previous: int, result: Verification) -> bool:
    """A commitment's ``count`` is the records since the commitment before it (``previous``
    its seq; 0 before the first): a commitment removed from the file, or one out of order,
    leaves the next one's count unexplained."""
    seq, count = line.get("seq"), line.get("count")
    if not isinstance(seq, int) or count == seq - previous:
        return True
    row = f"id={line.get('id', f'line {number}')}"
    detail = f"count {count}, but the records since the commitment before (seq {previous})"
    result.fail("commitment", COMMITMENTS, row, f"{detail} are {seq - previous}: one is missing")
    return False


def _commitment_holds(
    line: dict[str, Any], number: int, public: Any, chain: Chain, result: Verification
) -> bool:
    row = f"id={line.get('id', f'line {number}')}"
    failures = len(result.failures)
    body_text = line.get("body")
    try:
        body = json.loads(body_text) if isinstance(body_text, str) else None
    except ValueError:
        body = None
    if not isinstance(body, dict):
        result.fail("commitment", COMMITMENTS, row, "its body is not a JSON object")
        return False
    for name in COMMITMENT_FIELDS:
        if body.get(name) != line.get(name):
            result.fail(
                "commitment",
                COMMITMENTS,
                row,
                f"{name}: line {line.get(name)}, body {body.get(name)}",
            )
    signature = line.get("signature")
    if signature is None:
        result.count("commitments_unsigned")
    elif public is None:
        result.fail("commitment", COMMITMENTS, row, "signed, but no public key is published")
    elif not signature_holds(public, str(body_text).encode("utf-8"), signature):
        result.fail(
            "commitment", COMMITMENTS, row, "the signature does not hold for public_key.pem"
        )
    else:
        result.count("commitments_signed")
        if line.get("key_id") != key_id(public):
            result.fail("commitment", COMMITMENTS, row, "key_id is not public_key.pem's")
    seq = line.get("seq")
    if not isinstance(seq, int) or seq < 1 or seq > len(chain.hashes):
        result.fail(
            "commitment",
            COMMITMENTS,
            row,
            f"seq {seq} is beyond the chain's end ({len(chain.hashes)})",
        )
    elif chain.hashes[seq - 1] != line.get("head_hash"):
        result.fail(
            "commitment", COMMITMENTS, row, f"head_hash is not the chain's hash at seq {seq}"
        )
    try:
        parse_timestamp(str(line.get("committed_at")))
    except ValueError:
        result.fail("commitment", COMMITMENTS, row, "committed_at is not a time")
    return len(result.failures) == failures


def _resolutions(directory: Path) -> dict[str, datetime]:
    """Each resolved (or closed) market's resolution time: the earlier of ``resolved_at`` and
    ``closed_time``."""
    out: dict[str, datetime] = {}
    for row in table_rows(directory, "markets", ("market_id", "resolved_at", "closed_time")):
        times = [parse_timestamp(t) for t in (row["resolved_at"], row["closed_time"]) if t]
        if times:
            out[row["market_id"]] = min(times)
    return out


def check_timing(
    directory: Path,
    chain: Chain,
    commitments: list[tuple[int, datetime]] | None,
    result: Verification,
) -> None:
    resolutions = _resolutions(directory)
    sources = (
        ("forecasts", "forecast_id", "forecasts", lambda row: True),
        ("trades", "trade_id", "bets", lambda row: row["trade_type"] == "BUY"),
    )
    for table, id_column, name, wanted in sources:
        columns = (id_column, "decision_id", "market_id", "trade_type")
        for row in table_rows(directory, table, columns):
            if not wanted(row):
                continue
            resolved = resolutions.get(row["market_id"])
            seq = chain.decisions.get(row["decision_id"])
            if seq is None:
                continue  # unrecorded: the record check names its decision
            if resolved is None:
                result.count(f"{name}_unresolved")
                continue
            link = chain.links[seq - 1]
            if link.after_the_fact:
                result.count(f"{name}_after_the_fact")
                continue
            if commitments is None:
                committed = link.recorded_at
            else:
                cover = covering(commitments, seq, key=lambda commitment: commitment[0])
                committed = None if cover is None else cover[1]
            if committed is not None and committed < resolved:
                result.count(f"{name}_in_time")
                continue
            result.count(f"{name}_late")
            when = "no commitment covers it" if committed is None else iso_utc(committed)
            result.fail(
                "timing",
                table,
                f"{id_column}={row[id_column]}",
                f"market {row['market_id']} resolved {iso_utc(resolved)}; committed: {when} "
                f"(record seq {seq})",
            )
