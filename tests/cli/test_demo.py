"""`arena demo` end to end, offline, as a user runs it: it finishes, the ledger invariant holds,
and the leaderboard it stores equals a recomputation from the export it writes."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from arena.analytics.loading import read_export
from arena.analytics.report import AnalysisOptions, against_market
from arena.cli.demo import DEMO_AGENT_ID, DEMO_SKILLS, DEMO_WEB_SKILL
from tests.analytics.outside import (
    check_alpha,
    check_calibration,
    check_rank_probabilities,
    check_return,
)
from tests.analytics.recompute import assert_matches, recompute
from tests.helpers import cli_env, run_arena, write_config

DEMO_SKILLS_PERCENT = [round(100 * skill) for skill in DEMO_SKILLS]  # sim-skill-90 ...


def _close(a: object, b: object) -> bool:
    """Equal, but for float rounding (parquet decimals vs JSON-lines decimal text)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_demo_runs_offline_and_agrees_with_its_export(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    config = write_config(tmp_path / "config.yaml", "sqlite:///unused.db")
    out = tmp_path / "demo"
    env = cli_env(
        OPENROUTER_API_KEY="", HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9"
    )
    result = run_arena(
        "--config",
        str(config),
        "demo",
        "--weeks",
        "2",
        "--markets",
        "80",
        "--methodology",
        "v2",
        "--out",
        str(out),
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ledger invariant holds for every agent" in result.stdout
    manifest = json.loads((out / "export" / "manifest.json").read_text())
    files = manifest["files"]
    assert {"decisions", "attempts", "trades", "snapshots", "forecasts"} <= set(files)
    assert files["forecasts"]["rows"] > 0 and files["trades"]["rows"] > 0
    # issue 27, part 5: the example outside agent, served by the demo on 127.0.0.1, decided and
    # traded over HTTP; the web search family's answers cite the fake OpenRouter's sources;
    # the output names each family's track; the agent's secret stays out of the output
    decided = [
        d for d in _rows(out / "export" / "decisions.jsonl") if d["family_id"] == DEMO_AGENT_ID
    ]
    assert decided and all(d["status"] == "completed" and not d["system_hold"] for d in decided)
    trades = _rows(out / "export" / "trades.jsonl")
    assert any(t["family_id"] == DEMO_AGENT_ID for t in trades)
    web_family = f"sim-skill-{round(100 * DEMO_WEB_SKILL)}"
    citations = _rows(out / "export" / "citations.jsonl")
    assert citations and {c["family_id"] for c in citations} == {web_family}
    assert f"web: {web_family}" in result.stdout and f"agent: {DEMO_AGENT_ID}" in result.stdout
    board = run_arena(
        "--config",
        str(config),
        "leaderboard",
        "--format",
        "json",
        env=cli_env(ARENA_DATABASE_URL=f"sqlite:///{out / 'demo.db'}"),
        cwd=tmp_path,
    )
    assert board.returncode == 0, board.stderr
    assert_matches(json.loads(board.stdout), recompute(out / "export", "jsonl"))

    # the round trip of issue 26: the demo publishes, and the dataset verifies from its files
    assert "arena verify: every check holds" in result.stdout
    published = out / "published"
    assert (published / "site" / "index.html").is_file()
    verified = run_arena("verify", str(published), "--format", "json", env=env, cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout[-2000:]
    report = json.loads(verified.stdout)
    assert report["ok"] and report["counts"]["records_decision"] > 0
    assert json.loads((published / "leaderboard.json").read_text()) == json.loads(board.stdout)

    # the analytics read the same forecasts from the database as from the export; at the
    # present (the real clock's default) they see the whole demo, which ended before it
    after = datetime.now(UTC)

    def ranking(*source: str) -> object:
        result = run_arena(
            "--config",
            str(config),
            "analyze",
            "ranking",
            "--format",
            "json",
            "--at",
            after.isoformat(),
            "--bootstrap",
            "200",
            *source,
            env=cli_env(ARENA_DATABASE_URL=f"sqlite:///{out / 'demo.db'}"),
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    from_db = ranking()
    assert _close(from_db, ranking("--from-export", str(out / "export")))
    assert from_db["n_scored_questions"] > 0  # type: ignore[index]

    # issue 15, finding 7: the families are named by their simulated skill, and the ranking
    # (at the real clock's default: the demo ended before now) orders them by that skill
    rows = [r for r in from_db["rows"] if r["forecaster"].startswith("sim-skill-")]  # type: ignore[index]
    assert len(rows) == 5
    by_score = sorted(rows, key=lambda r: r["adjusted_brier"])
    skills = [int(r["forecaster"].rsplit("-", 1)[1]) for r in by_score]
    assert skills == sorted(skills, reverse=True)
    assert all(r["rank"] is not None for r in rows)
    assert_no_timestamp_after(out / "demo.db", now)

    # issue 24, done when: against the market (what `arena analyze market` shows), the simulated
    # families' alphas are in skill order, the most skilled one's interval lies above 0, and
    # the market-follower baseline follows the market it was shown
    data = read_export(out / "export")
    options = AnalysisOptions(as_of=after, bootstrap_resamples=200)
    market = {r["forecaster"]: r for r in against_market(data, options)["rows"]}
    simulated = sorted(
        (name for name in market if name.startswith("sim-skill-")),
        key=lambda name: market[name]["alpha_brier"]["estimate"],
    )
    assert [int(name.rsplit("-", 1)[1]) for name in simulated] == sorted(DEMO_SKILLS_PERCENT)
    best = market[f"sim-skill-{max(DEMO_SKILLS_PERCENT)}"]["alpha_brier"]
    assert best["estimate"] > 0 and best["low"] > 0
    follower = market["market-follower"]
    assert follower["follows_market"], follower
    assert not any(market[name]["follows_market"] for name in simulated)

    # and the demo's v2 export agrees with outside code (tests/analytics/outside.py): alpha
    # with statsmodels, the return with pm-rank (per agent: one forecast per question), log
    # loss and the spherical score with pm-rank and scikit-learn, ACE and MCE, and the rank
    # probabilities with a brute-force bootstrap
    assert check_alpha(data, options) >= 10
    assert check_return(data, replace(options, by="agent")) >= 5
    assert check_calibration(data, options) >= 5
    assert check_rank_probabilities(data, options) >= 5


SCHEDULED = {"end_date"}  # a market's scheduled end lies in the future by nature
WALL_CLOCK = {("analysis_results", "computed_at")}  # when the stored analysis really ran


def assert_no_timestamp_after(database: Path, now: datetime) -> None:
    """No event the demo stored (anything but a scheduled end date) is later than ``now``."""
    from sqlalchemy import create_engine, select

    from arena.store.models import Base
    from arena.store.types import UTCDateTime

    engine = create_engine(f"sqlite:///{database}")
    checked = 0
    with engine.connect() as connection:
        for table in Base.metadata.sorted_tables:
            for column in table.columns:
                if not isinstance(column.type, UTCDateTime) or column.name in SCHEDULED:
                    continue
                if (table.name, column.name) in WALL_CLOCK:
                    continue
                latest = connection.execute(
                    select(column).where(column.is_not(None)).order_by(column.desc()).limit(1)
                ).scalar()
                checked += 1
                assert latest is None or latest <= now, f"{table.name}.{column.name}: {latest}"
    engine.dispose()
    assert checked > 20
