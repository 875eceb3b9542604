"""Column types that keep money exact and timestamps UTC on both SQLite and PostgreSQL.

SQLite has no exact decimal type (SQLAlchemy's Numeric would store REAL), so decimals are kept
as text there and as ``NUMERIC(p, s)`` on PostgreSQL. SQLite also drops time zones, so every
timestamp is written as UTC and read back as aware UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from sqlalchemy import DateTime, Dialect, Numeric, String
from sqlalchemy.types import TypeDecorator, TypeEngine


class ExactDecimal(TypeDecorator[Decimal]):
    """``NUMERIC(precision, scale)`` on PostgreSQL, exact decimal text on SQLite."""

    impl = Numeric
    cache_ok = True

    def __init__(self, precision: int, scale: int) -> None:
        super().__init__(precision=precision, scale=scale, asdecimal=True)
        self.precision = precision
        self.scale = scale
        self._quantum = Decimal(1).scaleb(-scale)

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(self.precision + 2))
        return dialect.type_descriptor(Numeric(self.precision, self.scale, asdecimal=True))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        number = Decimal(value) if not isinstance(value, Decimal) else value
        if not number.is_finite():
            raise ValueError(f"non-finite decimal {value!r}")
        if dialect.name == "sqlite":
            # Fixed scale, as NUMERIC(p, s) would store it, so equal values compare equal
            # as text in SQL (WHERE amount = '500.00').
            return format(number.quantize(self._quantum, rounding=ROUND_HALF_EVEN), "f")
        return number

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        return value if isinstance(value, Decimal) else Decimal(str(value))


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected datetime, got {type(value).__name__}")
        if value.tzinfo is None:
            raise ValueError("naive datetime: arena stores aware UTC timestamps only")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def Money() -> ExactDecimal:  # noqa: N802 - reads like a type in column declarations
    """Dollars to the cent."""
    return ExactDecimal(18, 2)


def Shares() -> ExactDecimal:  # noqa: N802
    return ExactDecimal(24, 6)


def Price() -> ExactDecimal:  # noqa: N802
    """A probability-like price or score in [0, 1] with room for Gamma's decimals."""
    return ExactDecimal(14, 10)


def Usd() -> ExactDecimal:  # noqa: N802
    """Model cost in USD credits (sub-cent)."""
    return ExactDecimal(20, 10)


def Bps() -> ExactDecimal:  # noqa: N802
    """Basis points to the hundredth (slippage)."""
    return ExactDecimal(14, 2)


def Volume() -> ExactDecimal:  # noqa: N802
    return ExactDecimal(24, 6)
