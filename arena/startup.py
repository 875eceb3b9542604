"""Loading what lives as long as the process: with the garbage collector paused, then frozen;
and loading ahead, on a thread, what a run needs only later.

Loading the CLI, the jobs and their libraries makes objects that live as long as the process
and no garbage: a collection while they load only walks them (0.1 s of every command's start),
and once frozen (``gc.freeze``) later collections skip them. This module imports nothing of
arena's, so the ``arena`` command can use it before the CLI loads.
"""

from __future__ import annotations

import gc
import importlib
import sys
import threading
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


def import_in_background(thread_name: str, *modules: str) -> None:
    """Start importing ``modules`` (those not loaded yet, in order) on a thread named
    ``thread_name``, for a run that needs them only after other work: they are then loaded
    while it waits on the network or the database. Importing is safe from two threads at
    once; a failure here shows again where the module is first used."""
    missing = [module for module in modules if module not in sys.modules]
    if missing:
        threading.Thread(target=_import_all, args=(missing,), name=thread_name, daemon=True).start()


def _import_all(modules: list[str]) -> None:
    for module in modules:
        importlib.import_module(module)
