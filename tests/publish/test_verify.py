"""``arena verify``: a published dataset verifies untouched, and each kind of tampering is
caught and named (check, table, row).

One simulated arena (:mod:`tests.publish.world`) is published once; every test tampers with
its own copy. Tampered tables keep the manifest's sha256 in step (:mod:`tests.publish.tamper`)
so each test proves the check it names, not only the manifest's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from arena.publish.findings import Failure, Verification
from arena.publish.verify import verify_dataset
from arena.record.signing import sign
from tests.helpers import cli_env, run_arena
from tests.publish.tamper import (
    Rows,
    chain_records,
    change_one_byte,
    one_byte,
    read_rows,
    refresh_manifest,
    rewrite_lines,
    rewrite_table,
    set_manifest_head,
)
from tests.publish.world import END, publish, sign_commitments, simulate

pytestmark = pytest.mark.slow  # one simulation for the module (started first)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("verify")
    factory, settings = simulate(root)
    key = Ed25519PrivateKey.generate()
    assert sign_commitments(factory, key) > 0
    publish(factory, settings, root / "dataset", key, END)
    return root / "dataset"


@pytest.fixture
def dataset(published: Path, tmp_path: Path) -> Path:
    """A fresh copy of the published dataset, to tamper with."""
    return Path(shutil.copytree(published, tmp_path / "dataset"))


def failures(result: Verification, check: str) -> list[Failure]:
    return [failure for failure in result.failures if failure.check == check]


def named(result: Verification, check: str, table: str, row: str) -> Failure:
    """The failure of ``check`` naming ``table`` and ``row`` (the test fails without one)."""
    found = [f for f in failures(result, check) if f.table == table and f.row == row]
    assert found, f"no {check} failure on {table} {row}: {result.failures}"
    return found[0]


def completed_decisions(dataset: Path) -> set[int]:
    return {
        row["decision_id"]
        for row in read_rows(dataset, "decisions")
        if row["status"] == "completed"
    }


def test_untouched_dataset_verifies(published: Path) -> None:
    result = verify_dataset(published)
    assert result.ok, result.failures
    counts = result.counts
    assert counts["records_decision"] == len(completed_decisions(published)) > 0
    assert counts["records_settlement"] > 0 and counts["records_cohort"] > 0
    assert counts["commitments_signed"] == counts["commitments"] > 0
    assert counts["forecasts_in_time"] > 0 and counts["bets_in_time"] > 0
    assert counts["leaderboard_rows"] > 0
    assert "forecasts_late" not in counts


def test_cli_exits_0_on_the_untouched_dataset_without_a_database(
    published: Path, tmp_path: Path
) -> None:
    result = run_arena("verify", str(published), cwd=tmp_path, env=cli_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "everything holds" in result.stdout
    assert all(len(line) <= 80 for line in result.stdout.splitlines())
    assert not list(tmp_path.iterdir())  # no database, nothing written


def test_cli_json_names_each_failure_and_exits_1(dataset: Path, tmp_path: Path) -> None:
    (dataset / "chain.jsonl").write_text("", encoding="utf-8")
    result = run_arena("verify", str(dataset), "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert set(report) == {"ok", "failures", "counts"} and report["ok"] is False
    assert {"check": "manifest", "table": "chain.jsonl", "row": "-"}.items() <= next(
        f for f in report["failures"] if f["check"] == "manifest"
    ).items()
    assert all(set(f) == {"check", "table", "row", "detail"} for f in report["failures"])
    assert any(f["check"] == "record" and f["table"] == "decisions" for f in report["failures"])


def _first(rows: Rows, wanted: set[int], column: str = "decision_id") -> dict:
    return next(row for row in rows if row[column] in wanted)


def test_a_trade_amount_changed_by_one_byte_is_named(dataset: Path) -> None:
    trade = _first(read_rows(dataset, "trades"), completed_decisions(dataset))

    change_one_byte(dataset, "trades", ("trade_id", trade["trade_id"]), "amount", Decimal)
    result = verify_dataset(dataset)
    failure = named(result, "record", "trades", f"trade_id={trade['trade_id']}")
    assert "amount" in failure.detail
    assert not failures(result, "manifest")


def test_a_forecast_probability_changed_by_one_byte_is_named(dataset: Path) -> None:
    forecast = _first(read_rows(dataset, "forecasts"), completed_decisions(dataset))

    change_one_byte(
        dataset, "forecasts", ("forecast_id", forecast["forecast_id"]), "probability", Decimal
    )
    result = verify_dataset(dataset)
    failure = named(result, "record", "forecasts", f"forecast_id={forecast['forecast_id']}")
    assert "probability" in failure.detail


def test_a_raw_response_changed_by_one_byte_is_named(dataset: Path) -> None:
    completed = completed_decisions(dataset)
    attempt = next(
        row
        for row in read_rows(dataset, "attempts")
        if row["decision_id"] in completed and row["raw_response"]
    )

    change_one_byte(dataset, "attempts", ("attempt_id", attempt["attempt_id"]), "raw_response")
    result = verify_dataset(dataset)
    failure = named(result, "record", "attempts", f"attempt_id={attempt['attempt_id']}")
    assert "response_sha256" in failure.detail


def test_a_citation_changed_by_one_byte_is_named(dataset: Path) -> None:
    """A web search's citations are part of their attempt's record (record schema 2): a cited
    URL changed in the citations table is caught and named by its attempt."""
    completed = completed_decisions(dataset)
    attempts = {row["attempt_id"]: row["decision_id"] for row in read_rows(dataset, "attempts")}
    cited = next(
        row for row in read_rows(dataset, "citations") if attempts[row["attempt_id"]] in completed
    )

    change_one_byte(dataset, "citations", ("citation_id", cited["citation_id"]), "url")
    result = verify_dataset(dataset)
    failure = named(result, "record", "attempts", f"attempt_id={cited['attempt_id']}")
    assert "citations_sha256" in failure.detail


def test_a_trade_book_hash_changed_by_one_byte_is_named(dataset: Path) -> None:
    completed = completed_decisions(dataset)
    trade = next(
        row
        for row in read_rows(dataset, "trades")
        if row["decision_id"] in completed and row["book_hash"]
    )

    change_one_byte(dataset, "trades", ("trade_id", trade["trade_id"]), "book_hash")
    failure = named(verify_dataset(dataset), "record", "trades", f"trade_id={trade['trade_id']}")
    assert "book_hash" in failure.detail


def test_a_shown_book_hash_changed_by_one_byte_is_named(dataset: Path) -> None:
    """The frozen universe a decision was shown is recorded as one sha256 of its rows."""
    decided = {
        row["universe_id"]
        for row in read_rows(dataset, "decisions")
        if row["status"] == "completed"
    }
    shown = next(
        row for row in read_rows(dataset, "universe_markets") if row["universe_id"] in decided
    )

    def change(rows: Rows) -> Rows:
        for row in rows:
            if (row["universe_id"], row["market_id"]) == (shown["universe_id"], shown["market_id"]):
                hashes = json.loads(row["book_hash"])
                hashes[0] = one_byte(hashes[0])
                row["book_hash"] = json.dumps(hashes)
        return rows

    rewrite_table(dataset, "universe_markets", change)
    result = verify_dataset(dataset)
    failure = named(result, "record", "universe_markets", f"universe_id={shown['universe_id']}")
    assert "sha256" in failure.detail


def test_the_manifest_alone_catches_an_edit_it_was_not_told_of(dataset: Path) -> None:
    def change(rows: Rows) -> Rows:
        rows[0]["amount"] = Decimal(one_byte(str(rows[0]["amount"])))
        return rows

    rewrite_table(dataset, "trades", change, manifest=False)
    failure = named(verify_dataset(dataset), "manifest", "tables/trades.parquet", "-")
    assert "sha256" in failure.detail


def test_an_extra_or_missing_file_is_named(dataset: Path) -> None:
    (dataset / "tables" / "extra.csv").write_text("a\n", encoding="utf-8")
    (dataset / "tables" / "book_marks.parquet").unlink()
    result = verify_dataset(dataset)
    assert "not list" in named(result, "manifest", "tables/extra.csv", "-").detail
    assert "missing" in named(result, "manifest", "tables/book_marks.parquet", "-").detail


def test_a_deleted_decision_is_named(dataset: Path) -> None:
    gone = min(completed_decisions(dataset))
    rewrite_table(dataset, "decisions", lambda rows: [r for r in rows if r["decision_id"] != gone])
    failure = named(verify_dataset(dataset), "record", "decisions", f"decision_id={gone}")
    assert "no row" in failure.detail


def test_a_decision_record_deleted_from_the_chain_is_named(dataset: Path) -> None:
    """A completed decision with no record: its line taken out of the chain."""
    records = chain_records(dataset)
    decision = next(r for r in reversed(records) if r["record"]["kind"] == "decision")
    rewrite_lines(
        dataset, "chain.jsonl", lambda lines: [r for r in lines if r["seq"] != decision["seq"]]
    )
    result = verify_dataset(dataset)
    row = f"decision_id={decision['record']['subject_id']}"
    assert "no decision record" in named(result, "record", "decisions", row).detail


def test_two_swapped_records_are_named(dataset: Path) -> None:
    records = chain_records(dataset)
    a, b = records[3]["seq"], records[4]["seq"]

    def swap(lines: Rows) -> Rows:
        lines[3], lines[4] = lines[4], lines[3]
        return lines

    rewrite_lines(dataset, "chain.jsonl", swap)
    result = verify_dataset(dataset)
    assert "gap or a swap" in named(result, "chain", "chain.jsonl", f"seq={b}").detail
    assert "gap or a swap" in named(result, "chain", "chain.jsonl", f"seq={a}").detail
    assert any("prev_hash" in f.detail for f in failures(result, "chain"))


def test_a_rehashed_record_edit_is_caught_by_the_commitments(dataset: Path) -> None:
    """An operator who edits a record and rehashes the chain from there on still breaks every
    commitment made after it: their head hashes no longer match."""
    from arena.record.canonical import canonical, link_hash

    records = chain_records(dataset)
    target = next(r for r in records if r["record"]["kind"] == "decision")
    target["record"]["recorded_at"] = "2026-10-01T00:00:00Z"
    previous = target["prev_hash"]
    for record in records[target["seq"] - 1 :]:
        record["prev_hash"] = previous
        record["hash"] = previous = link_hash(previous, canonical(record["record"]))
    rewrite_lines(dataset, "chain.jsonl", lambda _lines: records)
    set_manifest_head(dataset, previous)
    result = verify_dataset(dataset)
    assert not failures(result, "chain")
    assert any("head_hash" in f.detail for f in failures(result, "commitment"))


def test_a_commitment_forged_with_another_key_is_named(dataset: Path) -> None:
    forger = Ed25519PrivateKey.generate()
    lines = [json.loads(line) for line in (dataset / "commitments.jsonl").read_text().splitlines()]
    forged = lines[0]

    def forge(rows: Rows) -> Rows:
        for row in rows:
            if row["id"] == forged["id"]:
                row["signature"] = sign(forger, row["body"].encode("utf-8"))
        return rows

    rewrite_lines(dataset, "commitments.jsonl", forge)
    result = verify_dataset(dataset)
    failure = named(result, "commitment", "commitments.jsonl", f"id={forged['id']}")
    assert "signature" in failure.detail


def test_a_commitment_beyond_the_chain_is_named(dataset: Path) -> None:
    lines = [json.loads(line) for line in (dataset / "commitments.jsonl").read_text().splitlines()]
    last = lines[-1]

    def extend(rows: Rows) -> Rows:
        body = json.loads(last["body"])
        body["seq"] = last["seq"] + 5
        return [*rows, {**last, "id": last["id"] + 1, "seq": body["seq"], "body": json.dumps(body)}]

    rewrite_lines(dataset, "commitments.jsonl", extend)
    result = verify_dataset(dataset)
    row = f"id={last['id'] + 1}"
    named(result, "commitment", "commitments.jsonl", row)
    details = [f.detail for f in failures(result, "commitment") if f.row == row]
    assert any("beyond the chain" in detail for detail in details), details


def test_a_commitment_removed_from_the_file_is_named_by_the_next(dataset: Path) -> None:
    """Each commitment counts the records since the one before it: with one taken out of
    ``commitments.jsonl`` (every remaining line still signed and true to the chain), the next
    one's count no longer adds up."""
    lines = [json.loads(line) for line in (dataset / "commitments.jsonl").read_text().splitlines()]
    assert len(lines) >= 3, "the simulation commits after each decision run"
    removed, after = lines[1], lines[2]
    rewrite_lines(dataset, "commitments.jsonl", lambda rows: [r for r in rows if r != removed])
    result = verify_dataset(dataset)
    failure = named(result, "commitment", "commitments.jsonl", f"id={after['id']}")
    assert f"since the commitment before (seq {lines[0]['seq']})" in failure.detail
    assert [f.row for f in failures(result, "commitment")] == [f"id={after['id']}"]


def test_a_forecast_recorded_after_its_market_resolved_is_named(dataset: Path) -> None:
    """The market's resolution moved before the commitment that covers the forecast."""
    forecast = _first(read_rows(dataset, "forecasts"), completed_decisions(dataset))
    resolved = forecast["forecast_at"] - timedelta(seconds=1)

    def change(rows: Rows) -> Rows:
        for row in rows:
            if row["market_id"] == forecast["market_id"]:
                row["resolved_at"] = resolved
        return rows

    rewrite_table(dataset, "markets", change)
    result = verify_dataset(dataset)
    failure = named(result, "timing", "forecasts", f"forecast_id={forecast['forecast_id']}")
    assert forecast["market_id"] in failure.detail
    assert result.counts["forecasts_late"] >= 1
    assert not failures(result, "record")


def test_records_chained_after_the_fact_are_counted_apart(dataset: Path) -> None:
    """Late forecasts of records chained after the fact are counted, never failures."""
    from arena.record.canonical import GENESIS_HASH, canonical, link_hash

    records = chain_records(dataset)
    previous = GENESIS_HASH
    for record in records:
        record["record"]["after_the_fact"] = True
        record["prev_hash"] = previous
        record["hash"] = previous = link_hash(previous, canonical(record["record"]))
    rewrite_lines(dataset, "chain.jsonl", lambda _lines: records)
    rewrite_lines(dataset, "commitments.jsonl", lambda _lines: [])
    set_manifest_head(dataset, previous)
    forecast = _first(read_rows(dataset, "forecasts"), completed_decisions(dataset))
    rewrite_table(
        dataset,
        "markets",
        lambda rows: [
            {**r, "resolved_at": forecast["forecast_at"]}
            if r["market_id"] == forecast["market_id"]
            else r
            for r in rows
        ],
    )
    result = verify_dataset(dataset)
    assert result.ok, result.failures
    assert result.counts["forecasts_after_the_fact"] > 0
    assert "forecasts_late" not in result.counts


def test_a_leaderboard_edited_by_a_cent_is_named(dataset: Path) -> None:
    board = json.loads((dataset / "leaderboard.json").read_text())
    family = board[0]["family_id"]
    board[0]["total_value"] = str(Decimal(board[0]["total_value"]) + Decimal("0.01"))
    (dataset / "leaderboard.json").write_text(json.dumps(board, indent=2))
    refresh_manifest(dataset, "leaderboard.json")
    result = verify_dataset(dataset)
    failure = named(result, "leaderboard", "leaderboard.json", f"family_id={family}")
    assert "total_value" in failure.detail
    assert len(result.failures) == 1


def test_signed_commitments_without_a_public_key_are_named(dataset: Path) -> None:
    (dataset / "public_key.pem").unlink()
    manifest = json.loads((dataset / "manifest.json").read_text())
    del manifest["files"]["public_key.pem"]
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    result = verify_dataset(dataset)
    failure = named(result, "commitment", "commitments.jsonl", "id=1")
    assert "no public key" in failure.detail
    assert any("public_key.pem" in note for note in result.notes)


def test_unsigned_commitments_are_counted_not_failed(dataset: Path) -> None:
    def unsign(rows: Rows) -> Rows:
        for row in rows:
            row["signature"] = None
        return rows

    rewrite_lines(dataset, "commitments.jsonl", unsign)
    result = verify_dataset(dataset)
    assert result.ok, result.failures
    assert result.counts["commitments_unsigned"] == result.counts["commitments"] > 0
    assert any("unsigned" in note for note in result.notes)


def test_a_directory_without_a_manifest_is_a_usage_error(tmp_path: Path) -> None:
    result = run_arena("verify", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert "no manifest.json" in result.stderr


NO_PANDAS = """
import sys


class NoPandas:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pandas":
            raise ModuleNotFoundError(f"No module named {name!r}")


sys.meta_path.insert(0, NoPandas())
from arena.cli import main

main(["verify", sys.argv[1], "--format", "json"])
"""


def test_verify_needs_no_pandas(published: Path, tmp_path: Path) -> None:
    """pyarrow is a dependency of arena, pandas is not: verify runs where it is missing."""
    done = subprocess.run(
        [sys.executable, "-c", NO_PANDAS, str(published)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=cli_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["ok"] is True


def test_a_dataset_without_a_leaderboard_skips_that_check(dataset: Path) -> None:
    (dataset / "leaderboard.json").unlink()
    manifest = json.loads((dataset / "manifest.json").read_text())
    del manifest["files"]["leaderboard.json"]
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    result = verify_dataset(dataset)
    assert result.ok, result.failures
    assert result.counts["leaderboard_skipped"] == 1
    assert "leaderboard_rows" not in result.counts


def test_an_incident_left_out_of_the_log_is_named(dataset: Path) -> None:
    lines = [json.loads(line) for line in (dataset / "incidents.jsonl").read_text().splitlines()]
    dropped = next(line for line in lines if "job_run_id" in line)
    rewrite_lines(dataset, "incidents.jsonl", lambda rows: [r for r in rows if r != dropped])
    result = verify_dataset(dataset)
    failure = named(result, "incidents", "incidents.jsonl", f"job_run_id={dropped['job_run_id']}")
    assert "left out" in failure.detail
