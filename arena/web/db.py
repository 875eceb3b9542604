"""The dashboard's database access: read-only engines and the readiness check.

The app never writes. SQLite files are opened with ``mode=ro`` (and ``query_only``), PostgreSQL
sessions are ``READ ONLY`` (:func:`arena.store.db.make_engine` with ``read_only=True``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from arena.config import DATABASE_URL_HOW
from arena.errors import ArenaError
from arena.masking import mask_url
from arena.store.db import (
    check_connection,
    current_revision,
    database_unreachable,
    make_engine,
    storage_failure,
)

log = logging.getLogger(__name__)


def read_only_url(url: str) -> str:
    """``url`` with a SQLite file turned into a read-only URI (``mode=ro``); others unchanged."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return url
    database = parsed.database or ""
    if not database or database == ":memory:" or database.startswith("file:"):
        return url
    path = Path(database).expanduser().resolve()
    return f"sqlite:///file:{quote(str(path))}?mode=ro&uri=true"


def read_only_engine(url: str) -> Engine:
    """An engine that cannot write, for the web app (pool sized for a few concurrent pages)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return make_engine(read_only_url(url), read_only=True)
    return make_engine(url, read_only=True, pool_size=8, max_overflow=8, pool_timeout=10)


def readiness(engine: Engine, head: str | None) -> tuple[bool, str]:
    """``(True, revision)`` when the database answers and its schema is at ``head``; otherwise
    ``(False, reason)`` with a one-line reason that never holds a password: the CLI's own
    checks (:func:`~arena.store.db.check_connection`, then
    :func:`~arena.store.db.storage_failure` for a failure after connecting)."""
    try:
        check_connection(engine)
        revision = current_revision(engine)
    except ArenaError as exc:  # DatabaseUnavailable, StorageFailed: one line, URL masked
        return False, str(exc)
    except Exception as exc:  # any failure to reach or read the database means "not ready"
        return False, failure_line(exc)
    if revision != head:
        return False, f"schema at revision {revision}, expected {head}"
    return True, str(revision)


def unavailable(url: str, reason: str) -> str:
    """Why the dashboard cannot use its database, naming the URL it tried (password masked)
    and how to choose another: the "database unavailable" page, ``/readyz`` and the log."""
    shown = mask_url(url)
    tried = "" if shown in reason else f"; the database tried is {shown}"
    return f"{reason}{tried}; {DATABASE_URL_HOW}"


def failure_line(exc: BaseException) -> str:
    """One line on a database failure, for a log or a readiness answer (never a password)."""
    known = storage_failure(exc) or database_unreachable(exc)
    if known is not None:
        return known
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return f"database unavailable: {reason[0][:200] if reason else type(exc).__name__}"
