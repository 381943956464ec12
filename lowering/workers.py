"""The worker threads that backends share for independent pieces of a launch.

The interpreter runs chunks whose stores are proved disjoint on these threads
(NumPy releases the GIL inside its loops), and compiled-CPU mode runs programs on
them (ctypes releases the GIL). One pool per process, started on first use and
sized by the first caller's ``Options.workers``; ``run_all`` uses at most the
count a call asks for.

Threads do not always pay: a chunk whose NumPy calls are short spends most of its
time in the interpreter's Python, which holds the GIL, and two threads then hand the
GIL back and forth at every NumPy call (a row argmax over 4096x1024 ran in 2.1 ms on
two threads against 1.6 ms on one, a row max 0.71x, a cumsum 1.61x the other way).
``ThreadingChoice`` therefore times both ways on a launch shape's first launches and
keeps the faster; either way gives the same bits (chunks run in parallel only when
their stores are proved disjoint).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_lock = threading.Lock()


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < workers:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dsl-worker")
            _pool_size = workers
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def run_all(tasks: Sequence[Callable[[], None]], workers: int) -> None:
    """Run ``tasks`` on up to ``workers`` threads and wait for all of them; the
    first exception raised by a task is re-raised here (after all have finished)."""
    if workers < 2 or len(tasks) < 2:
        for task in tasks:
            task()
        return
    futures = [_executor(workers).submit(task) for task in tasks]
    errors = []
    for future in futures:
        try:
            future.result()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others
            errors.append(exc)
    if errors:
        raise errors[0]


class ThreadingChoice:
    """Whether the launches of one launch shape (a bounds proof's key) run their chunks
    on the worker threads: each way for ``TRIALS`` launches, alternating, then the one
    whose fastest launch was faster. Unsynchronised on purpose: concurrent launches
    may lose a sample, which only delays the choice."""

    TRIALS = 3

    __slots__ = ("fastest", "runs")

    def __init__(self) -> None:
        self.fastest = [math.inf, math.inf]  # seconds, indexed by ``parallel``
        self.runs = [0, 0]

    def parallel(self) -> bool:
        """The way the next launch runs."""
        if min(self.runs) < self.TRIALS:
            return self.runs[True] <= self.runs[False]
        return self.fastest[True] <= self.fastest[False]

    def record(self, parallel: bool, seconds: float) -> None:
        """A launch that ran ``parallel`` (or not) took ``seconds``."""
        self.runs[parallel] += 1
        self.fastest[parallel] = min(self.fastest[parallel], seconds)
