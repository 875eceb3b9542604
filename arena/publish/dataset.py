"""``arena publish DIR``: a versioned, self-contained dataset a reader can verify without the
operator's database (METHODOLOGY.md, "A record anyone can verify"; README "Publish and
verify").

Layout (``DIR/``):

* ``tables/<table>.parquet`` and ``tables/<table>.csv``: every export table, prompts included
  (``docs/EXPORT_SCHEMA.md``);
* ``chain.jsonl``: one line per record in sequence order, ``{"seq", "prev_hash", "hash",
  "record"}``, where ``hash = sha256(prev_hash bytes || RFC 8785 bytes of record)``;
* ``commitments.jsonl``: one line per commitment, ``{"id", "seq", "head_hash", "count",
  "committed_at", "key_id", "signature", "body"}``, ``body`` being the exact signed text;
* ``public_key.pem``: the Ed25519 public key, when a signing key is configured;
* ``manifest.json``: the dataset's version and head, and the sha256 and size of every other
  file; ``manifests/manifest-<version>.json`` keeps every version's manifest.

Everything is read in one consistent snapshot, so the chain never runs ahead of the tables it
records. Publishing is incremental: each file is written beside the dataset and moves into
place only when its bytes changed; a publish that changes nothing writes no new version.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena import __version__
from arena.clock import iso_utc
from arena.export.directory import sha256_of
from arena.export.writer import write_table_files
from arena.publish.layout import (
    CHAIN,
    COMMITMENTS,
    MANIFEST,
    MANIFESTS_DIR,
    PUBLIC_KEY,
    TABLES_DIR,
)
from arena.record.canonical import canonical
from arena.record.chain import head
from arena.record.signing import load_signing_key, public_key_pem
from arena.store.consistent_read import consistent_read
from arena.store.models import Commitment, Record

log = logging.getLogger(__name__)

DATASET_SCHEMA_VERSION = "1"
TABLE_FORMATS = ("parquet", "csv")
STAGING = ".publishing"
RECORD_BATCH = 2_000


@dataclass
class PublishReport:
    """What one publish did: the dataset version it left, and which files it (re)wrote."""

    directory: Path
    version: int
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    records: int = 0
    head_hash: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "version": self.version,
            "changed": self.changed,
            "unchanged": len(self.unchanged),
            "records": self.records,
            "head_hash": self.head_hash,
        }


Part = Callable[[Session, Path], list[str]]
"""A part of the dataset: writes its files under the staging directory given, returns their
paths relative to it."""


def publish_dataset(
    factory: sessionmaker[Session],
    out: Path,
    now: datetime,
    *,
    signing_key: str | None = None,
    parts: tuple[Part, ...] = (),
) -> PublishReport:
    """Write or update the dataset in ``out``; ``signing_key`` is the PEM of
    ``ARENA_SIGNING_KEY`` (only its public half is published); ``parts`` add files (the
    leaderboard, the analyses, the incident log, the card, the static site)."""
    out.mkdir(parents=True, exist_ok=True)
    staged = out / STAGING
    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir()
    try:
        with consistent_read(factory) as session:
            written = _tables(session, staged)
            written += _chain(session, staged)
            written += _commitments(session, staged)
            if signing_key is not None:
                (staged / PUBLIC_KEY).write_text(public_key_pem(load_signing_key(signing_key)))
                written.append(PUBLIC_KEY)
            for part in parts:
                written += part(session, staged)
            chain_head = head(session)
        report = PublishReport(out, _current_version(out))
        report.records, report.head_hash = chain_head.seq, chain_head.hash
        digests: dict[str, dict[str, Any]] = {}
        for name in dict.fromkeys(written):  # a part may name a file twice
            moved, digests[name] = _move_if_changed(staged / name, out / name)
            (report.changed if moved else report.unchanged).append(name)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    if report.changed or not (out / MANIFEST).exists():
        report.version += 1
        manifest = _manifest(out, report, now, digests)
        (out / MANIFESTS_DIR).mkdir(exist_ok=True)
        text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        _write_atomically(out / MANIFESTS_DIR / f"manifest-{report.version:06d}.json", text)
        _write_atomically(out / MANIFEST, text)
    log.info("published %s: version %s, %s files changed", out, report.version, len(report.changed))
    return report


def _tables(session: Session, staged: Path) -> list[str]:
    (staged / TABLES_DIR).mkdir()
    written = write_table_files(session, staged / TABLES_DIR, TABLE_FORMATS)
    return [f"{TABLES_DIR}/{path.name}" for _table, path, _rows in written]


def _chain(session: Session, staged: Path) -> list[str]:
    """``chain.jsonl``: every record, its canonical body parsed back into the line."""
    statement = select(Record.seq, Record.prev_hash, Record.hash, Record.body).order_by(Record.seq)
    with _lines(staged / CHAIN) as write:
        rows = session.execute(statement.execution_options(yield_per=RECORD_BATCH))
        for seq, prev_hash, hash_, body in rows:
            write(chain_line(seq, prev_hash, hash_, body))
    return [CHAIN]


def chain_line(seq: int, prev_hash: str, hash_: str, body: str) -> bytes:
    """The RFC 8785 bytes of ``{"seq", "prev_hash", "hash", "record"}``, ``body`` being the
    record's stored canonical text: its members in canonical order around the body as stored
    (hex hashes and an integer need no escaping), so no record is parsed and encoded again."""
    return (
        f'{{"hash":"{hash_}","prev_hash":"{prev_hash}","record":{body},"seq":{int(seq)}}}'
    ).encode()


def _commitments(session: Session, staged: Path) -> list[str]:
    with _lines(staged / COMMITMENTS) as write:
        for commitment in session.scalars(select(Commitment).order_by(Commitment.id)):
            write(
                canonical(
                    {
                        "id": commitment.id,
                        "seq": commitment.seq,
                        "head_hash": commitment.head_hash,
                        "count": commitment.count,
                        "committed_at": iso_utc(commitment.committed_at),
                        "key_id": commitment.key_id,
                        "signature": commitment.signature,
                        "body": commitment.body,
                    }
                )
            )
    return [COMMITMENTS]


@contextmanager
def _lines(path: Path) -> Iterator[Callable[[bytes], None]]:
    """A function that writes one JSON line (bytes) to ``path``."""
    with path.open("wb") as handle:

        def write(data: bytes) -> None:
            handle.write(data + b"\n")

        yield write


def _move_if_changed(source: Path, target: Path) -> tuple[bool, dict[str, Any]]:
    """Move ``source`` onto ``target`` unless both hold the same bytes; whether it moved, and
    the file's manifest entry (each file is hashed once, its target once more when the sizes
    are equal)."""
    entry = {"sha256": sha256_of(source), "bytes": source.stat().st_size}
    same_size = target.exists() and target.stat().st_size == entry["bytes"]
    if same_size and sha256_of(target) == entry["sha256"]:
        return False, entry
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)
    return True, entry


def _current_version(out: Path) -> int:
    try:
        return int(json.loads((out / MANIFEST).read_text())["version"])
    except (FileNotFoundError, KeyError, ValueError, TypeError):
        return 0


def _files(out: Path) -> Iterator[Path]:
    for path in sorted(out.rglob("*")):
        relative = path.relative_to(out)
        if path.is_file() and relative.parts[0] not in (MANIFEST, MANIFESTS_DIR, STAGING):
            yield path


def _manifest(
    out: Path, report: PublishReport, now: datetime, digests: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The manifest of every file in ``out``: the entries of the files just published
    (``digests``), any other file hashed now."""
    files = {}
    for path in _files(out):
        name = path.relative_to(out).as_posix()
        files[name] = digests.get(name) or {
            "sha256": sha256_of(path),
            "bytes": path.stat().st_size,
        }
    return {
        "dataset_schema_version": DATASET_SCHEMA_VERSION,
        "version": report.version,
        "published_at": iso_utc(now),
        "arena_version": __version__,
        "chain": {"seq": report.records, "head_hash": report.head_hash, "records": report.records},
        "files": files,
    }


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
