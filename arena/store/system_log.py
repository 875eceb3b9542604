"""The one writer of ``system_log`` rows: job failures, abandoned and caught-up slots, CLOB
outages and book-hash mismatches. A row that cannot be written is logged and dropped: the
system log must never stop the run that reports into it."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from arena.store.db import transaction
from arena.store.models import SystemLog

log = logging.getLogger(__name__)

MAX_MESSAGE = 2000  # system_log.message is bounded here, whatever the outside text


def log_event(
    factory: sessionmaker[Session],
    at: datetime,
    source: str,
    event: str,
    message: str,
    *,
    level: str = "INFO",
    details: dict[str, Any] | None = None,
) -> None:
    """Write one ``system_log`` row at ``at`` (never raises)."""
    try:
        with transaction(factory) as session:
            session.add(
                SystemLog(
                    at=at,
                    level=level,
                    source=source,
                    event=event,
                    message=message[:MAX_MESSAGE],
                    details=details,
                )
            )
    except Exception:  # the system log must never break a job
        log.exception("could not write the system log (%s: %s)", source, event)
