"""Layer normalization over the last axis, forward and backward.

Forward: ``y = (x - mean) * rstd * w + b`` per row, with ``rstd = 1 / sqrt(var + eps)``;
mean and rstd are saved for the backward. Backward, given ``dy``: ``dx`` per row, and
the parameter gradients ``dw = sum_rows(dy * xhat)``, ``db = sum_rows(dy)``.

Mirrors Triton's tutorial 05 (layer-norm). As there, the weight gradients are reduced
in two stages: each program accumulates partial dw/db over its rows, then a second
kernel sums the partials. Triton's version spreads the partials over a few locked
rows with atomics; here each program owns its partial row (``dsl.program_id``), which
makes the result deterministic. Builtins: ``dsl.tile_range`` over tiles of rows with
a loop-carried accumulator, 2-D blocks, ``dsl.sum`` along either axis, ``dsl.sqrt``,
``dsl.where``, ``x.shape``, a dynamic ``range`` loop.

    python examples/layer_norm.py
"""

from __future__ import annotations

import sys

import numpy as np
from _bench import report, tree_row_sum

import dsl

PROGRAMS = 40


@dsl.jit
def layer_norm_fwd(x, w, b, y, mean_out, rstd_out, eps, ROWS: dsl.constexpr,
                   BLOCK_C: dsl.constexpr):
    n_rows, n_cols = x.shape[0], x.shape[1]
    cols = dsl.arange(0, BLOCK_C)[None, :]
    wv = dsl.load(w, cols, cols < n_cols).to(dsl.float32)
    bv = dsl.load(b, cols, cols < n_cols).to(dsl.float32)
    for r0 in dsl.tile_range(0, n_rows, ROWS):
        r = r0 + dsl.arange(0, ROWS)
        rows = r[:, None]
        mask = (rows < n_rows) & (cols < n_cols)
        v = dsl.load(x, rows * n_cols + cols, mask, other=0.0).to(dsl.float32)
        mean = dsl.sum(v, 1) / n_cols
        d = dsl.where(mask, v - mean[:, None], 0.0)
        rstd = 1.0 / dsl.sqrt(dsl.sum(d * d, 1) / n_cols + eps)
        dsl.store(y, rows * n_cols + cols, d * rstd[:, None] * wv + bv, mask)
        dsl.store(mean_out, r, mean, r < n_rows)
        dsl.store(rstd_out, r, rstd, r < n_rows)


@dsl.jit
def layer_norm_bwd_dx(x, dy, w, mean, rstd, dx, dw_part, db_part, ROWS: dsl.constexpr,
                      BLOCK_C: dsl.constexpr):
    n_rows, n_cols = x.shape[0], x.shape[1]
    cols = dsl.arange(0, BLOCK_C)[None, :]
    wv = dsl.load(w, cols, cols < n_cols).to(dsl.float32)
    dw_acc = dsl.zeros((BLOCK_C,), dsl.float32)
    db_acc = dsl.zeros((BLOCK_C,), dsl.float32)
    for r0 in dsl.tile_range(0, n_rows, ROWS):
        r = r0 + dsl.arange(0, ROWS)
        rows = r[:, None]
        mask = (rows < n_rows) & (cols < n_cols)
        v = dsl.load(x, rows * n_cols + cols, mask, other=0.0).to(dsl.float32)
        g = dsl.load(dy, rows * n_cols + cols, mask, other=0.0).to(dsl.float32)
        rs = dsl.load(rstd, r, r < n_rows)[:, None]
        xhat = dsl.where(mask, (v - dsl.load(mean, r, r < n_rows)[:, None]) * rs, 0.0)
        wdy = wv * g
        c1 = dsl.sum(xhat * wdy, 1) / n_cols
        c2 = dsl.sum(wdy, 1) / n_cols
        dsl.store(dx, rows * n_cols + cols, (wdy - (xhat * c1[:, None] + c2[:, None])) * rs, mask)
        dw_acc += dsl.sum(g * xhat, 0)
        db_acc += dsl.sum(g, 0)
    c = dsl.arange(0, BLOCK_C)
    row = dsl.program_id(0) * n_cols
    dsl.store(dw_part, row + c, dw_acc, c < n_cols)
    dsl.store(db_part, row + c, db_acc, c < n_cols)


@dsl.jit
def sum_rows(part, out, BLOCK_P: dsl.constexpr, BLOCK_C: dsl.constexpr):
    """out[c] = sum over the rows of part[:, c], BLOCK_P rows at a time."""
    n_parts, n_cols = part.shape[0], part.shape[1]
    for c0 in dsl.tile_range(0, n_cols, BLOCK_C):
        cols = c0 + dsl.arange(0, BLOCK_C)
        acc = dsl.zeros((BLOCK_C,), dsl.float32)
        for p0 in range(0, n_parts, BLOCK_P):
            p = p0 + dsl.arange(0, BLOCK_P)[:, None]
            mask = (p < n_parts) & (cols[None, :] < n_cols)
            acc += dsl.sum(dsl.load(part, p * n_cols + cols[None, :], mask, other=0.0), 0)
        dsl.store(out, cols, acc, cols < n_cols)


def _blocks(n_cols: int) -> tuple[int, int]:
    block_c = 1 << max(n_cols - 1, 0).bit_length()
    return max(1, min(32, 4096 // block_c)), block_c


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, mean, rstd) of a 2-D x; w and b have x.shape[1] elements."""
    y = np.empty(x.shape, x.dtype)
    mean, rstd = np.empty(x.shape[0], np.float32), np.empty(x.shape[0], np.float32)
    rows, block_c = _blocks(x.shape[1])
    layer_norm_fwd[(PROGRAMS,)](x, w, b, y, mean, rstd, np.float32(eps), ROWS=rows,
                                BLOCK_C=block_c)
    return y, mean, rstd


def layer_norm_backward(dy: np.ndarray, x: np.ndarray, w: np.ndarray, mean: np.ndarray,
                        rstd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dw, db) from the forward's saved mean and rstd."""
    n_cols = x.shape[1]
    dx = np.empty(x.shape, x.dtype)
    dw_part, db_part = (np.empty((PROGRAMS, n_cols), np.float32) for _ in range(2))
    rows, block_c = _blocks(n_cols)
    layer_norm_bwd_dx[(PROGRAMS,)](x, dy, w, mean, rstd, dx, dw_part, db_part, ROWS=rows,
                                   BLOCK_C=block_c)
    dw, db = np.empty(n_cols, np.float32), np.empty(n_cols, np.float32)
    for part, out in ((dw_part, dw), (db_part, db)):
        sum_rows[(PROGRAMS,)](part, out, BLOCK_P=64, BLOCK_C=min(block_c, 256))
    return dx, dw.astype(w.dtype), db.astype(w.dtype)


def reference(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The forward in fp32, in the kernel's order of operations."""
    f32, n = np.float32, np.float32(x.shape[1])
    v = x.astype(f32)
    mean = tree_row_sum(v) / n
    d = v - mean[:, None]
    rstd = f32(1) / np.sqrt(tree_row_sum(d * d) / n + f32(eps))
    y = d * rstd[:, None] * w.astype(f32) + b.astype(f32)
    return y.astype(x.dtype), mean, rstd


def reference_backward(dy: np.ndarray, x: np.ndarray, w: np.ndarray, mean: np.ndarray,
                       rstd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """dx in fp32 in the kernel's order; dw and db summed in float64 (the kernel adds
    them in a blocked order, so they agree within rounding)."""
    f32, n = np.float32, np.float32(x.shape[1])
    g, rs = dy.astype(f32), rstd[:, None]
    xhat = (x.astype(f32) - mean[:, None]) * rs
    wdy = w.astype(f32) * g
    c1, c2 = tree_row_sum(xhat * wdy) / n, tree_row_sum(wdy) / n
    dx = (wdy - (xhat * c1[:, None] + c2[:, None])) * rs
    dw = (g.astype(np.float64) * xhat).sum(axis=0)
    db = g.astype(np.float64).sum(axis=0)
    return dx.astype(x.dtype), dw, db


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    M, N = 4096, 1000
    x = (rng.standard_normal((M, N)) * 2 + 0.5).astype(np.float32)
    w, b = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    dy = rng.standard_normal((M, N)).astype(np.float32)
    y, mean, rstd = layer_norm(x, w, b)
    ok = report(f"layer norm forward {M}x{N}", y, reference(x, w, b)[0], 0.0,
                lambda: layer_norm(x, w, b), lambda: reference(x, w, b))
    dx, dw, db = layer_norm_backward(dy, x, w, mean, rstd)
    want = reference_backward(dy, x, w, mean, rstd)
    ok &= report("layer norm backward dx", dx, want[0], 0.0,
                 lambda: layer_norm_backward(dy, x, w, mean, rstd),
                 lambda: reference_backward(dy, x, w, mean, rstd))
    # dw, db: fp32 sums of M terms in another order: within M * 2**-24 * sum |terms|
    terms = {"dw": np.abs(dy * (x - mean[:, None]) * rstd[:, None]), "db": np.abs(dy)}
    for name, got, ref in (("dw", dw, want[1]), ("db", db, want[2])):
        ok &= report(f"layer norm backward {name}", got, ref,
                     M * 2.0**-24 * float(terms[name].sum(axis=0).max()))
    sys.exit(0 if ok else 1)
