"""Embedding lookup: ``out[t, :] = table[ids[t], :]`` for a vector of token ids, an
embedding dimension not a power of two.

Not a Triton tutorial; the gather behind ``torch.nn.functional.embedding``. The ids are
loaded in the kernel and used as the row index of the table, so the load's index
depends on data (the interpreter checks every id against the table's bounds before
anything is written: a bad id raises ``dsl.OutOfBoundsError`` naming the lane).
Builtins: a data-dependent ``dsl.load`` index, 2-D blocks, ``dsl.tile_range`` over
tiles of tokens, ``x.shape``.

    python examples/embedding.py
"""

from __future__ import annotations

import sys

import numpy as np
from _bench import report

import dsl

PROGRAMS = 40


@dsl.jit
def embedding_kernel(ids, table, out, ROWS: dsl.constexpr, BLOCK_D: dsl.constexpr):
    n_tokens, dim = out.shape[0], out.shape[1]
    cols = dsl.arange(0, BLOCK_D)[None, :]
    for t0 in dsl.tile_range(0, n_tokens, ROWS):
        t = t0 + dsl.arange(0, ROWS)
        row = dsl.load(ids, t, t < n_tokens, other=0)[:, None]
        mask = (t[:, None] < n_tokens) & (cols < dim)
        dsl.store(out, t[:, None] * dim + cols, dsl.load(table, row * dim + cols, mask), mask)


def embedding(ids: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Rows of the 2-D ``table`` picked by the 1-D integer ``ids``."""
    out = np.empty((ids.size, table.shape[1]), table.dtype)
    block_d = 1 << max(table.shape[1] - 1, 0).bit_length()
    embedding_kernel[(PROGRAMS,)](ids, table, out, ROWS=max(1, min(64, 8192 // block_d)),
                                  BLOCK_D=block_d)
    return out


def reference(ids: np.ndarray, table: np.ndarray) -> np.ndarray:
    return table[ids]


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    table = rng.standard_normal((50_000, 300)).astype(np.float16)  # vocabulary x dim
    ids = rng.integers(0, table.shape[0], 16_384).astype(np.int32)  # a batch of tokens
    ok = report(f"embedding {ids.size} tokens from a {table.shape[0]}x{table.shape[1]} table",
                embedding(ids, table), reference(ids, table), 0.0, lambda: embedding(ids, table),
                lambda: reference(ids, table))
    sys.exit(0 if ok else 1)
