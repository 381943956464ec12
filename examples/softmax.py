"""Fused row softmax: ``out[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max))`` of a
rows x cols matrix, cols not a power of two (the padding lanes are masked).

Mirrors Triton's tutorial 02 (fused-softmax): one read and one write of x instead of
the five passes of the unfused version. Here a program takes a tile of ROWS rows at a
time (``dsl.tile_range`` over rows, a 2-D block of ROWS x BLOCK_C), which keeps the
Ascend vector cores busy on short rows. Builtins: 2-D ``dsl.arange`` blocks with
``[:, None]``, masked ``dsl.load`` with ``other=-inf``, ``dsl.max``/``dsl.sum`` along an
axis, ``dsl.exp``, ``x.shape`` (the caller's shape: a strided view, say every other
column of a wider matrix, is read in place through the same logical row-major index).

    python examples/softmax.py
"""

from __future__ import annotations

import sys

import numpy as np
from _bench import report, tree_row_sum

import dsl

PROGRAMS = 40


@dsl.jit
def softmax_kernel(x, out, ROWS: dsl.constexpr, BLOCK_C: dsl.constexpr):
    n_rows, n_cols = x.shape[0], x.shape[1]
    cols = dsl.arange(0, BLOCK_C)[None, :]
    for r0 in dsl.tile_range(0, n_rows, ROWS):
        rows = r0 + dsl.arange(0, ROWS)[:, None]
        mask = (rows < n_rows) & (cols < n_cols)
        v = dsl.load(x, rows * n_cols + cols, mask, other=-float("inf")).to(dsl.float32)
        num = dsl.exp(v - dsl.max(v, 1)[:, None])  # padding lanes: exp(-inf) = 0
        dsl.store(out, rows * n_cols + cols, num / dsl.sum(num, 1)[:, None], mask)


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis of a 2-D float array (any strides)."""
    out = np.empty(x.shape, x.dtype)
    block_c = 1 << max(x.shape[1] - 1, 0).bit_length()  # next power of two
    softmax_kernel[(PROGRAMS,)](x, out, ROWS=max(1, min(64, 8192 // block_c)), BLOCK_C=block_c)
    return out


def reference(x: np.ndarray) -> np.ndarray:
    """In fp32 as the kernel computes: exp at fp32 precision (float64, rounded once) and
    the row sum added in dsl.sum's tree order, so the kernel matches it exactly."""
    v = x.astype(np.float32)
    num = np.exp((v - v.max(axis=1, keepdims=True)).astype(np.float64)).astype(np.float32)
    return (num / tree_row_sum(num)[:, None]).astype(x.dtype)


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal((4096, 781)).astype(np.float32)
    ok = report(f"softmax {x.shape[0]}x{x.shape[1]}", softmax(x), reference(x), 0.0,
                lambda: softmax(x), lambda: reference(x))
    sys.exit(0 if ok else 1)
