"""The record on the dashboard: ``/api/v1/record`` and ``/status`` show the chain head and the
latest commitment with each anchor's deliveries; a decision page shows its record's hash and
the commitment that covers it ("not yet committed" before one)."""

from __future__ import annotations

import html
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from arena.config import Settings
from arena.demo_world import Simulation
from arena.domain.states import Job
from arena.runtime import Runtime
from arena.sources.anchors import FileAnchor
from arena.store.models import Record
from arena.web.app import create_app
from tests.conftest import Database
from tests.helpers import week_simulation

SUNDAY = datetime(2026, 11, 22, tzinfo=UTC)


@pytest.fixture
def sim(db: Database, tmp_path: Path) -> Iterator[Simulation]:
    with week_simulation(db.url, db.factory, tmp_path / "config.yaml", SUNDAY) as simulation:
        yield simulation


def client_of(settings: Settings) -> TestClient:
    return TestClient(create_app(settings), raise_server_exceptions=False)


def test_pages_show_the_head_the_commitment_and_what_covers_a_decision(
    sim: Simulation, db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    anchors = {"anchors": [{"kind": "file", "path": str(tmp_path)}]}
    settings = sim.settings.model_copy(
        update={"record": Settings.model_validate({"record": anchors}).record}
    )
    sim.runtime.anchors = [FileAnchor(settings.record.anchors[0])]  # type: ignore[arg-type]
    monkeypatch.setattr(Runtime, "_commit_after_decisions", lambda _self, _clock: None)
    sim.clock.set(SUNDAY + timedelta(minutes=10))
    sim.runtime.run_job(Job.COHORT_START, sim.clock)
    sim.runtime.run_job(Job.DECISION_RUN, sim.clock)
    with db.factory() as session:
        decision_id, seq, hash_ = session.execute(
            select(Record.subject_id, Record.seq, Record.hash)
            .where(Record.kind == "decision")
            .order_by(Record.seq)
            .limit(1)
        ).one()
    with client_of(settings) as client:
        page = html.unescape(client.get(f"/decisions/{decision_id}").text)
        assert f"Record seq {seq}, hash" in page and hash_ in page
        assert "not yet committed" in page
        body = client.get("/api/v1/record").json()
        assert (body["head_seq"], body["commitment"], body["signing"]) == (4, None, None)
        assert body["anchors"] == [
            {
                "anchor": f"file:{tmp_path}",
                "delivered_seq": None,
                "delivered_at": None,
                "undelivered": 0,
                "failed_attempts": 0,
                "last_error": None,
                "failed_at": None,
            }
        ]

    sim.clock.set(SUNDAY + timedelta(hours=1))
    assert sim.runtime.run_job(Job.COMMITMENT, sim.clock).status == "succeeded"
    with client_of(settings) as client:
        page = html.unescape(client.get(f"/decisions/{decision_id}").text)
        assert "covered by the commitment at seq 4, 2026-11-22 01:00Z (unsigned)" in page
        decision = client.get(f"/api/v1/decisions/{decision_id}").json()
        assert decision["record"]["hash"] == hash_
        assert decision["record"]["commitment"]["seq"] == 4
        body = client.get("/api/v1/record").json()
        assert body["commitment"]["seq"] == 4 and body["commitment"]["signed"] is False
        assert body["commitment"]["committed_at"] == "2026-11-22T01:00:00Z"
        assert body["anchors"][0]["delivered_seq"] == 4
        assert client.get("/api/v1/status").json()["record"] == body
        status = html.unescape(client.get("/status").text)
        assert f'seq 4, <code title="{body["head_hash"]}">{body["head_hash"][:16]}' in status
        assert "seq 4 at 2026-11-22 01:00Z, unsigned" in status
        assert "Commitments are unsigned" in status
        assert f"anchor file:{tmp_path}" in status
        metrics = client.get("/metrics").text
        assert "arena_record_head_seq 4.0" in metrics
        assert f'arena_anchor_undelivered_commitments{{anchor="file:{tmp_path}"}} 0.0' in metrics
