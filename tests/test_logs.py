"""Logging writes to the current stderr, never to a stream that was closed since set-up; a log
line is one line, whatever outside text it carries."""

from __future__ import annotations

import io
import json
import logging
import re
import sys

import pytest

from arena.logs import StructlogFormatter, configure_logging


@pytest.fixture
def restore_logging() -> object:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield root
    root.handlers[:] = handlers
    root.setLevel(level)


def test_a_stream_closed_after_set_up_is_never_written(
    restore_logging: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("INFO")
    first.close()  # what a test harness does to the capture of an earlier test
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    logging.getLogger("arena.test").warning("after the swap")
    output = second.getvalue()
    assert "after the swap" in output
    assert "Logging error" not in output


def test_configuring_twice_keeps_one_handler(restore_logging: logging.Logger) -> None:
    configure_logging("INFO")
    configure_logging("DEBUG", json_logs=True)
    ours = [h for h in logging.getLogger().handlers if getattr(h, "_arena", False)]
    assert len(ours) == 1


# every control character a log line must never carry raw: C0 (newline, tab, ESC), DEL, C1
# (NEL) and the Unicode line and paragraph separators
HOSTILE = "/\nforged line \x1b[31mred\r\t\x00\x1c\x7f\x85\x9b\u2028\u2029 end"
RAW_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
ESCAPED = "/\\nforged line \\x1b[31mred\\r\\t\\x00\\x1c\\x7f\\x85\\x9b\\u2028\\u2029 end"


@pytest.mark.parametrize("json_logs", [False, True], ids=["text", "json"])
def test_outside_text_is_escaped_in_message_and_fields(json_logs: bool) -> None:
    """A record whose argument and ``extra=`` fields carry every kind of control character is
    one line, with each control written as its escape, in both renderings."""
    record = _record("arena.web.access", "GET %s %d", (HOSTILE, 404), path=HOSTILE, bare="\x1b[2J")
    line = StructlogFormatter(json_logs).format(record)
    assert line.splitlines() == [line] and not RAW_CONTROL.search(line)
    if json_logs:
        fields = json.loads(line)
        assert fields["event"] == f"GET {ESCAPED} 404"
        assert fields["path"] == ESCAPED and fields["bare"] == "\\x1b[2J"
    else:  # structlog quotes a field holding a space with repr(): its backslashes double
        assert f"GET {ESCAPED} 404" in line and "bare=\\x1b[2J" in line


@pytest.mark.parametrize("json_logs", [False, True], ids=["text", "json"])
def test_a_traceback_keeps_its_lines(json_logs: bool) -> None:
    """arena's own tracebacks still print on several lines; the outside text inside them is
    escaped all the same (here an ESC in the exception's message)."""
    try:
        raise ValueError("bad book \x1b[2J from the CLOB")
    except ValueError:
        record = _record("arena.jobs", "failed on %s", ("a\nb",), exc_info=sys.exc_info())
    output = StructlogFormatter(json_logs).format(record)
    assert not RAW_CONTROL.search(output.replace("\n", ""))
    message, traceback = output, output
    if json_logs:
        fields = json.loads(output)
        message, traceback = fields["event"], fields["exception"]
    assert "failed on a\\nb" in message
    assert traceback.count("\n") > 2 and "Traceback (most recent call last):" in traceback
    assert "ValueError: bad book \\x1b[2J from the CLOB" in traceback


def _record(name: str, msg: str, args: tuple[object, ...], **fields: object) -> logging.LogRecord:
    """A record as ``logging.getLogger(name).info(msg, *args, extra=...)`` makes it."""
    return logging.makeLogRecord(
        {"name": name, "msg": msg, "args": args, "levelno": logging.INFO, "levelname": "INFO"}
        | fields
    )


@pytest.mark.parametrize("json_logs", [False, True], ids=["text", "json"])
def test_uvicorns_coloured_copy_of_the_message_is_left_out(json_logs: bool) -> None:
    """Uvicorn logs each line twice, plain and as ``extra={"color_message": ...}`` with
    terminal colours; a log line keeps the plain one only."""
    coloured = '%s - "%s %s HTTP/%s" \x1b[32m%d\x1b[0m'
    args = ("127.0.0.1:5000", "GET", "/", "1.1", 200)
    record = _record("uvicorn.access", '%s - "%s %s HTTP/%s" %d', args, color_message=coloured)
    line = StructlogFormatter(json_logs).format(record)
    assert "color_message" not in line and "x1b" not in line
    assert '127.0.0.1:5000 - \\"GET / HTTP/1.1\\" 200' in line or (
        '127.0.0.1:5000 - "GET / HTTP/1.1" 200' in line
    )
