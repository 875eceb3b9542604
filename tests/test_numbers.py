"""The one number format (arena/numbers.py): what people read, and the API's exact text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from arena import numbers


@pytest.mark.parametrize(
    ("value", "signed", "text"),
    [
        ("85346.5", False, "$85,346.50"),
        (Decimal("234.505"), True, "+$234.50"),  # half-even to the cent
        ("-12", True, "-$12.00"),
        ("0", True, "$0.00"),
        (None, False, "-"),
        ("not a number", False, "-"),
    ],
)
def test_money_is_to_the_cent_with_a_dollar_sign(value: object, signed: bool, text: str) -> None:
    assert numbers.money(value, signed) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("0.0033350000", "<$0.01"),  # spent, but less than a cent: never "$0.00"
        ("0.0049", "<$0.01"),
        ("0.005", "<$0.01"),  # half-even rounds it to no cent
        ("0.0051", "$0.01"),
        ("396.8251556567", "$396.83"),
        ("0", "$0.00"),
        ("1234.5", "$1,234.50"),
        (None, "-"),
    ],
)
def test_cost_is_to_the_cent_and_a_fraction_of_a_cent_says_so(value: object, text: str) -> None:
    assert numbers.cost(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("0.1550000000", "0.155"),  # a 0.001 tick
        ("0.1300000000", "0.13"),  # a cent tick
        ("0.1", "0.10"),
        ("1", "1.00"),
        ("0.123456", "0.123"),  # a computed price (VWAP, mid): the finest tick
        (0.5, "0.50"),
        (None, "-"),
    ],
)
def test_a_price_is_shown_to_its_tick(value: object, text: str) -> None:
    assert numbers.price(value) == text


def test_shares_bps_counts_percent_and_scores() -> None:
    assert numbers.shares("2963.707317") == "2,963.71"
    assert numbers.shares("4088") == "4,088.00"
    assert numbers.bps("1111.11") == "1,111.1"
    assert numbers.bps("0.00") == "0.0"
    assert numbers.count(1234567) == "1,234,567"
    assert numbers.count("12") == "12"
    assert numbers.percent("2.345") == "+2.34%"  # half-even, as the ledger rounds
    assert numbers.percent("-5", signed=True) == "-5.00%"
    assert numbers.share("0.252") == "25.2%"
    assert numbers.fixed(0.21404) == "0.2140"
    assert numbers.fixed("0.142", 3, signed=True) == "+0.142"
    assert [numbers.count(None), numbers.bps(None), numbers.shares(None)] == ["-"] * 3
    assert numbers.fixed(float("nan")) == "-"


def test_times_are_iso_utc_to_the_minute_and_epoch_millis_are_times() -> None:
    expected = "2026-11-02 00:05Z"
    assert numbers.when("2026-11-02T00:05:59Z") == expected
    assert numbers.when(datetime(2026, 11, 2, 0, 5, 30, tzinfo=UTC)) == expected
    plus_two = timezone(timedelta(hours=2))
    assert numbers.when(datetime(2026, 11, 2, 2, 5, tzinfo=plus_two)) == expected
    millis = int(datetime(2026, 11, 2, 0, 5, tzinfo=UTC).timestamp() * 1000) + 64
    assert numbers.when(millis) == expected  # a CLOB book time, stored as epoch milliseconds
    assert numbers.when(str(millis)) == expected
    assert numbers.when(None) == numbers.when("") == "-"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("0.1550000000", "0.155"),
        ("396.8251556567", "396.8251556567"),  # exact: nothing is rounded away
        ("2963.707317", "2963.707317"),
        ("550.00", "550.00"),  # money keeps its cents
        ("10000", "10000.00"),
        ("1.0000000000", "1.00"),
        ("-0.5000", "-0.50"),
        ("0E-10", "0.00"),
    ],
)
def test_the_api_text_is_exact_without_trailing_zero_noise(value: str, text: str) -> None:
    assert numbers.exact(Decimal(value)) == text
    assert Decimal(numbers.exact(Decimal(value))) == Decimal(value)
