"""The one JSON converter and the one written form of an instant."""

from __future__ import annotations

import enum
import json
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

from arena.clock import iso_utc
from arena.jsonable import jsonable


class Colour(enum.StrEnum):
    RED = "red"


def test_an_instant_is_written_in_utc_with_a_z() -> None:
    assert iso_utc(datetime(2026, 11, 22, 0, 5, tzinfo=UTC)) == "2026-11-22T00:05:00Z"
    plus_two = timezone(timedelta(hours=2))
    assert iso_utc(datetime(2026, 11, 22, 2, 5, 0, 120, tzinfo=plus_two)) == (
        "2026-11-22T00:05:00.000120Z"
    )
    assert iso_utc(datetime(2026, 11, 22)) == "2026-11-22T00:00:00Z"  # naive is UTC


def test_stored_values_become_json_at_any_depth() -> None:
    value = {
        "cost": Decimal("0.0033350000"),
        1: [datetime(2026, 1, 4, tzinfo=UTC), date(2026, 1, 4)],
        Colour.RED: (Colour.RED, None, 3, "x"),
    }
    converted = jsonable(value)
    assert converted == {
        "cost": "0.0033350000",
        "1": ["2026-01-04T00:00:00Z", "2026-01-04"],
        "red": ["red", None, 3, "x"],
    }
    json.dumps(converted)  # every part is JSON
