"""Logging set-up: human-readable lines by default, one JSON object per line with ``--json-logs``
(or ``logging.json_logs: true``); fields passed with ``extra=`` become keys of the line (the
dashboard's request lines: method, path, status, duration_ms). Every module logs through
``logging.getLogger(__name__)``; structlog renders the records. Secrets never reach a log
record: settings are masked before they are logged and the API key is never put into a message.

structlog loads with the first record that is written, so a command that logs nothing
(``arena status``, ``arena --help``) never pays for it.
"""

from __future__ import annotations

import logging
import sys
from typing import Any


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


class StructlogFormatter(logging.Formatter):
    """structlog's rendering (console lines or JSON), built when the first record comes."""

    def __init__(self, json_logs: bool) -> None:
        super().__init__()
        self.json_logs = json_logs
        self._formatter: logging.Formatter | None = None

    def format(self, record: logging.LogRecord) -> str:
        if self._formatter is None:
            self._formatter = _structlog_formatter(self.json_logs)
        return self._formatter.format(record)


def _structlog_formatter(json_logs: bool) -> logging.Formatter:
    import structlog

    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if json_logs
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.stdlib.ExtraAdder(),  # fields passed as extra= (the request log's)
            structlog.processors.TimeStamper(fmt="iso", utc=True),
        ],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )


def configure_logging(level: str = "INFO", json_logs: bool = False) -> None:
    handler = StderrHandler()
    handler.setFormatter(StructlogFormatter(json_logs))
    root = logging.getLogger()
    for existing in list(root.handlers):
        if getattr(existing, "_arena", False):
            root.removeHandler(existing)
    handler._arena = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("httpx", "httpcore", "openai", "apscheduler.executors", "alembic"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
