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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar, overload

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

_T = TypeVar("_T")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_WEEK_US = 7 * 24 * 3600 * 1_000_000
_SUNDAY_OFFSET_US = 3 * 24 * 3600 * 1_000_000  # 1970-01-01 was a Thursday; Sunday is 3 days on


@dataclass(frozen=True, eq=False)
class Coded:
    """One column, dictionary-encoded as arrow stores it: row ``i`` is ``labels[codes[i]]``,
    ``labels`` the distinct values and ``codes`` the narrowest integer type that indexes them
    (a family, a week or a market's close takes one or two bytes a row, not eight). A column
    with about as many values as rows keeps them as they are (``codes`` None): floats and
    times as numpy arrays, and integer ids of a text column (``forecast_id``) as the integers
    (int32 when they fit), each written as text only when the column is read.

    Text labels are Python strings (None: missing); float labels are float64 (NaN: missing)
    and time labels ``datetime64[us]`` (NaT: missing), one label per bit pattern, so a column
    reads back bit for bit."""

    codes: NDArray[np.integer] | None
    labels: NDArray[Any]

    def __len__(self) -> int:
        return len(self.labels) if self.codes is None else len(self.codes)

    @classmethod
    def texts(cls, values: NDArray[np.object_]) -> Coded:
        """The text column of ``values`` (texts and None), labels in first-seen order."""
        index: dict[Any, int] = {}
        codes = np.fromiter(
            (index.setdefault(value, len(index)) for value in values.tolist()),
            dtype=np.int64,
            count=len(values),
        )
        labels = np.empty(len(index), dtype=object)
        labels[:] = list(index)
        return cls(_narrow(codes, len(labels)), labels)

    def decoded(self) -> NDArray[Any]:
        """The column as a numpy array (text as an object array), made anew at each read
        unless held as it is."""
        if self.codes is not None:
            return self.labels[self.codes]
        if self.labels.dtype.kind in "iu":  # integer ids of a text column
            out = np.empty(len(self.labels), dtype=object)
            out[:] = [str(value) for value in self.labels.tolist()]
            return out
        return self.labels

    def coded(self) -> Coded:
        """The text column with codes (integer ids too), so its labels can be worked on."""
        return self if self.codes is not None else Coded.texts(self.decoded())

    def take(self, rows: NDArray[np.bool_] | NDArray[np.int64]) -> Coded:
        """The rows picked by a boolean mask or an index array."""
        if self.codes is None:
            return Coded(None, self.labels[rows])
        return Coded(self.codes[rows], self.labels)

    def relabelled(self, labels: NDArray[Any]) -> Coded:
        """The column with each label replaced by the one at its place in ``labels`` (the
        same function of the value however it is held)."""
        return Coded(self.codes, labels)

    def where(self, rows: NDArray[np.bool_], value: Any) -> Coded:
        """The column with ``value`` on ``rows`` (a boolean mask), the rest unchanged."""
        if self.codes is None:
            labels = self.labels.copy()
            labels[rows] = value
            return Coded(None, labels)
        labels = np.append(self.labels, np.array([value], dtype=self.labels.dtype))
        codes = self.codes.astype(_code_type(len(labels)))  # a copy
        codes[rows] = len(labels) - 1
        return Coded(codes, labels)

    def with_offset_labels(self, rows: NDArray[np.bool_], labels: NDArray[Any]) -> Coded:
        """The column whose ``rows`` read ``labels`` (one per label, at its place) instead."""
        if self.codes is None:
            values = self.labels.copy()
            values[rows] = labels[rows]
            return Coded(None, values)
        codes = self.codes.astype(_code_type(2 * len(self.labels)))  # a copy
        codes[rows] += len(self.labels)
        return Coded(codes, np.concatenate([self.labels, labels]))


class _Column(Generic[_T]):
    """A column of :class:`Forecasts` (held as a :class:`Coded` in ``coded``), read as a numpy
    array: decoded at each read, so keep it while it is needed rather than read it in a loop."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> _Column[_T]: ...

    @overload
    def __get__(self, instance: Forecasts, owner: type) -> _T: ...

    def __get__(self, instance: Forecasts | None, owner: type) -> Any:
        if instance is None:
            return self
        return instance.coded[self.name].decoded()


_Text = _Column[NDArray[np.object_]]
_Float = _Column[NDArray[np.float64]]
_Time = _Column[NDArray[np.datetime64]]


@dataclass(frozen=True, eq=False)
class Forecasts:
    """Forecast rows as parallel numpy columns (see the module docstring for each column).

    Texts read as object arrays (``None`` when missing; ``outcome`` is ``""`` for the YES side
    of a binary market), floats as float64 with NaN when missing, times as ``datetime64[us]``
    (UTC) with NaT when missing. Each is held dictionary-encoded (:class:`Coded`, in ``coded``
    by column name) and decoded when read: at scale 1 (``benchmarks/bench_analysis.py``) the
    364,000 forecasts take 14 MiB, not the 105 MiB of one numpy array per column.
    """

    coded: dict[str, Coded]

    forecast_id = _Text()
    cohort_id = _Text()
    agent_id = _Text()
    family_id = _Text()
    family_kind = _Text()
    decision_id = _Text()
    source = _Text()
    market_id = _Text()
    outcome = _Text()
    event_group = _Text()
    pricing = _Text()
    category = _Text()
    question_type = _Text()
    probability = _Float()
    market_probability = _Float()
    resolved_value = _Float()
    fee_rate = _Float()
    fee_exponent = _Float()
    forecast_at = _Time()
    week_start = _Time()
    scheduled_close_at = _Time()
    resolved_at = _Time()

    def __len__(self) -> int:
        return len(self.coded["probability"])

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
        values: dict[str, Coded] = {}
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
        values["week_start"] = _week_starts(values["week_start"], values["forecast_at"])
        _normalise_outcomes(values)
        forecasts = cls(values)
        forecasts.validate()
        return forecasts

    def validate(self) -> None:
        """Raise :class:`ForecastsError` naming the first offending row, if any."""
        market, resolved = self.market_probability, self.resolved_value  # decoded once
        checks: list[tuple[str, NDArray[np.bool_]]] = [
            ("family_id is missing", _is_blank(self.family_id)),
            ("market_id is missing", _is_blank(self.market_id)),
            ("probability is missing or outside [0, 1]", ~_in_unit(self.probability)),
            ("market_probability is outside [0, 1]", ~np.isnan(market) & ~_in_unit(market)),
            (
                "resolved_value is not 0, 1 or null",
                ~np.isnan(resolved) & (resolved != 0.0) & (resolved != 1.0),
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
        return Forecasts({name: column.take(mask) for name, column in self.coded.items()})

    def known_at(self, moment: np.datetime64) -> Forecasts:
        """The data as it stood at ``moment``: forecasts made at or before it, and outcomes
        (``resolved_value``, ``resolved_at``) only where known at or before it. Every analysis
        at ``--at`` sees exactly this, so none can look ahead. Nothing is copied when nothing
        is cut (the analysis job's case: every forecast made before now), rather than every
        column (12 MiB at scale 1) beside the caller's; a blanked outcome copies only its
        column's codes."""
        instant = np.asarray(moment).astype("datetime64[us]")
        made = self.forecast_at <= instant
        cut = self if made.all() else self.select(made)
        resolved_at = cut.resolved_at
        later = ~np.isnat(resolved_at) & (resolved_at > instant)
        if not later.any():
            return cut
        columns = dict(cut.coded)
        columns["resolved_value"] = columns["resolved_value"].where(later, np.nan)
        columns["resolved_at"] = columns["resolved_at"].where(later, np.datetime64("NaT"))
        return Forecasts(columns)

    def from_sources(self, sources: tuple[str, ...]) -> Forecasts:
        """The rows whose ``source`` is one of ``sources`` (a missing source is ``panel``)."""
        source = self.coded["source"].coded()
        lowered = _lowered(source.labels)
        lowered[lowered == ""] = "panel"
        keep = np.isin(lowered, list(sources))[source.codes]
        return self if keep.all() else self.select(keep)

    def families(self) -> list[str]:
        """Distinct family ids, sorted."""
        return sorted({str(value) for value in self.family_id})


def factorize(values: NDArray[np.object_] | Coded) -> tuple[NDArray[np.int64], list[str]]:
    """Integer codes and the distinct texts (missing becomes ``""``), in first-seen order, of
    an object array of texts or a text column as held (:class:`Coded`, worked on through its
    codes: its labels may repeat a text, and some may be no row's)."""
    index: dict[Any, int] = {}
    if not isinstance(values, Coded):
        codes = np.fromiter(
            (index.setdefault("" if v is None else v, len(index)) for v in values.tolist()),
            dtype=np.int64,
            count=len(values),
        )
        return codes, [str(value) for value in index]
    column = values.coded()
    assert column.codes is not None
    label_codes = [index.setdefault("" if v is None else v, len(index)) for v in column.labels]
    rows = np.array(label_codes, dtype=np.int64)[column.codes]
    names = list(index)
    present, first = np.unique(rows, return_index=True)
    order = present[np.argsort(first)]  # the texts in the order their first rows come
    renumbered = np.empty(len(names), dtype=np.int64)
    renumbered[order] = np.arange(len(order))
    return renumbered[rows], [str(names[code]) for code in order.tolist()]


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


def _strings(raw: Any, n: int) -> Coded:
    if raw is None:
        return Coded(np.zeros(n, dtype=np.int8), np.array([None], dtype=object))
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
    return Coded.texts(out)


def _arrow_strings(raw: pa.ChunkedArray | pa.Array) -> Coded:
    """:func:`_strings` of an arrow text or integer column, at arrow's speed: trimmed, and
    empty text missing."""
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks()
    if pa.types.is_integer(raw.type):  # ids: no blank to trim, often all distinct
        missing = raw.is_null().to_numpy(zero_copy_only=False)
        numbers = pc.fill_null(raw, 0).to_numpy().astype(np.int64)
        distinct, index = np.unique(numbers, return_inverse=True)
        if len(distinct) == len(numbers) and not missing.any():
            small = np.iinfo(np.int32)
            fits = not len(distinct) or (distinct[0] >= small.min and distinct[-1] <= small.max)
            return Coded(None, numbers.astype(np.int32) if fits else numbers)
        labels = np.array([*(str(value) for value in distinct.tolist()), None], dtype=object)
        index = index.reshape(-1)
        index[missing] = len(labels) - 1
        return Coded(_narrow(index, len(labels)), labels)
    text = pc.utf8_trim_whitespace(pc.cast(raw, pa.string()))
    text = pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)
    encoded = pc.dictionary_encode(text)
    labels = np.array([*encoded.dictionary.to_pylist(), None], dtype=object)
    index = pc.fill_null(encoded.indices, len(labels) - 1).to_numpy(zero_copy_only=False)
    return Coded(_narrow(index, len(labels)), labels)


def _narrow(codes: NDArray[np.integer], size: int) -> NDArray[np.integer]:
    """``codes`` (each below ``size``) in the narrowest signed integer type that holds them."""
    return codes.astype(_code_type(size), copy=False)


def _code_type(size: int) -> type[np.signedinteger[Any]]:
    """The narrowest signed integer type that holds every code below ``size``."""
    for kind in (np.int8, np.int16, np.int32):
        if size <= np.iinfo(kind).max:
            return kind
    return np.int64


def _floats(raw: Any, n: int, name: str) -> Coded:
    if raw is None:
        return Coded(np.zeros(n, dtype=np.int8), np.array([np.nan]))
    if isinstance(raw, pa.ChunkedArray | pa.Array):
        if isinstance(raw, pa.ChunkedArray):
            raw = raw.combine_chunks()
        if pa.types.is_decimal(raw.type):
            # arrow scales the integer in floating point (0.959 -> 0.9590000000000001); through
            # the decimal text it rounds correctly, as the CSV and JSONL readers do
            raw = pc.cast(raw, pa.string())
        try:
            raw = pc.cast(raw, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raw = raw.to_pylist()
        else:
            return _coded_bits(raw.view(pa.int64()), np.array([np.nan]))
    if isinstance(raw, np.ndarray) and raw.dtype.kind in "fiub":
        return Coded(None, raw.astype(np.float64))
    out = np.full(n, np.nan)
    for index, value in enumerate(raw):
        if value is None or value == "":
            continue
        try:
            out[index] = float(value)
        except (TypeError, ValueError) as exc:
            raise ForecastsError(f"row {index + 1}: {name} is not a number: {value!r}") from exc
    return Coded(None, out)


def _times(raw: Any, n: int, name: str) -> Coded:
    if raw is None:
        return Coded(np.zeros(n, dtype=np.int8), np.array(["NaT"], dtype="datetime64[us]"))
    if isinstance(raw, pa.ChunkedArray | pa.Array):
        converted = _arrow_times(raw)
        if converted is not None:
            return converted
        raw = raw.to_pylist()
    if isinstance(raw, np.ndarray) and raw.dtype.kind == "M":
        return Coded(None, raw.astype("datetime64[us]"))
    out = np.full(n, np.datetime64("NaT"), dtype="datetime64[us]")
    for index, value in enumerate(raw):
        if value is None or value == "" or value != value:  # NaT and NaN are missing too
            continue
        try:
            out[index] = to_datetime64(_as_datetime(value))
        except (TypeError, ValueError) as exc:
            raise ForecastsError(f"row {index + 1}: {name} is not a timestamp: {value!r}") from exc
    return Coded(None, out)


def _arrow_times(raw: pa.ChunkedArray | pa.Array) -> Coded | None:
    """Vectorised conversion of an arrow column; None when it needs the per-value path."""
    target = pa.timestamp("us", tz="UTC")
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks()
    try:
        if pa.types.is_timestamp(raw.type) and raw.type.tz is None:
            cast = pc.cast(raw, pa.timestamp("us"))
        else:
            cast = pc.cast(raw, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return _coded_bits(pc.cast(cast, pa.int64()), np.array(["NaT"], dtype="datetime64[us]"))


def _coded_bits(bits: pa.Array, missing: NDArray[Any]) -> Coded:
    """An arrow column of 64-bit values, each a float's or time's bit pattern (null: the one
    value of ``missing``, whose dtype the column takes), dictionary-encoded by arrow: one label
    per bit pattern, so the column reads back bit for bit. Held as it is when most values
    differ."""
    encoded = pc.dictionary_encode(bits)
    distinct = encoded.dictionary.to_numpy(zero_copy_only=False).astype(np.int64)
    labels = np.append(distinct, missing.view(np.int64)).view(missing.dtype)
    codes = pc.fill_null(encoded.indices, len(labels) - 1).to_numpy(zero_copy_only=False)
    if len(labels) > max(1, len(codes) // 2):
        return Coded(None, labels[codes])
    return Coded(_narrow(codes, len(labels)), labels)


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


def _week_starts(given: Coded, made: Coded) -> Coded:
    """Each row's ``week_start``: the Sunday of the one given, or of ``forecast_at`` (``made``)
    where none is given (the given one as it is when only some are)."""
    missing = np.isnat(given.decoded())
    if not missing.any():
        return given.relabelled(week_start_of(given.labels))
    if missing.all():
        return made.relabelled(week_start_of(made.labels))
    return Coded(None, np.where(missing, week_start_of(made.decoded()), given.decoded()))


def _normalise_outcomes(values: dict[str, Coded]) -> None:
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
            values[name] = column.with_offset_labels(is_no, 1.0 - column.labels)
    values["outcome"] = outcome.relabelled(labels)


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
