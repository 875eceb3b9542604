"""Logging writes to the current stderr, never to a stream that was closed since set-up."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from arena.logs import configure_logging


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
