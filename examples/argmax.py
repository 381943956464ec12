"""Row-wise argmax and max: ``idx[r] = argmax(x[r, :])``, ``val[r] = x[r, idx[r]]``, the
first index on ties, cols not a power of two (padding lanes load -inf).

Not a Triton tutorial; the reduction behind ``torch.max(x, dim=-1)`` (greedy decoding
picks tokens this way). Builtins: ``dsl.argmax`` along axis 1 (a left fold of Triton's
combine: first index on ties), ``dsl.max`` along axis 1, masked ``dsl.load`` with
``other=-inf``, ``dsl.tile_range`` over tiles of rows, ``x.shape``.

    python examples/argmax.py
"""

from __future__ import annotations

import sys

import numpy as np
from _bench import report

import dsl

PROGRAMS = 40


@dsl.jit
def argmax_kernel(x, idx_out, val_out, ROWS: dsl.constexpr, BLOCK_C: dsl.constexpr):
    n_rows, n_cols = x.shape[0], x.shape[1]
    cols = dsl.arange(0, BLOCK_C)[None, :]
    for r0 in dsl.tile_range(0, n_rows, ROWS):
        r = r0 + dsl.arange(0, ROWS)
        mask = (r[:, None] < n_rows) & (cols < n_cols)
        v = dsl.load(x, r[:, None] * n_cols + cols, mask, other=-float("inf"))
        dsl.store(idx_out, r, dsl.argmax(v, 1), r < n_rows)
        dsl.store(val_out, r, dsl.max(v, 1), r < n_rows)


def argmax(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int32 index, value) of the largest element of each row of a 2-D float array
    without NaNs."""
    idx, val = np.empty(x.shape[0], np.int32), np.empty(x.shape[0], x.dtype)
    block_c = 1 << max(x.shape[1] - 1, 0).bit_length()
    argmax_kernel[(PROGRAMS,)](x, idx, val, ROWS=max(1, min(64, 8192 // block_c)),
                               BLOCK_C=block_c)
    return idx, val


def reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    idx = np.argmax(x, axis=1)  # the first occurrence on ties
    return idx.astype(np.int32), x[np.arange(x.shape[0]), idx]


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.integers(-500, 500, (8192, 1000)).astype(np.float16)  # many ties
    (idx, val), (want_idx, want_val) = argmax(x), reference(x)
    ok = report(f"argmax {x.dtype} {x.shape[0]}x{x.shape[1]}: index", idx, want_idx, 0.0,
                lambda: argmax(x), lambda: reference(x))
    ok &= report("  value", val, want_val, 0.0)
    sys.exit(0 if ok else 1)
