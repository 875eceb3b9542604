"""The static copy of the dashboard: every page of the data, every link relative and inside
the copy, nothing that needs a server, and the same bytes for the same data."""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from arena.config import load_settings
from arena.errors import SiteFailed
from arena.publish.dataset import publish_dataset
from arena.publish.site import site_file, site_part, write_site
from arena.publish.static_html import make_static
from arena.store.models import Agent, Cohort, Decision, Family
from arena.web.app import create_app
from arena.web.context import PER_PAGE
from tests.analytics.results_arena import build_arena
from tests.conftest import Database
from tests.helpers import write_config
from tests.publish.conftest import StaticSite, plant_hostile_text, small_arena

FIXED_NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)


class _Urls(HTMLParser):
    """Every URL-bearing attribute of a page, and the tags that need a server."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.live: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src", "action", "data-src", "formaction") and value is not None:
                self.urls.append((tag, name, value))
            if name in ("data-live", "data-countdown", "data-autorefresh"):
                self.live.append(f"<{tag} {name}>")
        if tag in ("form", "iframe", "base"):
            self.live.append(f"<{tag}>")


def _pages(root: Path) -> list[Path]:
    return sorted(root.rglob("*.html"))


def broken_links(root: Path) -> tuple[list[str], int]:
    """What in the copy at ``root`` needs a server or points outside it, and how many URLs
    were checked."""
    problems: list[str] = []
    checked = 0
    for page in _pages(root):
        parser = _Urls()
        parser.feed(page.read_text())
        name = page.relative_to(root).as_posix()
        problems += [f"{name}: {tag}" for tag in parser.live]
        for tag, attribute, value in parser.urls:
            parts = urlsplit(value)
            where = f"{name}: <{tag} {attribute}={value!r}>"
            target = (page.parent / unquote(parts.path)).resolve()
            if attribute not in ("href", "src"):
                problems.append(f"{where} needs a server")
            elif parts.scheme or parts.netloc or value.startswith("/"):
                problems.append(f"{where} is not relative")
            elif parts.path and not target.is_file():
                problems.append(f"{where} resolves to no file")
            elif parts.path and not target.is_relative_to(root.resolve()):
                problems.append(f"{where} leaves the copy")
            checked += 1
    return problems, checked


def test_every_link_is_relative_and_resolves_inside_the_copy(static_site: StaticSite) -> None:
    problems, checked = broken_links(static_site.root)
    assert not problems, "\n".join(problems[:20])
    assert checked > 500  # the pages do link: a copy of bare pages would pass vacuously


def test_the_copy_is_written_alike_from_either_database(
    db: Database, static_site: StaticSite, tmp_path: Path
) -> None:
    """The same stored arena, on SQLite or PostgreSQL, gives a copy whose links all resolve,
    byte for byte the same."""
    build_arena(db.factory)
    plant_hostile_text(db.factory)
    report = write_site(db.factory, static_site.settings, tmp_path / "site")
    problems, _ = broken_links(tmp_path / "site")
    assert not problems, "\n".join(problems[:20])
    ours = {f.path: f.sha256 for f in report.files}
    theirs = {f.path: f.sha256 for f in static_site.report.files}
    assert set(ours) == set(theirs)
    assert sorted(p for p in ours if ours[p] != theirs[p]) == []


def test_the_copy_holds_every_page_of_the_data(static_site: StaticSite) -> None:
    with static_site.factory() as session:
        expected = {"index.html", "cohorts.html", "methodology.html"}
        expected |= {f"families/{f}.html" for f in session.scalars(select(Family.id))}
        expected |= {f"cohorts/{c}.html" for c in session.scalars(select(Cohort.id))}
        expected |= {
            f"cohorts/{c}/families/{f}.html"
            for c, f in session.execute(select(Agent.cohort_id, Agent.family_id))
        }
        expected |= {f"decisions/{d}.html" for d in session.scalars(select(Decision.id))}
    pages = {p.relative_to(static_site.root).as_posix() for p in _pages(static_site.root)}
    assert pages == expected
    report = static_site.report
    assert report.pages == len(expected)
    assert {f.path for f in report.files} == {
        p.relative_to(static_site.root).as_posix()
        for p in static_site.root.rglob("*")
        if p.is_file()
    }
    assert "static/app.js" in {f.path for f in report.files}
    assert report.bytes == sum(f.size for f in report.files)


def test_pages_are_the_dashboards_own(static_site: StaticSite) -> None:
    """Same templates, same numbers: a family row of the leaderboard reads as on the dashboard,
    and the markets, status and API entries of the menu are gone (the copy has no such page)."""
    client = TestClient(create_app(static_site.settings))
    served = client.get("/").text
    copied = (static_site.root / "index.html").read_text()
    row = re.search(r'<tr data-family="beta-model">.*?</tr>', served, re.S)
    assert row is not None
    assert re.sub(r'href="[^"]*"', "", row.group(0)) in re.sub(r'href="[^"]*"', "", copied)
    nav = re.search(r'<nav aria-label="site">.*?</nav>', copied, re.S)
    assert nav is not None
    assert re.findall(r">(\w+)</a>", nav.group(0)) == ["Leaderboard", "Cohorts", "Methodology"]


def test_charts_carry_their_curves_inline(static_site: StaticSite) -> None:
    client = TestClient(create_app(static_site.settings))
    copied = (static_site.root / "families" / "beta-model.html").read_text()
    block = re.search(r'<script type="application/json" id="(curves-1)">(.*?)</script>', copied)
    assert block is not None
    assert f'data-inline="{block.group(1)}"' in copied
    served = client.get("/api/v1/curves", params={"range": "ALL", "family": "beta-model"})
    assert json.loads(block.group(2)) == served.json()
    assert json.loads(block.group(2))["series"]


class _Scripts(HTMLParser):
    """Every element that could run code: a script, or an attribute named on...."""

    def __init__(self) -> None:
        super().__init__()
        self.code: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if tag == "script" and not (names.get("src") or names.get("type") == "application/json"):
            self.code.append(self.get_starttag_text() or tag)
        self.code += [f"<{tag} {n}>" for n in names if n.startswith("on")]


def test_hostile_text_stays_text(static_site: StaticSite) -> None:
    """The market, family and reasoning HTML planted in the data is text in every page, inline
    curves included (their JSON cannot close its script block)."""
    shown = 0
    for page in _pages(static_site.root):
        text = page.read_text()
        parser = _Scripts()
        parser.feed(text)
        assert parser.code == [], page
        shown += "&lt;script&gt;alert(" in text
    assert shown > 5
    assert "\\u003c/script\\u003e" in (static_site.root / "index.html").read_text()


def test_the_same_data_gives_the_same_bytes_and_a_change_rewrites_only_its_pages(
    tmp_path: Path,
) -> None:
    factory, settings = small_arena(tmp_path)
    first = write_site(factory, settings, tmp_path / "a")
    second = write_site(factory, settings, tmp_path / "b")
    assert [(f.path, f.sha256) for f in first.files] == [(f.path, f.sha256) for f in second.files]
    assert first.as_of == second.as_of

    (tmp_path / "a" / "decisions" / "999999.html").write_text("a page whose data is gone")
    again = write_site(factory, settings, tmp_path / "a")
    assert again.written == ()
    assert again.removed == ("decisions/999999.html",)

    with factory() as session, session.begin():
        last = session.scalar(select(Decision.id).order_by(Decision.id.desc()).limit(1))
        session.execute(update(Decision).where(Decision.id == last).values(reasoning="changed"))
    changed = write_site(factory, settings, tmp_path / "a")
    assert [f.path for f in changed.written] == [f"decisions/{last}.html"]
    assert "changed" in (tmp_path / "a" / "decisions" / f"{last}.html").read_text()
    assert not list((tmp_path / "a").rglob(".*"))  # no temporary file left behind
    factory.kw["bind"].dispose()


def test_site_file_names_each_page_and_refuses_what_needs_a_server() -> None:
    assert site_file("/") == "index.html"
    assert site_file("/cohorts") == "cohorts.html"
    assert site_file("/cohorts?page=1&per_page=50") == "cohorts.html"
    assert site_file("/cohorts/3?page=2&per_page=50") == "cohorts/3.page-2.html"
    assert site_file("/cohorts/3/families/gpt-4.1") == "cohorts/3/families/gpt-4.1.html"
    assert site_file("/families/gpt-4.1") == "families/gpt-4.1.html"
    assert site_file("/decisions/12") == "decisions/12.html"
    assert site_file("/static/app.css") == "static/app.css"
    for url in (
        "/markets",
        "/markets/101",
        "/status",
        "/api/v1/leaderboard",
        "/api/docs",
        "/?cohort=2",
        "/cohorts?page=2&per_page=10",
        "/cohorts/x",
        "/families/../etc",
        "/static/../pages.py",
        "/static/missing.css",
    ):
        assert site_file(url) is None, url


def test_make_static_rewrites_links_and_leaves_out_what_needs_a_server() -> None:
    page = (
        '<nav><a href="/">Home</a><a href="/status" aria-current="page">Status</a></nav>'
        '<form method="get" action="/"><select name="cohort"><option>1</option></select></form>'
        '<p data-live>soon <input type="checkbox"> <b>now</b></p>'
        '<p><a class="x" href="/markets/1">a &amp; b</a> <a href="https://example.org/">out</a>'
        ' <a href="?page=2&amp;per_page=50">older</a> <a href="#top">top</a>'
        ' <a href="/decisions/4#attempt-1">#4</a></p>'
        '<svg><circle r="2"/></svg><img src="/static/favicon.svg" alt="">'
    )
    static = make_static(page, "/cohorts/3", "cohorts/3.html", site_file, lambda _: "{}")
    assert static.html == (
        '<nav><a href="../index.html">Home</a></nav>'
        '<p><span class="x">a &amp; b</span> <span>out</span>'
        ' <a href="3.page-2.html">older</a> <a href="#top">top</a>'
        ' <a href="../decisions/4.html#attempt-1">#4</a></p>'
        '<svg><circle r="2"/></svg><img src="../static/favicon.svg" alt="">'
    )
    assert static.links == ["/", "/cohorts/3?page=2&per_page=50", "/decisions/4"]


def test_a_page_needing_a_file_the_copy_lacks_fails_by_name(
    static_site: StaticSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("arena.publish.site._static_file", lambda name: name != "app.css")
    with pytest.raises(SiteFailed, match=r"^/: <link href='/static/app.css'> is not in the copy"):
        write_site(static_site.factory, static_site.settings, tmp_path / "site")


def test_writing_the_copy_logs_no_request(
    static_site: StaticSite, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A page of the copy is not a visit: the access log (a line per request) stays quiet."""
    caplog.set_level(logging.INFO)
    write_site(static_site.factory, static_site.settings, tmp_path / "site")
    assert [r.getMessage() for r in caplog.records if r.name == "arena.web.access"] == []
    assert logging.getLogger("arena.web.access").level == logging.NOTSET  # put back


def test_an_empty_arena_gives_a_copy_of_empty_pages(
    sqlite_db: Database, static_site: StaticSite, tmp_path: Path
) -> None:
    report = write_site(sqlite_db.factory, static_site.settings, tmp_path / "site")
    assert [f.path for f in report.files if f.path.endswith(".html")] == [
        "cohorts.html",
        "index.html",
        "methodology.html",
    ]
    assert "No agents yet" in (tmp_path / "site" / "index.html").read_text()
    assert broken_links(tmp_path / "site")[0] == []


def test_the_copy_is_a_part_of_the_published_dataset(db: Database, tmp_path: Path) -> None:
    """Through ``publish_dataset``: the copy lands in ``DIR/site/``, read on the publish's own
    snapshot, listed file by file in the manifest; a second publish changes nothing."""
    build_arena(db.factory)
    settings = load_settings(write_config(tmp_path / "config.yaml", db.url, methodology="v2"))
    out = tmp_path / "dataset"
    alone = write_site(db.factory, settings, tmp_path / "alone")
    first = publish_dataset(db.factory, out, FIXED_NOW, parts=(site_part(settings),))
    manifest = json.loads((out / "manifest.json").read_text())["files"]
    assert {f"site/{f.path}": f.sha256 for f in alone.files} == {
        path: entry["sha256"] for path, entry in manifest.items() if path.startswith("site/")
    }
    assert {f"site/{f.path}" for f in alone.files} <= set(first.changed)
    assert broken_links(out / "site")[0] == []
    second = publish_dataset(db.factory, out, FIXED_NOW, parts=(site_part(settings),))
    assert second.changed == []
    assert second.version == first.version


def test_a_long_list_is_copied_page_by_page(tmp_path: Path) -> None:
    """A cohort of more decisions than a page holds: its further pages are files of the copy,
    linked from the pager, and every decision on them has its page."""
    factory, settings = small_arena(tmp_path)
    with factory() as session, session.begin():
        agent = session.scalars(select(Agent).where(Agent.cohort_id == 1)).first()
        assert agent is not None
        at = datetime(2026, 11, 2, tzinfo=UTC)
        session.add_all(
            Decision(
                agent_id=agent.id,
                cohort_id=1,
                decision_week=100 + week,
                status="completed",
                action="HOLD",
                claim_count=1,
                prompt_version="v2",
                methodology_version="v2",
                created_at=at,
                updated_at=at,
                completed_at=at,
            )
            for week in range(PER_PAGE + 5)
        )
    report = write_site(factory, settings, tmp_path / "site")
    paths = {f.path for f in report.files}
    assert {"cohorts/1.html", "cohorts/1.page-2.html"} <= paths
    assert "cohorts/1.page-3.html" not in paths
    with factory() as session:
        decisions = {f"decisions/{d}.html" for d in session.scalars(select(Decision.id))}
    assert decisions <= paths
    second = (tmp_path / "site" / "cohorts" / "1.page-2.html").read_text()
    assert '<a href="1.html">&larr; newer</a>' in second
    assert broken_links(tmp_path / "site")[0] == []
    factory.kw["bind"].dispose()


def test_the_copy_shows_the_analysis_computed_at_its_instant_never_being_computed(
    tmp_path: Path,
) -> None:
    """With no stored analysis, the live dashboard computes one in a background thread; the
    static copy computes it before rendering, at the copy's instant, so no page depends on a
    thread's timing (a republish of unchanged data once rewrote a family page that way)."""
    factory, settings = small_arena(tmp_path)
    report = write_site(factory, settings, tmp_path / "a")
    index = (tmp_path / "a" / "index.html").read_text()
    assert "being computed" not in index
    family = (tmp_path / "a" / "families" / "alpha-model.html").read_text()
    again = write_site(factory, settings, tmp_path / "b")
    assert family == (tmp_path / "b" / "families" / "alpha-model.html").read_text()
    assert [f.sha256 for f in report.files] == [f.sha256 for f in again.files]
    factory.kw["bind"].dispose()
