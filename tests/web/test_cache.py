"""The result cache's refresh worker (issues 24/25, "no reader waits on a recomputation"): after
a write, every stale result is recomputed on one worker thread, one at a time, each at most
once per its minimum interval, while readers get the last value at once.

Before the worker, each stale key got a thread of its own: at scale 1, twenty results were
recomputed side by side after every write, the dashboard's p50 rose to 10 s and the server
to 3.4 GiB (``bench_dashboard.py``)."""

from __future__ import annotations

import threading
import time

from arena.web.cache import ResultCache


class Recorder:
    """Refresh functions that record how many run at once, held until released."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.calls: list[tuple[str, int]] = []
        self.release = threading.Event()

    def refresh(self, key: str, version: int) -> object:
        def run() -> str:
            with self.lock:
                self.running += 1
                self.most = max(self.most, self.running)
                self.calls.append((key, version))
            assert self.release.wait(30), "never released"
            with self.lock:
                self.running -= 1
            return f"{key}@{version}"

        return run


def _held(cache: ResultCache, keys: list[str]) -> None:
    for key in keys:
        assert cache.latest(key, 0, lambda k=key: f"{k}@0", lambda: "unused") == f"{key}@0"


def test_stale_results_are_recomputed_one_at_a_time_and_readers_get_the_last() -> None:
    cache, rec = ResultCache(min_interval=0), Recorder()
    keys = [f"k{i}" for i in range(6)]
    _held(cache, keys)
    for key in keys:  # a write: every key's version moves on; each reader answers at once
        assert cache.latest(key, 1, lambda: "never here", rec.refresh(key, 1)) == f"{key}@0"
    time.sleep(0.2)  # the worker has started the first and holds it
    assert rec.most == 1 and len(rec.calls) == 1
    rec.release.set()
    assert cache.settle(30)
    assert rec.most == 1  # never two at once
    assert sorted(rec.calls) == [(key, 1) for key in keys]  # each once
    for key in keys:
        assert cache.latest(key, 1, lambda: "never here", lambda: "unused") == f"{key}@1"


def test_a_key_queued_again_is_recomputed_once_at_its_newest_version() -> None:
    cache, rec = ResultCache(min_interval=0), Recorder()
    _held(cache, ["busy", "queued"])
    cache.latest("busy", 1, lambda: "x", rec.refresh("busy", 1))
    time.sleep(0.2)  # "busy" is being computed; "queued" waits behind it
    for version in (1, 2, 3):  # three writes while it waits
        cache.latest("queued", version, lambda: "x", rec.refresh("queued", version))
    rec.release.set()
    assert cache.settle(30)
    assert rec.calls == [("busy", 1), ("queued", 3)]
    assert cache.latest("queued", 3, lambda: "x", lambda: "x") == "queued@3"


def test_a_key_is_recomputed_at_most_once_per_min_interval() -> None:
    cache, rec = ResultCache(min_interval=0.6), Recorder()
    rec.release.set()
    _held(cache, ["k"])  # computed now
    started = time.monotonic()
    assert cache.latest("k", 1, lambda: "x", rec.refresh("k", 1)) == "k@0"
    assert cache.settle(30)
    assert rec.calls == [("k", 1)]
    assert time.monotonic() - started >= 0.6  # not before its interval had passed
    assert cache.latest("k", 1, lambda: "x", lambda: "x") == "k@1"


def test_a_failed_refresh_keeps_the_last_value_and_is_tried_again_on_the_next_request() -> None:
    cache = ResultCache(min_interval=0)
    _held(cache, ["k"])

    def boom() -> str:
        raise RuntimeError("database went away")

    assert cache.latest("k", 1, lambda: "x", boom) == "k@0"
    assert cache.settle(30)
    assert cache.latest("k", 1, lambda: "x", lambda: "k@1") == "k@0"  # still the last one
    assert cache.settle(30)
    assert cache.latest("k", 1, lambda: "x", lambda: "x") == "k@1"


def test_the_worker_rests_between_computations_to_keep_to_its_duty() -> None:
    """At duty 0.5, a computation of 0.3 s is followed by 0.3 s of rest before the next: the
    worker never takes more than half a core from the readers, however many results wait."""
    cache = ResultCache(min_interval=0, duty=0.5)
    _held(cache, ["a", "b"])
    spans: list[tuple[float, float]] = []

    def slow(name: str) -> object:
        def run() -> str:
            start = time.monotonic()
            time.sleep(0.3)
            spans.append((start, time.monotonic()))
            return name

        return run

    cache.latest("a", 1, lambda: "x", slow("a@1"))
    cache.latest("b", 1, lambda: "x", slow("b@1"))
    assert cache.settle(30)
    (_, first_end), (second_start, _) = spans
    assert second_start - first_end >= 0.3 * 0.99
    assert cache.latest("b", 1, lambda: "x", lambda: "x") == "b@1"
