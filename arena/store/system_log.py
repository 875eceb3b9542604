"""The one writer of ``system_log`` rows: job failures, abandoned and caught-up slots, CLOB
outages and book-hash mismatches. A row that cannot be written is logged and dropped: the
system log must never stop the run that reports into it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from arena.store.db import transaction
from arena.store.models import SystemLog

log = logging.getLogger(__name__)

MAX_MESSAGE = 2000  # system_log.message is bounded here, whatever the outside text


@dataclass(frozen=True)
class LogMessage:
    """What one ``system_log`` row says: its text, level and optional details (JSON)."""

    text: str
    level: str = "INFO"
    details: dict[str, Any] | None = None


def log_event(
    factory: sessionmaker[Session], at: datetime, source: str, event: str, message: LogMessage
) -> None:
    """Write one ``system_log`` row at ``at`` (never raises)."""
    try:
        with transaction(factory) as session:
            session.add(
                SystemLog(
                    at=at,
                    level=message.level,
                    source=source,
                    event=event,
                    message=message.text[:MAX_MESSAGE],
                    details=message.details,
                )
            )
    except Exception:  # the system log must never break a job
        log.exception("could not write the system log (%s: %s)", source, event)
