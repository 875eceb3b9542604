"""Interim publisher per the contract in rules.md (replaced by arena.publish.dataset)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from sqlalchemy import select

from arena.analytics.leaderboard import compute_leaderboard, to_json
from arena.clock import iso_utc
from arena.export.writer import ExportTarget, export
from arena.record.signing import public_key_pem
from arena.store.models import Commitment, Record


def publish(factory, out: Path, key) -> None:
    out.mkdir(parents=True, exist_ok=True)
    export(factory, ExportTarget(out / "tables", "parquet"))
    (out / "tables" / "manifest.json").unlink()
    with factory() as session:
        records = session.scalars(select(Record).order_by(Record.seq)).all()
        with (out / "chain.jsonl").open("w") as f:
            for r in records:
                f.write(
                    json.dumps(
                        {
                            "seq": r.seq,
                            "prev_hash": r.prev_hash,
                            "hash": r.hash,
                            "record": json.loads(r.body),
                        }
                    )
                    + "\n"
                )
        with (out / "commitments.jsonl").open("w") as f:
            for c in session.scalars(select(Commitment).order_by(Commitment.id)):
                f.write(
                    json.dumps(
                        {
                            "id": c.id,
                            "seq": c.seq,
                            "head_hash": c.head_hash,
                            "count": c.count,
                            "committed_at": iso_utc(c.committed_at),
                            "key_id": c.key_id,
                            "signature": c.signature,
                            "body": c.body,
                        }
                    )
                    + "\n"
                )
    (out / "public_key.pem").write_text(public_key_pem(key))
    (out / "leaderboard.json").write_text(
        json.dumps(to_json(compute_leaderboard(factory)), indent=2)
    )
    files = {}
    for p in sorted(out.rglob("*")):
        if p.is_file() and p.name != "manifest.json":
            files[p.relative_to(out).as_posix()] = {
                "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
                "bytes": p.stat().st_size,
            }
    last = records[-1]
    (out / "manifest.json").write_text(
        json.dumps(
            {
                "dataset_schema_version": "1",
                "version": 1,
                "chain": {"seq": last.seq, "head_hash": last.hash, "records": len(records)},
                "files": files,
            },
            indent=2,
        )
    )
