"""Fixtures of the publish tests: a small stored arena (``build_arena``) with hostile text in it,
and its static copy of the dashboard, written once per session."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from arena.config import Settings, load_settings
from arena.publish.site import SiteReport, write_site
from arena.store.db import make_engine, session_factory, upgrade
from arena.store.models import Decision, Family, Market, Trade
from tests.analytics.results_arena import build_arena
from tests.helpers import write_config
from tests.web.hostile import HOSTILE


@dataclass
class StaticSite:
    """A populated SQLite arena, its settings, and its static copy written at ``root``."""

    factory: sessionmaker[Session]
    settings: Settings
    root: Path
    report: SiteReport


def plant_hostile_text(factory: sessionmaker[Session]) -> None:
    """HTML in a decision's reasoning and in a traded market's question: pages must show it as
    text, and the static copy must keep it escaped."""
    with factory() as session, session.begin():
        decision = session.scalar(select(Decision.id).order_by(Decision.id).limit(1))
        session.execute(update(Decision).where(Decision.id == decision).values(reasoning=HOSTILE))
        market = session.scalar(select(Trade.market_id).order_by(Trade.id).limit(1))
        session.execute(update(Market).where(Market.id == market).values(question=HOSTILE))
        family = session.scalar(select(Family.id).order_by(Family.id).limit(1))
        session.execute(update(Family).where(Family.id == family).values(display_name=HOSTILE))


def small_arena(tmp: Path) -> tuple[sessionmaker[Session], Settings]:
    """A migrated SQLite arena built by ``build_arena`` (three cohorts, three families)."""
    url = f"sqlite:///{tmp / 'arena.db'}"
    engine = make_engine(url)
    upgrade(engine)
    factory = session_factory(engine)
    build_arena(factory)
    plant_hostile_text(factory)
    return factory, load_settings(write_config(tmp / "config.yaml", url, methodology="v2"))


@pytest.fixture(scope="session")
def static_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StaticSite]:
    tmp = tmp_path_factory.mktemp("static-site")
    factory, settings = small_arena(tmp)
    root = tmp / "site"
    report = write_site(factory, settings, root)
    yield StaticSite(factory, settings, root, report)
    engine = factory.kw["bind"]
    engine.dispose()


from tests.web.browsing import browser, shots  # noqa: E402, F401  (the browser fixtures)
