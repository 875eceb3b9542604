"""Loading what lives as long as the process: with the garbage collector paused, then frozen.

Loading the CLI, the jobs and their libraries makes objects that live as long as the process
and no garbage: a collection while they load only walks them (0.1 s of every command's start),
and once frozen (``gc.freeze``) later collections skip them. This module imports nothing of
arena's, so the ``arena`` command can use it before the CLI loads.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def loading_for_good() -> Iterator[None]:
    """Run the block (imports whose objects stay until exit) with the collector paused, then
    freeze what it made so later collections skip it."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
