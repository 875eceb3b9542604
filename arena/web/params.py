"""Request parameters shared by pages and API routes, and the one rule every route's parameters
pass before its endpoint runs (:class:`CheckedRoute`).

A query parameter given blank (``?cohort=``, what a form sends for a field left at its default)
is a parameter not given. A bad query parameter is a 400 page, or a 422 JSON response under
``/api/``; a path parameter
naming nothing that can exist is a 404 (page or JSON). Out of range and unstorable values are
refused here, at the edge, so that no request reaches the database with a value it cannot
compare: an integer beyond PostgreSQL's ``integer`` (or SQLite's 64 bits), or text holding NUL
or a lone surrogate. Such a query error would look like a database outage (a 503, counted in
``/metrics``) or a crash (a 500).
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from arena.config import MAX_REPLICATES
from arena.domain.states import MarketStatus
from arena.domain.storable import has_unstorable
from arena.errors import NotFound
from arena.web.context import MAX_PER_PAGE, PER_PAGE, Page

MIN_INT, MAX_INT = -(2**31), 2**31 - 1  # ids are INTEGER columns: PostgreSQL's int4

CohortParam = Annotated[
    int | None, Query(ge=1, le=MAX_INT, description="Only this cohort (default: all).")
]
PageParam = Annotated[int, Query(ge=1, le=1_000_000, description="Page number, from 1.")]
PerPageParam = Annotated[
    int, Query(ge=1, le=MAX_PER_PAGE, description=f"Rows per page (at most {MAX_PER_PAGE}).")
]
SearchParam = Annotated[
    str | None, Query(max_length=200, description="Text the question contains, or a market id.")
]
CategoryParam = Annotated[str | None, Query(max_length=100, description="Only this category.")]
HeldParam = Annotated[bool, Query(description="Only markets some agent holds a position in.")]
FamilyParam = Annotated[
    str | None, Query(max_length=64, description="Only this family (default: every family).")
]
ReplicateParam = Annotated[
    int,
    Query(
        ge=1,
        le=MAX_REPLICATES,
        description="Which of the family's replicates in the cohort (1, the default, to "
        f"{MAX_REPLICATES}; config.yaml's `replicates`).",
    ),
]

# the ids of the paths (an id that names nothing is a 404)
FamilyId = Annotated[str, Path(description="A family's id (config.yaml's `families`).")]
CohortId = Annotated[int, Path(description="A cohort's id.")]
MarketId = Annotated[str, Path(description="A Polymarket market id (digits).")]
DecisionId = Annotated[int, Path(description="A decision's id.")]


def page_of(page: PageParam = 1, per_page: PerPageParam = PER_PAGE) -> Page:
    """The page a list route shows (``?page=`` and ``?per_page=``)."""
    return Page(page, per_page)


PageDep = Annotated[Page, Depends(page_of)]


class MarketSort(enum.StrEnum):
    """The order of the market list."""

    VOLUME = "volume"
    CLOSE = "close"


@dataclass(frozen=True)
class MarketFilter:
    """Which markets the market list shows: text search, status, category, sort order, and
    ``held`` for those some agent holds a position in. A route takes it as ``MarketFilterDep``,
    one query parameter per field."""

    q: SearchParam = None
    status: Annotated[MarketStatus | None, Query(description="Only markets in this status.")] = None
    category: CategoryParam = None
    sort: Annotated[MarketSort, Query(description="Order: volume or close.")] = MarketSort.VOLUME
    held: HeldParam = False


MarketFilterDep = Annotated[MarketFilter, Depends()]


def now() -> datetime:
    return datetime.now(UTC)


def refusal(value: Any) -> str | None:
    """Why a parameter's (already typed) value cannot reach the database, or None if it can."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not MIN_INT <= value <= MAX_INT:
        return f"must be between {MIN_INT} and {MAX_INT}"
    if isinstance(value, str) and has_unstorable(value):
        return "must not hold NUL or a lone surrogate"
    return None


class CheckedRoute(APIRoute):
    """A route whose path and query parameters pass :func:`refusal` before its endpoint runs:
    a refused path parameter is a 404 (nothing has that id or name), a refused query parameter
    a bad request, like any other invalid one. Every router of the app uses this class."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, self._checked(endpoint), **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The route's handler, reading the query without its blank parameters: a form's
        fields left at their defaults, and the pager's links that repeat them."""
        handler = super().get_route_handler()

        async def blank_is_absent(request: Request) -> Response:
            request.scope["query_string"] = without_blanks(request.scope["query_string"])
            return await handler(Request(request.scope, request.receive))

        return blank_is_absent

    def _checked(self, endpoint: Callable[..., Any]) -> Callable[..., Any]:
        """``endpoint`` behind :meth:`check` (FastAPI reads the signature through ``wraps``)."""
        if inspect.iscoroutinefunction(endpoint):

            @functools.wraps(endpoint)
            async def checked_async(*args: Any, **kw: Any) -> Any:
                self.check(kw)
                return await endpoint(*args, **kw)

            return checked_async

        @functools.wraps(endpoint)
        def checked(*args: Any, **kw: Any) -> Any:
            self.check(kw)
            return endpoint(*args, **kw)

        return checked

    def check(self, values: Mapping[str, Any]) -> None:
        for field in self.dependant.path_params:
            if refusal(values.get(field.name)) is not None:
                noun = field.name.removesuffix("_id")
                raise NotFound(f"{noun} {values[field.name]!r} does not exist")
        problems = [
            {"loc": ("query", alias), "msg": problem, "type": "value_error"}
            for alias, value in query_values(self.dependant, values)
            if (problem := refusal(value)) is not None
        ]
        if problems:
            raise RequestValidationError(problems)


def without_blanks(query: bytes) -> bytes:
    """``query`` (a raw query string) without the parameters whose value is empty."""
    return b"&".join(part for part in query.split(b"&") if part.partition(b"=")[2])


def query_values(dependant: Dependant, values: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """Each query parameter of a route (alias, typed value), those of the dependencies that
    group parameters (:data:`PageDep`, :data:`MarketFilterDep`) included: such a dependency
    returns a value that holds each of its parameters under the parameter's own name."""
    for field in dependant.query_params:
        yield field.alias, values.get(field.name)
    for sub in dependant.dependencies:
        if sub.name is not None and sub.name in values:
            group = values[sub.name]
            for field in sub.query_params:
                yield field.alias, getattr(group, field.name, None)
