"""Shared by the examples: timing, the OK/FAIL report of their ``__main__``, and the
row sum in ``dsl.sum``'s order for references that match a kernel bit for bit."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def tree_row_sum(a: np.ndarray) -> np.ndarray:
    """Sums along axis 1 in ``dsl.sum``'s order (rule 10 of dsl.semantic): with ``h`` the
    largest power of two below the length ``n``, column ``i + h`` is added to column
    ``i`` for ``i < n - h``, the other columns carry over, until one is left."""
    while a.shape[1] > 1:
        n = a.shape[1]
        half = 1 << ((n - 1).bit_length() - 1)
        a = np.concatenate([a[:, :n - half] + a[:, half:], a[:, n - half:half]], axis=1)
    return a[:, 0]


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
           kernel: Callable[[], object] | None = None, numpy: Callable[[], object] | None = None,
           repeat: int = 5) -> bool:
    """Print the max abs error against the reference with OK/FAIL (NaNs must sit in
    the same places), then, when both are given, the time of ``kernel`` (the
    interpreter) against ``numpy`` (the reference). Returns whether it is OK."""
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got64.shape != want64.shape:
        print(f"{name}: shape {got64.shape}, expected {want64.shape} FAIL")
        return False
    with np.errstate(invalid="ignore"):
        diff = np.where(got64 == want64, 0.0, np.abs(got64 - want64))  # equal infinities: 0
    same_nans = bool(np.array_equal(np.isnan(got64), np.isnan(want64)))
    err = float(np.max(np.nan_to_num(diff, nan=0.0), initial=0.0))
    ok = same_nans and err <= tol
    print(f"{name}: max abs error {err:.3g} (tolerance {tol:.3g}) {'OK' if ok else 'FAIL'}")
    if kernel is None or numpy is None:
        return ok
    t_dsl, t_np = best_of(kernel, repeat), best_of(numpy, repeat)
    print(f"  interpreter {t_dsl * 1e3:.2f} ms, NumPy {t_np * 1e3:.2f} ms, "
          f"interpreter/NumPy {t_dsl / t_np:.2f}")
    return ok
