"""Shared by the benchmarks that compare candidates side by side in one run."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fns: dict[str, Callable[[], object]], repeat: int, warm_up: bool = True,
            min_sample: float = 0.0) -> dict[str, float]:
    """Interleaved best-of-``repeat`` seconds per call of each candidate, so that
    machine noise hits them alike (after one warm-up call each when ``warm_up``).

    With ``min_sample``, a candidate faster than that is timed over as many calls in a
    row as fill ``min_sample`` seconds (counted from one timed call after the warm-up,
    which may compile) and the sample's mean per call counts, as ``timeit`` does: one
    call of a few microseconds is mostly timer and cold-cache noise."""
    if warm_up:
        for fn in fns.values():
            fn()
    calls = {name: 1 for name in fns}
    if min_sample:
        for name, fn in fns.items():
            started = time.perf_counter()
            fn()
            took = time.perf_counter() - started
            if took < min_sample:
                calls[name] = max(1, int(min_sample / max(took, 1e-7)))
    best = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            count = calls[name]
            started = time.perf_counter()
            for _ in range(count):
                fn()
            best[name] = min(best[name], (time.perf_counter() - started) / count)
    return best
