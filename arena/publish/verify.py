"""``arena verify DIR``: check a published dataset with nothing but the dataset and arena.

No database: the Parquet tables, ``chain.jsonl``, ``commitments.jsonl``, ``public_key.pem``,
``leaderboard.json`` and ``manifest.json`` are all it reads. Each check adds a
:class:`~arena.publish.findings.Failure` naming the check, the table (or file) and the row,
and counts what it saw:

* ``manifest``: every file listed with its sha256 and size, none missing, none extra;
* ``chain``: line ``n`` holds seq ``n`` (no gap), its envelope says the same seq, its
  ``prev_hash`` is the previous line's hash (the first: :data:`GENESIS_HASH`) and no
  ``prev_hash`` is used twice (no fork), and its hash is ``link_hash(prev_hash,
  canonical(record))``; the manifest's head agrees;
* ``record``: each record's body equals the body rebuilt from the tables
  (:mod:`arena.publish.rebuild`); every completed decision, settled or cancelled position and
  cohort has a record, and every record a row (a deleted decision is named);
* ``commitment`` and ``timing``: every commitment holds (and counts the records since the one
  before it, so none was taken out), and every forecast and bet was
  committed before its market resolved (:mod:`arena.publish.covering` states the rules);
* ``leaderboard``: every published row's money to the cent, and its counts and Brier, against
  the tables (:mod:`arena.publish.standings`); ``ledger``: each agent's stored cash against its
  fills and settlements. Skipped (counted) when ``leaderboard.json`` is absent;
* ``incidents``: the incident log against the job runs, decisions and outages of the tables
  (:mod:`arena.publish.incident_check`); skipped (counted) when the log or ``job_runs`` is
  absent.

What this proves and does not prove is in METHODOLOGY.md ("A record anyone can verify").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arena.clock import parse_timestamp
from arena.export.directory import sha256_of
from arena.publish.covering import check_commitments, check_timing
from arena.publish.findings import Chain, Link, Verification, json_lines
from arena.publish.incident_check import check_incidents
from arena.publish.layout import (
    CHAIN,
    LEADERBOARD,
    MANIFEST,
    MANIFESTS_DIR,
)
from arena.publish.rebuild import SUBJECT_TABLES, Subjects, first_difference
from arena.publish.standings import agent_ledgers, differences, family_money
from arena.record.canonical import GENESIS_HASH, canonical, link_hash
from arena.record.records import RecordKind, as_of_schema

COMMITMENT_FIELDS = ("seq", "head_hash", "count", "committed_at", "key_id")


def verify_dataset(directory: Path) -> Verification:
    """Run every check on the dataset in ``directory`` (see the module)."""
    result = Verification()
    manifest = _check_manifest(directory, result)
    subjects = Subjects.read(directory)
    chain = _check_chain(directory, subjects, result)
    if manifest is not None:
        _check_head(manifest, chain, result)
    commitments = check_commitments(directory, chain, result)
    check_timing(directory, chain, commitments, result)
    _check_leaderboard(directory, result)
    check_incidents(directory, result)
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
            digest, size = sha256_of(directory / name), (directory / name).stat().st_size
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


# -- chain and records ------------------------------------------------------------------------


def _check_chain(directory: Path, subjects: Subjects, result: Verification) -> Chain:
    chain = Chain()
    used: dict[str, int] = {}
    seen: dict[RecordKind, set[Any]] = {kind: set() for kind in RecordKind}
    previous = GENESIS_HASH
    for number, line in json_lines(directory / CHAIN, result, "chain"):
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
    as_recorded = as_of_schema(kind, rebuilt, record.get("schema"))
    if canonical({**record, "body": as_recorded}) != data:
        difference = first_difference(kind, link.subject_id, body, as_recorded)
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
