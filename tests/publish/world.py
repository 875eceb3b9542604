"""A small simulated arena with a chained record and signed commitments, for publish/verify.

Nine simulated days of the production runtime (:class:`arena.demo_world.Simulation`, hourly
steps, methodology v2): cohorts, decisions with forecasts and trades, settlements with Brier
rows, each chained by the jobs themselves, and the commitment the runtime writes after each
decision run, signed afterwards with a test key (:func:`sign_commitments`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import iso_utc
from arena.config import Settings, load_settings
from arena.demo_world import Simulation, WorldPlan
from arena.publish.dataset import publish_dataset
from arena.publish.parts import dataset_parts
from arena.record.commitments import commitment_body
from arena.record.signing import key_id, sign
from arena.store.db import make_engine, session_factory, upgrade
from arena.store.models import Commitment
from tests.helpers import write_config

START = datetime(2026, 11, 1, tzinfo=UTC)  # a Sunday
DAYS = 9
END = START + timedelta(days=DAYS)
FAMILIES = [
    # with web search: its attempts carry citations, which the records cover
    {"id": "sim-sharp", "display_name": "Sharp", "openrouter_id": "sim/sharp", "web_search": {}},
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
    factory: sessionmaker[Session],
    settings: Settings,
    out: Path,
    key: Ed25519PrivateKey,
    now: datetime,
) -> None:
    """``arena publish`` of the arena into ``out``, with every part it adds."""
    publish_dataset(
        factory, out, now, signing_key=signing_key_pem(key), parts=dataset_parts(settings)
    )


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


def sign_commitments(factory: sessionmaker[Session], key: Ed25519PrivateKey) -> int:
    """Sign the commitments the runtime wrote after each decision run (unsigned: the
    simulation has no ``ARENA_SIGNING_KEY``) as it would have with ``key``; how many."""
    with factory.begin() as session:
        commitments = session.scalars(select(Commitment).order_by(Commitment.id)).all()
        for commitment in commitments:
            body = commitment_body(
                commitment.seq,
                commitment.head_hash,
                commitment.count,
                iso_utc(commitment.committed_at),
                key_id(key),
            )
            commitment.body = body.decode("utf-8")
            commitment.signature = sign(key, body)
            commitment.key_id = key_id(key)
    return len(commitments)
