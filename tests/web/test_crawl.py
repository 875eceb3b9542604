"""A crawler follows every same-origin link from ``/``, as a visitor clicking through the
dashboard would (pager links included), on SQLite (the demo) and on PostgreSQL: every answer is
200, every market of the database is reached, and every table of every page sits in its own
horizontal scroll box (``div.table-scroll``), so no table widens the page.

Each URL is fetched once; only the links the pages carry are followed (the JSON API and the
static files only where a page links them).
"""

from __future__ import annotations

import re
from collections import deque
from html.parser import HTMLParser
from urllib.parse import urldefrag, urlsplit

from fastapi.testclient import TestClient
from sqlalchemy import select

from arena.store.db import make_engine, session_factory
from arena.store.models import Market
from tests.web.conftest import Site

MARKET_PAGE = "/markets/"


class Page(HTMLParser):
    """The same-origin links of one HTML page, and its tables that no scroll box holds."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.unboxed_tables = 0
        self._open: list[bool] = []  # for each open div: is it a table-scroll box?

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "a" and values.get("href"):
            self.links.append(values["href"] or "")
        elif tag == "div":
            self._open.append("table-scroll" in (values.get("class") or "").split())
        elif tag == "table" and not (self._open and self._open[-1]):
            self.unboxed_tables += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._open:
            self._open.pop()


def same_origin(href: str) -> str | None:
    """The path and query of a link to this site, without its fragment; None for others."""
    url, _fragment = urldefrag(href)
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not url.startswith("/"):
        return None
    return url


def crawl(client: TestClient) -> tuple[dict[str, int], dict[str, int]]:
    """Status of every URL reached from ``/``; and the pages holding tables outside a box."""
    statuses: dict[str, int] = {}
    unboxed: dict[str, int] = {}
    queue = deque(["/"])
    while queue:
        url = queue.popleft()
        if url in statuses:
            continue
        answer = client.get(url, follow_redirects=False)
        statuses[url] = answer.status_code
        if not answer.headers.get("content-type", "").startswith("text/html"):
            continue
        page = Page()
        page.feed(answer.text)
        if page.unboxed_tables:
            unboxed[url] = page.unboxed_tables
        queue.extend(
            link
            for link in map(same_origin, page.links)
            if link is not None and link not in statuses
        )
    return statuses, unboxed


def test_every_link_answers_200_and_reaches_every_market(client: TestClient, site: Site) -> None:
    statuses, unboxed = crawl(client)
    assert {url: status for url, status in statuses.items() if status != 200} == {}
    assert unboxed == {}, "tables outside a div.table-scroll"
    engine = make_engine(site.url)
    try:
        with session_factory(engine)() as session:
            markets = set(session.scalars(select(Market.id)))
    finally:
        engine.dispose()
    reached = {
        url[len(MARKET_PAGE) :].split("?")[0]
        for url in statuses
        if url.startswith(MARKET_PAGE) and "?" not in url
    }
    assert len(markets) > 50
    assert markets - reached == set(), "markets no link leads to"
    assert {"/", "/cohorts", "/markets", "/status", "/methodology", "/api/docs"} <= set(statuses)


def test_the_navigation_marks_the_current_section(client: TestClient) -> None:
    """Each page's navigation tells where the visitor is (``aria-current``), and only there."""
    current = re.compile(r'<a href="([^"]+)" aria-current="page">')
    sections = {
        "/": "/",
        "/cohorts/1": "/cohorts",
        "/markets?status=open": "/markets",
        "/status": "/status",
        "/methodology": "/methodology",
        "/api/docs": "/api/docs",
    }
    found = {path: current.findall(client.get(path).text) for path in sections}
    assert found == {path: [link] for path, link in sections.items()}
