"""Query parameters shared by pages and API routes (validated: a bad value is a 400 page or a
422 JSON response)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import Query

from arena.web.context import MAX_PER_PAGE, PER_PAGE, Page

CohortParam = Annotated[
    int | None, Query(ge=1, le=2**31 - 1, description="Only this cohort (default: all).")
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


def page_of(page: int = 1, per_page: int = PER_PAGE) -> Page:
    return Page(page, per_page)


def now() -> datetime:
    return datetime.now(UTC)
