"""``arena verify DIR``: check a published dataset with nothing but the dataset and arena.

No database: the Parquet tables, ``chain.jsonl``, ``commitments.jsonl``, ``public_key.pem``,
``leaderboard.json`` and ``manifest.json`` are all it reads. Each check adds a
:class:`Failure` naming the check, the table (or file) and the row, and counts what it saw:

* ``manifest``: every file listed with its sha256 and size, none missing, none extra;
* ``chain``: line ``n`` holds seq ``n`` (no gap), its envelope says the same seq, its
  ``prev_hash`` is the previous line's hash (the first: :data:`GENESIS_HASH`) and no
  ``prev_hash`` is used twice (no fork), and its hash is ``link_hash(prev_hash,
  canonical(record))``; the manifest's head agrees;
* ``record``: each record's body equals the body rebuilt from the tables
  (:mod:`arena.publish.rebuild`); every completed decision, settled or cancelled position and
  cohort has a record, and every record a row (a deleted decision is named);
* ``commitment``: each signature holds for its body under ``public_key.pem`` (unsigned ones are
  counted; a signed one with no key published fails), the body's fields equal the line's, and
  its head hash is the chain's hash at its seq;
* ``timing``: every forecast and every BUY was committed before its market resolved. A
  market's resolution time is its ``resolved_at``, or its ``closed_time`` when that is earlier
  (trading stops at the close; either may be missing: an open market constrains nothing). A
  record's commitment time is the earliest ``committed_at`` of the valid commitments with
  ``seq`` at or after the record's (the covering commitments); when the dataset holds no
  commitment at all, the record's own ``recorded_at`` (the operator's word). Late when that
  time is not before the resolution, or nothing covers it. Records chained after the fact (the
  genesis pass) prove nothing about time: they are counted apart, never failures;
* ``leaderboard``: every published row's money to the cent, and its counts and Brier, against
  the tables (:mod:`arena.publish.standings`); ``ledger``: each agent's stored cash against its
  fills and settlements. Skipped (counted) when ``leaderboard.json`` is absent;
* ``incidents``: not checked yet (counted as skipped).

What this proves and does not prove is in METHODOLOGY.md ("A record anyone can verify").
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from arena.clock import iso_utc, parse_timestamp
from arena.publish.rebuild import SUBJECT_TABLES, Subjects, first_difference
from arena.publish.standings import agent_ledgers, differences, family_money
from arena.publish.tables import table_rows
from arena.record.canonical import GENESIS_HASH, canonical, link_hash
from arena.record.records import RecordKind
from arena.record.signing import SigningKeyError, key_id, load_public_key, signature_holds

MANIFEST = "manifest.json"
MANIFESTS_DIR = "manifests"
CHAIN = "chain.jsonl"
COMMITMENTS = "commitments.jsonl"
PUBLIC_KEY = "public_key.pem"
LEADERBOARD = "leaderboard.json"
INCIDENTS = "incidents.jsonl"
COMMITMENT_FIELDS = ("seq", "head_hash", "count", "committed_at", "key_id")
HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class Failure:
    """One thing that does not hold: which check, in which table (or file) and row."""

    check: str
    table: str
    row: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "table": self.table, "row": self.row, "detail": self.detail}


@dataclass
class Verification:
    """What ``arena verify`` found: its failures, what it counted, and notes for the reader."""

    failures: list[Failure] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def fail(self, check: str, table: str, row: str, detail: str) -> None:
        self.failures.append(Failure(check, table, row, detail))

    def count(self, name: str, add: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + add

    def to_json(self) -> dict[str, Any]:
        """``{"ok", "failures": [{"check", "table", "row", "detail"}], "counts"}``."""
        return {
            "ok": self.ok,
            "failures": [failure.to_json() for failure in self.failures],
            "counts": dict(sorted(self.counts.items())),
        }


@dataclass(frozen=True)
class Link:
    """What the later checks need of one chain record."""

    kind: str
    subject_id: Any
    recorded_at: datetime | None
    after_the_fact: bool


@dataclass
class Chain:
    hashes: list[str] = field(default_factory=list)  # hash of seq n at index n - 1
    links: list[Link] = field(default_factory=list)
    decisions: dict[Any, int] = field(default_factory=dict)  # decision_id -> seq


def verify_dataset(directory: Path) -> Verification:
    """Run every check on the dataset in ``directory`` (see the module)."""
    result = Verification()
    manifest = _check_manifest(directory, result)
    subjects = Subjects.read(directory)
    chain = _check_chain(directory, subjects, result)
    if manifest is not None:
        _check_head(manifest, chain, result)
    commitments = _check_commitments(directory, chain, result)
    _check_timing(directory, chain, commitments, result)
    _check_leaderboard(directory, result)
    _check_incidents(directory, result)
    return result


# -- manifest ---------------------------------------------------------------------------------


def _check_manifest(directory: Path, result: Verification) -> dict[str, Any] | None:
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        listed: dict[str, Any] = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        result.fail("manifest", MANIFEST, "-", f"unreadable: {exc}")
        return None
    present = set(_files(directory))
    for name in sorted(set(listed) | present):
        result.count("files")
        entry = listed.get(name)
        if entry is None:
            result.fail("manifest", name, "-", "a file the manifest does not list")
        elif name not in present:
            result.fail("manifest", name, "-", "listed in the manifest, missing")
        else:
            digest, size = _sha256(directory / name)
            if digest != entry.get("sha256"):
                result.fail(
                    "manifest",
                    name,
                    "-",
                    f"sha256 {digest}, the manifest says {entry.get('sha256')}",
                )
            elif size != entry.get("bytes"):
                result.fail(
                    "manifest", name, "-", f"{size} bytes, the manifest says {entry.get('bytes')}"
                )
    return manifest


def _files(directory: Path) -> Iterator[str]:
    """Every file's path relative to ``directory`` (``/``-separated), but the manifests'."""
    for path in sorted(directory.rglob("*")):
        if not path.is_file():
            continue
        relative = path.relative_to(directory).as_posix()
        if relative != MANIFEST and not relative.startswith(f"{MANIFESTS_DIR}/"):
            yield relative


def _sha256(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


# -- chain and records ------------------------------------------------------------------------


def _lines(path: Path, result: Verification, check: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a JSON-lines file; an unreadable line is a failure."""
    if not path.is_file():
        return
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                item = json.loads(line)
            except ValueError:
                result.fail(check, path.name, f"line {number}", "not a JSON object")
                continue
            if not isinstance(item, dict):
                result.fail(check, path.name, f"line {number}", "not a JSON object")
                continue
            yield number, item


def _check_chain(directory: Path, subjects: Subjects, result: Verification) -> Chain:
    chain = Chain()
    used: dict[str, int] = {}
    seen: dict[RecordKind, set[Any]] = {kind: set() for kind in RecordKind}
    previous = GENESIS_HASH
    for number, line in _lines(directory / CHAIN, result, "chain"):
        result.count("records")
        seq, prev_hash, record = line.get("seq"), line.get("prev_hash"), line.get("record")
        row = f"seq={seq}"
        if seq != number:
            result.fail("chain", CHAIN, row, f"line {number} holds seq {seq}: a gap or a swap")
        if not isinstance(record, dict) or not isinstance(prev_hash, str):
            result.fail("chain", CHAIN, row, "no record or prev_hash")
            chain.hashes.append(str(line.get("hash")))
            chain.links.append(Link("", None, None, False))
            continue
        if record.get("seq") != seq:
            result.fail("chain", CHAIN, row, f"the record says seq {record.get('seq')}")
        if prev_hash != previous:
            result.fail("chain", CHAIN, row, "prev_hash is not the previous record's hash")
        if prev_hash in used:
            result.fail(
                "chain", CHAIN, row, f"a fork: prev_hash also used by seq {used[prev_hash]}"
            )
        used[prev_hash] = seq if isinstance(seq, int) else number
        try:
            data = canonical(record)
            rehashed = link_hash(prev_hash, data)
        except (ValueError, TypeError) as exc:
            data, rehashed = b"", f"unhashable ({exc})"
        if rehashed != line.get("hash"):
            result.fail("chain", CHAIN, row, "hash is not sha256(prev_hash || canonical record)")
        previous = str(line.get("hash"))
        chain.hashes.append(previous)
        link = _link(record)
        chain.links.append(link)
        _check_record(record, data, link, subjects, seen, result)
        if link.kind == RecordKind.DECISION:
            chain.decisions.setdefault(link.subject_id, number)
    for kind, (table, id_column) in SUBJECT_TABLES.items():
        for subject_id in sorted(set(subjects.subjects(kind)) - seen[kind]):
            result.fail("record", table, f"{id_column}={subject_id}", f"no {kind} record")
    return chain


def _link(record: dict[str, Any]) -> Link:
    try:
        recorded_at = parse_timestamp(str(record.get("recorded_at")))
    except ValueError:
        recorded_at = None
    kind = record.get("kind")
    return Link(
        str(kind), record.get("subject_id"), recorded_at, record.get("after_the_fact") is True
    )


def _check_record(
    record: dict[str, Any],
    data: bytes,
    link: Link,
    subjects: Subjects,
    seen: dict[RecordKind, set[Any]],
    result: Verification,
) -> None:
    """The record (whose canonical bytes are ``data``) against its body rebuilt from the
    tables; its subject is marked seen."""
    seq = record.get("seq")
    try:
        kind = RecordKind(link.kind)
    except ValueError:
        result.fail("record", CHAIN, f"seq={seq}", f"unknown kind {link.kind!r}")
        return
    result.count(f"records_{kind}")
    if link.after_the_fact:
        result.count("records_after_the_fact")
    seen[kind].add(link.subject_id)
    rebuilt = subjects.body(kind, link.subject_id)
    table, id_column = SUBJECT_TABLES[kind]
    if rebuilt is None:
        result.fail(
            "record", table, f"{id_column}={link.subject_id}", f"record seq {seq} has no row"
        )
        return
    body = record.get("body")
    if canonical({**record, "body": rebuilt}) != data:
        difference = first_difference(kind, link.subject_id, body, rebuilt)
        detail = f"record seq {seq}: {difference.detail}"
        result.fail("record", difference.table, difference.row, detail)


def _check_head(manifest: dict[str, Any], chain: Chain, result: Verification) -> None:
    head = manifest.get("chain")
    if not isinstance(head, dict):
        return
    seq = len(chain.hashes)
    stated = (head.get("seq"), head.get("head_hash"), head.get("records"))
    actual = (seq, chain.hashes[-1] if chain.hashes else GENESIS_HASH, seq)
    if stated != actual:
        result.fail("chain", MANIFEST, "chain", f"the manifest's head {stated} is not {actual}")


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


def _check_commitments(
    directory: Path, chain: Chain, result: Verification
) -> list[tuple[int, datetime]] | None:
    """The (seq, committed_at) of every commitment that holds, sorted by seq; None when the
    dataset holds no commitment at all."""
    public = _public_key(directory, result)
    if public is None and not (directory / PUBLIC_KEY).is_file():
        result.notes.append("no public_key.pem: commitment signatures cannot be checked")
    valid: list[tuple[int, datetime]] = []
    any_line = False
    for number, line in _lines(directory / COMMITMENTS, result, "commitment"):
        any_line = True
        result.count("commitments")
        if _commitment_holds(line, number, public, chain, result):
            valid.append((line["seq"], parse_timestamp(line["committed_at"])))
    if result.counts.get("commitments_unsigned"):
        result.notes.append(f"{result.counts['commitments_unsigned']} commitments are unsigned")
    return sorted(valid) if any_line else None


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


# -- timing -----------------------------------------------------------------------------------


def _resolutions(directory: Path) -> dict[str, datetime]:
    """Each resolved (or closed) market's resolution time: the earlier of ``resolved_at`` and
    ``closed_time``."""
    out: dict[str, datetime] = {}
    for row in table_rows(directory, "markets", ("market_id", "resolved_at", "closed_time")):
        times = [parse_timestamp(t) for t in (row["resolved_at"], row["closed_time"]) if t]
        if times:
            out[row["market_id"]] = min(times)
    return out


def _check_timing(
    directory: Path,
    chain: Chain,
    commitments: list[tuple[int, datetime]] | None,
    result: Verification,
) -> None:
    resolutions = _resolutions(directory)
    seqs = [seq for seq, _ in commitments or []]
    earliest: list[datetime] = []  # earliest committed_at among commitments[i:]
    for _, committed_at in reversed(commitments or []):
        earliest.append(committed_at if not earliest else min(committed_at, earliest[-1]))
    earliest.reverse()
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
                first = bisect.bisect_left(seqs, seq)
                committed = earliest[first] if first < len(earliest) else None
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


# -- leaderboard and incidents ----------------------------------------------------------------


def _check_leaderboard(directory: Path, result: Verification) -> None:
    agents = agent_ledgers(directory)
    for agent_id, agent in sorted(agents.items()):
        if agent.cash != agent.stored_cash:
            result.fail(
                "ledger",
                "agents",
                f"agent_id={agent_id}",
                f"cash {agent.stored_cash}, its trades and settlements give {agent.cash}",
            )
    path = directory / LEADERBOARD
    if not path.is_file():
        result.count("leaderboard_skipped")
        result.notes.append("no leaderboard.json: the leaderboard is not checked")
        return
    try:
        board = json.loads(path.read_text(encoding="utf-8"))
        published = {row["family_id"]: row for row in board}
    except (ValueError, TypeError, KeyError) as exc:
        result.fail("leaderboard", LEADERBOARD, "-", f"unreadable: {exc}")
        return
    families = family_money(directory, agents)
    for family_id in sorted(set(published) | set(families)):
        result.count("leaderboard_rows")
        row = f"family_id={family_id}"
        if family_id not in families:
            result.fail("leaderboard", LEADERBOARD, row, "a family with no agent in the tables")
        elif family_id not in published:
            result.fail("leaderboard", LEADERBOARD, row, "a family missing from the leaderboard")
        else:
            for detail in differences(published[family_id], families[family_id]):
                result.fail("leaderboard", LEADERBOARD, row, detail)


def _check_incidents(directory: Path, result: Verification) -> None:
    """Counted as skipped: the incident log is checked once :mod:`arena.publish.incidents`,
    which writes it, is here to recompute it from the tables."""
    result.count("incidents_skipped")
    if (directory / INCIDENTS).is_file():
        result.notes.append("incidents.jsonl is not checked")
