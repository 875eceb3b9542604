"""``arena publish DIR`` (issue 26, item 3): every file a dataset must hold, a manifest whose
sha256 are right, the leaderboard as ``arena leaderboard --format json`` prints it, an incident
log of failed, late and caught-up runs, failed decisions and CLOB outages, a card, and
incremental publishing (nothing changed: no new version; new data: a new version replacing
only what changed, earlier manifests kept)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import select

from arena.cli import main
from arena.config import Settings
from arena.export.tables import JOB_RUNS, TABLES
from arena.export.values import text_value
from arena.publish.dataset import publish_dataset
from arena.publish.incidents import Timing, job_run_incidents
from arena.publish.parts import dataset_parts
from arena.record.canonical import canonical
from arena.record.chain import chain_backlog
from arena.store.models import Agent, Decision, JobRun, PortfolioSnapshot, SystemLog
from tests.analytics.results_arena import build_arena
from tests.conftest import Database
from tests.helpers import write_config

AT = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
SLOT = datetime(2026, 11, 22, 0, 0, tzinfo=UTC)
SECRET = "hunter2-very-secret"
NAMED = (
    "manifest.json",
    "README.md",
    "chain.jsonl",
    "commitments.jsonl",
    "public_key.pem",
    "leaderboard.json",
    "incidents.jsonl",
    "analysis/report.json",
    "analysis/incidents.json",
    "site/index.html",
)


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def arena_main(capsys: pytest.CaptureFixture[str], *args: str) -> Done:
    try:
        main(list(args))
        code: object = 0
    except SystemExit as stopped:
        code = stopped.code
    out = capsys.readouterr()
    return Done(code if isinstance(code, int) else 0, out.out, out.err)


def _run(
    job: str, slot: datetime, delay: timedelta, status: str, error: str | None = None
) -> JobRun:
    return JobRun(
        job=job,
        slot=slot,
        holder="testhost:1:0",
        status=status,
        started_at=slot + delay,
        finished_at=None if status in ("running", "abandoned") else slot + delay + timedelta(1),
        lease_until=slot + delay + timedelta(minutes=2),
        error=error,
    )


def _job_runs(db: Database) -> None:
    """An on-time run, a failed one (its error holding a URL with a password), a late one, a
    caught-up one, an abandoned one and one still running; and a CLOB outage."""
    ten = timedelta(minutes=10)
    with db.factory() as session, session.begin():
        session.add_all(
            [
                _run("snapshot", SLOT, timedelta(seconds=2), "succeeded"),
                _run(
                    "snapshot",
                    SLOT + ten,
                    timedelta(seconds=1),
                    "failed",
                    f"OperationalError: cannot reach postgresql://arena:{SECRET}@db/arena",
                ),
                _run("market_sync", SLOT, timedelta(seconds=95), "succeeded"),
                _run("decision_run", SLOT + timedelta(minutes=5), timedelta(hours=3), "succeeded"),
                _run("settlement", SLOT, timedelta(seconds=3), "abandoned", "holder gone"),
                _run("snapshot", SLOT + 2 * ten, timedelta(seconds=1), "running"),
            ]
        )
        session.add(
            SystemLog(
                at=SLOT + timedelta(minutes=7),
                level="ERROR",
                source="snapshot",
                event="clob_unavailable",
                message="Polymarket CLOB unavailable: ConnectError",
            )
        )


@pytest.fixture
def stored(sqlite_db: Database) -> Database:
    build_arena(sqlite_db.factory)
    chain_backlog(sqlite_db.factory, AT)
    _job_runs(sqlite_db)
    return sqlite_db


def _key_pem() -> str:
    key = Ed25519PrivateKey.generate()
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def _publish(db: Database, out: Path, at: datetime = AT) -> object:
    return publish_dataset(db.factory, out, at, parts=dataset_parts(Settings()))


def test_arena_publish_writes_every_named_file_with_a_right_manifest(
    stored: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    config = write_config(tmp_path / "config.yaml", stored.url)
    monkeypatch.setenv("ARENA_SIGNING_KEY", _key_pem())
    out = tmp_path / "dataset"
    done = arena_main(capsys, "--config", str(config), "publish", str(out), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["version"] == 1
    for name in NAMED:
        assert (out / name).is_file(), name
    for spec in TABLES:
        for fmt in ("parquet", "csv"):
            assert (out / "tables" / f"{spec.name}.{fmt}").is_file(), spec.name
    manifest = _manifest(out)
    on_disk = {
        path.relative_to(out).as_posix()
        for path in out.rglob("*")
        if path.is_file() and path.relative_to(out).parts[0] not in ("manifest.json", "manifests")
    }
    assert set(manifest["files"]) == on_disk
    for name, entry in manifest["files"].items():
        data = (out / name).read_bytes()
        assert entry == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}, name
    assert (out / "manifests" / "manifest-000001.json").read_text() == (
        out / "manifest.json"
    ).read_text()
    # the leaderboard is what `arena leaderboard --format json` prints, byte for byte
    done = arena_main(capsys, "--config", str(config), "leaderboard", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert (out / "leaderboard.json").read_text() == done.stdout
    # each chain line is the RFC 8785 text of itself (composed around the stored record)
    chain = (out / "chain.jsonl").read_bytes().splitlines()
    assert len(chain) == manifest["chain"]["records"] > 30
    for line in chain:
        assert canonical(json.loads(line)) == line
    # nothing holds the password of the failed run's URL
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    rows = pq.read_table(out / "tables" / "job_runs.parquet").to_pylist()
    assert any("postgresql://arena:***@db" in (row["error"] or "") for row in rows)


def test_the_incident_log_lists_failed_late_and_caught_up_runs_failed_decisions_and_outages(
    stored: Database, tmp_path: Path
) -> None:
    out = tmp_path / "dataset"
    _publish(stored, out)
    lines = [json.loads(line) for line in (out / "incidents.jsonl").read_text().splitlines()]
    assert lines == sorted(lines, key=lambda line: (line["at"], line["kind"], line["subject"]))
    by_kind: dict[str, list[dict]] = {}
    for line in lines:
        assert {"kind", "at", "subject", "detail"} <= set(line)
        by_kind.setdefault(line["kind"], []).append(line)
    failed = {(line["job"], line["status"]) for line in by_kind["job_failed"]}
    assert failed == {("snapshot", "failed"), ("settlement", "abandoned")}
    assert [line["job"] for line in by_kind["job_late"]] == ["market_sync"]
    assert [line["job"] for line in by_kind["job_caught_up"]] == ["decision_run"]
    assert by_kind["job_caught_up"][0]["delay_seconds"] == 3 * 3600
    with stored.factory() as session:
        failed_ids = set(
            session.scalars(
                select(Decision.id).where(Decision.status.in_(["retryable", "budget_skipped"]))
            )
        )
    assert failed_ids
    assert {line["decision_id"] for line in by_kind["decision_failed"]} == failed_ids
    assert all(line["detail"] == "retryable: timeout" for line in by_kind["decision_failed"])
    (outage,) = by_kind["clob_outage"]
    assert "ConnectError" in outage["detail"]
    summary = json.loads((out / "analysis" / "incidents.json").read_text())
    # six runs: one running (not counted), one on time among the five others
    assert (summary["scheduled_runs"], summary["on_time"], summary["in_progress"]) == (5, 1, 1)
    assert summary["on_time_share"] == 0.2
    assert summary["per_job"]["snapshot"]["on_time_share"] == 0.5
    assert "20.0% of 5 ran on time" in (out / "README.md").read_text()
    # the published job_runs table alone gives the same job incidents (what verify checks)
    columns = {column.name: column for column in JOB_RUNS.columns}
    table = pq.read_table(out / "tables" / "job_runs.parquet").to_pylist()
    runs = [{k: text_value(columns[k], v) for k, v in row.items()} for row in table]
    job_lines = [line for line in lines if line["kind"].startswith("job_")]
    by_run = sorted(job_run_incidents(runs, Timing()), key=lambda line: line["job_run_id"])
    assert by_run == sorted(job_lines, key=lambda line: line["job_run_id"])


def test_the_card_states_versions_counts_licence_and_how_to_verify(
    stored: Database, tmp_path: Path
) -> None:
    out = tmp_path / "dataset"
    settings = Settings(publish={"licence": "CC-BY-4.0"})
    publish_dataset(stored.factory, out, AT, parts=dataset_parts(settings))
    card = (out / "README.md").read_text()
    for text in (
        "Dataset schema version: 1",
        "Methodology version(s): v2",
        "Licence: CC-BY-4.0",
        "Time range: 2026-11-01T00:00:00Z to ",
        "| cohorts | 3 |",
        "| families | 3 |",
        "pip install arena",
        "arena verify DIR",
        "`incidents.jsonl`",
    ):
        assert text in card, text
    default = tmp_path / "default"
    _publish(stored, default)
    assert "Licence: unspecified (set publish.licence)" in (default / "README.md").read_text()


def test_a_publish_without_change_writes_nothing_and_new_data_writes_only_what_changed(
    stored: Database, tmp_path: Path
) -> None:
    out = tmp_path / "dataset"
    first = _publish(stored, out)
    assert first.version == 1
    before = {path: path.stat().st_mtime_ns for path in out.rglob("*") if path.is_file()}
    again = _publish(stored, out, AT + timedelta(days=1))  # later, same data
    assert (again.version, again.changed) == (1, [])
    assert {path: path.stat().st_mtime_ns for path in out.rglob("*") if path.is_file()} == before
    # the analysis is as of the data, not of the publish: the same bytes in another directory
    other = tmp_path / "other"
    _publish(stored, other, AT + timedelta(days=3))
    for name in ("analysis/report.json", "leaderboard.json", "README.md", "incidents.jsonl"):
        assert (other / name).read_bytes() == (out / name).read_bytes(), name

    with stored.factory() as session, session.begin():  # a new snapshot arrives
        agent = session.query(Agent).order_by(Agent.id).first()
        assert agent is not None
        session.add(
            PortfolioSnapshot(
                agent_id=agent.id,
                cohort_id=agent.cohort_id,
                taken_at=AT,
                cash=Decimal(10000),
                positions_value=Decimal(0),
                total_value=Decimal(10000),
                pnl=Decimal(0),
                pnl_pct=Decimal(0),
                realized_pnl=Decimal(0),
                unrealized_pnl=Decimal(0),
                resolved_bets=0,
                open_positions=0,
            )
        )
    second = _publish(stored, out, AT + timedelta(days=2))
    assert second.version == 2
    assert "tables/snapshots.parquet" in second.changed
    assert "tables/trades.parquet" not in second.changed
    assert (
        before[out / "tables" / "trades.parquet"]
        == (out / "tables" / "trades.parquet").stat().st_mtime_ns
    )
    assert json.loads((out / "manifests" / "manifest-000001.json").read_text())["version"] == 1
    manifest = _manifest(out)
    assert manifest["version"] == 2
    for name, entry in manifest["files"].items():
        assert entry["sha256"] == hashlib.sha256((out / name).read_bytes()).hexdigest(), name


def test_publish_reads_postgres_too(db: Database, tmp_path: Path) -> None:
    build_arena(db.factory)
    chain_backlog(db.factory, AT)
    out = tmp_path / "dataset"
    report = publish_dataset(db.factory, out, AT, parts=dataset_parts(Settings()))
    assert report.version == 1
    assert json.loads((out / "leaderboard.json").read_text())
    assert (out / "incidents.jsonl").read_text().count("decision_failed") >= 1


def test_cli_publish_at_is_the_manifest_time(
    stored: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "config.yaml", stored.url)
    out = tmp_path / "dataset"
    done = arena_main(
        capsys, "--config", str(config), "publish", str(out), "--at", "2026-11-30T00:00:00Z"
    )
    assert done.returncode == 0, done.stderr
    assert "version 1," in " ".join(done.stdout.split())  # the console wraps long lines
    assert _manifest(out)["published_at"] == "2026-11-30T00:00:00Z"


def test_a_file_a_part_names_twice_is_published_once(sqlite_db: Database, tmp_path: Path) -> None:
    def twice(_session: object, staged: Path) -> list[str]:
        (staged / "note.txt").write_text("hello\n")
        return ["note.txt", "note.txt"]

    out = tmp_path / "dataset"
    report = publish_dataset(sqlite_db.factory, out, AT, parts=(twice,))
    assert report.changed.count("note.txt") == 1
    assert _manifest(out)["files"]["note.txt"]["bytes"] == 6
