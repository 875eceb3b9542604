"""``arena run`` (the daemon, or ``--once`` for cron) and ``arena status``."""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arena.cli.common import (
    VIEW_FORMATS,
    AtOption,
    ViewFormatOption,
    WideOption,
    clock_for,
    console,
    one_of,
    parse_at,
    runtime,
    state,
)
from arena.clock import SystemClock, iso_utc
from arena.errors import JobFailed, OptionError
from arena.numbers import when
from arena.terminal import TerminalColumn, fitted_table, show
from arena.web.bind import parse_bind

if TYPE_CHECKING:
    from arena.config import Settings
    from arena.jobs.status import RecordLine

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
    from arena.scheduler import run_forever

    if http is not None and (once or at is not None):
        raise OptionError("--http serves the dashboard beside the daemon; not with --once or --at")
    bind = parse_bind(http) if http is not None else None
    with runtime(ctx) as jobs:  # migrates the database first
        log.info("configuration: %s", json.dumps(state(ctx).settings.masked(), default=str))
        if once or at is not None:
            now = parse_at(at) if at else SystemClock().now()
            results = jobs.finish_held(now, jobs.run_due(now))
            for result in results:
                console.print(
                    f"{result.job:13} slot {iso_utc(result.slot)}: {result.describe()}",
                    markup=False,
                )
            unfinished = [r for r in results if not r.final]
            if unfinished:
                raise JobFailed(
                    "unfinished: " + "; ".join(f"{r.job} {r.describe()}" for r in unfinished)
                )
            return
        web = _start_dashboard(state(ctx).settings, *bind) if bind is not None else None
        try:
            run_forever(jobs)
        finally:
            if web is not None:
                web.stop()


def _start_dashboard(settings: Settings, host: str, port: int) -> Any:
    """The dashboard on a thread of the daemon (the web stack loads only here)."""
    from arena.web.server import serve_in_background

    return serve_in_background(settings, host, port)


JOB_COLUMNS = [
    TerminalColumn("job", lambda j: j.job, numeric=False),
    TerminalColumn("last slot", lambda j: when(j.last_slot), numeric=False),
    TerminalColumn("status", lambda j: j.status, numeric=False),
    TerminalColumn("finished", lambda j: when(j.finished_at), essential=False, numeric=False),
    TerminalColumn("next run", lambda j: when(j.next_run), numeric=False),
    TerminalColumn("error", lambda j: j.error or "", essential=False, numeric=False),
]

UNSERVED_JOB_COLUMNS = [
    dataclasses.replace(c, header="next if run") if c.header == "next run" else c
    for c in JOB_COLUMNS
]
"""The jobs of a database no daemon serves: the next run times are when one would run them."""

COHORT_COLUMNS = [
    TerminalColumn("cohort", lambda c: str(c.cohort_id)),
    TerminalColumn("week start", lambda c: c.week_start.date().isoformat(), numeric=False),
    TerminalColumn("phase", lambda c: c.phase, numeric=False),
    TerminalColumn("agents", lambda c: str(c.agents)),
    TerminalColumn("open positions", lambda c: str(c.open_positions)),
]


def status(
    ctx: typer.Context,
    at: AtOption = None,
    fmt: ViewFormatOption = "table",
    wide: WideOption = False,
) -> None:
    """Show the latest run of every job, active cohorts, next run times and open warnings.

    When no daemon has run against the database lately (the demo's, or a stopped daemon's),
    it says so first, and what the schedule owes is information, not warnings.
    """
    one_of("--format", fmt, VIEW_FORMATS)
    from arena.jobs.status import read_status

    app_state = state(ctx)
    with app_state.read_engine().connect() as connection:  # Core only: no ORM to load
        report = read_status(
            connection, app_state.settings, clock_for(at).now(), SystemClock().now()
        )
    if fmt == "json":
        typer.echo(json.dumps(report.to_json(), indent=2))
        return
    if report.headline:
        console.print(report.headline, markup=False, style="bold yellow")
    columns = JOB_COLUMNS if report.daemon.serving else UNSERVED_JOB_COLUMNS
    show(console, fitted_table(columns, report.jobs, wide=wide, title="Jobs (UTC)"), wide)
    errors = [j for j in report.jobs if j.error and not wide]
    for job in errors:
        console.print(f"  {job.job} error: {job.error}", markup=False)
    show(console, fitted_table(COHORT_COLUMNS, report.cohorts, wide=wide, title="Cohorts"), wide)
    if report.record is not None:
        for line in record_lines(report.record):
            console.print(line, markup=False)
    if report.warnings:
        console.print("[bold yellow]warnings[/bold yellow]")
        for warning in report.warnings:
            console.print(f"  - {warning}", markup=False)
    else:
        console.print("no warnings")
    if report.pending:
        console.print("due, for a daemon to do (information):")
        for line in report.pending:
            console.print(f"  - {line}", markup=False)


HASH_SHOWN = 16
"""How many hex digits of a hash a line shows."""


def record_lines(record: RecordLine) -> list[str]:
    """The record chain's head, its latest commitment and the anchors, a line each."""
    from arena.jobs.status import UNSIGNED

    if record.head_seq == 0:
        return ["record: the chain is empty"]
    lines = [f"record: chain head seq {record.head_seq}, hash {record.head_hash[:HASH_SHOWN]}"]
    made = record.commitment
    if made is None:
        lines.append("  not committed yet")
        return lines
    lines.append(
        f"  latest commitment: seq {made.seq} at {when(made.committed_at)}, "
        f"{'signed' if made.signed else 'unsigned'}; {record.uncommitted} record(s) since"
    )
    if not made.signed:
        lines.append(f"  {UNSIGNED}")
    for anchor in record.anchors:
        took = f"seq {anchor.delivered_seq}" if anchor.delivered_seq is not None else "nothing"
        waiting = f", {anchor.undelivered} waiting" if anchor.undelivered else ""
        lines.append(f"  anchor {anchor.anchor}: took {took}{waiting}")
    return lines


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("status")(status)
