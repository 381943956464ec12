"""Row-wise inclusive prefix sums: ``out[r, j] = x[r, 0] + ... + x[r, j]`` of a rows x
cols matrix, cols not a power of two (the padding lanes load 0 and are not stored).

Not a Triton tutorial; the scan primitive behind ``torch.cumsum(x, dim=-1)``. Builtins:
``dsl.cumsum`` along axis 1 of a 2-D block (it adds in index order, so the result
equals a sequential fp32 scan exactly), ``dsl.tile_range`` over tiles of rows,
``x.shape``.

    python examples/cumsum.py
"""

from __future__ import annotations

import sys
from functools import partial

import numpy as np
from _bench import report

import dsl

PROGRAMS = 40


@dsl.jit
def cumsum_kernel(x, out, ROWS: dsl.constexpr, BLOCK_C: dsl.constexpr):
    n_rows, n_cols = x.shape[0], x.shape[1]
    cols = dsl.arange(0, BLOCK_C)[None, :]
    for r0 in dsl.tile_range(0, n_rows, ROWS):
        rows = r0 + dsl.arange(0, ROWS)[:, None]
        mask = (rows < n_rows) & (cols < n_cols)
        v = dsl.load(x, rows * n_cols + cols, mask, other=0)
        dsl.store(out, rows * n_cols + cols, dsl.cumsum(v, 1), mask)


def cumsum(x: np.ndarray) -> np.ndarray:
    """Prefix sums along the last axis of a 2-D array, in its dtype."""
    out = np.empty_like(x)
    block_c = 1 << max(x.shape[1] - 1, 0).bit_length()
    cumsum_kernel[(PROGRAMS,)](x, out, ROWS=max(1, min(64, 4096 // block_c)), BLOCK_C=block_c)
    return out


def reference(x: np.ndarray) -> np.ndarray:
    return np.add.accumulate(x, axis=1, dtype=x.dtype)  # sequential, like np.cumsum


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    ok = True
    for x in (rng.standard_normal((4096, 1000)).astype(np.float32),
              rng.integers(-1000, 1000, (4096, 1000)).astype(np.int32)):
        ok &= report(f"cumsum {x.dtype} {x.shape[0]}x{x.shape[1]}", cumsum(x), reference(x), 0.0,
                     partial(cumsum, x), partial(reference, x))
    sys.exit(0 if ok else 1)
