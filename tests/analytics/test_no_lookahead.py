"""Issue 15, finding 4: an analysis at T sees nothing made or learnt after T.

Metamorphic: every ``arena analyze`` command (and the ranking, the research leaderboard) at T
on the full data gives exactly what it gives on the data cut at T by hand: forecasts made after
T removed, and outcomes learnt after T blanked.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from arena.analytics.records import COLUMNS
from arena.analytics.report import (
    AnalysisOptions,
    calibration_report,
    full_analysis,
    head_to_head,
    proxy_ranking,
    ranking,
)
from tests.analytics.helpers import WEEK0, forecasts, row
from tests.analytics.test_cli_analyze import _app

T = WEEK0 + timedelta(weeks=4, days=2)
FAMILIES = {"sharp": 0.1, "fair": 0.2, "noisy": 0.35, "wild": 0.5}


def _rows() -> list[dict[str, Any]]:
    """Eight weekly panels of 8 questions; markets asked up to 3 weeks running, some in event
    groups; results learnt 1 to 20 days after each week."""
    rng = np.random.default_rng(11)
    rows = []
    market = 0
    live: list[tuple[str, float, str | None, int, int]] = []  # id, truth, group, weeks, delay
    for week in range(8):
        live = [(m, t, g, left - 1, d) for m, t, g, left, d in live if left > 1]
        while len(live) < 8:
            group = f"ev{market // 3}" if market % 5 < 2 else None
            live.append(
                (
                    f"m{market}",
                    float(rng.random() < 0.5),
                    group,
                    int(rng.integers(1, 4)),
                    int(rng.integers(1, 20)),
                )
            )
            market += 1
        for market_id, truth, group, left, delay in live:
            price = float(np.clip(0.5 + (truth - 0.5) * 0.4 + rng.normal(0, 0.1), 0.05, 0.95))
            resolved_at = WEEK0 + timedelta(weeks=week + left, days=delay)
            for family, noise in FAMILIES.items():
                if rng.random() < 0.1:
                    continue  # a missing forecast
                p = float(np.clip(price + (truth - price) * 0.3 + rng.normal(0, noise), 0.01, 0.99))
                rows.append(
                    {
                        **row(family, market_id, p, week=week, resolved=truth, group=group),
                        "resolved_at": resolved_at,
                        "market_probability": price,
                        "scheduled_close_at": resolved_at,
                    }
                )
    return rows


def _cut(rows: list[dict[str, Any]], at: datetime) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        if r["forecast_at"] > at:
            continue
        if r["resolved_at"] is not None and r["resolved_at"] > at:
            r = {**r, "resolved_value": None, "resolved_at": None}
        out.append(r)
    return out


OPTIONS = AnalysisOptions(as_of=T, bootstrap_resamples=300, min_questions=5)


@pytest.mark.parametrize(
    "analysis",
    [
        lambda data: ranking(data, OPTIONS),
        lambda data: head_to_head(data, "sharp", "noisy", OPTIONS),
        lambda data: proxy_ranking(data, OPTIONS),
        lambda data: calibration_report(data, OPTIONS),
        lambda data: full_analysis(data, OPTIONS, pair=("fair", "wild")),
    ],
    ids=["ranking", "h2h", "proxy", "calibration", "report"],
)
def test_analysis_at_t_equals_analysis_of_the_data_cut_at_t(analysis: Any) -> None:
    rows = _rows()
    cut = _cut(rows, T)
    assert len(cut) < len(rows)  # the cut removes forecasts and results
    assert analysis(forecasts(*rows)) == analysis(forecasts(*cut))


def test_the_proxy_at_t_uses_no_later_week() -> None:
    report = proxy_ranking(forecasts(*_rows()), OPTIONS)
    weeks = {w["week_start"] for w in report["weeks"]}
    assert weeks and max(weeks) <= T.isoformat().replace("+00:00", "Z")
    assert any(r["rank"] is not None for r in report["rows"])


def test_weights_are_counted_from_the_data_known_at_t() -> None:
    # x and y form an event group in week 0; a late decision (a Thursday retry) adds z to the
    # same group and week after T: at T the group is still a pair, each weighing log2(3)/3
    day1 = WEEK0 + timedelta(days=1)
    rows = [
        {
            **row(f, m, p, group="ev", resolved=1.0),
            "resolved_at": day1,
            "market_probability": 0.5,
            "scheduled_close_at": day1,
        }
        for f, p in (("a", 0.7), ("b", 0.6))
        for m in ("x", "y")
    ]
    late = [{**row(f, "z", 0.5, group="ev"), "market_probability": 0.5} for f in ("a", "b")]
    for r in late:
        r["forecast_at"] = WEEK0 + timedelta(days=4)
    options = AnalysisOptions(
        as_of=WEEK0 + timedelta(days=2), bootstrap_resamples=10, min_clusters=2
    )
    at_t = ranking(forecasts(*rows, *late), options)
    assert at_t == ranking(forecasts(*rows), options)
    weights = {r["forecaster"]: r["weight_sum"] for r in at_t["rows"]}
    assert weights["a"] == pytest.approx(2 * np.log2(3) / 3)


def _export(directory: Path, rows: list[dict[str, Any]]) -> Path:
    directory.mkdir()
    lines = [
        json.dumps(
            {
                k: (v.isoformat() if isinstance(v, datetime) else v)
                for k, v in r.items()
                if k in COLUMNS
            }
        )
        for r in rows
    ]
    data = ("\n".join(lines) + "\n").encode()
    (directory / "forecasts.jsonl").write_bytes(data)
    entry = {"file": "forecasts.jsonl", "rows": len(rows), "bytes": len(data)}
    entry["sha256"] = hashlib.sha256(data).hexdigest()
    (directory / "manifest.json").write_text(json.dumps({"files": {"forecasts": entry}}))
    return directory


@pytest.mark.parametrize(
    "command",
    [
        ["ranking", "-f", "json", "--bootstrap", "200"],
        ["h2h", "sharp", "wild", "-f", "json", "--bootstrap", "200"],
        ["proxy", "-f", "json"],
        ["calibration", "-f", "json"],
        ["market", "-f", "json", "--bootstrap", "200"],
        ["power", "-f", "json", "--bootstrap", "200"],
        ["report", "--pair", "sharp", "fair", "--bootstrap", "200"],
    ],
    ids=["ranking", "h2h", "proxy", "calibration", "market", "power", "report"],
)
def test_every_analyze_command_at_t_equals_the_command_on_the_cut_export(
    tmp_path: Path, command: list[str]
) -> None:
    rows = _rows()
    full = _export(tmp_path / "full", rows)
    cut = _export(tmp_path / "cut", _cut(rows, T))
    at = ["--at", T.isoformat()]
    runner = CliRunner()
    outputs = []
    for directory in (full, cut):
        result = runner.invoke(_app(), ["analyze", *command, "--from-export", str(directory), *at])
        assert result.exit_code == 0, result.output
        outputs.append(json.loads(result.output))
    assert outputs[0] == outputs[1]
