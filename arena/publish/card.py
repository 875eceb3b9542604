"""``README.md`` of a published dataset: its card.

What each file holds, the dataset and export schema versions, the methodology versions of its
cohorts, counts, the time range, the licence the operator set (``publish.licence``), the share
of scheduled runs on time, and how to verify it. Deterministic: made of the database's content
only (its time range ends at the latest time stored, never at the time of publishing).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena import __version__
from arena.clock import iso_utc
from arena.config import Settings
from arena.domain.states import DecisionStatus
from arena.export.tables import TABLES
from arena.export.writer import EXPORT_SCHEMA_VERSION
from arena.numbers import count, share
from arena.publish.dataset import DATASET_SCHEMA_VERSION, Part
from arena.publish.incidents import Timing, incident_log
from arena.publish.layout import (
    CHAIN,
    COMMITMENTS,
    INCIDENT_SUMMARY,
    INCIDENTS,
    LEADERBOARD,
    MANIFEST,
    MANIFESTS_DIR,
    PUBLIC_KEY,
    REPORT,
    SITE,
    TABLES_DIR,
)
from arena.store.models import (
    Agent,
    Cohort,
    Decision,
    Family,
    Forecast,
    PortfolioSnapshot,
    Record,
    Trade,
)

CARD = "README.md"

FILES = (
    (MANIFEST, "the dataset's version, chain head, and the sha256 and size of every file"),
    (f"{MANIFESTS_DIR}/manifest-NNNNNN.json", "the manifest of every earlier version, kept"),
    (
        f"{TABLES_DIR}/<table>.parquet, .csv",
        "every export table (docs/EXPORT_SCHEMA.md), prompts in",
    ),
    (CHAIN, "the record chain: one hash-linked record per line, in sequence order"),
    (COMMITMENTS, "the signed commitments of the chain's head"),
    (PUBLIC_KEY, "the Ed25519 key the commitments are signed with (when signed)"),
    (LEADERBOARD, "the standings, as `arena leaderboard --format json` prints them"),
    (REPORT, "ranking, market, power, proxy and calibration (`analyze report`)"),
    (INCIDENT_SUMMARY, "the share of scheduled runs on time, per job"),
    (INCIDENTS, "failed, late and caught-up runs, failed decisions, outages"),
    (f"{SITE}/index.html", "a static copy of the dashboard (opens from file://)"),
    ("README.md", "this card"),
)


def _count(session: Session, column: Any, *where: Any) -> int:
    return int(session.scalar(select(func.count(column)).where(*where)) or 0)


def counts(session: Session) -> dict[str, int]:
    """What the dataset holds, counted."""
    return {
        "records": _count(session, Record.seq),
        "cohorts": _count(session, Cohort.id),
        "families": _count(session, Family.id),
        "agents": _count(session, Agent.id),
        "decisions": _count(session, Decision.id),
        "completed decisions": _count(
            session, Decision.id, Decision.status == DecisionStatus.COMPLETED
        ),
        "trades": _count(session, Trade.id),
        "forecasts": _count(session, Forecast.id),
    }


def time_range(session: Session) -> tuple[datetime | None, datetime | None]:
    """From the first cohort's week to the latest time stored (a record, decision, trade or
    snapshot)."""
    first = session.scalar(select(func.min(Cohort.week_start)))
    latest = [
        session.scalar(select(func.max(column)))
        for column in (
            Record.recorded_at,
            Decision.updated_at,
            Trade.executed_at,
            PortfolioSnapshot.taken_at,
        )
    ]
    known = [value for value in latest if value is not None]
    return first, max(known) if known else None


def card(session: Session, settings: Settings) -> str:
    """The card's Markdown."""
    versions = sorted(
        str(v) for v in session.scalars(select(Cohort.methodology_version).distinct())
    )
    first, last = time_range(session)
    summary = incident_log(session, Timing.of(settings)).summary
    on_time = (
        f"{share(summary['on_time_share'])} of {count(summary['scheduled_runs'])} ran on time"
        if summary["on_time_share"] is not None
        else "none recorded yet"
    )
    lines = [
        "# arena: a published paper-trading record of LLM forecasters",
        "",
        f"Written by `arena publish` (arena {__version__}).",
        "",
        f"- Dataset schema version: {DATASET_SCHEMA_VERSION}",
        f"- Export schema version (tables): {EXPORT_SCHEMA_VERSION}",
        f"- Methodology version(s): {', '.join(versions) if versions else 'none yet'}",
        f"- Licence: {settings.publish.licence}",
        f"- Time range: {_when(first)} to {_when(last)}",
        f"- Scheduled runs: {on_time} (analysis/incidents.json)",
        "",
        "## Counts",
        "",
        "| what | count |",
        "|---|---|",
        *(f"| {name} | {count(n)} |" for name, n in counts(session).items()),
        "",
        "## Files",
        "",
        "| file | holds |",
        "|---|---|",
        *(f"| `{name}` | {holds} |" for name, holds in FILES),
        "",
        "Tables: " + ", ".join(f"`{spec.name}`" for spec in TABLES) + ".",
        "",
        "## How to verify",
        "",
        "```",
        "pip install arena",
        "arena verify DIR",
        "```",
        "",
        "`arena verify` needs no database. It checks every file against `manifest.json`,",
        "rebuilds every record of `chain.jsonl` from the tables and checks its hash and link,",
        "checks each commitment's signature with `public_key.pem`, that every forecast and bet",
        "was committed before its market resolved, the leaderboard recomputed from the trades,",
        "and the incident log against `tables/job_runs`. A single file can also be checked by",
        "hand: `sha256sum tables/trades.parquet` against its entry in `manifest.json`.",
        "",
        "What a record proves and what it does not: METHODOLOGY.md, section",
        '"A record anyone can verify".',
        "",
    ]
    return "\n".join(lines)


def _when(value: datetime | None) -> str:
    return iso_utc(value) if value is not None else "(nothing stored)"


def card_part(settings: Settings) -> Part:
    """The part writing ``README.md``."""

    def write(session: Session, staged: Path) -> list[str]:
        (staged / CARD).write_text(card(session, settings), encoding="utf-8")
        return [CARD]

    return write
