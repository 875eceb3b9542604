"""The incident log of a published dataset against its own tables (``arena verify``).

The job-run, decision and outage incidents are recomputed from ``tables/job_runs``,
``tables/decisions`` and ``tables/system_log`` with the very functions that wrote the log
(:mod:`arena.publish.incidents`), at the thresholds the log states
(``analysis/incidents.json``). Each incident the tables show must be a line of
``incidents.jsonl`` (a failure left out of the log is named), and each line of those kinds
must be one the tables show; the share of runs on time must be the recomputed one. Anchor
failures are counted, not checked: ``anchor_deliveries`` is not published.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from arena.publish.findings import Verification
from arena.publish.incidents import (
    INCIDENTS,
    SUMMARY,
    IncidentKind,
    Timing,
    decision_incidents,
    job_run_incidents,
    on_time_summary,
    outage_incidents,
)
from arena.publish.tables import has_table, table_rows
from arena.record.canonical import canonical

RECOMPUTED = frozenset(IncidentKind) - {IncidentKind.ANCHOR_FAILED}
_IDS = ("job_run_id", "decision_id", "log_id", "anchor_delivery_id")


def check_incidents(directory: Path, result: Verification) -> None:
    """The log against the tables (see the module); skipped (counted) when the dataset has
    no ``incidents.jsonl`` or no ``tables/job_runs``."""
    path = directory / INCIDENTS
    if not path.is_file() or not has_table(directory, "job_runs"):
        result.count("incidents_skipped")
        return
    published: list[dict[str, Any]] = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            published.append(json.loads(text))
        except ValueError:
            result.fail("incidents", INCIDENTS, f"line {number}", "not a JSON object")
    summary = _summary(directory)
    timing = Timing(**summary.get("thresholds", {})) if summary else Timing()
    runs = list(table_rows(directory, "job_runs"))
    expected = [
        *job_run_incidents(runs, timing),
        *decision_incidents(table_rows(directory, "decisions")),
        *outage_incidents(table_rows(directory, "system_log")),
    ]
    checked = [line for line in published if line.get("kind") in RECOMPUTED]
    result.count("incidents", len(published))
    result.count("incidents_unchecked", len(published) - len(checked))
    missing = Counter(canonical(line) for line in expected)
    missing.subtract(canonical(line) for line in checked)
    for line in expected:
        if missing[canonical(line)] > 0:
            missing[canonical(line)] -= 1
            result.fail("incidents", INCIDENTS, _row(line), f"left out: {_said(line)}")
    extra = Counter(canonical(line) for line in checked)
    extra.subtract(canonical(line) for line in expected)
    for line in checked:
        if extra[canonical(line)] > 0:
            extra[canonical(line)] -= 1
            result.fail("incidents", INCIDENTS, _row(line), f"not in the tables: {_said(line)}")
    if summary:
        recomputed = on_time_summary(runs, timing)
        for name, value in recomputed.items():
            if summary.get(name) != value:
                detail = f"{name}: published {summary.get(name)}, the tables give {value}"
                result.fail("incidents", SUMMARY, name, detail)


def _summary(directory: Path) -> dict[str, Any]:
    try:
        summary = json.loads((directory / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return summary if isinstance(summary, dict) else {}


def _row(line: dict[str, Any]) -> str:
    for name in _IDS:
        if line.get(name) is not None:
            return f"{name}={line[name]}"
    return "-"


def _said(line: dict[str, Any]) -> str:
    return f"{line.get('kind')} {line.get('subject')} ({line.get('detail')})"
