"""Logging set-up: human-readable lines by default, one JSON object per line with ``--json-logs``
(or ``logging.json_logs: true``). Every module logs through ``logging.getLogger(__name__)``;
structlog renders the records. Secrets never reach a log record: settings are masked before
they are logged and the API key is never put into a message.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

_SHARED: list[structlog.types.Processor] = [
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


class StderrHandler(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a record is emitted, never to the
    stream that was ``sys.stderr`` when logging was set up (which a test harness or a daemon's
    redirection may have closed since)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def configure_logging(level: str = "INFO", json_logs: bool = False) -> None:
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if json_logs
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_SHARED,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = StderrHandler()
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for existing in list(root.handlers):
        if getattr(existing, "_arena", False):
            root.removeHandler(existing)
    handler._arena = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("httpx", "httpcore", "openai", "apscheduler.executors", "alembic"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
