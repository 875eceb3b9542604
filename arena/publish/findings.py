"""What ``arena verify`` finds, and what its checks share of the chain they read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Failure:
    """One thing that does not hold: which check, in which table (or file) and row."""

    check: str
    table: str
    row: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "table": self.table, "row": self.row, "detail": self.detail}


@dataclass
class Verification:
    """What ``arena verify`` found: its failures, what it counted, and notes for the reader."""

    failures: list[Failure] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def fail(self, check: str, table: str, row: str, detail: str) -> None:
        self.failures.append(Failure(check, table, row, detail))

    def count(self, name: str, add: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + add

    def to_json(self) -> dict[str, Any]:
        """``{"ok", "failures": [{"check", "table", "row", "detail"}], "counts"}``."""
        return {
            "ok": self.ok,
            "failures": [failure.to_json() for failure in self.failures],
            "counts": dict(sorted(self.counts.items())),
        }


@dataclass(frozen=True)
class Link:
    """What the later checks need of one chain record."""

    kind: str
    subject_id: Any
    recorded_at: datetime | None
    after_the_fact: bool


@dataclass
class Chain:
    hashes: list[str] = field(default_factory=list)  # hash of seq n at index n - 1
    links: list[Link] = field(default_factory=list)
    decisions: dict[Any, int] = field(default_factory=dict)  # decision_id -> seq


def json_lines(
    path: Path, result: Verification, check: str
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a JSON-lines file; an unreadable line is a failure."""
    if not path.is_file():
        return
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                item = json.loads(line)
            except ValueError:
                result.fail(check, path.name, f"line {number}", "not a JSON object")
                continue
            if not isinstance(item, dict):
                result.fail(check, path.name, f"line {number}", "not a JSON object")
                continue
            yield number, item
