"""The chart's data (/api/v1/curves) against the tables beside it, on both databases: the
same meaning of value (a family's total over its agents), short ranges that still draw a
line, and legend names that say "(baseline)" once."""

from __future__ import annotations

from decimal import Decimal

import pytest
from fastapi.testclient import TestClient

from arena.web.curves import CurveRange, series_label


def _curves(client: TestClient, query: str) -> dict:  # type: ignore[type-arg]
    response = client.get("/api/v1/curves?" + query)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ["10M", "1H", "1D"])
def test_a_short_range_draws_a_line_over_exactly_its_window(client: TestClient, name: str) -> None:
    span = CurveRange(name).span
    assert span is not None
    body = _curves(client, f"range={name}")
    assert body["series"]
    assert body["end"] - body["start"] == span.total_seconds()
    for series in body["series"]:
        t = series["t"]
        assert len(t) >= 2, (name, series["family_id"], t)
        # one lead-in point at or before the window's start, the rest inside the window
        assert t[0] <= body["start"] < t[1] <= t[-1] == body["end"]


def test_the_curve_ends_at_the_tables_total_value(client: TestClient) -> None:
    """The chart and the table share one meaning: a family's total over its agents, with the
    break-even their summed starting balances (on the leaderboard, the family page and a
    cohort's view)."""
    board = client.get("/api/v1/leaderboard").json()
    every = {s["family_id"]: s for s in _curves(client, "range=ALL")["series"]}
    assert set(every) == {row["family_id"] for row in board}
    for row in board:
        fid = row["family_id"]
        total, base = Decimal(row["total_value"]), Decimal(row["starting_balance"])
        assert row["agents"] > 1  # a sum differs from a mean here
        for series in (every[fid], _curves(client, f"range=1W&family={fid}")["series"][0]):
            assert Decimal(str(series["value"][-1])) == total, fid
            assert Decimal(str(series["base"][-1])) == base, fid
            assert series["pct"][-1] == pytest.approx(float(row["return_pct"]), abs=1e-4)
        standing = client.get(f"/api/v1/families/{fid}").json()["standing"]
        assert Decimal(standing["total_value"]) == total
    one = {row["family_id"]: row for row in client.get("/api/v1/leaderboard?cohort=1").json()}
    for series in _curves(client, "range=ALL&cohort=1")["series"]:
        assert Decimal(str(series["value"][-1])) == Decimal(one[series["family_id"]]["total_value"])


def test_the_break_even_steps_when_a_cohort_joins(client: TestClient) -> None:
    body = _curves(client, "range=ALL")
    board = client.get("/api/v1/leaderboard").json()
    # the highest starting total (a family of three replicates has three agents a cohort)
    assert body["break_even"] == max(float(r["starting_balance"]) for r in board)
    for series in body["series"]:
        assert series["base"] == sorted(series["base"])
        assert len(set(series["base"])) == 2, series["family_id"]  # one step: cohort 2 joins


def test_a_baseline_is_labelled_baseline_once(client: TestClient) -> None:
    series = _curves(client, "range=1D")["series"]
    baselines = [s["label"] for s in series if s["kind"] == "baseline"]
    assert "always-hold" in {s["family_id"] for s in series if s["kind"] == "baseline"}
    assert [label.count("(baseline)") for label in baselines] == [1] * len(baselines)
    assert all("(baseline)" not in s["label"] for s in series if s["kind"] != "baseline")
    assert series_label("Always HOLD", "baseline") == "Always HOLD (baseline)"
    assert series_label("Always HOLD (baseline)", "baseline") == "Always HOLD (baseline)"
    assert series_label("Model (Baseline)", "baseline") == "Model (Baseline)"
    assert series_label("GPT", "model") == "GPT"
