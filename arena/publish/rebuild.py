"""Every record's body rebuilt from a published dataset's tables (``arena verify``).

:class:`Subjects` reads the tables a record is built from (decisions, agents, attempts,
trades, forecasts, universe_markets, positions, brier_scores, cohorts) once, keeping per
subject only what its record takes (an attempt's prompt and raw response are reduced to their
sha256 as they are read), and :meth:`Subjects.body` builds the body the chain writer built,
with the builders of :mod:`arena.record.records`. :func:`first_difference` names where a
published record and its rebuilt body part: the table and the row a reader has to look at.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.domain.states import DecisionStatus, PositionStatus
from arena.export.tables import (
    AGENTS,
    ATTEMPTS,
    BRIER_SCORES,
    CITATIONS,
    COHORTS,
    DECISIONS,
    FORECASTS,
    POSITIONS,
    TRADES,
    UNIVERSE_MARKETS,
)
from arena.publish.tables import table_rows
from arena.record.records import (
    ATTEMPT_COLUMNS,
    BRIER_COLUMNS,
    CITATION_COLUMNS,
    DECISION_COLUMNS,
    FORECAST_COLUMNS,
    HASHED_ATTEMPT_TEXTS,
    LINEAGE_COLUMNS,
    POSITION_COLUMNS,
    TRADE_COLUMNS,
    UNIVERSE_COLUMNS,
    RecordKind,
    assemble_decision,
    attempt_entry,
    by_attempt,
    cohort_body,
    pick,
    settlement_body,
    universe_hash,
)

SETTLED = (PositionStatus.SETTLED, PositionStatus.CANCELLED)

# Where each part of a body comes from: (table, id column) of the rows of each list.
_LIST_SOURCES = {
    "attempts": (ATTEMPTS.name, "attempt_id"),
    "forecasts": (FORECASTS.name, "forecast_id"),
    "executions": (TRADES.name, "trade_id"),
    "brier": (BRIER_SCORES.name, "brier_id"),
    "agents": (AGENTS.name, "agent_id"),
}
_OBJECT_SOURCES = {
    "decision": (DECISIONS.name, "decision_id"),
    "lineage": (AGENTS.name, "agent_id"),
    "universe": (UNIVERSE_MARKETS.name, "universe_id"),
    "prompt_sha256": (ATTEMPTS.name, "decision_id"),
    "position": (POSITIONS.name, "position_id"),
    "cohort": (COHORTS.name, "cohort_id"),
}
SUBJECT_TABLES = {
    RecordKind.DECISION: (DECISIONS.name, "decision_id"),
    RecordKind.SETTLEMENT: (POSITIONS.name, "position_id"),
    RecordKind.COHORT: (COHORTS.name, "cohort_id"),
}


@dataclass(frozen=True)
class Difference:
    """Where a published record and the body rebuilt from the tables part."""

    table: str
    row: str
    detail: str


@dataclass
class Subjects:
    """What the records are built from, read once from the tables (see the module); each
    picked row is held as its JSON text (:func:`_pack`)."""

    decisions: dict[int, str] = field(default_factory=dict)  # completed only
    agents: dict[int, dict[str, Any]] = field(default_factory=dict)
    agents_of_cohort: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    universes: dict[int, tuple[int, str]] = field(default_factory=dict)
    attempts: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    trades: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    forecasts: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    positions: dict[int, str] = field(default_factory=dict)  # settled or cancelled
    trade_position: dict[int, int] = field(default_factory=dict)
    brier: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    cohorts: dict[int, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def read(cls, directory: Path) -> Subjects:
        subjects = cls()
        subjects._read_agents_and_cohorts(directory)
        for row in table_rows(directory, DECISIONS.name, DECISION_COLUMNS):
            if row["status"] == DecisionStatus.COMPLETED:
                subjects.decisions[row["decision_id"]] = _pack(pick(row, DECISION_COLUMNS))
        attempt_columns = (
            *ATTEMPT_COLUMNS,
            *(column for column, _ in HASHED_ATTEMPT_TEXTS),
            "decision_id",
        )
        cited = by_attempt(table_rows(directory, CITATIONS.name, ("attempt_id", *CITATION_COLUMNS)))
        for row in table_rows(directory, ATTEMPTS.name, attempt_columns):
            entry = attempt_entry(row, cited.get(row["attempt_id"], ()))
            subjects.attempts[row["decision_id"]].append(_pack(entry))
        for row in table_rows(directory, TRADES.name, (*TRADE_COLUMNS, "decision_id")):
            subjects.trade_position[row["trade_id"]] = row["position_id"]
            if row["decision_id"] is not None:
                subjects.trades[row["decision_id"]].append(_pack(pick(row, TRADE_COLUMNS)))
        for row in table_rows(directory, FORECASTS.name, (*FORECAST_COLUMNS, "decision_id")):
            if row["decision_id"] is not None:
                forecast = _pack(pick(row, FORECAST_COLUMNS))
                subjects.forecasts[row["decision_id"]].append(forecast)
        subjects.universes = dict(_universes(directory))
        for row in table_rows(directory, POSITIONS.name, POSITION_COLUMNS):
            if row["status"] in SETTLED:
                subjects.positions[row["position_id"]] = _pack(pick(row, POSITION_COLUMNS))
        for row in table_rows(directory, BRIER_SCORES.name, BRIER_COLUMNS):
            position_id = subjects.trade_position.get(row["trade_id"])
            if position_id is not None:
                subjects.brier[position_id].append(_pack(pick(row, BRIER_COLUMNS)))
        return subjects

    def _read_agents_and_cohorts(self, directory: Path) -> None:
        for row in table_rows(directory, AGENTS.name, (*LINEAGE_COLUMNS, "cohort_id")):
            self.agents[row["agent_id"]] = row
            self.agents_of_cohort[row["cohort_id"]].append(row["agent_id"])
        for row in table_rows(directory, COHORTS.name, [c.name for c in COHORTS.columns]):
            self.cohorts[row["cohort_id"]] = row

    def subjects(self, kind: RecordKind) -> dict[int, Any]:
        """The rows that must each have a record of ``kind``."""
        if kind is RecordKind.DECISION:
            return self.decisions
        if kind is RecordKind.SETTLEMENT:
            return self.positions
        return self.cohorts

    def body(self, kind: RecordKind, subject_id: int) -> dict[str, Any] | None:
        """The body rebuilt from the tables; None when the subject has no row."""
        if kind is RecordKind.DECISION:
            return self._decision(subject_id)
        if kind is RecordKind.SETTLEMENT:
            position = self.positions.get(subject_id)
            if position is None:
                return None
            brier = _unpack(self.brier.get(subject_id, []))
            return settlement_body(json.loads(position), brier)
        cohort = self.cohorts.get(subject_id)
        if cohort is None:
            return None
        agents = [self.agents[a] for a in self.agents_of_cohort.get(subject_id, [])]
        return cohort_body(cohort, agents)

    def _decision(self, decision_id: int) -> dict[str, Any] | None:
        """The decision's body from rows picked as they were read (no prompt is ever held),
        assembled by the writer's own :func:`arena.record.records.assemble_decision`."""
        packed = self.decisions.get(decision_id)
        if packed is None:
            return None
        decision = json.loads(packed)
        agent = self.agents.get(decision["agent_id"])
        return assemble_decision(
            decision,
            None if agent is None else pick(agent, LINEAGE_COLUMNS),
            self.universes.get(decision["universe_id"], (0, None)),
            _unpack(self.attempts.get(decision_id, [])),
            _unpack(self.forecasts.get(decision_id, [])),
            _unpack(self.trades.get(decision_id, [])),
        )


def _pack(row: dict[str, Any]) -> str:
    """A picked row held as its JSON text: a quarter of the memory of the dictionary, and
    :func:`json.loads` gives back an equal one (non-finite floats, big integers and lone
    surrogates included)."""
    return json.dumps(row, separators=(",", ":"))


def _unpack(rows: list[str]) -> list[dict[str, Any]]:
    return [json.loads(row) for row in rows]


def _universes(directory: Path) -> Iterator[tuple[int, tuple[int, str]]]:
    """(universe_id, (markets, sha256)) of each frozen universe; the table is ordered by
    universe, so one universe's rows are held at a time."""
    current: int | None = None
    rows: list[dict[str, Any]] = []
    for row in table_rows(directory, UNIVERSE_MARKETS.name, UNIVERSE_COLUMNS):
        if row["universe_id"] != current:
            if current is not None:
                yield current, (len(rows), universe_hash(rows))
            current, rows = row["universe_id"], []
        rows.append(row)
    if current is not None:
        yield current, (len(rows), universe_hash(rows))


def first_difference(kind: RecordKind, subject_id: int, published: Any, rebuilt: Any) -> Difference:
    """The first place ``published`` (the record's body) and ``rebuilt`` differ, named by the
    table and row it was built from (``trades``, ``trade_id=17``) and the field."""
    table, id_column = SUBJECT_TABLES[kind]
    if not isinstance(published, dict) or not isinstance(rebuilt, dict):
        return Difference(table, f"{id_column}={subject_id}", "the record's body is not an object")
    for key in sorted(set(published) | set(rebuilt)):
        mine, theirs = published.get(key), rebuilt.get(key)
        if mine == theirs:
            continue
        if key in _LIST_SOURCES and isinstance(mine, list) and isinstance(theirs, list):
            return _list_difference(key, mine, theirs)
        part_table, part_id = _OBJECT_SOURCES.get(key, (table, id_column))
        row_id = subject_id
        if isinstance(theirs, dict) and theirs.get(part_id) is not None:
            row_id = theirs[part_id]
        elif isinstance(mine, dict) and mine.get(part_id) is not None:
            row_id = mine[part_id]
        return Difference(part_table, f"{part_id}={row_id}", _field_detail(key, mine, theirs))
    return Difference(table, f"{id_column}={subject_id}", "the record differs")


def _list_difference(key: str, published: list[Any], rebuilt: list[Any]) -> Difference:
    table, id_column = _LIST_SOURCES[key]
    mine = {_row_id(item, id_column): item for item in published}
    theirs = {_row_id(item, id_column): item for item in rebuilt}
    for row_id in sorted(set(mine) | set(theirs), key=str):
        if row_id not in theirs:
            return Difference(table, f"{id_column}={row_id}", "recorded, but no row in the table")
        if row_id not in mine:
            return Difference(table, f"{id_column}={row_id}", "a row the record does not hold")
        if mine[row_id] != theirs[row_id]:
            for name in sorted(set(mine[row_id]) | set(theirs[row_id])):
                a, b = mine[row_id].get(name), theirs[row_id].get(name)
                if a != b:
                    return Difference(table, f"{id_column}={row_id}", _field_detail(name, a, b))
    return Difference(table, "-", f"{key}: the rows are in another order")


def _row_id(item: Any, id_column: str) -> Any:
    return item.get(id_column) if isinstance(item, dict) else repr(item)


def _field_detail(name: str, recorded: Any, published: Any) -> str:
    if isinstance(recorded, dict) and isinstance(published, dict):
        for key in sorted(set(recorded) | set(published)):
            if recorded.get(key) != published.get(key):
                return _field_detail(f"{name}.{key}", recorded.get(key), published.get(key))
    return f"{name}: recorded {_short(recorded)}, table has {_short(published)}"


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
