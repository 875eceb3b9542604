"""``arena demo``: the whole arena, offline, in well under a minute.

A fresh SQLite file, a simulated Polymarket (a few hundred synthetic markets whose prices move
and which close, get proposed, disputed and resolve, including a 50-50 and an ambiguous one),
the configured baseline families, simulated models answering through the real OpenAI SDK
against an in-process fake OpenRouter (one of them with web search, whose answers cite the
fake's sources; two of them with three replicates each), and the example outside agent
(:mod:`arena.fakes.example_agent`) served over HTTP on a free port of 127.0.0.1 for the run,
under a secret drawn for the run. A simulated
clock runs several weeks of the production jobs, then the leaderboard (with each family's
track: model, web, agent, baseline) and an export are written.

Honest by construction:

* the simulated models are named by their simulated skill (``sim-skill-90`` knows 90% of the
  hidden truth); they stand in for the configured OpenRouter families, so no real model's
  name is ever shown beside a made-up skill;
* the simulated weeks *end* before the real present: they start ``--weeks`` weeks before the
  current week, and the last simulated instant is earlier than now, so every command that
  defaults to the real clock sees the whole demo.
"""

from __future__ import annotations

import logging
import os
import secrets
import shlex
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from arena.cli.common import clock_for, console, state
from arena.cli.composed import with_options
from arena.clock import week_start
from arena.domain.states import FamilyKind, JobRunStatus, Methodology
from arena.errors import JobFailed, OptionError, UserError

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from arena.config import FamilyConfig, Settings
    from arena.jobs.guard import GuardedRun

DEMO_SKILLS = (0.9, 0.7, 0.5, 0.3, 0.1)  # one simulated model family per skill
DEMO_WEB_SKILL = 0.7  # the simulated family that calls with web search (track web)
DEMO_REPLICATED_SKILLS = (0.5, 0.3)  # simulated families run as replicates (skill or luck)
DEMO_REPLICATES = 3
DEMO_AGENT_ID = "example-agent"  # the example outside agent, served locally (track agent)
DEMO_AGENT_SECRET_ENV = "ARENA_DEMO_AGENT_SECRET"  # its HMAC secret, set for the demo only
DEMO_RESAMPLES = 500  # fewer than analysis.resamples, to stay quick; stated in the output
DEMO_MARKER = ".arena-demo"  # written into --out by the demo that created or adopted it
DEMO_FILES = (
    "demo.db", "demo.db-wal", "demo.db-shm", "demo.db-journal", "export", "published",
)  # fmt: skip


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
            "made by `arena demo`; a later demo may replace demo.db, export/ and published/ here\n",
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


@dataclass(frozen=True)
class DemoSetup:
    """What ``arena demo`` simulates: how long, in which directory, at which tick, under which
    methodology and pricing, over how many synthetic markets, from which seed."""

    weeks: Annotated[
        int, typer.Option("--weeks", metavar="N", min=1, max=26, help="Simulated weeks to run.")
    ] = 4
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Directory for demo.db and the export: new, empty, or one an earlier demo made "
            "(only what that demo wrote is replaced).",
        ),
    ] = Path("demo-output")
    step_minutes: Annotated[
        int,
        typer.Option(
            "--step-minutes",
            metavar="MINUTES",
            min=10,
            help="Simulated minutes between two ticks of the scheduler.",
        ),
    ] = 240
    methodology: Annotated[
        str | None,
        typer.Option("--methodology", metavar="v1|v2", help="Methodology (default: the config's)."),
    ] = None
    markets: Annotated[
        int,
        typer.Option(
            "--markets",
            metavar="N",
            min=50,
            max=3000,
            help="Synthetic markets in the fake Polymarket.",
        ),
    ] = 300
    seed: Annotated[
        int, typer.Option("--seed", metavar="N", help="Seed of the simulated world.")
    ] = 7
    pricing: Annotated[
        str,
        typer.Option(
            "--pricing",
            metavar="book|gamma",
            help="book (walk the fake CLOB's order books) or gamma (display prices).",
        ),
    ] = "book"


@with_options(
    DemoSetup, "weeks", "out", "step_minutes", "methodology", "markets", "seed", "pricing"
)
def demo(ctx: typer.Context, setup: DemoSetup) -> None:
    """Run an offline, self-contained simulation of several weeks; print the leaderboard and
    write an export."""
    # The simulation, the analytics and the export load only when the demo runs.
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from arena.analytics.leaderboard import compute_leaderboard
    from arena.cli.results import print_leaderboard
    from arena.demo_world import Simulation, WorldPlan
    from arena.domain.tracks import TRACKS
    from arena.export.writer import ExportTarget, export
    from arena.jobs.audit import check_ledger
    from arena.store.db import make_engine, session_factory, upgrade

    weeks, out, step_minutes, markets = setup.weeks, setup.out, setup.step_minutes, setup.markets
    seed, pricing = setup.seed, setup.pricing
    base = state(ctx).settings
    try:
        version = Methodology(setup.methodology or base.methodology)
    except ValueError:
        raise OptionError(f"--methodology: {setup.methodology!r} is not v1 or v2") from None
    if pricing not in ("book", "gamma"):
        raise OptionError(f"--pricing: {pricing!r} is not book or gamma")
    prepare_out(out)
    with demo_agent() as endpoint:  # the example agent serves while the simulation runs
        settings = base.model_copy(
            update={
                "families": _demo_lineup(base.families, endpoint),
                "database_url": f"sqlite:///{out / 'demo.db'}",
                "methodology": version,
                "benchmark": base.benchmark.model_copy(
                    update={"universe_size": min(500, markets), "pricing": pricing}
                ),
                # Simulated time runs ~10,000x faster than real time: sync the whole universe
                # twice a simulated day (held markets are still refreshed at every snapshot and
                # settlement).
                "schedule": base.schedule.model_copy(update={"market_sync_minutes": 720}),
            }
        )
        logging.getLogger().setLevel(logging.ERROR)  # the demo shows progress, not job logs
        engine = make_engine(settings.database_url)
        upgrade(engine)
        factory = session_factory(engine)
        start, end = demo_window(clock_for(None).now(), weeks, step_minutes)
        step = timedelta(minutes=step_minutes)
        families = [f.id for f in settings.active_families]
        console.print(
            f"[bold]arena demo[/bold]: {weeks} simulated weeks from {start.date()} to "
            f"{end:%Y-%m-%d %H:%M} UTC (before now), "
            f"{markets} synthetic markets, {len(families)} families, methodology "
            f"{version}, pricing {pricing}, database {out / 'demo.db'}"
        )
        started = time.perf_counter()
        sim = Simulation(
            settings,
            factory,
            WorldPlan(start, 7 * weeks, n_markets=markets, seed=seed),
            skills=demo_skills(settings.families),
        )
        failures: list[str] = []
        ticks = int((end - start) / step) + 1
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
                        if r.status == JobRunStatus.FAILED
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
    standings = compute_leaderboard(factory, min_scored_bets=minimum)
    print_leaderboard(standings, None, minimum)
    console.print("Tracks (compared like with like: arena leaderboard --track NAME)")
    for track in TRACKS:
        names = [standing.family_id for standing in standings if standing.track == track]
        if names:
            console.print(f"  {track}: {', '.join(names)}")
    export_dir = out / "export"
    manifest = export(factory, ExportTarget(export_dir, "jsonl"), methodology=version)
    console.print(
        f"export: {export_dir} ({sum(f.rows for f in manifest.files)} rows in "
        f"{len(manifest.files)} files, manifest.json)"
    )
    if version == Methodology.V2:
        _analytics(export_dir, end)
    _publish_and_verify(factory, settings, out / "published", end)
    console.print(
        f"ledger invariant holds for every agent; done in {time.perf_counter() - started:.1f}s"
    )
    console.print(serve_command(out / "demo.db"), markup=False, soft_wrap=True)


def _publish_and_verify(
    factory: sessionmaker[Session], settings: Settings, published: Path, at: datetime
) -> None:
    """The round trip a reader makes: publish the dataset, then verify it from the files."""
    from arena.publish.dataset import publish_dataset
    from arena.publish.parts import dataset_parts
    from arena.publish.verify import verify_dataset
    from arena.record.signing import signing_key_from_env

    report = publish_dataset(
        factory, published, at, signing_key=signing_key_from_env(), parts=dataset_parts(settings)
    )
    verification = verify_dataset(published)
    if not verification.ok:
        first = "; ".join(
            f"{f.check} {f.table} {f.row}: {f.detail}" for f in verification.failures[:3]
        )
        raise JobFailed(f"arena verify {published}: {len(verification.failures)} failures: {first}")
    console.print(
        f"published: {published} (version {report.version}, chain of {report.records} records)",
        soft_wrap=True,
    )
    console.print("arena verify: every check holds; the static site is site/index.html in it")


def serve_command(database: Path) -> str:
    """The line that tells how to browse the demo's database in the dashboard."""
    url = f"sqlite:///{database.resolve()}"
    return f"browse it: ARENA_DATABASE_URL={shlex.quote(url)} arena serve  (http://127.0.0.1:8000/)"


def demo_window(now: datetime, weeks: int, step_minutes: int) -> tuple[datetime, datetime]:
    """First and last simulated instant: ``weeks`` whole weeks ending at the start of the
    current week (a Sunday), so the last tick lies before ``now``."""
    end_of_weeks = week_start(now)
    start = end_of_weeks - timedelta(weeks=weeks)
    return start, end_of_weeks - timedelta(minutes=step_minutes)


@contextmanager
def demo_agent() -> Iterator[str]:
    """The example outside agent (:mod:`arena.fakes.example_agent`, betting on favourites)
    served on a free port of 127.0.0.1 while the block runs; yields its endpoint. Its secret is
    drawn fresh and set in :data:`DEMO_AGENT_SECRET_ENV` for the block only (never printed);
    the variable's earlier state comes back after."""
    from arena.fakes.example_agent import make_app
    from arena.fakes.serving import serve_asgi

    secret = secrets.token_hex(32)
    before = os.environ.get(DEMO_AGENT_SECRET_ENV)
    os.environ[DEMO_AGENT_SECRET_ENV] = secret
    try:
        with serve_asgi(make_app(secret.encode(), "favourite")) as url:
            yield f"{url}/decide"
    finally:
        if before is None:
            os.environ.pop(DEMO_AGENT_SECRET_ENV, None)
        else:
            os.environ[DEMO_AGENT_SECRET_ENV] = before


def _demo_lineup(configured: list[FamilyConfig], agent_endpoint: str) -> list[FamilyConfig]:
    """Simulated model families named by their skill (:data:`DEMO_WEB_SKILL`'s with web search
    on the fake OpenRouter; those of :data:`DEMO_REPLICATED_SKILLS` with
    :data:`DEMO_REPLICATES` replicates), the example outside agent at ``agent_endpoint``, plus
    the configured baselines (or the three built-in ones when the config has none)."""
    from pydantic import AnyHttpUrl

    from arena.config import AgentFamily, BaselineFamily, OpenRouterFamily, WebSearch

    simulated: list[FamilyConfig] = [
        OpenRouterFamily(
            id=f"sim-skill-{round(skill * 100):02d}",
            display_name=f"Sim skill {skill:.1f}"
            + (" + web search" if skill == DEMO_WEB_SKILL else ""),
            provider="Simulated",
            openrouter_id=f"sim/skill-{round(skill * 100):02d}",
            web_search=WebSearch() if skill == DEMO_WEB_SKILL else None,
            replicates=DEMO_REPLICATES if skill in DEMO_REPLICATED_SKILLS else 1,
        )
        for skill in DEMO_SKILLS
    ]
    simulated.append(
        AgentFamily(
            kind=FamilyKind.AGENT,
            id=DEMO_AGENT_ID,
            display_name="Example agent (favourites)",
            endpoint=AnyHttpUrl(agent_endpoint),
            secret_env=DEMO_AGENT_SECRET_ENV,
            deadline_seconds=30,
        )
    )
    baselines = [f for f in configured if f.kind == FamilyKind.BASELINE] or [
        BaselineFamily(kind=FamilyKind.BASELINE, id="market-follower", strategy="market-follower"),
        BaselineFamily(kind=FamilyKind.BASELINE, id="always-hold", strategy="always-hold"),
        BaselineFamily(kind=FamilyKind.BASELINE, id="random-bettor", strategy="random", seed=42),
    ]
    return simulated + baselines


def demo_skills(families: list[FamilyConfig]) -> dict[str, float]:
    """The simulated skill of each simulated family: the one its name states."""
    return {
        f.id: int(f.id.rsplit("-", 1)[1]) / 100
        for f in families
        if f.kind == FamilyKind.OPENROUTER and f.id.startswith("sim-skill-")
    }


def _summary(factory: sessionmaker[Session], seconds: float) -> None:
    from arena.jobs.audit import row_counts

    with factory() as session:
        n = row_counts(session)
    console.print(
        f"simulated in {seconds:.1f}s: {n['cohorts']} cohorts, {n['agents']} agents, "
        f"{n['decisions']} decisions ({n['attempts']} model attempts, "
        f"{n['system_holds']} system HOLDs), {n['trades']} trades, "
        f"{n['closed_positions']} positions closed or settled, {n['brier_scores']} Brier "
        f"scores, {n['snapshots']} snapshots, {n['citations']} web search citations"
    )


def _analytics(export_dir: Path, now: datetime) -> None:
    from arena.analytics.loading import family_names, read_export
    from arena.analytics.render import proxy_table, ranking_table
    from arena.analytics.report import (
        AnalysisOptions,
        forecaster_labels,
        label_rows,
        proxy_ranking,
        ranking,
    )

    forecasts = read_export(export_dir)
    options = AnalysisOptions(
        as_of=now, min_days=7, min_questions=10, bootstrap_resamples=DEMO_RESAMPLES
    )
    labels = forecaster_labels(forecasts, options.by, family_names(export_dir))
    console.print(ranking_table(label_rows(ranking(forecasts, options), labels)))
    console.print(proxy_table(label_rows(proxy_ranking(forecasts, options), labels)))


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
