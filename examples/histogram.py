"""Histogram: count the values of x in NBINS equal bins over [lo, hi); values outside
are dropped.

Not a Triton tutorial; the classic scatter-with-collisions kernel. Many lanes of many
programs hit the same bin, so the counts go through ``dsl.atomic_add`` (the
interpreter applies colliding atomics one at a time, so the counts are exact).
Builtins: ``dsl.atomic_add`` with a mask and a data-dependent index, ``dsl.floor``,
``.to(dsl.int32)``, ``dsl.tile_range``.

    python examples/histogram.py
"""

from __future__ import annotations

import sys

import numpy as np
from _bench import report

import dsl

PROGRAMS = 40


@dsl.jit
def histogram_kernel(x, bins, n, lo, scale, NBINS: dsl.constexpr, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        pos = dsl.floor((dsl.load(x, idx, idx < n) - lo) * scale)
        inside = (idx < n) & (pos >= 0.0) & (pos < NBINS)
        dsl.atomic_add(bins, dsl.where(inside, pos, 0.0).to(dsl.int32), 1, inside)


def histogram(x: np.ndarray, nbins: int, lo: float, hi: float, block: int = 4096) -> np.ndarray:
    """int32 counts of the float32 values of x in ``nbins`` bins of [lo, hi)."""
    bins = np.zeros(nbins, np.int32)
    scale = np.float32(nbins) / (np.float32(hi) - np.float32(lo))
    histogram_kernel[(PROGRAMS,)](x, bins, x.size, np.float32(lo), scale, NBINS=nbins, BLOCK=block)
    return bins


def reference(x: np.ndarray, nbins: int, lo: float, hi: float) -> np.ndarray:
    scale = np.float32(nbins) / (np.float32(hi) - np.float32(lo))
    pos = np.floor((x.astype(np.float32) - np.float32(lo)) * scale)
    inside = (pos >= 0) & (pos < nbins)
    return np.bincount(pos[inside].astype(np.int64), minlength=nbins).astype(np.int32)


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal(1_000_003).astype(np.float32)
    ok = report(f"histogram n={x.size}, 256 bins over [-4, 4)", histogram(x, 256, -4.0, 4.0),
                reference(x, 256, -4.0, 4.0), 0.0, lambda: histogram(x, 256, -4.0, 4.0),
                lambda: reference(x, 256, -4.0, 4.0))
    sys.exit(0 if ok else 1)
