"""``arena analyze``: research statistics over forecasts (methodology v2).

Every subcommand reads the forecasts of an export directory (``--from-export DIR``), or the
configured database's, and prints a table, JSON (``--format json``) or CSV (``--format csv``:
one row per forecaster, per pair for ``power``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from typer.core import TyperCommand

from arena.cli.common import (
    AtOption,
    FormatOption,
    WideOption,
    clock_for,
    console,
    one_of,
    state,
)
from arena.cli.composed import with_options
from arena.cli.style import command_group
from arena.cli.where import (
    CategoryOption,
    HorizonOption,
    TrackOption,
    ledger_scope,
    scoped_forecasts,
)
from arena.errors import ForecastsError, OptionError, UserError
from arena.terminal import show

T = TypeVar("T")

if TYPE_CHECKING:
    from arena.analytics.records import Forecasts
    from arena.analytics.report import AnalysisOptions


def _report() -> Any:
    """The analytics (numpy/scipy load slowly: only when an analyze command runs)."""
    from arena.analytics import report

    return report


def _render() -> Any:
    from arena.analytics import render

    return render


def _plot_calibration(*args: Any, **kwargs: Any) -> None:
    from arena.analytics.calibration import plot_calibration

    plot_calibration(*args, **kwargs)


def _read_export(directory: Path) -> Forecasts:
    from arena.analytics.loading import read_export

    return read_export(directory)


def _read_verified_export(path: Path) -> Forecasts:
    """An export's forecasts, after checking its files against ``manifest.json``."""
    from arena.analytics.loading import find_forecasts_file
    from arena.export.directory import verify_export

    forecasts = find_forecasts_file(path)
    manifest = verify_export(forecasts.parent)
    if forecasts.name not in {entry.get("file") for entry in manifest["files"].values()}:
        raise UserError(f"{forecasts}: not listed in the export's manifest.json")
    return _read_export(forecasts)


analyze_app = command_group(
    help="Research statistics over forecasts: difficulty-adjusted ranking, head-to-head, "
    "skill against the market, weeks to separate, proxy ranking, calibration."
)
ANALYZE_FORMATS = ("table", "json", "csv")

FromExport = Annotated[
    Path | None,
    typer.Option(
        "--from-export",
        metavar="DIR",
        help="Export directory holding forecasts.parquet, forecasts.csv or forecasts.jsonl "
        "(or the forecasts file itself); its manifest.json checksums are verified first.",
        show_default=False,
    ),
]
MarketWeight = Annotated[
    float | None,
    typer.Option(
        "--market-weight",
        metavar="W",
        min=0.0,
        max=1.0,
        help="Weight w of the market's own Brier in question difficulty "
        "(w*b_mkt + (1-w)*gamma_ols); default: v2.difficulty_weight (1).",
        show_default=False,
    ),
]
FitExclude = Annotated[
    list[str] | None,
    typer.Option(
        "--fit-exclude",
        metavar="ID",
        help="Score and rank this forecaster, but leave its forecasts out of the question "
        "difficulty fit (as ForecastBench does for baselines and ensembles). Repeatable.",
        show_default=False,
    ),
]
FitByType = Annotated[
    bool,
    typer.Option(
        "--fit-by-type",
        help="Fit question difficulty separately for each question_type of the forecasts.",
    ),
]
Weights = Annotated[
    bool,
    typer.Option(
        "--weights/--no-weights",
        help="Weigh questions for event groups (log2(N+1)/(N+1)) and repeats (1/k).",
    ),
]
Bootstrap = Annotated[
    int | None,
    typer.Option(
        "--bootstrap",
        metavar="N",
        min=1,
        help="Bootstrap resamples (default: the config's analysis.resamples, 10,000).",
        show_default=False,
    ),
]
Seed = Annotated[
    int | None,
    typer.Option(
        "--seed",
        metavar="N",
        help="Seed of the bootstrap (default: analysis.seed, 0).",
        show_default=False,
    ),
]
By = Annotated[
    str, typer.Option("--by", metavar="family|agent", help="Rank by family or by agent.")
]
WithBets = Annotated[
    bool,
    typer.Option(
        "--with-bets",
        help="Also use the probabilities stated on bets (default: weekly panel forecasts only; "
        "bets are on markets the model chose).",
    ),
]


@dataclass(frozen=True)
class AnalyzeFlags:
    """The options the analyze commands share (each command offers the ones it lists): where
    the forecasts come from, how the result is printed, and how the statistics are taken."""

    from_export: FromExport = None
    output_format: FormatOption = "table"
    at: AtOption = None
    market_weight: MarketWeight = None
    fit_exclude: FitExclude = None
    fit_by_type: FitByType = False
    weights: Weights = True
    bootstrap: Bootstrap = None
    seed: Seed = None
    by: By = "family"
    with_bets: WithBets = False
    wide: WideOption = False
    category: CategoryOption = None
    horizon: HorizonOption = None
    track: TrackOption = None


def _options(ctx: typer.Context, flags: AnalyzeFlags, **extra: Any) -> AnalysisOptions:
    """Options of one command; the resample count and seed default to the config's
    ``analysis`` section, so every entry point resamples alike."""
    one_of("--by", flags.by, ("family", "agent"))
    one_of("--format", flags.output_format, ANALYZE_FORMATS)
    return _report().configured_options(
        state(ctx).settings,
        bootstrap_resamples=flags.bootstrap,
        seed=flags.seed,
        as_of=clock_for(flags.at).now(),
        by=flags.by,
        sources=("panel", "bet") if flags.with_bets else ("panel",),
        market_weight=flags.market_weight,
        fit_exclude=tuple(flags.fit_exclude or ()),
        fit_by_type=flags.fit_by_type,
        group_weights=flags.weights,
        repeat_weights=flags.weights,
        **extra,
    )


def load_forecasts(ctx: typer.Context, from_export: Path | None) -> Forecasts:
    """The forecasts to analyse: an export directory's, or the configured database's."""
    if from_export is not None:
        return _read_verified_export(from_export)
    from arena.analytics.records import Forecasts
    from arena.export.forecast_columns import forecast_columns
    from arena.store.consistent_read import consistent_read

    with consistent_read(state(ctx).reader()) as session:
        columns = forecast_columns(session)  # the export's table, read where it is stored
    if not len(columns["forecast_id"]):
        raise UserError("no forecasts stored yet (methodology v2 records them)")
    return Forecasts.from_arrow(columns)


def _scoped(
    ctx: typer.Context, forecasts: Forecasts, flags: AnalyzeFlags, options: AnalysisOptions
) -> Forecasts:
    """The forecasts of ``--category``, ``--horizon`` (horizons as known at ``--at``) and
    ``--track``."""
    forecasts = _tracked(ctx, forecasts, flags)
    return scoped_forecasts(forecasts, flags.category, flags.horizon, options.as_of)


def _tracked(ctx: typer.Context, forecasts: Forecasts, flags: AnalyzeFlags) -> Forecasts:
    """The forecasts of the agents on ``--track`` (all without it)."""
    from arena.analytics.groups import restrict_track

    return on_track(ctx, flags, restrict_track, forecasts)


def on_track(ctx: typer.Context, flags: AnalyzeFlags, restrict: Callable[..., T], data: T) -> T:
    """``data`` (forecasts, snapshots, trend inputs) of the agents on ``--track``, by
    ``restrict(data, track, tracks)``; ``data`` itself without ``--track``."""
    from arena.domain.tracks import check_track

    if check_track(flags.track) is None:
        return data
    return restrict(data, flags.track, agent_tracks(ctx, flags.from_export))


def agent_tracks(ctx: typer.Context, from_export: Path | None) -> dict[str, str]:
    """Each agent's track by id (of the export directory, or of the configured database)."""
    from arena.analytics.loading import agent_tracks as stored_tracks

    if from_export is not None:  # a directory, or one of its files
        return stored_tracks(from_export if from_export.is_dir() else from_export.parent)
    import tempfile

    from arena.export.writer import export_table

    with tempfile.TemporaryDirectory(prefix="arena-analyze-") as tmp:
        export_table(state(ctx).reader(), "agents", Path(tmp) / "agents.parquet")
        return stored_tracks(Path(tmp))


def family_names(ctx: typer.Context, from_export: Path | None) -> dict[str, str]:
    """Display names by family id: the configured ones, over them the stored ones (of the
    export directory, or of the configured database)."""
    from arena.analytics.loading import family_names as stored_names
    from arena.analytics.loading import find_forecasts_file

    names = {f.id: f.display_name for f in state(ctx).settings.families if f.display_name}
    if from_export is not None:
        return names | stored_names(find_forecasts_file(from_export).parent)
    import tempfile

    from arena.export.writer import export_table

    with tempfile.TemporaryDirectory(prefix="arena-analyze-") as tmp:
        export_table(state(ctx).reader(), "families", Path(tmp) / "families.parquet")
        return names | stored_names(Path(tmp))


def _emit(
    ctx: typer.Context,
    report: dict[str, Any],
    flags: AnalyzeFlags,
    render: Any,
    forecasts: Forecasts | None = None,
) -> None:
    """Print ``report``: its JSON (forecasters by id), or its table or CSV, where each
    forecaster of ``forecasts`` is named by its family's display name (and cohort, ``--by
    agent``; CSV keeps the id in ``forecaster`` and adds ``display_name``)."""
    fmt = one_of("--format", flags.output_format, ANALYZE_FORMATS)
    if fmt == "json":
        typer.echo(json.dumps(report, indent=2, sort_keys=False))
        return
    if forecasts is not None:
        report = _labelled(ctx, report, flags, forecasts)
    if fmt == "csv":
        rows = report.get("rows", [report])  # head-to-head: one row, the report itself
        _render().write_csv(rows, sys.stdout, first=_first_columns(report))
        return
    show(console, render(report, wide=flags.wide), flags.wide)


def _labelled(
    ctx: typer.Context, report: dict[str, Any], flags: AnalyzeFlags, forecasts: Forecasts
) -> dict[str, Any]:
    """``report`` with display names: ``display_name`` on each forecaster's row, ``a_name``
    and ``b_name`` on each pair of ``power``."""
    names = family_names(ctx, flags.from_export)
    labels = _report().forecaster_labels(forecasts, flags.by, names)
    if report.get("kind") == "weeks_to_separate":
        return _render().label_pairs(report, labels)
    return _report().label_rows(report, labels)


def _first_columns(report: dict[str, Any]) -> tuple[str, ...]:
    """The CSV's leading columns: who the row is about."""
    if report.get("kind") == "weeks_to_separate":
        return ("a", "a_name", "b", "b_name")
    if "rows" in report:
        return ("forecaster", "display_name")
    return ()


def _one_report(ctx: typer.Context, flags: AnalyzeFlags, analysis: str, table: str) -> None:
    """A command of one report: the options, the forecasts in scope, the report
    (:mod:`arena.analytics.report`'s ``analysis``) and its output (``table`` of
    :mod:`arena.analytics.render` for --format table)."""
    options = _options(ctx, flags)
    forecasts = _scoped(ctx, load_forecasts(ctx, flags.from_export), flags, options)
    report = getattr(_report(), analysis)(forecasts, options)
    _emit(ctx, report, flags, getattr(_render(), table), forecasts)


@analyze_app.command("ranking")
@with_options(
    AnalyzeFlags,
    "from_export",
    "output_format",
    "at",
    "category",
    "horizon",
    "track",
    "market_weight",
    "fit_exclude",
    "fit_by_type",
    "weights",
    "min_days",
    "min_questions",
    "bootstrap",
    "seed",
    "by",
    "with_bets",
    "wide",
)
def ranking_command(
    ctx: typer.Context,
    flags: AnalyzeFlags,
    min_days: Annotated[
        float,
        typer.Option(
            "--min-days", metavar="DAYS", help="Provisional until this many days of forecasts."
        ),
    ] = 50.0,
    min_questions: Annotated[
        int,
        typer.Option(
            "--min-questions", metavar="N", help="Provisional below this many scored questions."
        ),
    ] = 30,
) -> None:
    """Leaderboard by difficulty-adjusted Brier, with cluster-robust intervals and provisional
    flags; forecasters with fewer than 5 clusters of scored questions are not ranked.

    Only resolved questions past their scheduled close count (early closers wait).
    """
    options = _options(ctx, flags, min_days=min_days, min_questions=min_questions)
    forecasts = _scoped(ctx, load_forecasts(ctx, flags.from_export), flags, options)
    report = _report().ranking(forecasts, options)
    _emit(ctx, report, flags, _render().ranking_table, forecasts)


@analyze_app.command("h2h")
@with_options(
    AnalyzeFlags,
    "family_a",
    "family_b",
    "from_export",
    "output_format",
    "at",
    "category",
    "horizon",
    "track",
    "score",
    "weights",
    "bootstrap",
    "seed",
    "by",
    "with_bets",
    "wide",
)
def h2h_command(
    ctx: typer.Context,
    flags: AnalyzeFlags,
    family_a: Annotated[
        str, typer.Argument(metavar="A", help="First forecaster (A).", show_default=False)
    ],
    family_b: Annotated[
        str, typer.Argument(metavar="B", help="Second forecaster (B).", show_default=False)
    ],
    score: Annotated[
        str,
        typer.Option(
            "--score", metavar="log|brier", help="Per-question score: log (Metaculus) or brier."
        ),
    ] = "log",
) -> None:
    """Head-to-head of A against B on their common resolved questions (> 0: A better).

    Prints the weighted mean with cluster-robust t and cluster bootstrap intervals (repeats of
    a market and members of an event group are one cluster), an exact sign test, and a verdict
    ("insufficient" below 10 common questions or 5 clusters).

    \b
    Example (a database's forecasts, or an export's):
      arena analyze h2h gpt-5.1 grok-4 --score brier
      arena analyze h2h gpt-5.1 grok-4 --from-export exports/2026-11 -f json
    """
    one_of("--score", score, ("log", "brier"))
    options = _options(ctx, flags, h2h_score=score)
    forecasts = _scoped(ctx, load_forecasts(ctx, flags.from_export), flags, options)
    report = _report().head_to_head(forecasts, family_a, family_b, options)
    _emit(ctx, report, flags, _render().head_to_head_table)


@analyze_app.command("proxy")
@with_options(
    AnalyzeFlags,
    "from_export",
    "output_format",
    "at",
    "category",
    "horizon",
    "track",
    "include_baselines",
    "include_resolved",
    "by",
    "with_bets",
    "wide",
)
def proxy_command(
    ctx: typer.Context,
    flags: AnalyzeFlags,
    include_baselines: Annotated[
        bool,
        typer.Option("--include-baselines", help="Let baseline families vote and be ranked."),
    ] = False,
    include_resolved: Annotated[
        bool, typer.Option("--include-resolved", help="Score resolved questions too.")
    ] = False,
) -> None:
    """PROXY ranking before resolution: agreement with the other families' extremized pool.

    Not an accuracy score: standardised per question (3+ voting families), averaged per week
    (5+ such questions), lower is better.
    """
    options = _options(
        ctx,
        flags,
        proxy_include_baselines=include_baselines,
        proxy_include_resolved=include_resolved,
    )
    forecasts = _scoped(ctx, load_forecasts(ctx, flags.from_export), flags, options)
    report = _report().proxy_ranking(forecasts, options)
    _emit(ctx, report, flags, _render().proxy_table, forecasts)


@analyze_app.command("market")
@with_options(
    AnalyzeFlags,
    "from_export",
    "output_format",
    "at",
    "category",
    "horizon",
    "track",
    "bootstrap",
    "seed",
    "by",
    "with_bets",
    "wide",
)
def market_command(ctx: typer.Context, flags: AnalyzeFlags) -> None:
    """Skill against the market: alpha in Brier and log terms against the price each
    forecaster was shown (> 0: it beat that price), the market-copy index (correlation, mean
    distance, "follows the market") and the return per $1 of betting against the odds, before
    and after the taker fee.

    Intervals are cluster-robust t (cluster bootstrap too in --format json); "insufficient"
    below 5 clusters. CSV flattens each interval into _estimate, _low and _high columns.
    """
    _one_report(ctx, flags, "against_market", "market_table")


@analyze_app.command("power")
@with_options(
    AnalyzeFlags,
    "from_export",
    "output_format",
    "at",
    "category",
    "horizon",
    "track",
    "market_weight",
    "weights",
    "fit_exclude",
    "fit_by_type",
    "bootstrap",
    "seed",
    "by",
    "with_bets",
    "wide",
)
def power_command(ctx: typer.Context, flags: AnalyzeFlags) -> None:
    """Weeks to separate each adjacent pair of the ranking: the Brier gap on their common
    questions, its standard error, and "separated", "about N more weeks" (for 80% power at
    two-sided 5%) or "not separable at this gap".

    Assumes the weeks to come have the same panel size, variance per week and gap as the
    weeks seen (the table states it; "assumptions" in --format json).
    """
    _one_report(ctx, flags, "power", "power_table")


@analyze_app.command("replicates")
@with_options(
    AnalyzeFlags,
    "from_export",
    "output_format",
    "at",
    "category",
    "horizon",
    "track",
    "market_weight",
    "weights",
    "fit_exclude",
    "fit_by_type",
    "seed",
    "wide",
)
def replicates_command(ctx: typer.Context, flags: AnalyzeFlags) -> None:
    """Skill or the luck of a run: per family, its replicates' mean raw Brier and their
    standard deviation, its Brier over the questions with a 95% interval, the share of the
    agents' variance between families (the intraclass correlation), and the adjacent families
    too close to order (their gap is smaller than their replicates' spread)."""
    _one_report(ctx, flags, "replicates", "replicates_table")


@analyze_app.command("calibration")
@with_options(
    AnalyzeFlags,
    "from_export",
    "output_format",
    "at",
    "category",
    "horizon",
    "track",
    "bins",
    "plot",
    "by",
    "with_bets",
    "wide",
)
def calibration_command(
    ctx: typer.Context,
    flags: AnalyzeFlags,
    bins: Annotated[
        int, typer.Option("--bins", metavar="N", min=2, max=100, help="Number of bins.")
    ] = 10,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            metavar="FILE",
            help="Also write a reliability diagram PNG here.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Reliability data, expected calibration error and Brier decomposition per forecaster,
    and calibration in depth: MCE, ACE, log loss, spherical score, overconfidence (the bin
    rule is written under the table, and as "bin_rule" in --format json)."""
    options = _options(ctx, flags, n_bins=bins)
    forecasts = _scoped(ctx, load_forecasts(ctx, flags.from_export), flags, options)
    prep = _report().prepare(forecasts, options)
    report = _report().calibration_report(forecasts, options, prep)
    if plot is not None:
        results = [r for r in _report().calibration_results(forecasts, options, prep) if r.n > 0]
        _plot_calibration(results, plot, title=f"Reliability diagram (as of {report['as_of']})")
        report["plot"] = str(plot)
    _emit(ctx, report, flags, _render().calibration_table, forecasts)
    if plot is not None and flags.output_format == "table":
        console.print(f"reliability diagram written to {plot}")


RiskValue = Annotated[
    str,
    typer.Option(
        "--value",
        metavar="mark|exit",
        help="Value the portfolio at the mark, or at exit (selling into the bids; mode book "
        "cohorts only: gamma cohorts are listed without figures).",
    ),
]


def load_snapshots(ctx: typer.Context, from_export: Path | None, value: str) -> Any:
    """The snapshots to analyse: an export directory's (its manifest checked first), or the
    configured database's, read in one streamed query."""
    from arena.analytics.snapshot_columns import read_export_snapshots, read_stored_snapshots

    if from_export is not None:
        from arena.export.directory import verify_export

        directory = from_export if from_export.is_dir() else from_export.parent
        verify_export(directory)
        return read_export_snapshots(directory, value)
    with state(ctx).reader()() as session:
        return read_stored_snapshots(session, value)


@analyze_app.command("risk")
@with_options(
    AnalyzeFlags,
    "from_export",
    "output_format",
    "value",
    "at",
    "track",
    "bootstrap",
    "seed",
    "by",
    "wide",
)
def risk_command(
    ctx: typer.Context,
    flags: AnalyzeFlags,
    value: RiskValue = "mark",
) -> None:
    """Risk and return of each family's (or agent's) portfolio curve: Sharpe and Sortino of
    the weekly returns (annualised by sqrt(52)), maximum drawdown in % and $ with its duration
    and recovery, Calmar; each with a block-bootstrap interval, "insufficient" below 8 weeks.

    \b
    Example (a database's snapshots, or an export's):
      arena analyze risk --by agent
      arena analyze risk --value exit --from-export exports/2026-11 -f csv
    """
    import sys

    from arena.analytics.groups import restrict_snapshots
    from arena.analytics.risk_report import risk

    one_of("--value", value, ("mark", "exit"))
    fmt = one_of("--format", flags.output_format, ANALYZE_FORMATS)
    options = _options(ctx, flags)
    snapshots = load_snapshots(ctx, flags.from_export, value)
    report = risk(on_track(ctx, flags, restrict_snapshots, snapshots), options, value=value)
    if fmt == "json":
        typer.echo(json.dumps(report, indent=2))
    elif fmt == "csv":
        rows = _risk_labelled(ctx, report, flags)["rows"]
        _render().write_csv(rows, sys.stdout, first=("forecaster", "display_name"))
    else:
        report = _risk_labelled(ctx, report, flags)
        show(console, _render().risk_table(report, wide=flags.wide), flags.wide)


def _risk_labelled(ctx: typer.Context, report: dict[str, Any], flags: AnalyzeFlags) -> Any:
    """``report`` with each family's display name (an agent: its family's name and id)."""
    names = family_names(ctx, flags.from_export)
    for row in report["rows"]:
        family = names.get(row["family_id"]) or row["family_id"]
        row["display_name"] = (
            family if flags.by == "family" else f"{family} · agent {row['forecaster']}"
        )
    return report


class PairCommand(TyperCommand):
    """``analyze report``, whose ``--pair`` is written ``A,B`` (as its help shows) or, as
    before, ``A B``: the older two-word form is joined into the new one before parsing."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, joined_pair(args))


def joined_pair(args: list[str]) -> list[str]:
    """``args`` with ``--pair A B`` written ``--pair A,B`` (the command takes no argument, so
    a word after ``--pair A`` can only be ``B``)."""
    joined: list[str] = []
    rest = list(args)
    while rest:
        word = rest.pop(0)
        joined.append(word)
        two_words = len(rest) >= 2 and "," not in rest[0] and not rest[1].startswith("-")
        if word == "--pair" and two_words:
            joined.append(f"{rest.pop(0)},{rest.pop(0)}")
    return joined


def parse_pair(value: str | None) -> tuple[str, str] | None:
    """``A,B`` as the pair (A, B); anything else is a usage error."""
    if value is None:
        return None
    names = [name.strip() for name in value.split(",")]
    if len(names) != 2 or not all(names):
        raise OptionError(f"--pair: {value!r} is not two forecasters written A,B")
    return names[0], names[1]


@analyze_app.command("report", cls=PairCommand)
@with_options(
    AnalyzeFlags,
    "from_export",
    "report_format",
    "at",
    "category",
    "horizon",
    "track",
    "pair",
    "market_weight",
    "fit_exclude",
    "fit_by_type",
    "bootstrap",
    "seed",
    "wide",
)
def report_command(
    ctx: typer.Context,
    flags: AnalyzeFlags,
    pair: Annotated[
        str | None,
        typer.Option(
            "--pair",
            metavar="A,B",
            help="Also compare these two forecasters head-to-head (e.g. --pair gpt-5.1,grok-4).",
            show_default=False,
        ),
    ] = None,
    report_format: FormatOption = "json",
) -> None:
    """Everything at once: ranking (with rank probabilities), skill against the market, weeks
    to separate, proxy ranking, calibration (in depth), replicates, risk and an optional
    head-to-head.

    JSON by default; --format table prints each table in turn; --format csv writes one CSV
    whose first column, "section", names the analysis each row comes from.
    """
    fmt = one_of("--format", report_format, ANALYZE_FORMATS)
    pair_names = parse_pair(pair)
    options = _options(ctx, flags)
    forecasts = _scoped(ctx, load_forecasts(ctx, flags.from_export), flags, options)
    report = _report().full_analysis(forecasts, options, pair_names)
    report["risk"] = _risk_report(ctx, flags, options)
    if fmt == "json":
        typer.echo(json.dumps(report, indent=2))
        return
    sections = {
        name: _labelled(ctx, report[name], flags, forecasts)
        for name in ("ranking", "market", "power", "proxy", "calibration", "replicates")
    }
    if fmt == "csv":
        rows = [{"section": name, **row} for name, part in sections.items() for row in part["rows"]]
        if "head_to_head" in report:
            rows.append({"section": "head_to_head", **report["head_to_head"]})
        _render().write_csv(rows, sys.stdout, first=("section", "forecaster", "display_name"))
        return
    render = _render()
    tables = {
        "ranking": render.ranking_table,
        "market": render.market_table,
        "power": render.power_table,
        "proxy": render.proxy_table,
        "calibration": render.calibration_table,
        "replicates": render.replicates_table,
    }
    for name, table in tables.items():
        show(console, table(sections[name], wide=flags.wide), flags.wide)
    if "head_to_head" in report:
        show(console, render.head_to_head_table(report["head_to_head"], flags.wide), flags.wide)
    if "rows" in report["risk"]:
        risk = _risk_labelled(ctx, report["risk"], flags)
        show(console, render.risk_table(risk, wide=flags.wide), flags.wide)


def _risk_report(ctx: typer.Context, flags: AnalyzeFlags, options: Any) -> Any:
    """The risk part of ``analyze report``: at the mark, per the report's forecaster; a note
    when there are no snapshots to read (an export of the forecasts alone)."""
    from arena.analytics.risk_report import risk

    try:
        snapshots = load_snapshots(ctx, flags.from_export, "mark")
    except ForecastsError:  # the same report from any directory holding the same data
        reason = "no portfolio snapshots to read (an export of the forecasts alone)"
        return {"kind": "risk", "status": "insufficient", "reason": reason}
    return risk(snapshots, options)


@analyze_app.command("breakdown")
@with_options(
    AnalyzeFlags,
    "by_group",
    "from_export",
    "breakdown_format",
    "at",
    "category",
    "horizon",
    "track",
    "bootstrap",
    "seed",
    "with_bets",
    "wide",
)
def breakdown_command(
    ctx: typer.Context,
    flags: AnalyzeFlags,
    by_group: Annotated[
        str,
        typer.Option(
            "--by",
            metavar="category|horizon",
            help="One row per family and category, or "
            "per family and horizon bucket (le7, 8to30, gt30 days).",
        ),
    ] = "category",
    breakdown_format: Annotated[
        str,
        typer.Option("--format", "-f", metavar="FORMAT", help="Output format: table, json or csv."),
    ] = "table",
) -> None:
    """Every family per market category or horizon bucket: positions, P/L, cost, scored bets
    and Brier (the ledger, from the database), and forecasts, scored questions and the
    difficulty-adjusted Brier with its interval (the forecasts, at --at). A group with fewer
    than 30 scored questions (bets) for a family is provisional for it; markets without a
    category are "other"; unresolved markets are bucketed by their scheduled end."""
    import sys

    from arena.analytics.breakdown_view import (
        breakdown_report,
        breakdown_table,
        write_breakdown_csv,
    )

    one_of("--format", breakdown_format, ("table", "json", "csv"))
    one_of("--by", by_group, ("category", "horizon"))
    options = _options(ctx, flags)
    scope = ledger_scope(ctx, flags.category, flags.horizon)
    try:
        forecasts: Forecasts | None = scoped_forecasts(
            _tracked(ctx, load_forecasts(ctx, flags.from_export), flags),
            flags.category,
            flags.horizon,
            options.as_of,
            checked=True,
        )
    except UserError:
        if flags.from_export is not None:
            raise
        forecasts = None  # methodology v1: positions and bets only
    with state(ctx).reader()() as session:
        report = breakdown_report(
            session, forecasts, by_group, options, scope=scope, track=flags.track
        )
    if breakdown_format == "json":
        typer.echo(json.dumps(report, indent=2))
    elif breakdown_format == "csv":
        write_breakdown_csv(report, sys.stdout)
    else:
        show(console, breakdown_table(report, wide=flags.wide), flags.wide)


def register(app: typer.Typer) -> None:
    """Add the ``analyze`` command group."""
    app.add_typer(analyze_app, name="analyze")


# -- arena analyze trend ------------------------------------------------------------------------

TREND_FORMATS = ("table", "json", "csv")
TrendFormat = Annotated[
    str,
    typer.Option("--format", "-f", metavar="FORMAT", help="Output format: table, json or csv."),
]
TrendFamily = Annotated[
    str | None,
    typer.Option(
        "--family",
        metavar="ID",
        help="Only this family's rows (ranks stay among all).",
        show_default=False,
    ),
]


def load_trend_inputs(ctx: typer.Context, from_export: Path | None) -> Any:
    """The trend's inputs: an export directory's (its manifest checked first), or the
    configured database's."""
    from arena.analytics.trend_inputs import read_export_trend_inputs, read_stored_trend_inputs

    if from_export is not None:
        from arena.export.directory import verify_export

        directory = from_export if from_export.is_dir() else from_export.parent
        verify_export(directory)
        return read_export_trend_inputs(directory)
    with state(ctx).reader()() as session:
        return read_stored_trend_inputs(session)


@analyze_app.command("trend")
@with_options(AnalyzeFlags, "from_export", "trend_format", "at", "family", "track", "wide")
def trend_command(
    ctx: typer.Context,
    flags: AnalyzeFlags,
    family: TrendFamily = None,
    trend_format: TrendFormat = "table",
) -> None:
    """Per family and cohort week: weekly return, Brier (v1), adjusted score and alpha (v2),
    rank that week and cumulatively; * marks where the family's lineage (OpenRouter id,
    prompt version, methodology version, track, web search settings) changed.

    \b
    Example (a database's, or an export's):
      arena analyze trend --family gpt-5.1
      arena analyze trend --from-export exports/2026-11 -f csv
    """
    import sys

    from arena.analytics.trend_inputs import restrict_trend_inputs
    from arena.analytics.trend_render import trend_table
    from arena.analytics.trend_report import trend, write_csv

    one_of("--format", trend_format, TREND_FORMATS)
    options = _options(ctx, flags)
    try:
        loaded = load_trend_inputs(ctx, flags.from_export)
        inputs = on_track(ctx, flags, restrict_trend_inputs, loaded)
        report = trend(inputs, options, family=family)
    except UserError:  # no snapshots to read: said as is
        raise
    except ValueError as exc:  # an unknown family
        raise OptionError(f"--family: {exc}") from exc
    if trend_format == "json":
        typer.echo(json.dumps(report, indent=2))
    elif trend_format == "csv":
        write_csv(report, sys.stdout)
    else:
        names = family_names(ctx, flags.from_export)
        for row in report["rows"]:
            row["display_name"] = names.get(row["family_id"]) or row["family_id"]
        show(console, trend_table(report, wide=flags.wide), flags.wide)
