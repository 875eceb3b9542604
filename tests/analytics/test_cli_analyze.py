"""``arena analyze`` over an export directory."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from arena.analytics.loading import read_export
from arena.analytics.records import COLUMNS
from arena.analytics.report import AnalysisOptions, against_market, configured_options, power
from arena.cli import analyze as analyze_cli
from arena.cli.analyze import register
from arena.config import Settings
from arena.store.db import make_engine, upgrade
from tests.analytics.helpers import row

runner = CliRunner()


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """Test root."""

    register(app)
    return app


def _write_export(directory: Path) -> Path:
    rows: list[dict[str, Any]] = []
    for q in range(12):
        truth = float(q % 3 == 0)
        for family, p in (
            ("alpha", 0.2 + 0.6 * truth),
            ("beta", 0.5),
            ("gamma", 0.7 - 0.4 * truth),
        ):
            rows.append(
                {**row(family, f"m{q}", p, week=q // 4, resolved=truth), "market_probability": 0.4}
            )
    for family, p in (("alpha", 0.3), ("beta", 0.6), ("gamma", 0.9), ("mkt", 0.5)):
        rows.append(
            {
                **row(family, "open", p, week=3),
                "family_kind": "baseline" if family == "mkt" else None,
            }
        )
    return write_export(directory, rows)


def write_export(directory: Path, rows: list[dict[str, Any]]) -> Path:
    """An export directory of these forecast rows alone (forecasts.jsonl and its manifest)."""
    with (directory / "forecasts.jsonl").open("w") as handle:
        for r in rows:
            clean = {
                k: (v.isoformat() if isinstance(v, datetime) else v)
                for k, v in r.items()
                if k in COLUMNS
            }
            handle.write(json.dumps(clean) + "\n")
    data = (directory / "forecasts.jsonl").read_bytes()
    entry = {"file": "forecasts.jsonl", "rows": len(rows), "bytes": len(data)}
    entry["sha256"] = hashlib.sha256(data).hexdigest()
    (directory / "manifest.json").write_text(json.dumps({"files": {"forecasts": entry}}))
    return directory


def _json(args: list[str]) -> dict[str, Any]:
    result = runner.invoke(_app(), args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


AT = ["--at", "2025-06-01T00:00:00Z"]


def test_ranking_json(tmp_path: Path) -> None:
    export = _write_export(tmp_path)
    report = _json(["analyze", "ranking", "--from-export", str(export), "--format", "json", *AT])
    assert report["kind"] == "difficulty_adjusted_brier"
    assert report["rows"][0]["forecaster"] == "alpha"
    assert report["as_of"] == "2025-06-01T00:00:00Z"


def test_ranking_table(tmp_path: Path) -> None:
    result = runner.invoke(
        _app(), ["analyze", "ranking", "--from-export", str(_write_export(tmp_path)), *AT]
    )
    assert result.exit_code == 0, result.output
    assert "Difficulty-adjusted Brier" in result.output
    assert "alpha" in result.output


def test_h2h(tmp_path: Path) -> None:
    export = str(_write_export(tmp_path))
    report = _json(["analyze", "h2h", "alpha", "gamma", "--from-export", export, "-f", "json", *AT])
    assert report["a"] == "alpha"
    assert report["n_questions"] == 12
    assert report["mean"] > 0
    table = runner.invoke(
        _app(), ["analyze", "h2h", "alpha", "gamma", "--from-export", export, *AT]
    )
    assert "Head-to-head" in table.output


def test_proxy(tmp_path: Path) -> None:
    export = str(_write_export(tmp_path))
    report = _json(["analyze", "proxy", "--from-export", export, "--format", "json", *AT])
    # one open question is not a ranking (issue 15, finding 5): every family is insufficient
    assert {r["forecaster"] for r in report["rows"]} == {"alpha", "beta", "gamma"}
    assert all(r["rank"] is None and r["status"] == "insufficient" for r in report["rows"])
    assert report["minimums"] == {"voting_families_per_question": 3, "questions_per_week": 5}
    with_baselines = _json(
        ["analyze", "proxy", "--from-export", export, "-f", "json", "--include-baselines", *AT]
    )
    assert "mkt" in {r["forecaster"] for r in with_baselines["rows"]}


def test_calibration_with_plot(tmp_path: Path) -> None:
    export = str(_write_export(tmp_path))
    plot = tmp_path / "reliability.png"
    report = _json(
        ["analyze", "calibration", "--from-export", export, "-f", "json", "--plot", str(plot), *AT]
    )
    assert report["plot"] == str(plot)
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert {r["forecaster"] for r in report["rows"]} == {"alpha", "beta", "gamma"}


def test_report_everything(tmp_path: Path) -> None:
    export = str(_write_export(tmp_path))
    report = _json(["analyze", "report", "--from-export", export, "--pair", "alpha", "beta", *AT])
    assert set(report) == {
        "resampling",
        "ranking",
        "market",
        "power",
        "proxy",
        "calibration",
        "replicates",
        "head_to_head",
        "risk",
    }
    # one resample count everywhere: the config's default (issue 15, finding 3)
    assert report["resampling"] == {"resamples": 10_000, "seed": 0}
    assert report["ranking"]["resampling"] == report["head_to_head"]["resampling"]
    assert report["head_to_head"]["bootstrap"]["resamples"] == 10_000


def test_report_pair_is_written_as_its_help_shows(tmp_path: Path) -> None:
    """``--pair A,B`` (what ``--help`` shows) and the older ``--pair A B`` name the same pair;
    anything else is a one-line usage error (issue 23: ``--pair a,b`` failed)."""
    export = str(_write_export(tmp_path))
    base = ["analyze", "report", "--from-export", export, "--bootstrap", "50", *AT]
    comma = _json([*base, "--pair", "alpha,beta"])
    words = _json([*base, "--pair", "alpha", "beta"])
    assert comma["head_to_head"] == words["head_to_head"]
    assert comma["head_to_head"]["a"] == "alpha" and comma["head_to_head"]["b"] == "beta"
    result = runner.invoke(_app(), [*base, "--pair", "alpha,beta,gamma"])
    assert result.exit_code != 0
    assert "--pair: 'alpha,beta,gamma' is not two forecasters written A,B" in str(result.exception)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["analyze", "ranking", "--from-export", "/nonexistent/dir"], "not found"),
        (["analyze", "ranking", "--from-export", "EXPORT", "--format", "xml"], "--format"),
        (["analyze", "h2h", "alpha", "zeta", "--from-export", "EXPORT"], "unknown forecaster"),
        (["analyze", "h2h", "alpha", "beta", "--from-export", "EXPORT", "--score", "x"], "--score"),
        (["analyze", "ranking", "--from-export", "EXPORT", "--by", "cohort"], "--by"),
    ],
)
def test_user_errors(tmp_path: Path, args: list[str], message: str) -> None:
    export = str(_write_export(tmp_path))
    args = [export if a == "EXPORT" else a for a in args]
    result = runner.invoke(_app(), args)
    assert result.exit_code != 0
    assert message in str(result.exception)


def test_without_an_export_it_reads_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    engine = make_engine(url)
    upgrade(engine)  # an empty database: analyze never creates one (tests/cli/test_no_config.py)
    engine.dispose()
    monkeypatch.setenv("ARENA_DATABASE_URL", url)
    monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "none.yaml"))
    (tmp_path / "none.yaml").write_text("{}\n")
    result = runner.invoke(_app(), ["analyze", "ranking"])
    assert result.exit_code != 0
    assert "no forecasts stored yet" in str(result.exception)


def test_every_command_has_help() -> None:
    group = typer.main.get_command(_app()).commands["analyze"]  # type: ignore[attr-defined]
    assert set(group.commands) == {
        "ranking",
        "h2h",
        "market",
        "power",
        "proxy",
        "calibration",
        "replicates",
        "report",
        "breakdown",
        "risk",
        "trend",
    }
    for name, command in group.commands.items():
        assert (command.help or "").strip(), name
        for param in command.params:
            if param.param_type_name == "option":
                assert (param.help or "").strip(), f"{name} {param.opts}"
        result = runner.invoke(_app(), ["analyze", name, "--help"])
        assert result.exit_code == 0


def test_the_market_weight_defaults_to_the_configured_difficulty_weight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``v2.difficulty_weight`` is what ``--market-weight`` defaults to; the flag overrides it."""
    config = tmp_path / "arena.yaml"
    config.write_text(
        f"database_url: sqlite:///{tmp_path / 'a.db'}\nv2:\n  difficulty_weight: 0.25\n"
    )
    monkeypatch.setenv("ARENA_CONFIG", str(config))
    export = _write_export(tmp_path)
    ranking = ["analyze", "ranking", "--from-export", str(export), "--format", "json", *AT]
    assert _json(ranking)["options"]["market_weight"] == 0.25
    assert _json([*ranking, "--market-weight", "0.75"])["options"]["market_weight"] == 0.75


# -- issue 24: against the market, weeks to separate, rank probabilities, calibration in depth --

FEW = ["--bootstrap", "40"]  # few resamples: the tests check fields and equality, not precision


def _run(args: list[str], monkeypatch: pytest.MonkeyPatch | None = None) -> str:
    if monkeypatch is not None:  # the terminal of the 80-column rule
        monkeypatch.setattr(analyze_cli.console, "width", 80)
    result = runner.invoke(_app(), args)
    assert result.exit_code == 0, result.output
    return result.output


def _csv(args: list[str]) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_run(args))))


def _fits(text: str) -> None:
    assert "…" not in text
    assert [line for line in text.splitlines() if len(line.rstrip()) > 80] == []


def _direct(export: Path, **options: object) -> AnalysisOptions:
    return configured_options(
        Settings(),
        as_of=datetime.fromisoformat(AT[1].replace("Z", "+00:00")),
        bootstrap_resamples=40,
        **options,
    )


def test_market_json_is_against_market_on_the_same_data(tmp_path: Path) -> None:
    export = _write_export(tmp_path)
    report = _json(["analyze", "market", "--from-export", str(export), "-f", "json", *FEW, *AT])
    direct = against_market(read_export(export), _direct(export))
    assert report == json.loads(json.dumps(direct, default=str))
    fields = {
        "forecaster",
        "alpha_brier",
        "alpha_log",
        "copy_correlation",
        "copy_distance",
        "follows_market",
        "return_per_dollar",
        "return_per_dollar_after_fee",
        "questions",
        "markets",
    }
    by_name = {r["forecaster"]: r for r in report["rows"]}
    assert {"alpha", "beta", "gamma"} <= set(by_name)
    assert all(fields <= set(r) for r in report["rows"])
    # alpha says 0.8 on events that happen and 0.2 on the rest, the price is 0.4: it beats it
    alpha = by_name["alpha"]["alpha_brier"]
    assert {"estimate", "low", "high"} <= set(alpha) and alpha["estimate"] > 0
    assert report["as_of"] == "2025-06-01T00:00:00Z"


def test_market_csv_flattens_intervals(tmp_path: Path) -> None:
    export = str(_write_export(tmp_path))
    rows = _csv(["analyze", "market", "--from-export", export, "-f", "csv", *FEW, *AT])
    report = _json(["analyze", "market", "--from-export", export, "-f", "json", *FEW, *AT])
    assert [r["forecaster"] for r in rows] == [r["forecaster"] for r in report["rows"]]
    for flat, item in zip(rows, report["rows"], strict=True):
        for name in ("alpha_brier", "alpha_log", "return_per_dollar"):
            assert name not in flat
            interval = item[name]
            if interval == "insufficient":  # mkt forecast only an open question
                assert flat[f"{name}_estimate"] == "insufficient"
                assert flat[f"{name}_low"] == flat[f"{name}_high"] == ""
                continue
            assert float(flat[f"{name}_estimate"]) == interval["estimate"]
            assert float(flat[f"{name}_low"]) == interval["low"]
            assert float(flat[f"{name}_high"]) == interval["high"]
        assert flat["follows_market"] == ("true" if item["follows_market"] else "false")
        assert int(flat["questions"]) == item["questions"]
        # one price for every question: no correlation to compute
        assert flat["copy_correlation"] == "insufficient"
    assert any(flat["alpha_brier_estimate"] != "insufficient" for flat in rows)


def test_market_table_fits_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    export = str(_write_export(tmp_path))
    out = _run(["analyze", "market", "--from-export", export, *FEW, *AT], monkeypatch)
    _fits(out)
    assert "Against the market" in out
    # highest alpha first: alpha beats the price, beta is near it, gamma below; mkt has none
    assert out.index("\n alpha ") < out.index("\n beta ") < out.index("\n gamma ")
    assert out.index("\n gamma ") < out.index("\n mkt ")
    assert "follows the market (corr. >= 0.98 and dist. <= 0.02)" in " ".join(out.split())


def test_power_json_csv_and_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    export = _write_export(tmp_path)
    base = ["analyze", "power", "--from-export", str(export), *FEW, *AT]
    report = _json([*base, "-f", "json"])
    assert report == json.loads(
        json.dumps(power(read_export(export), _direct(export)), default=str)
    )
    assert report["rows"], report
    for item in report["rows"]:
        assert {"a", "b", "delta", "se", "weeks_seen", "separated", "more_weeks"} <= set(item)
    rows = _csv([*base, "-f", "csv"])
    assert [(r["a"], r["b"]) for r in rows] == [(p["a"], p["b"]) for p in report["rows"]]
    assert [r["more_weeks"] for r in rows] == [
        "" if p["more_weeks"] is None else str(p["more_weeks"]) for p in report["rows"]
    ]
    table = _run(base, monkeypatch)
    _fits(table)
    assert "Weeks to separate" in table
    assert "80% power at two-sided 5%" in " ".join(table.split())  # its assumptions


def test_ranking_rows_carry_rank_probabilities(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = str(_write_export(tmp_path))
    base = ["analyze", "ranking", "--from-export", export, *FEW, *AT]
    report = _json([*base, "-f", "json"])
    ranked = [r for r in report["rows"] if r["rank"] is not None and not r["reference"]]
    assert ranked
    assert sum(r["p_rank_1"] for r in ranked) == pytest.approx(1.0)
    rows = _csv([*base, "-f", "csv"])
    assert [r["forecaster"] for r in rows] == [r["forecaster"] for r in report["rows"]]
    assert {"p_rank_1", "p_top_3", "rank_low", "rank_high"} <= set(rows[0])
    table = _run(base, monkeypatch)
    _fits(table)
    assert "P(#1)" in table and "rank 95%" in table
    best = ranked[0]
    assert f"{best['p_rank_1'] * 100:.1f}%" in table


def test_calibration_in_depth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    export = str(_write_export(tmp_path))
    base = ["analyze", "calibration", "--from-export", export, *AT]
    report = _json([*base, "-f", "json"])
    assert report["bin_rule"].startswith("bins are [lo, hi)")
    for item in report["rows"]:
        assert {"mce", "ace", "log_loss", "spherical", "overconfidence"} <= set(item)
    rows = _csv([*base, "-f", "csv"])
    assert [float(r["mce"]) for r in rows] == [r["mce"] for r in report["rows"]]
    assert "bins" not in rows[0]  # the reliability bins are in --format json
    table = _run(base, monkeypatch)
    _fits(table)
    assert "Calibration in depth" in table and "spherical" in table
    assert "bins are [lo, hi)" in " ".join(table.split())


def test_report_table_and_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    export = str(_write_export(tmp_path))
    base = ["analyze", "report", "--from-export", export, *FEW, *AT]
    table = _run([*base, "--format", "table"], monkeypatch)
    _fits(table)
    for title in ("Difficulty-adjusted", "Against the market", "Weeks to separate"):
        assert title in table
    assert "Calibration in depth" in table
    rows = _csv([*base, "--format", "csv"])
    assert rows[0]["section"] == "ranking"
    assert {r["section"] for r in rows} == {
        "ranking",
        "market",
        "power",
        "proxy",
        "calibration",
        "replicates",
    }
    report = _json(base)  # JSON stays the default
    market = [r for r in rows if r["section"] == "market"]
    assert [r["forecaster"] for r in market] == [r["forecaster"] for r in report["market"]["rows"]]


def test_the_fit_sample_and_fit_by_type_flags(tmp_path: Path) -> None:
    export = str(_write_export(tmp_path))
    fit = ["--fit-exclude", "beta", "--fit-exclude", "gamma", "--fit-by-type"]
    ranking = _json(["analyze", "ranking", "--from-export", export, "-f", "json", *AT, *fit])
    assert ranking["options"]["fit_exclude"] == ["beta", "gamma"]
    assert ranking["options"]["fit_by_type"] is True
    assert ranking["dropped_questions"] == 0
    assert {r["forecaster"] for r in ranking["rows"]} >= {"alpha", "beta", "gamma"}
    report = _json(["analyze", "report", "--from-export", export, *AT, "--bootstrap", "20", *fit])
    assert report["ranking"]["options"]["fit_exclude"] == ["beta", "gamma"]
    assert report["ranking"]["options"]["fit_by_type"] is True
    unknown = ["analyze", "ranking", "--from-export", export, *AT, "--fit-exclude", "zeta"]
    result = runner.invoke(_app(), unknown)
    assert result.exit_code != 0
    assert "unknown forecaster 'zeta'; known: alpha, beta, gamma" in str(result.exception)
