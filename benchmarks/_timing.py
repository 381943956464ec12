"""Shared by the benchmarks that compare candidates side by side in one run."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fns: dict[str, Callable[[], object]], repeat: int, warm_up: bool = True,
            min_sample: float = 0.0) -> dict[str, float]:
    """Interleaved best-of-``repeat`` seconds per call of each candidate, so that
    machine noise hits them alike (after one warm-up call each when ``warm_up``).

    With ``min_sample``, a candidate faster than that is timed over as many calls in a
    row as fill ``min_sample`` seconds and the sample's mean per call counts, as
    ``timeit`` does: one call of a few microseconds is mostly timer and cold-cache
    noise. The count is found as ``timeit.Timer.autorange`` finds it, by timing runs
    of growing length until one fills ``min_sample``: a count read off one call would
    be too small for a kernel whose first calls are slower (the interpreter's launch
    caches fill over its first three calls), so its samples fell short."""
    if warm_up:
        for fn in fns.values():
            fn()
    calls = {name: 1 for name in fns}
    if min_sample:
        for name, fn in fns.items():
            calls[name] = _calls_filling(fn, min_sample)
    best = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            count = calls[name]
            started = time.perf_counter()
            for _ in range(count):
                fn()
            best[name] = min(best[name], (time.perf_counter() - started) / count)
    return best


def _calls_filling(fn: Callable[[], object], seconds: float) -> int:
    """How many calls of ``fn`` in a row took at least ``seconds`` (1 if one does)."""
    count = 1
    while True:
        started = time.perf_counter()
        for _ in range(count):
            fn()
        took = time.perf_counter() - started
        if took >= seconds:
            return count
        # aim past ``seconds`` from this run's rate; at least double the count
        count = max(2 * count, int(count * seconds * 1.2 / max(took, 1e-9)))
