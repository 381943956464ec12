"""Shared by the examples: timing and the OK/FAIL report of their ``__main__``."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    """Best wall time of ``repeat`` calls, in seconds, after one warm-up call (which
    compiles the kernel)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def report(name: str, got: np.ndarray, want: np.ndarray, tol: float,
           kernel: Callable[[], object], numpy: Callable[[], object], repeat: int = 5) -> bool:
    """Print the max abs error against the reference with OK/FAIL, then the
    interpreter time against the NumPy reference time. Returns whether it is OK."""
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    err = float(np.max(np.abs(got64 - want64), initial=0.0))
    ok = got.shape == want.shape and err <= tol and bool(
        np.array_equal(np.isnan(got64), np.isnan(want64)))
    print(f"{name}: max abs error {err:.3g} (tolerance {tol:.3g}) {'OK' if ok else 'FAIL'}")
    t_dsl, t_np = best_of(kernel, repeat), best_of(numpy, repeat)
    print(f"  interpreter {t_dsl * 1e3:.2f} ms, NumPy {t_np * 1e3:.2f} ms, "
          f"interpreter/NumPy {t_dsl / t_np:.2f}")
    return ok
