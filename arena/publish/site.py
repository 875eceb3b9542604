"""The static copy of the dashboard that ``arena publish DIR`` writes under ``DIR/site/``.

The pages come from the dashboard itself: :func:`write_site` runs the web app in-process over
the caller's database, at a fixed instant, and asks it for each page, so the copy and the
dashboard share their templates, queries and numbers. Each page is made static
(:mod:`arena.publish.static_html`) and written to a file named after its path::

    /                             index.html
    /cohorts                      cohorts.html          (?page=2: cohorts.page-2.html)
    /cohorts/1                    cohorts/1.html
    /cohorts/1/families/x         cohorts/1/families/x.html   (one agent)
    /families/x                   families/x.html
    /decisions/7                  decisions/7.html
    /methodology                  methodology.html
    /static/app.css               static/app.css

Markets, ``/status`` and the API are not copied: links to them become text. Charts carry
their curves inline, so nothing is fetched: the copy opens from ``file://`` or any static host.
The output is a function of the database alone (the instant defaults to the newest stored
one), so a second run over the same data writes the same bytes, and only the files whose bytes
change are rewritten. :func:`site_part` makes the copy a part of
:func:`~arena.publish.dataset.publish_dataset`, read on the publish's own snapshot.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from fastapi.testclient import TestClient
from sqlalchemy import Connection, Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from arena.clock import FixedClock, ensure_utc
from arena.config import FAMILY_ID_PATTERN, Settings
from arena.errors import SiteFailed
from arena.publish.dataset import Part
from arena.publish.layout import SITE
from arena.publish.static_html import make_static
from arena.store.db import head_revision
from arena.store.models import Agent, Cohort, Decision, Family, JobRun, PortfolioSnapshot
from arena.web.app import access, create_app
from arena.web.context import PER_PAGE, WebContext
from arena.web.render import HERE
from arena.web.standings import analyse_before_serving

STATIC = HERE / "static"
FAMILY = FAMILY_ID_PATTERN.strip("^$")
# The dashboard's pages the copy holds, by path; any other path is not in the copy.
PAGES = re.compile(
    rf"/|/cohorts|/methodology|/families/{FAMILY}|/cohorts/\d+|/cohorts/\d+/families/{FAMILY}"
    r"|/decisions/\d+"
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SiteFile:
    """One file of the copy: its path (POSIX, relative to the copy's root), its sha256 and
    size, and whether this run wrote it (False: the same bytes were already there)."""

    path: str
    sha256: str
    size: int
    written: bool


@dataclass(frozen=True)
class SiteReport:
    """What :func:`write_site` made: every file of the copy, in path order, and the stale
    files it removed (a copy holds the pages of its data, and nothing else)."""

    files: tuple[SiteFile, ...]
    removed: tuple[str, ...]
    as_of: datetime

    @property
    def pages(self) -> int:
        return sum(f.path.endswith(".html") for f in self.files)

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def written(self) -> tuple[SiteFile, ...]:
        return tuple(f for f in self.files if f.written)


def site_file(url: str) -> str | None:
    """The copy's file for a same-site URL (path and query), or None when it holds none.

    A page's query may only turn a list's page (``page``, with the default ``per_page``):
    page 1 is the page itself, page N is ``<page>.page-N.html``."""
    parts = urlsplit(url)
    path = parts.path
    if path.startswith("/static/"):
        name = path.removeprefix("/static/")
        return f"static/{name}" if not parts.query and _static_file(name) else None
    if PAGES.fullmatch(path) is None:
        return None
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    per_page = query.pop("per_page", str(PER_PAGE))
    number = query.pop("page", "1")
    if query or per_page != str(PER_PAGE) or not number.isdigit() or int(number) < 1:
        return None
    base = "index" if path == "/" else path.removeprefix("/")
    return f"{base}.html" if int(number) == 1 else f"{base}.page-{int(number)}.html"


def write_site(
    factory: sessionmaker[Session], settings: Settings, out: Path, *, as_of: datetime | None = None
) -> SiteReport:
    """Write the static copy of the dashboard over ``factory``'s database into ``out`` (the
    copy's root, made if missing): every family, cohort, agent and decision page, the
    leaderboard, the cohorts, the methodology and the static files.

    ``as_of`` is the instant the pages are computed at (default: the newest stored instant, so
    the same data gives the same bytes). Each page reads in a session of its own: a factory
    bound to a connection in a transaction (:func:`site_part`) gives every page one snapshot.
    Raises :class:`SiteFailed` when a page fails."""
    bind = factory.kw.get("bind")
    if not isinstance(bind, Engine | Connection):
        raise TypeError("write_site needs a session factory bound to an engine or a connection")
    engine = bind if isinstance(bind, Engine) else bind.engine
    with factory() as session:
        moment = ensure_utc(as_of) if as_of is not None else newest_instant(session)
        seeds = list(_seeds(session))
    ctx = WebContext(
        settings, engine, factory, head_revision(), clock=FixedClock(moment), fresh=True
    )
    analyse_before_serving(ctx)
    out.mkdir(parents=True, exist_ok=True)
    app = create_app(settings, context=ctx)
    with _quiet(access), TestClient(app) as client:  # one event loop for every page
        files = [_write(out, path, data) for path, data in _pages(client, seeds)]  # one by one
    for path in sorted(p for p in STATIC.rglob("*") if p.is_file()):
        name = f"static/{path.relative_to(STATIC).as_posix()}"
        files.append(_write(out, name, path.read_bytes()))
    removed = tuple(_remove_stale(out, {f.path for f in files}))
    return SiteReport(tuple(sorted(files, key=lambda f: f.path)), removed, moment)


def site_part(settings: Settings, *, as_of: datetime | None = None) -> Part:
    """The static copy as a part of ``arena publish`` (``parts`` of
    :func:`~arena.publish.dataset.publish_dataset`): rendered on the publish's own snapshot
    (each page's session a savepoint on its connection), written to ``staged/site/``."""

    def part(session: Session, staged: Path) -> list[str]:
        snapshot = sessionmaker(bind=session.connection(), join_transaction_mode="create_savepoint")
        report = write_site(snapshot, settings, staged / SITE, as_of=as_of)
        return [f"{SITE}/{f.path}" for f in report.files]

    return part


def newest_instant(session: Session) -> datetime:
    """The newest snapshot, decision or job run time stored (the epoch for an empty database)."""
    times = [
        session.scalar(select(func.max(column)))
        for column in (PortfolioSnapshot.taken_at, Decision.completed_at, JobRun.finished_at)
    ]
    return max((ensure_utc(t) for t in times if t is not None), default=EPOCH)


def _seeds(session: Session) -> Iterator[str]:
    """Every page of the copy but the further pages of a list (found by following links)."""
    yield from ("/", "/cohorts", "/methodology")
    yield from (f"/families/{f}" for f in session.scalars(select(Family.id).order_by(Family.id)))
    yield from (f"/cohorts/{c}" for c in session.scalars(select(Cohort.id).order_by(Cohort.id)))
    agents = select(Agent.cohort_id, Agent.family_id).order_by(Agent.cohort_id, Agent.family_id)
    yield from (f"/cohorts/{c}/families/{f}" for c, f in session.execute(agents))
    yield from (
        f"/decisions/{d}" for d in session.scalars(select(Decision.id).order_by(Decision.id))
    )


def _pages(client: TestClient, seeds: Iterable[str]) -> Iterator[tuple[str, bytes]]:
    """Each page of the copy, made static: the seeds, then every page they link to."""
    queue = deque(seeds)
    seen = set(queue)

    def curves(data: dict[str, str]) -> str:
        query = {k: data[k] for k in ("family", "cohort") if data.get(k)}
        return _get(client, f"{data['src']}?{urlencode({'range': 'ALL', **query})}")

    while queue:
        url = queue.popleft()
        file = site_file(url)
        if file is None:
            raise SiteFailed(f"{url}: not a page of the static copy")
        try:
            page = make_static(_get(client, url), url, file, site_file, curves)
        except ValueError as exc:  # a stylesheet, script or image the copy lacks
            raise SiteFailed(str(exc)) from exc
        yield file, page.html.encode()
        for link in page.links:
            if link not in seen:
                seen.add(link)
                queue.append(link)


def _get(client: TestClient, url: str) -> str:
    response = client.get(url)
    if response.status_code != 200:
        raise SiteFailed(f"{url}: HTTP {response.status_code} from the dashboard")
    return response.text


@contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """``logger`` at WARNING while the block runs (the access log writes a line per request:
    the pages of a copy are not visits)."""
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def _static_file(name: str) -> bool:
    path = (STATIC / name).resolve()
    return path.is_file() and path.is_relative_to(STATIC)


def _write(out: Path, relative: str, data: bytes) -> SiteFile:
    """Write ``data`` to ``out/relative`` through a temporary file and a rename, unless the
    file already holds those bytes (then it is left as it was)."""
    digest = hashlib.sha256(data).hexdigest()
    target = out / relative
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == digest:
        return SiteFile(relative, digest, len(data), written=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        Path(temporary).chmod(0o644)
        Path(temporary).replace(target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return SiteFile(relative, digest, len(data), written=True)


def _remove_stale(out: Path, keep: set[str]) -> Iterator[str]:
    """Remove the files under ``out`` that are not in the copy (a page whose data is gone),
    then the directories left empty; yields each removed file."""
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        relative = path.relative_to(out).as_posix()
        if relative not in keep:
            path.unlink()
            yield relative
    for directory in sorted((p for p in out.rglob("*") if p.is_dir()), reverse=True):
        if not any(directory.iterdir()):
            shutil.rmtree(directory)
