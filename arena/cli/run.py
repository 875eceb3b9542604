"""``arena run`` (the daemon, or ``--once`` for cron) and ``arena status``."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Annotated, Any

import typer
from rich.table import Table
from sqlalchemy import func, select

from arena.cli.common import AtOption, clock_for, console, parse_at, state
from arena.clock import SystemClock
from arena.config import Settings
from arena.errors import JobFailed, UserError
from arena.jobs.cohorts import decision_window, unfinished_cohorts
from arena.jobs.guard import latest_runs
from arena.runtime import JOBS, current_week_due, production_runtime
from arena.scheduler import next_fire_times, run_forever
from arena.store.db import upgrade
from arena.store.models import Agent, Market, Position
from arena.web.bind import parse_bind

log = logging.getLogger(__name__)


def run(
    ctx: typer.Context,
    once: Annotated[
        bool,
        typer.Option(
            "--once",
            help="Run every job that is due now (or at --at) and exit; for cron-style deployments.",
        ),
    ] = False,
    at: AtOption = None,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Also serve the read-only dashboard (as `arena serve`) from the daemon.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run the daemon: every job on its UTC schedule until SIGTERM/SIGINT (graceful stop)."""
    app_state = state(ctx)
    settings = app_state.settings
    if http is not None and (once or at is not None):
        raise UserError("--http serves the dashboard beside the daemon; not with --once or --at")
    bind = parse_bind(http) if http is not None else None
    upgrade(app_state.engine)
    log.info("configuration: %s", json.dumps(settings.masked(), default=str))
    runtime = production_runtime(settings, app_state.factory(migrate=False))
    try:
        if once or at is not None:
            now = parse_at(at) if at else SystemClock().now()
            results = runtime.finish_held(now, runtime.run_due(now))
            for result in results:
                console.print(
                    f"{result.job:13} slot {result.slot.isoformat()}: {result.describe()}",
                    markup=False,
                )
            unfinished = [r for r in results if not r.final]
            if unfinished:
                raise JobFailed(
                    "unfinished: " + "; ".join(f"{r.job} {r.describe()}" for r in unfinished)
                )
            return
        web = _start_dashboard(settings, *bind) if bind is not None else None
        try:
            run_forever(runtime)
        finally:
            if web is not None:
                web.stop()
    finally:
        runtime.close()


def _start_dashboard(settings: Settings, host: str, port: int) -> Any:
    """The dashboard on a thread of the daemon (the web stack loads only here)."""
    from arena.web.server import serve_in_background

    return serve_in_background(settings, host, port)


def status(ctx: typer.Context, at: AtOption = None) -> None:
    """Show the latest run of every job, active cohorts, next run times and open warnings."""
    app_state = state(ctx)
    settings = app_state.settings
    now = clock_for(at).now()
    factory = app_state.reader()
    next_times = next_fire_times(settings, now)
    with factory() as session:
        runs = {r.job: r for r in latest_runs(session)}
        jobs = Table("job", "last slot", "status", "finished", "next run", "error")
        for job in JOBS:
            r = runs.get(job)
            nxt = next_times.get(job)
            jobs.add_row(
                job,
                r.slot.isoformat() if r else "-",
                r.status if r else "never",
                r.finished_at.isoformat() if r and r.finished_at else "-",
                nxt.isoformat() if nxt else "-",
                (r.error or "")[:60] if r else "",
            )
        console.print(jobs)
        window = {
            c.id for c in decision_window(session, settings.benchmark.decision_cohort_limit, now)
        }
        cohorts = Table("cohort", "week start", "phase", "agents", "open positions")
        for cohort in unfinished_cohorts(session, now):
            agents = session.scalar(
                select(func.count()).select_from(Agent).where(Agent.cohort_id == cohort.id)
            )
            open_positions = session.scalar(
                select(func.count())
                .select_from(Position)
                .where(Position.cohort_id == cohort.id, Position.status == "OPEN")
            )
            cohorts.add_row(
                str(cohort.id),
                cohort.week_start.date().isoformat(),
                "deciding" if cohort.id in window else "tracking",
                str(agents),
                str(open_positions),
            )
        console.print(cohorts)
        warnings = current_week_due(settings, session, now, SystemClock().now()).warnings()
        warnings += open_warnings(session, now, settings.benchmark.claim_lease_seconds)
    if warnings:
        console.print("[bold yellow]warnings[/bold yellow]")
        for warning in warnings:
            console.print(f"  - {warning}", markup=False)
    else:
        console.print("no warnings")


AWAITING_TOO_LONG = timedelta(days=3)


def open_warnings(session, now, lease_seconds: int) -> list[str]:  # type: ignore[no-untyped-def]
    """Markets awaiting resolution for long (the week's missing and unfinished work is
    :meth:`arena.runtime.Runtime.week_due`)."""
    warnings: list[str] = []
    held = select(Position.market_id).where(Position.status == "OPEN").distinct()
    for market in session.scalars(
        select(Market).where(Market.id.in_(held), Market.status == "open")
    ):
        closed_at = market.closed_time or (market.end_date if market.closed else None)
        if market.closed and closed_at and now - closed_at > AWAITING_TOO_LONG:
            warnings.append(
                f"market {market.id} closed {closed_at.date()} and still awaits "
                f"resolution ({market.uma_resolution_status or 'no proposal'})"
            )
    return warnings


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("status")(status)
