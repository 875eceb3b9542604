"""The input of every analysis: a set of probability forecasts, held as numpy columns.

One row is one forecast: a forecaster (a model family, optionally the agent and cohort it came
from) gave probability ``p`` to one event, the YES side of a binary market or one named outcome
of a multi-outcome market, in one week. The same shape comes from the database (through
:meth:`Forecasts.from_rows`) and from an export directory (``arena.analytics.loading``), so
every analysis works without the database.

Columns (:data:`COLUMNS` is the reference; times are aware UTC, held as ``datetime64[us]``):

``family_id``           required; the forecaster that is ranked.
``market_id``           required; the market.
``probability``         required; probability of the event, in [0, 1].
``forecast_at``         required; when the forecast was made.
``outcome``             the event: empty/null or ``Yes`` for the YES side of a binary market, an
                        outcome name for a multi-outcome market. A ``No`` row is turned into
                        the YES event with ``1 - p`` (and ``1 -`` its market price and result).
``week_start``          Sunday 00:00 UTC of the week the forecast was made (the decision run's
                        week, *not* the cohort's own start); derived from ``forecast_at`` when
                        missing.
``market_probability``  the market's price of the same event at forecast time.
``event_group``         the negRisk market id or event id shared by logically related markets.
``scheduled_close_at``  the market's scheduled end date.
``resolved_at``         when the market resolved (or was voided).
``resolved_value``      1 if the event happened, 0 if not, null while unresolved and for a void
                        market (50-50 or cancelled, which then has ``resolved_at`` set).
``family_kind``         ``openrouter`` or ``baseline``; baselines stay out of the proxy pool.
``source``              ``panel`` (the weekly forecast panel) or ``bet`` (the probability stated
                        on a bet); null counts as ``panel``. Analyses use panel forecasts only
                        unless told otherwise: bets are on markets the model chose.
``pricing``             the cohort's pricing mode, ``book`` or ``gamma``: what
                        ``market_probability`` is (the side's frozen mid in ``book``, Gamma's
                        display price in ``gamma``) and whether a taker fee applies.
``fee_rate``, ``fee_exponent``  the market's taker fee schedule ``fee(p) = rate * (p (1 - p)) **
                        exponent`` per share (mode ``book``); null when unknown.
``category``            the market's category (Gamma's event tags); null is "other".
``question_type``       a researcher's own grouping of questions for the difficulty fit
                        (``AnalysisOptions.fit_by_type``); null is one type.
``forecast_id``, ``cohort_id``, ``agent_id``, ``decision_id``: carried for reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from arena.clock import parse_timestamp
from arena.errors import ForecastsError

REQUIRED = ("family_id", "market_id", "probability", "forecast_at")
STRING_COLUMNS = (
    "forecast_id",
    "cohort_id",
    "agent_id",
    "family_id",
    "family_kind",
    "decision_id",
    "source",
    "market_id",
    "outcome",
    "event_group",
    "pricing",
    "category",
    "question_type",
)
FLOAT_COLUMNS = ("probability", "market_probability", "resolved_value", "fee_rate", "fee_exponent")
TIME_COLUMNS = ("forecast_at", "week_start", "scheduled_close_at", "resolved_at")
COLUMNS = STRING_COLUMNS + FLOAT_COLUMNS + TIME_COLUMNS

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_WEEK_US = 7 * 24 * 3600 * 1_000_000
_SUNDAY_OFFSET_US = 3 * 24 * 3600 * 1_000_000  # 1970-01-01 was a Thursday; Sunday is 3 days on


@dataclass(frozen=True, eq=False)
class Text:
    """One text column, dictionary-encoded as arrow stores it: row ``i`` is
    ``labels[codes[i]]``, ``labels`` the distinct texts (None: missing) and ``codes`` the
    narrowest integer type that indexes them (a family or a cohort takes one byte a row, not
    an eight-byte pointer). Integer ids all distinct (``forecast_id``) are kept as the integers
    (``codes`` None), each written as text only when the column is read."""

    codes: NDArray[np.integer] | None
    labels: NDArray[Any]

    def __len__(self) -> int:
        return len(self.labels) if self.codes is None else len(self.codes)

    @classmethod
    def encoded(cls, values: NDArray[np.object_]) -> Text:
        """The column of ``values`` (texts and None), labels in first-seen order."""
        index: dict[Any, int] = {}
        codes = np.fromiter(
            (index.setdefault(value, len(index)) for value in values.tolist()),
            dtype=np.int64,
            count=len(values),
        )
        labels = np.empty(len(index), dtype=object)
        labels[:] = list(index)
        return cls(_narrow(codes, len(labels)), labels)

    def decoded(self) -> NDArray[np.object_]:
        """The column as an object array of texts (None: missing), made anew at each call."""
        if self.codes is None:
            out = np.empty(len(self.labels), dtype=object)
            out[:] = [str(value) for value in self.labels.tolist()]
            return out
        return self.labels[self.codes]

    def coded(self) -> Text:
        """The column with codes (integer ids too), so its labels can be worked on."""
        return self if self.codes is not None else Text.encoded(self.decoded())

    def take(self, rows: NDArray[np.bool_] | NDArray[np.int64]) -> Text:
        """The rows picked by a boolean mask or an index array."""
        if self.codes is None:
            return Text(None, self.labels[rows])
        return Text(self.codes[rows], self.labels)


class _TextColumn:
    """A text column of :class:`Forecasts` (held as a :class:`Text` in ``texts``), read as an
    object array of texts (None: missing), decoded at each read: keep it while it is needed."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> _TextColumn: ...

    @overload
    def __get__(self, instance: Forecasts, owner: type) -> NDArray[np.object_]: ...

    def __get__(self, instance: Forecasts | None, owner: type) -> Any:
        if instance is None:
            return self
        return instance.texts[self.name].decoded()


@dataclass(frozen=True, eq=False)
class Forecasts:
    """Forecast rows as parallel numpy columns (see the module docstring for each column).

    Text columns read as object arrays (``None`` when missing; ``outcome`` is ``""`` for the
    YES side of a binary market) and are held dictionary-encoded (:class:`Text`, in ``texts``
    by column name); floats are float64 with NaN when missing, times are ``datetime64[us]``
    (UTC) with NaT when missing.
    """

    texts: dict[str, Text]
    probability: NDArray[np.float64]
    market_probability: NDArray[np.float64]
    resolved_value: NDArray[np.float64]
    fee_rate: NDArray[np.float64]
    fee_exponent: NDArray[np.float64]
    forecast_at: NDArray[np.datetime64]
    week_start: NDArray[np.datetime64]
    scheduled_close_at: NDArray[np.datetime64]
    resolved_at: NDArray[np.datetime64]

    forecast_id = _TextColumn()
    cohort_id = _TextColumn()
    agent_id = _TextColumn()
    family_id = _TextColumn()
    family_kind = _TextColumn()
    decision_id = _TextColumn()
    source = _TextColumn()
    market_id = _TextColumn()
    outcome = _TextColumn()
    event_group = _TextColumn()
    pricing = _TextColumn()
    category = _TextColumn()
    question_type = _TextColumn()

    def __len__(self) -> int:
        return int(self.probability.shape[0])

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> Forecasts:
        """Build from mappings (database rows, parsed JSON lines); unknown keys are ignored.

        Values may be str/int ids, float/Decimal/str numbers, datetime or ISO 8601 strings.
        """
        columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        for row in rows:
            for name, values in columns.items():
                values.append(row.get(name))
        return cls.from_columns(columns)

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any]) -> Forecasts:
        """Build from named columns (lists, numpy arrays or pyarrow arrays of equal length)."""
        return cls._converted(columns, columns.get)

    @classmethod
    def from_arrow(cls, columns: dict[str, pa.Array | pa.ChunkedArray]) -> Forecasts:
        """:meth:`from_columns` of arrow arrays that nothing else holds (the database's or an
        export's table just read), emptying ``columns``: each array is dropped once converted,
        and before each column arrow's memory pool hands the pages freed so far back to the
        system. The pool would otherwise keep them for as long as the process runs, beside the
        numpy columns they became: at scale 1, 110 MiB after the read, and 68 MiB of its peak."""
        pool = pa.default_memory_pool()

        def take(name: str) -> Any:
            pool.release_unused()
            return columns.pop(name, None)

        try:
            return cls._converted(columns, take)
        finally:
            columns.clear()
            pool.release_unused()

    @classmethod
    def _converted(cls, columns: Mapping[str, Any], take: Callable[[str], Any]) -> Forecasts:
        """:meth:`from_columns`, each column got by ``take(name)`` (None: missing)."""
        missing = [name for name in REQUIRED if name not in columns]
        if missing:
            raise ForecastsError(f"forecasts input lacks required column(s): {', '.join(missing)}")
        n = len(columns["probability"])
        values: dict[str, Any] = {}
        for name in COLUMNS:
            raw = take(name)
            if raw is not None and len(raw) != n:
                raise ForecastsError(f"column {name} has {len(raw)} values, expected {n}")
            if name in STRING_COLUMNS:
                values[name] = _strings(raw, n)
            elif name in FLOAT_COLUMNS:
                values[name] = _floats(raw, n, name)
            else:
                values[name] = _times(raw, n, name)
        if np.isnat(values["week_start"]).any():
            derived = week_start_of(values["forecast_at"])
            values["week_start"] = np.where(
                np.isnat(values["week_start"]), derived, values["week_start"]
            )
        else:
            values["week_start"] = week_start_of(values["week_start"])
        _normalise_outcomes(values)
        texts = {name: values.pop(name) for name in STRING_COLUMNS}
        forecasts = cls(texts, **values)
        forecasts.validate()
        return forecasts

    def validate(self) -> None:
        """Raise :class:`ForecastsError` naming the first offending row, if any."""
        checks: list[tuple[str, NDArray[np.bool_]]] = [
            ("family_id is missing", _is_blank(self.family_id)),
            ("market_id is missing", _is_blank(self.market_id)),
            ("probability is missing or outside [0, 1]", ~_in_unit(self.probability)),
            (
                "market_probability is outside [0, 1]",
                ~np.isnan(self.market_probability) & ~_in_unit(self.market_probability),
            ),
            (
                "resolved_value is not 0, 1 or null",
                ~np.isnan(self.resolved_value)
                & (self.resolved_value != 0.0)
                & (self.resolved_value != 1.0),
            ),
            ("forecast_at is missing", np.isnat(self.forecast_at)),
        ]
        for message, bad in checks:
            if bad.any():
                index = int(np.flatnonzero(bad)[0])
                ident = self.forecast_id[index]
                where = f"forecast {ident}" if ident is not None else f"row {index + 1}"
                raise ForecastsError(f"{where}: {message}")

    def select(self, mask: NDArray[np.bool_] | NDArray[np.int64]) -> Forecasts:
        """The rows picked by a boolean mask or an index array."""
        texts = {name: text.take(mask) for name, text in self.texts.items()}
        numbers = {f.name: getattr(self, f.name)[mask] for f in fields(self) if f.name != "texts"}
        return Forecasts(texts, **numbers)

    def known_at(self, moment: np.datetime64) -> Forecasts:
        """The data as it stood at ``moment``: forecasts made at or before it, and outcomes
        (``resolved_value``, ``resolved_at``) only where known at or before it. Every analysis
        at ``--at`` sees exactly this, so none can look ahead. Nothing is copied when nothing
        is cut (the analysis job's case: every forecast made before now), rather than every
        column (55 MiB at scale 1) beside the caller's."""
        instant = np.asarray(moment).astype("datetime64[us]")
        made = self.forecast_at <= instant
        cut = self if made.all() else self.select(made)
        later = ~np.isnat(cut.resolved_at) & (cut.resolved_at > instant)
        if not later.any():
            return cut
        resolved_value = cut.resolved_value.copy()
        resolved_at = cut.resolved_at.copy()
        resolved_value[later] = np.nan
        resolved_at[later] = np.datetime64("NaT")
        return replace(cut, resolved_value=resolved_value, resolved_at=resolved_at)

    def from_sources(self, sources: tuple[str, ...]) -> Forecasts:
        """The rows whose ``source`` is one of ``sources`` (a missing source is ``panel``)."""
        source = self.texts["source"].coded()
        lowered = _lowered(source.labels)
        lowered[lowered == ""] = "panel"
        keep = np.isin(lowered, list(sources))[source.codes]
        return self if keep.all() else self.select(keep)

    def families(self) -> list[str]:
        """Distinct family ids, sorted."""
        return sorted({str(value) for value in self.family_id})


def week_start_of(times: NDArray[np.datetime64]) -> NDArray[np.datetime64]:
    """Sunday 00:00:00 UTC at or before each time (NaT stays NaT); see ``arena.clock``."""
    micros = times.astype("datetime64[us]").astype(np.int64)
    floored = (micros - _SUNDAY_OFFSET_US) // _WEEK_US * _WEEK_US + _SUNDAY_OFFSET_US
    result = floored.astype("datetime64[us]")
    result[np.isnat(times)] = np.datetime64("NaT")
    return result


def to_datetime(value: np.datetime64) -> datetime | None:
    """A ``datetime64`` as an aware UTC datetime (None for NaT)."""
    if np.isnat(value):
        return None
    micros = int(value.astype("datetime64[us]").astype(np.int64))
    return datetime.fromtimestamp(micros / 1_000_000, tz=UTC)


def to_datetime64(value: datetime) -> np.datetime64:
    """An aware datetime as ``datetime64[us]`` (UTC)."""
    delta = value.astimezone(UTC) - _EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return np.datetime64(micros, "us")


def _strings(raw: Any, n: int) -> Text:
    if raw is None:
        return Text(np.zeros(n, dtype=np.int8), np.array([None], dtype=object))
    if isinstance(raw, pa.ChunkedArray | pa.Array):
        if pa.types.is_string(raw.type) or pa.types.is_integer(raw.type):
            return _arrow_strings(raw)
        raw = raw.to_pylist()
    out = np.empty(n, dtype=object)
    for index, value in enumerate(raw):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        text = str(value).strip()
        out[index] = text if text else None
    return Text.encoded(out)


def _arrow_strings(raw: pa.ChunkedArray | pa.Array) -> Text:
    """:func:`_strings` of an arrow text or integer column, at arrow's speed: trimmed, and
    empty text missing."""
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks()
    if pa.types.is_integer(raw.type):  # ids: no blank to trim, often all distinct
        missing = raw.is_null().to_numpy(zero_copy_only=False)
        numbers = pc.fill_null(raw, 0).to_numpy().astype(np.int64)
        distinct, index = np.unique(numbers, return_inverse=True)
        if len(distinct) == len(numbers) and not missing.any():
            return Text(None, numbers)
        labels = np.array([*(str(value) for value in distinct.tolist()), None], dtype=object)
        index = index.reshape(-1)
        index[missing] = len(labels) - 1
        return Text(_narrow(index, len(labels)), labels)
    text = pc.utf8_trim_whitespace(pc.cast(raw, pa.string()))
    text = pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)
    encoded = pc.dictionary_encode(text)
    labels = np.array([*encoded.dictionary.to_pylist(), None], dtype=object)
    index = pc.fill_null(encoded.indices, len(labels) - 1).to_numpy(zero_copy_only=False)
    return Text(_narrow(index, len(labels)), labels)


def _narrow(codes: NDArray[np.integer], size: int) -> NDArray[np.integer]:
    """``codes`` (each below ``size``) in the narrowest signed integer type that holds them."""
    for kind in (np.int8, np.int16, np.int32):
        if size <= np.iinfo(kind).max:
            return codes.astype(kind, copy=False)
    return codes.astype(np.int64, copy=False)


def _floats(raw: Any, n: int, name: str) -> NDArray[np.float64]:
    if raw is None:
        return np.full(n, np.nan)
    if isinstance(raw, pa.ChunkedArray | pa.Array):
        if pa.types.is_decimal(raw.type):
            # arrow scales the integer in floating point (0.959 -> 0.9590000000000001); through
            # the decimal text it rounds correctly, as the CSV and JSONL readers do
            raw = pc.cast(raw, pa.string())
        try:
            raw = pc.cast(raw, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raw = raw.to_pylist()
        else:
            return np.array(raw.to_numpy(zero_copy_only=False), dtype=np.float64)  # writable
    if isinstance(raw, np.ndarray) and raw.dtype.kind in "fiub":
        return raw.astype(np.float64)
    out = np.full(n, np.nan)
    for index, value in enumerate(raw):
        if value is None or value == "":
            continue
        try:
            out[index] = float(value)
        except (TypeError, ValueError) as exc:
            raise ForecastsError(f"row {index + 1}: {name} is not a number: {value!r}") from exc
    return out


def _times(raw: Any, n: int, name: str) -> NDArray[np.datetime64]:
    if raw is None:
        return np.full(n, np.datetime64("NaT"), dtype="datetime64[us]")
    if isinstance(raw, pa.ChunkedArray | pa.Array):
        converted = _arrow_times(raw)
        if converted is not None:
            return converted
        raw = raw.to_pylist()
    if isinstance(raw, np.ndarray) and raw.dtype.kind == "M":
        return raw.astype("datetime64[us]")
    out = np.full(n, np.datetime64("NaT"), dtype="datetime64[us]")
    for index, value in enumerate(raw):
        if value is None or value == "" or value != value:  # NaT and NaN are missing too
            continue
        try:
            out[index] = to_datetime64(_as_datetime(value))
        except (TypeError, ValueError) as exc:
            raise ForecastsError(f"row {index + 1}: {name} is not a timestamp: {value!r}") from exc
    return out


def _arrow_times(raw: pa.ChunkedArray | pa.Array) -> NDArray[np.datetime64] | None:
    """Vectorised conversion of an arrow column; None when it needs the per-value path."""
    target = pa.timestamp("us", tz="UTC")
    try:
        if pa.types.is_timestamp(raw.type) and raw.type.tz is None:
            cast = pc.cast(raw, pa.timestamp("us"))
        else:
            cast = pc.cast(raw, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    micros = pc.cast(cast, pa.int64()).to_numpy(zero_copy_only=False)
    if micros.dtype.kind == "f":  # nulls came back as NaN
        out = np.full(len(micros), np.datetime64("NaT"), dtype="datetime64[us]")
        valid = ~np.isnan(micros)
        out[valid] = micros[valid].astype(np.int64).astype("datetime64[us]")
        return out
    return micros.astype(np.int64).astype("datetime64[us]")


def _as_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, np.datetime64):
        converted = to_datetime(value)
        if converted is None:
            raise ValueError("NaT")
        return converted
    if isinstance(value, str):
        return parse_timestamp(value)
    if hasattr(value, "year") and hasattr(value, "month") and hasattr(value, "day"):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    raise TypeError(type(value).__name__)


def _normalise_outcomes(values: dict[str, Any]) -> None:
    """Map ``Yes`` to the binary event ``""`` and turn ``No`` rows into the YES event."""
    outcome = values["outcome"].coded()
    lowered = _lowered(outcome.labels)
    binary = (lowered == "") | (lowered == "yes") | (lowered == "no")
    labels = outcome.labels.copy()
    labels[binary] = ""
    is_no = (lowered == "no")[outcome.codes]
    if is_no.any():
        for name in ("probability", "market_probability", "resolved_value"):
            column = values[name]
            column[is_no] = 1.0 - column[is_no]
    values["outcome"] = Text(outcome.codes, labels)


def _lowered(column: NDArray[np.object_]) -> NDArray[np.object_]:
    """Each text lower-cased, missing as ``""``; once per distinct value."""
    present = column[~_is_blank(column)]
    lower = {value: value.lower() for value in set(present.tolist())}
    return np.array([lower[value] if value is not None else "" for value in column], dtype=object)


def _is_blank(column: NDArray[np.object_]) -> NDArray[np.bool_]:
    return np.asarray(column == None, dtype=np.bool_)  # noqa: E711 - elementwise, in C


def _in_unit(column: NDArray[np.float64]) -> NDArray[np.bool_]:
    with np.errstate(invalid="ignore"):
        return np.isfinite(column) & (column >= 0.0) & (column <= 1.0)
