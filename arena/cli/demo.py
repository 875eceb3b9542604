"""``arena demo``: the whole arena, offline, in well under a minute.

A fresh SQLite file, a simulated Polymarket (a few hundred synthetic markets whose prices move
and which close, get proposed, disputed and resolve, including a 50-50 and an ambiguous one),
the configured baseline families, and every configured OpenRouter family answered by simulated
models through the real OpenAI SDK against an in-process fake OpenRouter. A simulated clock
runs several weeks of the production jobs, then the leaderboard and an export are written.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from arena.analytics.leaderboard import compute_leaderboard
from arena.cli.common import console, state
from arena.cli.results import print_leaderboard
from arena.config import BaselineFamily, OpenRouterFamily
from arena.errors import JobFailed, UserError
from arena.export import export
from arena.jobs.audit import check_ledger
from arena.jobs.guard import GuardedRun
from arena.simulation import Simulation
from arena.store.db import make_engine, session_factory, upgrade
from arena.store.models import (
    Agent,
    Base,
    BrierScore,
    Cohort,
    Decision,
    DecisionAttempt,
    PortfolioSnapshot,
    Position,
    Trade,
)

DEMO_START = datetime(2026, 11, 1, tzinfo=UTC)  # a Sunday
DEMO_MARKER = ".arena-demo"  # written into --out by the demo that created or adopted it
DEMO_FILES = ("demo.db", "demo.db-wal", "demo.db-shm", "demo.db-journal", "export")


def prepare_out(out: Path) -> None:
    """Make ``out`` ready for a demo: create it (or adopt an empty one) and mark it as ours;
    in a directory an earlier demo marked, remove only what a demo writes. Anything else is a
    :class:`UserError`, and nothing is deleted."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise UserError(f"--out: {out} exists and is not a directory")
    try:
        if not out.exists():
            out.mkdir(parents=True)
        entries = {entry.name for entry in out.iterdir()}
        if entries and DEMO_MARKER not in entries:
            raise UserError(
                f"--out: {out} is not empty and was not made by arena demo "
                "(choose a new or empty directory)"
            )
        (out / DEMO_MARKER).write_text(
            "made by `arena demo`; a later demo may replace demo.db and export/ here\n",
            encoding="utf-8",
        )
        for name in DEMO_FILES:
            path = out / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
    except OSError as exc:
        raise UserError(f"--out: cannot prepare {out}: {exc.strerror or exc}") from None


def demo(
    ctx: typer.Context,
    weeks: Annotated[
        int, typer.Option("--weeks", min=1, max=26, help="Simulated weeks to run.")
    ] = 4,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Directory for demo.db and the export: new, empty, or one an earlier demo made "
            "(only what that demo wrote is replaced).",
        ),
    ] = Path("demo-output"),
    step_minutes: Annotated[
        int,
        typer.Option(
            "--step-minutes", min=10, help="Simulated minutes between two ticks of the scheduler."
        ),
    ] = 240,
    methodology: Annotated[
        str | None, typer.Option("--methodology", help="v1 or v2 (default: the config's).")
    ] = None,
    markets: Annotated[
        int,
        typer.Option(
            "--markets", min=50, max=3000, help="Synthetic markets in the fake Polymarket."
        ),
    ] = 300,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulated world.")] = 7,
) -> None:
    """Run an offline, self-contained simulation of several weeks; print the leaderboard and
    write an export."""
    base = state(ctx).settings
    version = methodology or base.methodology
    if version not in ("v1", "v2"):
        raise UserError(f"--methodology: {version!r} is not v1 or v2")
    prepare_out(out)
    settings = base.model_copy(
        update={
            "families": base.families or _demo_lineup(),
            "database_url": f"sqlite:///{out / 'demo.db'}",
            "methodology": version,
            "benchmark": base.benchmark.model_copy(update={"universe_size": min(500, markets)}),
            # Simulated time runs ~10,000x faster than real time: sync the whole universe twice
            # a simulated day (held markets are still refreshed at every snapshot and settlement).
            "schedule": base.schedule.model_copy(update={"market_sync_minutes": 720}),
        }
    )
    logging.getLogger().setLevel(logging.ERROR)  # the demo shows progress, not job logs
    engine = make_engine(settings.database_url)
    upgrade(engine)
    factory = session_factory(engine)
    end = DEMO_START + timedelta(days=7 * weeks) - timedelta(minutes=step_minutes)
    step = timedelta(minutes=step_minutes)
    families = [f.id for f in settings.active_families]
    console.print(
        f"[bold]arena demo[/bold]: {weeks} simulated weeks from {DEMO_START.date()}, "
        f"{markets} synthetic markets, {len(families)} families, methodology "
        f"{version}, database {out / 'demo.db'}"
    )
    started = time.perf_counter()
    sim = Simulation(
        settings,
        factory,
        start=DEMO_START,
        days=7 * weeks,
        n_markets=markets,
        seed=seed,
        skills=_skills(families),
    )
    failures: list[str] = []
    ticks = int((end - DEMO_START) / step) + 1
    try:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as progress:
            task = progress.add_task("simulating", total=ticks)

            def on_step(at: datetime, results: list[GuardedRun]) -> None:
                failures.extend(
                    f"{at:%Y-%m-%d %H:%M} {r.job}: {r.error}"
                    for r in results
                    if r.status == "failed"
                )
                progress.update(
                    task, advance=1, description=f"simulated time {at:%a %Y-%m-%d %H:%M} UTC"
                )

            sim.run(end, step, on_step)
    finally:
        sim.close()
    _summary(factory, time.perf_counter() - started)
    for failure in failures[:5]:
        console.print(f"[yellow]job failed[/yellow] {failure}", markup=True)
    with factory() as session:
        violations = check_ledger(session)
    if violations:
        raise JobFailed("ledger invariant violated: " + "; ".join(violations[:3]))
    minimum = settings.benchmark.min_scored_bets
    print_leaderboard(compute_leaderboard(factory, min_scored_bets=minimum), None, minimum)
    export_dir = out / "export"
    manifest = export(factory, export_dir, "jsonl", methodology=version)
    console.print(
        f"export: {export_dir} ({sum(f.rows for f in manifest.files)} rows in "
        f"{len(manifest.files)} files, manifest.json)"
    )
    if version == "v2":
        _analytics(export_dir, end)
    console.print(
        f"ledger invariant holds for every agent; done in {time.perf_counter() - started:.1f}s"
    )
    console.print(serve_command(out / "demo.db"), markup=False, soft_wrap=True)


def serve_command(database: Path) -> str:
    """The line that tells how to browse the demo's database in the dashboard."""
    url = f"sqlite:///{database.resolve()}"
    return f"browse it: ARENA_DATABASE_URL={shlex.quote(url)} arena serve  (http://127.0.0.1:8000/)"


def _demo_lineup() -> list[OpenRouterFamily | BaselineFamily]:
    """Families for a demo run outside the repository (no config.yaml with families)."""
    return [
        OpenRouterFamily(
            id="sim-sharp", display_name="Simulated sharp model", openrouter_id="sim/sharp"
        ),
        OpenRouterFamily(
            id="sim-noisy", display_name="Simulated noisy model", openrouter_id="sim/noisy"
        ),
        BaselineFamily(kind="baseline", id="market-follower", strategy="market-follower"),
        BaselineFamily(kind="baseline", id="always-hold", strategy="always-hold"),
        BaselineFamily(kind="baseline", id="random-bettor", strategy="random", seed=42),
    ]


def _skills(families: list[str]) -> dict[str, float]:
    """Spread simulated skill over the OpenRouter families so the ranking has something to find."""
    return {family: round(0.1 + 0.6 * (i % 4) / 3, 2) for i, family in enumerate(families)}


def _summary(factory: sessionmaker[Session], seconds: float) -> None:
    with factory() as session:

        def count(model: type[Base], *where: Any) -> int:
            return int(session.scalar(select(func.count()).select_from(model).where(*where)) or 0)

        console.print(
            f"simulated in {seconds:.1f}s: {count(Cohort)} cohorts, {count(Agent)} agents, "
            f"{count(Decision)} decisions ({count(DecisionAttempt)} model attempts, "
            f"{count(Decision, Decision.system_hold.is_(True))} system HOLDs), "
            f"{count(Trade)} trades, {count(Position, Position.status != 'OPEN')} positions "
            f"closed or settled, {count(BrierScore)} Brier scores, "
            f"{count(PortfolioSnapshot)} snapshots"
        )


def _analytics(export_dir: Path, now: datetime) -> None:
    from arena.analytics.loading import read_export
    from arena.analytics.render import proxy_table, ranking_table
    from arena.analytics.report import AnalysisOptions, proxy_ranking, ranking

    forecasts = read_export(export_dir)
    options = AnalysisOptions(as_of=now, min_days=7, min_questions=10, bootstrap_resamples=500)
    console.print(ranking_table(ranking(forecasts, options)))
    console.print(proxy_table(proxy_ranking(forecasts, options)))


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
