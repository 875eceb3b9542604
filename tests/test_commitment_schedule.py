"""The daemon commits the record after each decision run and every
``schedule.commitment_minutes``; an anchor that refuses never fails a decision run, fails only
the commitment job's slot (with the anchor's reason), and takes what waited once it recovers.
``arena status`` shows the chain head, the latest commitment and the failing anchor."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from arena.config import load_settings
from arena.demo_world import Simulation
from arena.domain.states import Job
from arena.sources.anchors import GitAnchor
from arena.store.models import AnchorDelivery, Commitment, Record
from arena.web.app import create_app
from tests.cli.test_results import arena_main
from tests.conftest import Database
from tests.helpers import WEEK_FAMILIES, week_simulation, write_config
from tests.sources.anchor_fakes import GitRemote, git_remote

SUNDAY = datetime(2026, 11, 22, tzinfo=UTC)


@pytest.fixture
def sim(db: Database, tmp_path: Path) -> Iterator[Simulation]:
    with week_simulation(db.url, db.factory, tmp_path / "config.yaml", SUNDAY) as simulation:
        yield simulation


@pytest.fixture
def remote(tmp_path: Path) -> GitRemote:
    return git_remote(tmp_path)


def test_a_refusing_git_remote_never_fails_a_decision_run(
    sim: Simulation, db: Database, remote: GitRemote
) -> None:
    remote.refuse()
    sim.runtime.anchors = [GitAnchor(remote.config())]
    at = SUNDAY + timedelta(minutes=10)
    sim.clock.set(at)
    assert sim.runtime.run_job(Job.COHORT_START, sim.clock).status == "succeeded"
    decided = sim.runtime.run_job(Job.DECISION_RUN, sim.clock)
    assert decided.status == "succeeded", decided.error
    assert decided.counts is not None and decided.counts["decided"] == 3
    with db.factory() as session:
        head = session.scalar(select(Record.seq).order_by(Record.seq.desc()).limit(1))
        made = list(session.scalars(select(Commitment)))
        (delivery,) = session.scalars(select(AnchorDelivery))
    # the decision run committed what it recorded: the cohort and its three decisions
    assert head == 4 and [(c.seq, c.count) for c in made] == [(4, 4)]
    assert (delivery.status, delivery.attempts) == ("failed", 1)

    failed = sim.runtime.run_job(Job.COMMITMENT, sim.clock)
    assert failed.status == "failed"
    assert "pushes are refused here" in (failed.error or "")
    assert remote.pushed_lines() == []
    with TestClient(create_app(sim.settings)) as client:
        metrics = client.get("/metrics").text
    name = f'{{anchor="git:{remote.work}"}}'
    assert f"arena_anchor_undelivered_commitments{name} 1.0" in metrics
    assert f"arena_anchor_failed_deliveries_total{name} 2.0" in metrics

    remote.refuse(False)
    sim.clock.set(SUNDAY + timedelta(hours=1))
    done = sim.runtime.run_job(Job.COMMITMENT, sim.clock)
    assert done.status == "succeeded", done.error
    assert done.counts is not None and done.counts["delivered"] == 1
    assert [json.loads(line)["seq"] for line in remote.pushed_lines()] == [4]


def test_arena_status_shows_the_head_the_commitment_and_a_failing_anchor(
    sim: Simulation,
    db: Database,
    remote: GitRemote,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    remote.refuse()
    config = write_config(
        tmp_path / "config.yaml",
        db.url,
        families=WEEK_FAMILIES,
        record={"anchors": [{"kind": "git", "repo": str(remote.work), "remote": str(remote.bare)}]},
    )
    assert load_settings(config).record.anchors == [remote.config()]
    sim.runtime.anchors = [GitAnchor(remote.config())]
    at = SUNDAY + timedelta(minutes=10)
    sim.clock.set(at)
    sim.runtime.run_job(Job.COHORT_START, sim.clock)
    sim.runtime.run_job(Job.DECISION_RUN, sim.clock)
    with db.factory() as session:
        head_hash = session.scalar(select(Record.hash).where(Record.seq == 4))
    assert head_hash is not None
    done = arena_main(capsys, "--config", str(config), "status", "--at", "2026-11-22T00:20:00Z")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert f"record: chain head seq 4, hash {head_hash[:16]}" in text
    assert "latest commitment: seq 4 at 2026-11-22 00:10Z, unsigned" in text
    assert "commitments are unsigned" in text
    assert "1 commitment(s) not delivered" in text  # the warning (long paths wrap anywhere)
    assert "pushes are refused here" in text
    as_json = arena_main(
        capsys, "--config", str(config), "status", "--at", "2026-11-22T00:20:00Z", "-f", "json"
    )
    record = json.loads(as_json.stdout)["record"]
    assert (record["head_seq"], record["head_hash"], record["signing"]) == (
        4,
        head_hash,
        "unsigned",
    )
    assert record["anchors"][0]["undelivered"] == 1
    (warning,) = [w for w in json.loads(as_json.stdout)["warnings"] if w.startswith("anchor")]
    assert warning.startswith(f"anchor git:{remote.work}: 1 commitment(s) not delivered")
