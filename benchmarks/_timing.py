"""Shared by the benchmarks that compare candidates side by side in one run."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fns: dict[str, Callable[[], object]], repeat: int, warm_up: bool = True
            ) -> dict[str, float]:
    """Interleaved best-of-``repeat`` seconds per candidate, so that machine noise hits
    them alike (after one warm-up call each when ``warm_up``)."""
    if warm_up:
        for fn in fns.values():
            fn()
    best = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            started = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - started)
    return best
