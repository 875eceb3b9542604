"""What each record of the chain holds, built from rows of the export tables.

Every builder takes rows as ``arena export --format jsonl`` writes them (a mapping of column
name to its JSON-lines value: decimals and instants as text, JSON documents as JSON text), so
the chain writer (:mod:`arena.record.chain`, reading the database through the export's own
queries) and ``arena verify`` (reading a published dataset) build the same bytes from the same
rows. A row's JSON documents are parsed, so their whitespace never matters.

Three kinds of record (:class:`RecordKind`):

* ``decision``: a completed decision: the decision row (with its validated answer, ``payload``);
  the agent's frozen lineage; the frozen universe it was shown, as a sha256 of its rows (ids,
  prices, touch and book hashes); every attempt with the sha256 of its request messages, of its
  raw response and of its parsed answer (the first attempt's request is the rendered prompt);
  the forecasts; every execution (trade) with its book hash.
* ``settlement``: a settled (or cancelled) position with its outcome, payout and P/L, and the
  Brier rows of its trades.
* ``cohort``: a started cohort with its agents.

Only columns that never change once the record is written are taken (a forecast's resolution,
an agent's cash or a decision's ``updated_at`` are left out).

The envelope that is hashed (:func:`envelope`) adds the sequence number, the kind, the time it
was recorded and whether it was chained after the fact (by the genesis pass).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from arena.record.canonical import canonical, sha256_hex

Row = Mapping[str, Any]

RECORD_SCHEMA_VERSION = 2
"""2: an attempt with web-search citations holds their sha256 (``citations_sha256``); schema 1
records (written before) do not cover citations (:func:`as_of_schema`)."""


class RecordKind(enum.StrEnum):
    DECISION = "decision"
    SETTLEMENT = "settlement"
    COHORT = "cohort"


# The columns each record takes from each export table (JSON columns are parsed).
DECISION_COLUMNS = (
    "decision_id", "cohort_id", "agent_id", "family_id", "decision_week", "universe_id",
    "status", "action", "system_hold", "claim_count", "cash_shown", "reasoning", "payload",
    "error", "prompt_version", "methodology_version", "created_at", "completed_at",
)  # fmt: skip
LINEAGE_COLUMNS = (
    "agent_id", "family_id", "kind", "display_name", "provider", "openrouter_id", "strategy",
    "prompt_version", "methodology_version", "starting_balance", "created_at",
)  # fmt: skip
ATTEMPT_COLUMNS = (
    "attempt_id", "attempt_no", "kind", "outcome", "error", "http_status",
    "finish_reason", "provider", "model", "generation_id", "prompt_tokens",
    "completion_tokens", "cost_usd", "latency_ms", "prompt_version", "started_at",
    "finished_at",
)  # fmt: skip
FORECAST_COLUMNS = (
    "forecast_id", "market_id", "outcome", "source", "probability", "market_probability",
    "forecast_at",
)  # fmt: skip
TRADE_COLUMNS = (
    "trade_id", "position_id", "market_id", "side", "trade_type", "amount", "shares", "price",
    "percentage", "basis_out", "realized_pnl", "implied_confidence", "probability",
    "cash_shown", "cash_after", "executed_at", "pricing", "requested_amount",
    "requested_shares", "fee", "touch_price", "mid_price", "slippage_touch_bps",
    "slippage_mid_bps", "fill_ratio", "book_hash", "book_timestamp", "token_id", "levels",
)  # fmt: skip
UNIVERSE_COLUMNS = (
    "universe_id", "run_slot", "frozen_at", "market_id", "rank", "held_only", "in_panel",
    "question", "category", "outcomes", "prices", "yes_price", "volume", "end_date",
    "event_id", "pricing", "clob_token_ids", "best_bid", "best_ask", "mid", "book_hash",
)  # fmt: skip
POSITION_COLUMNS = (
    "position_id", "cohort_id", "agent_id", "family_id", "market_id", "side", "shares",
    "cost_basis", "status", "settlement_outcome", "payout", "realized_pnl", "opened_at",
    "closed_at",
)  # fmt: skip
BRIER_COLUMNS = (
    "brier_id", "trade_id", "decision_id", "market_id", "side", "implied_confidence",
    "price_paid", "won", "brier", "market_brier", "scored_at",
)  # fmt: skip
COHORT_COLUMNS = (
    "cohort_id", "week_start", "created_at", "methodology_version", "pricing",
    "prompt_version", "starting_balance",
)  # fmt: skip

JSON_COLUMNS = frozenset(
    {"payload", "parsed", "levels", "outcomes", "prices", "clob_token_ids", "best_bid"}
    | {"best_ask", "mid"}
)
"""Columns holding JSON text in the export (``book_hash`` is JSON only in universe_markets)."""


HASHED_ATTEMPT_TEXTS = (
    ("request_messages", "request_sha256"),
    ("raw_response", "response_sha256"),
    ("parsed", "parsed_sha256"),
)
"""An attempt's texts a record holds by their sha256 (UTF-8): (export column, record field)."""
CITATION_COLUMNS = ("position", "url", "title", "content", "cited_at")
"""What an attempt's ``citations_sha256`` covers of each of its citations."""


def pick(row: Row, columns: Sequence[str], *, json_columns: Iterable[str] = JSON_COLUMNS) -> dict:
    """The named columns of an export row, JSON text parsed."""
    parsed = set(json_columns)
    return {name: _parsed(row[name]) if name in parsed else row[name] for name in columns}


def _parsed(value: Any) -> Any:
    if value is None or value == "":
        return None
    return json.loads(value) if isinstance(value, str) else value


def universe_hash(rows: Iterable[Row]) -> str:
    """sha256 of a frozen universe as shown: its rows (without the full books, whose hashes
    are kept), ordered by market id."""
    json_columns = JSON_COLUMNS | {"book_hash"}
    shown = sorted(
        (pick(row, UNIVERSE_COLUMNS, json_columns=json_columns) for row in rows),
        key=lambda row: row["market_id"],
    )
    return sha256_hex(canonical(shown))


def attempt_entry(row: Row, citations: Iterable[Row] = ()) -> dict[str, Any]:
    """An attempt, its bulky texts by their sha256: the request messages and the parsed answer
    as their JSON text (as stored and exported), the raw response as received; and, when it
    has web-search citations (rows of the ``citations`` table), the sha256 of their
    ``CITATION_COLUMNS`` in answer order (an attempt without any has no such field, as in
    schema 1)."""
    entry = pick(row, ATTEMPT_COLUMNS)
    for column, name in HASHED_ATTEMPT_TEXTS:
        text = row[column]
        entry[name] = None if text is None else sha256_hex(text)
    cited = sorted((pick(c, CITATION_COLUMNS) for c in citations), key=lambda c: c["position"])
    if cited:
        entry["citations_sha256"] = sha256_hex(canonical(cited))
    return entry


def by_attempt(citations: Iterable[Row]) -> dict[Any, list[Row]]:
    """Citation rows grouped by their ``attempt_id``."""
    grouped: dict[Any, list[Row]] = {}
    for row in citations:
        grouped.setdefault(row["attempt_id"], []).append(row)
    return grouped


def as_of_schema(kind: str, body: Mapping[str, Any], schema: Any) -> Mapping[str, Any]:
    """A body rebuilt by this arena as a record of ``schema`` holds it: a schema 1 decision's
    attempts without ``citations_sha256`` (citations were not covered then)."""
    if schema != 1 or kind != RecordKind.DECISION:
        return body
    attempts = [
        {k: v for k, v in attempt.items() if k != "citations_sha256"}
        for attempt in body["attempts"]
    ]
    return {**body, "attempts": attempts}


def decision_body(decision: Row, agent: Row, rows: Mapping[str, Iterable[Row]]) -> dict[str, Any]:
    """The body of a ``decision`` record from its export rows (in any order): ``rows`` holds
    the decision's rows of ``universe_markets``, ``attempts``, ``forecasts``, ``trades`` and
    ``citations`` (each may be absent: none)."""
    universe_rows = list(rows.get("universe_markets", ()))
    cited = by_attempt(rows.get("citations", ()))
    return assemble_decision(
        pick(decision, DECISION_COLUMNS),
        pick(agent, LINEAGE_COLUMNS),
        (len(universe_rows), universe_hash(universe_rows) if universe_rows else None),
        [attempt_entry(a, cited.get(a["attempt_id"], ())) for a in rows.get("attempts", ())],
        [pick(f, FORECAST_COLUMNS) for f in rows.get("forecasts", ())],
        [pick(t, TRADE_COLUMNS) for t in rows.get("trades", ())],
    )


def assemble_decision(
    decision: dict[str, Any],
    lineage: dict[str, Any] | None,
    universe: tuple[int, str | None],
    attempts: Iterable[dict[str, Any]],
    forecasts: Iterable[dict[str, Any]],
    executions: Iterable[dict[str, Any]],
) -> dict[str, Any]:
    """The body of a ``decision`` record from entries already picked: the decision
    (``DECISION_COLUMNS``), the lineage, the universe's (markets, sha256), the attempts
    (:func:`attempt_entry`), forecasts and executions, each sorted here by id. Readers that
    cannot hold every row at once (``arena verify``) pick as they read and assemble here."""
    attempt_entries = sorted(attempts, key=lambda a: a["attempt_id"])
    markets, sha256 = universe
    return {
        "decision": decision,
        "lineage": lineage,
        "universe": {"universe_id": decision["universe_id"], "markets": markets, "sha256": sha256},
        "prompt_sha256": attempt_entries[0]["request_sha256"] if attempt_entries else None,
        "attempts": attempt_entries,
        "forecasts": sorted(forecasts, key=lambda f: f["forecast_id"]),
        "executions": sorted(executions, key=lambda t: t["trade_id"]),
    }


def settlement_body(position: Row, brier_rows: Iterable[Row]) -> dict[str, Any]:
    """The body of a ``settlement`` record: the position and its trades' Brier rows."""
    return {
        "position": pick(position, POSITION_COLUMNS),
        "brier": sorted((pick(b, BRIER_COLUMNS) for b in brier_rows), key=lambda b: b["brier_id"]),
    }


def cohort_body(cohort: Row, agents: Iterable[Row]) -> dict[str, Any]:
    """The body of a ``cohort`` record: the cohort and its agents' frozen lineage."""
    return {
        "cohort": pick(cohort, COHORT_COLUMNS),
        "agents": sorted((pick(a, LINEAGE_COLUMNS) for a in agents), key=lambda a: a["agent_id"]),
    }


def envelope(
    seq: int,
    kind: str,
    subject_id: int,
    recorded_at: str,
    after_the_fact: bool,
    body: Mapping[str, Any],
) -> dict[str, Any]:
    """What is hashed: the body with its place in the chain and its time (ISO 8601 UTC)."""
    return {
        "schema": RECORD_SCHEMA_VERSION,
        "seq": seq,
        "kind": str(kind),
        "subject_id": subject_id,
        "recorded_at": recorded_at,
        "after_the_fact": after_the_fact,
        "body": dict(body),
    }
