"""The answer's JSON shape: pydantic models of the three actions, the tolerant readers of ids,
numbers and text, and the shape errors in words the repair prompt can quote.

:mod:`arena.domain.decisions` checks the rules once an answer has this shape.
"""

from __future__ import annotations

import enum
import functools
import json
import math
import re
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

MAX_ERRORS = 8
_NUMBER = re.compile(r"[+-]?(\d{1,20}(\.\d{0,12})?|\.\d{1,12})")


class Action(enum.StrEnum):
    BET = "BET"
    SELL = "SELL"
    HOLD = "HOLD"


def show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _as_id(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise PydanticCustomError(
        "arena_id", "{shown} is not an id (write it as a string)", {"shown": show(value)}
    )


def to_decimal(value: Any) -> Decimal:
    """A JSON number (or numeric string) as an exact Decimal; floats go through ``str``."""
    if isinstance(value, bool):
        raise PydanticCustomError("arena_number", "{shown} is not a number", {"shown": show(value)})
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PydanticCustomError(
                "arena_number", "{shown} is not a finite number", {"shown": show(value)}
            )
        return Decimal(str(value))
    if isinstance(value, Decimal) and value.is_finite():
        return value
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        try:
            return Decimal(value.strip())
        except InvalidOperation:
            pass
    raise PydanticCustomError("arena_number", "{shown} is not a number", {"shown": show(value)})


def _as_text(value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise PydanticCustomError(
        "arena_text", "{shown} is not a non-empty string", {"shown": show(value)}
    )


def _as_reasoning(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else show(value)


Id = Annotated[str, BeforeValidator(_as_id)]
Number = Annotated[Decimal, BeforeValidator(to_decimal)]
Text = Annotated[str, BeforeValidator(_as_text)]
Reasoning = Annotated[str, BeforeValidator(_as_reasoning)]


class _Shape(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class BetIn(_Shape):
    market_id: Id
    side: Text
    amount: Number
    probability: Any = None


class SellIn(_Shape):
    position_id: Id
    percentage: Number


class ForecastIn(_Shape):
    market_id: Id
    probability: Any = None  # checked by the rules, with the panel market in hand
    probabilities: Any = None


class BetDecisionIn(_Shape):
    action: Literal["BET"]
    bets: Annotated[list[BetIn], Field(min_length=1)]
    reasoning: Reasoning = ""
    forecasts: Any = None


class SellDecisionIn(_Shape):
    action: Literal["SELL"]
    sells: Annotated[list[SellIn], Field(min_length=1)]
    reasoning: Reasoning = ""
    forecasts: Any = None


class HoldDecisionIn(_Shape):
    action: Literal["HOLD"]
    reasoning: Reasoning = ""
    forecasts: Any = None


DecisionIn = Annotated[
    BetDecisionIn | SellDecisionIn | HoldDecisionIn, Field(discriminator="action")
]


@functools.cache
def decision_adapter() -> TypeAdapter[BetDecisionIn | SellDecisionIn | HoldDecisionIn]:
    return TypeAdapter(DecisionIn)


@functools.cache
def forecasts_adapter() -> TypeAdapter[list[ForecastIn]]:
    return TypeAdapter(list[ForecastIn])


def _path(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def shape_errors(exc: ValidationError, prefix: Sequence[int | str] = ()) -> list[str]:
    errors: list[str] = []
    for error in exc.errors():
        loc = list(error["loc"])
        if loc and loc[0] in Action.__members__:
            loc = loc[1:]  # the discriminator tag pydantic puts first
        path = _path([*prefix, *loc]) or "the answer"
        kind = error["type"]
        if kind == "missing":
            errors.append(f"{path} is missing")
        elif kind == "too_short":
            errors.append(f"{path} must not be empty")
        elif kind == "list_type":
            errors.append(f"{path} must be a list, got {show(error['input'])}")
        elif kind in ("dict_type", "model_type", "model_attributes_type"):
            errors.append(f"{path} must be an object, got {show(error['input'])}")
        elif kind.startswith("arena_"):
            errors.append(f"{path} {error['msg']}")
        else:
            errors.append(f"{path}: {error['msg']}")
    return errors


def error_message(errors: Sequence[str]) -> str:
    shown = "; ".join(errors[:MAX_ERRORS])
    more = len(errors) - MAX_ERRORS
    return shown + (f" (and {more} more errors)" if more > 0 else "")
