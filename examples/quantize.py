"""Symmetric int8 quantization with one scale per row, and dequantization:
``scale[r] = max|x[r, :]| / 127``, ``q = clamp(floor(x / scale + 0.5), -127, 127)``
as int8, and back ``x' = q * scale`` (so ``|x - x'| <= scale / 2``).

Not a Triton tutorial; the per-token absmax scheme of LLM.int8()-style inference.
Rounding is half up (``floor(x + 0.5)``); an all-zero row gets scale 1. Builtins:
``dsl.max`` of ``dsl.abs`` along a row, ``dsl.floor``, ``dsl.clamp``,
``.to(dsl.int8)`` and back ``.to(dsl.float32)``, ``dsl.reshape``, ``dsl.where``,
``dsl.tile_range`` over tiles of rows, ``x.shape``.

    python examples/quantize.py
"""

from __future__ import annotations

import sys

import numpy as np
from _bench import report

import dsl

PROGRAMS = 40


@dsl.jit
def quantize_kernel(x, q, scale_out, ROWS: dsl.constexpr, BLOCK_C: dsl.constexpr):
    n_rows, n_cols = x.shape[0], x.shape[1]
    cols = dsl.arange(0, BLOCK_C)[None, :]
    for r0 in dsl.tile_range(0, n_rows, ROWS):
        r = r0 + dsl.arange(0, ROWS)
        mask = (r[:, None] < n_rows) & (cols < n_cols)
        v = dsl.load(x, r[:, None] * n_cols + cols, mask, other=0.0).to(dsl.float32)
        amax = dsl.max(dsl.abs(v), 1)
        scale = dsl.where(amax > 0.0, amax / 127.0, 1.0)
        qv = dsl.clamp(dsl.floor(v / scale[:, None] + 0.5), -127.0, 127.0)
        # cast and store as 1-D: bishengir pads a 2-D (ROWS, C) cast to int8 to 32 rows of UB
        flat = ROWS * BLOCK_C
        dsl.store(q, dsl.reshape(r[:, None] * n_cols + cols, flat),
                  dsl.reshape(qv, flat).to(dsl.int8), dsl.reshape(mask, flat))
        dsl.store(scale_out, r, scale, r < n_rows)


@dsl.jit
def dequantize_kernel(q, scale, out, ROWS: dsl.constexpr, BLOCK_C: dsl.constexpr):
    n_rows, n_cols = q.shape[0], q.shape[1]
    cols = dsl.arange(0, BLOCK_C)[None, :]
    for r0 in dsl.tile_range(0, n_rows, ROWS):
        r = r0 + dsl.arange(0, ROWS)
        mask = (r[:, None] < n_rows) & (cols < n_cols)
        qv = dsl.load(q, r[:, None] * n_cols + cols, mask, other=0).to(dsl.float32)
        s = dsl.load(scale, r, r < n_rows, other=0.0)[:, None]
        dsl.store(out, r[:, None] * n_cols + cols, qv * s, mask)


def _blocks(n_cols: int) -> tuple[int, int]:
    block_c = 1 << max(n_cols - 1, 0).bit_length()
    return max(1, min(64, 4096 // block_c)), block_c


def quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 values, float32 scale per row) of a 2-D float array."""
    q, scale = np.empty(x.shape, np.int8), np.empty(x.shape[0], np.float32)
    rows, block_c = _blocks(x.shape[1])
    quantize_kernel[(PROGRAMS,)](x, q, scale, ROWS=rows, BLOCK_C=block_c)
    return q, scale


def dequantize(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    out = np.empty(q.shape, np.float32)
    rows, block_c = _blocks(q.shape[1])
    dequantize_kernel[(PROGRAMS,)](q, scale, out, ROWS=rows, BLOCK_C=block_c)
    return out


def reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = x.astype(np.float32)
    amax = np.abs(v).max(axis=1)
    scale = np.where(amax > 0, amax / np.float32(127), np.float32(1))
    q = np.clip(np.floor(v / scale[:, None] + np.float32(0.5)), -127, 127).astype(np.int8)
    return q, scale


def reference_dequantize(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return q.astype(np.float32) * scale[:, None]


if __name__ == "__main__":
    x = (np.random.default_rng(0).standard_normal((4096, 1000)) * 3).astype(np.float32)
    x[7] = 0.0  # an all-zero row
    (q, scale), (want_q, want_scale) = quantize(x), reference(x)
    ok = report(f"quantize {x.shape[0]}x{x.shape[1]}: int8 values", q, want_q, 0.0,
                lambda: quantize(x), lambda: reference(x))
    ok &= report("  scales", scale, want_scale, 0.0)
    ok &= report("dequantize", dequantize(q, scale), reference_dequantize(q, scale), 0.0,
                 lambda: dequantize(q, scale), lambda: reference_dequantize(q, scale))
    # within half a step, plus the fp32 roundings of x / scale and q * scale (|x / scale| <= 127:
    # each moves the result by at most 127 * 2**-24 steps, 127 * 2**-23 half steps)
    ok &= report("  round trip |x - x'| / (scale / 2)",
                 np.abs(x - dequantize(q, scale)) / (scale[:, None] / 2), np.zeros(x.shape),
                 1 + 2 * 127 * 2.0**-23)
    sys.exit(0 if ok else 1)
