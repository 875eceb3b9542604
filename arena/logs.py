"""Logging set-up: human-readable lines by default, one JSON object per line with ``--json-logs``
(or ``logging.json_logs: true``); fields passed with ``extra=`` become keys of the line (the
dashboard's request lines: method, path, status, duration_ms). Every module logs through
``logging.getLogger(__name__)``; structlog renders the records. Secrets never reach a log
record: settings are masked before they are logged and the API key is never put into a message.

A log line is one line, whatever outside text it carries (a request path, a market question,
an error from a server): both renderings escape every control character in the message and in
every field (C0 and C1 controls, DEL, U+2028 and U+2029; a newline becomes ``\\n``, ESC
``\\x1b``), so no request can forge a line or send escape sequences to an operator's terminal.
Only a traceback keeps its newlines (its other control characters are escaped too).

structlog loads with the first record that is written, so a command that logs nothing
(``arena status``, ``arena --help``) never pays for it.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any

from arena.startup import import_in_background

# C0 controls (newline and tab included), DEL, C1 controls, and the two Unicode line breaks
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
MULTI_LINE_FIELDS = frozenset({"exception", "stack"})  # tracebacks, rendered by structlog


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character written as its escape (``\\n``, ``\\x1b``,
    ``\\u2028``): printable on one line and inert in a terminal."""
    pattern = _CONTROL_BUT_NEWLINE if keep_newlines else _CONTROL
    return pattern.sub(_escaped, text)


def _escape_value(value: Any) -> Any:
    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, Mapping):
        return {_escape_value(k): _escape_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_escape_value(v) for v in value]
    return value


def escape_event(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> Any:
    """structlog processor: every field of the line escaped by :func:`escape_controls`,
    tracebacks keeping their newlines; structlog's own ``_`` fields are left alone."""
    for key, value in event.items():
        if key.startswith("_"):
            continue
        if key in MULTI_LINE_FIELDS and isinstance(value, str):
            event[key] = escape_controls(value, keep_newlines=True)
        else:
            event[key] = _escape_value(value)
    return event


TERMINAL_COPIES = ("color_message",)
"""``extra=`` fields that only repeat the message in terminal colours (uvicorn's)."""


def drop_terminal_copies(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> Any:
    """structlog processor: the line without :data:`TERMINAL_COPIES` (its message is there)."""
    for key in TERMINAL_COPIES:
        event.pop(key, None)
    return event


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


def load_renderer_in_background() -> None:
    """Start importing structlog on a thread, for a run that writes its first record after
    other work: that record then finds it loaded."""
    import_in_background("load-structlog", "structlog")


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
            drop_terminal_copies,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
        ],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            escape_event,
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
