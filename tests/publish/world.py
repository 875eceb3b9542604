"""A small simulated arena with a chained record and signed commitments, for publish/verify.

Nine simulated days of the production runtime (:class:`arena.demo_world.Simulation`, hourly
steps, methodology v2): cohorts, decisions with forecasts and trades, settlements with Brier
rows, each chained by the jobs themselves. A commitment is then written after each decision
run (one per distinct record time, covering the head at that time), signed with a test key,
as the daemon's commit job does.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena.analytics.leaderboard import compute_leaderboard, to_json
from arena.clock import iso_utc
from arena.config import Settings, load_settings
from arena.demo_world import Simulation, WorldPlan
from arena.publish.dataset import publish_dataset
from arena.record.canonical import canonical
from arena.record.signing import key_id, sign
from arena.store.db import make_engine, session_factory, upgrade
from arena.store.models import Commitment, Record
from tests.helpers import write_config
from tests.publish.tamper import refresh_manifest

START = datetime(2026, 11, 1, tzinfo=UTC)  # a Sunday
DAYS = 9
END = START + timedelta(days=DAYS)
FAMILIES = [
    {"id": "sim-sharp", "display_name": "Sharp", "openrouter_id": "sim/sharp"},
    {"id": "market-follower", "kind": "baseline", "strategy": "market-follower"},
]


def signing_key_pem(key: Ed25519PrivateKey) -> str:
    """The private key as ``ARENA_SIGNING_KEY`` holds it (PKCS#8 PEM)."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode("ascii")


def publish(
    factory: sessionmaker[Session], out: Path, key: Ed25519PrivateKey, now: datetime
) -> None:
    """``arena publish`` of the arena into ``out``, with ``leaderboard.json`` as
    ``arena leaderboard --format json`` prints it (written here until ``arena publish``
    writes it itself)."""
    publish_dataset(factory, out, now, signing_key=signing_key_pem(key))
    board = to_json(compute_leaderboard(factory))
    (out / "leaderboard.json").write_text(json.dumps(board, indent=2) + "\n", encoding="utf-8")
    refresh_manifest(out, "leaderboard.json")


def simulate(directory: Path) -> tuple[sessionmaker[Session], Settings]:
    """Run the simulation into ``directory / "arena.db"``; its session factory and settings."""
    url = f"sqlite:///{directory / 'arena.db'}"
    config = write_config(
        directory / "config.yaml",
        url,
        families=FAMILIES,
        methodology="v2",
        schedule={"market_sync_minutes": 720, "resolution_minutes": 60, "snapshot_minutes": 60},
    )
    settings = load_settings(config)  # mode book: trades carry their book's hash
    benchmark = settings.benchmark.model_copy(update={"pricing": "book"})
    settings = settings.model_copy(update={"benchmark": benchmark})
    engine = make_engine(url)
    upgrade(engine)
    factory = session_factory(engine)
    sim = Simulation(
        settings, factory, WorldPlan(START, DAYS, n_markets=30, seed=11), skills={"sim-sharp": 0.7}
    )
    try:
        step = timedelta(hours=1)
        sim.run(START + timedelta(days=DAYS) - step, step)
    finally:
        sim.close()
    return factory, settings


def commit_records(factory: sessionmaker[Session], key: Ed25519PrivateKey) -> int:
    """One signed commitment per distinct record time, a minute after it, covering the head
    at that time; the number written."""
    written = 0
    with factory.begin() as session:
        records = session.execute(
            select(Record.seq, Record.hash, Record.recorded_at).order_by(Record.seq)
        ).all()
        last_seq = 0
        for index, (seq, hash_, recorded_at) in enumerate(records):
            following = records[index + 1] if index + 1 < len(records) else None
            if following is not None and following.recorded_at == recorded_at:
                continue  # the same run: commit once after its last record
            committed_at = recorded_at + timedelta(minutes=1)
            body = {
                "seq": seq,
                "head_hash": hash_,
                "count": seq - last_seq,
                "committed_at": iso_utc(committed_at),
                "key_id": key_id(key),
            }
            data = canonical(body)
            session.add(
                Commitment(
                    seq=seq,
                    head_hash=hash_,
                    count=seq - last_seq,
                    committed_at=committed_at,
                    body=data.decode("utf-8"),
                    signature=sign(key, data),
                    key_id=key_id(key),
                )
            )
            last_seq = seq
            written += 1
    return written
