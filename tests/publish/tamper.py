"""Tampering with a published dataset the way a dishonest operator (or a bad disk) would."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

Rows = list[dict[str, Any]]


def read_rows(dataset: Path, table: str) -> Rows:
    return pq.read_table(dataset / "tables" / f"{table}.parquet").to_pylist()


def rewrite_table(
    dataset: Path, table: str, change: Callable[[Rows], Rows], *, manifest: bool = True
) -> None:
    """Rewrite ``tables/<table>.parquet`` with ``change`` applied to its rows (same schema);
    with ``manifest``, the manifest's sha256 follows, so only the other checks can tell."""
    path = dataset / "tables" / f"{table}.parquet"
    original = pq.read_table(path)
    rows = change(original.to_pylist())
    pq.write_table(pa.Table.from_pylist(rows, schema=original.schema), path)
    if manifest:
        refresh_manifest(dataset, f"tables/{table}.parquet")


def change_one_byte(
    dataset: Path, table: str, key: tuple[str, Any], column: str, text: Callable[[Any], Any] = str
) -> None:
    """Change the last character of ``column`` in the row of ``table`` whose ``key`` column
    holds the key's value (its type kept by ``text``: ``Decimal`` for a decimal column)."""
    name, value = key

    def change(rows: Rows) -> Rows:
        for row in rows:
            if row[name] == value:
                row[column] = text(one_byte(str(row[column])))
        return rows

    rewrite_table(dataset, table, change)


def rewrite_lines(dataset: Path, name: str, change: Callable[[Rows], Rows]) -> None:
    """Rewrite a JSON-lines file of the dataset (and its manifest entry)."""
    path = dataset / name
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    text = "".join(json.dumps(line) + "\n" for line in change(lines))
    path.write_text(text, encoding="utf-8")
    refresh_manifest(dataset, name)


def refresh_manifest(dataset: Path, name: str) -> None:
    """Make the manifest agree with the file as it now is."""
    manifest_path = dataset / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    data = (dataset / name).read_bytes()
    manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    manifest_path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def chain_records(dataset: Path) -> Rows:
    text = (dataset / "chain.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def one_byte(text: str) -> str:
    """``text`` with its last character changed (one byte, for ASCII)."""
    last = text[-1]
    return text[:-1] + ("1" if last != "1" else "2")


def set_manifest_head(dataset: Path, head_hash: str) -> None:
    """The manifest's chain head, as a forger who rewrote the chain would state it."""
    manifest_path = dataset / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["chain"]["head_hash"] = head_hash
    manifest_path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
