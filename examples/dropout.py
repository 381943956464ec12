"""Low-memory dropout: ``out = x / (1 - p)`` where ``rand(seed, offset) > p``, else 0.

Mirrors Triton's tutorial 04 (low-memory-dropout): the keep mask is never stored;
it is a function of (seed, element offset) through Philox, so the backward pass (or a
second call) regenerates it from the seed alone, and it does not depend on the block
size or the grid. Builtins: ``dsl.rand`` (Philox4x32-10, Triton's recipe),
``dsl.where``, ``dsl.tile_range``.

The NumPy reference below computes Philox independently of the DSL, from Triton's
definition (``triton.language.random``) and the Random123 constants.

    python examples/dropout.py
"""

from __future__ import annotations

import sys

import numpy as np
from _bench import report

import dsl

PROGRAMS = 40


@dsl.jit
def dropout_kernel(x, out, n, p, seed, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        mask = idx < n
        v = dsl.load(x, idx, mask)
        keep = dsl.rand(seed, idx) > p
        dsl.store(out, idx, dsl.where(keep, v / (1 - p), 0.0), mask)


def dropout(x: np.ndarray, p: float, seed: int, block: int = 1024) -> np.ndarray:
    out = np.empty_like(x)
    dropout_kernel[(PROGRAMS,)](x, out, x.size, np.float32(p), seed, BLOCK=block)
    return out


def philox_rand(seed: int, offsets: np.ndarray, n_rounds: int = 10) -> np.ndarray:
    """Triton's ``tl.rand(seed, offsets)`` for int32 offsets: Philox4x32 of the counter
    (offset, 0, 0, 0) under the key (seed low word, seed high word); the first word,
    read as int32 and folded onto [0, 2**31), times float32(4.6566127342e-10)."""
    u32, u64 = np.uint32, np.uint64
    c0, c1 = offsets.astype(np.int32).view(u32), np.zeros(offsets.shape, u32)
    c2, c3 = c1.copy(), c1.copy()
    k0, k1 = u32(seed & 0xFFFFFFFF), u32((seed >> 32) & 0xFFFFFFFF)
    a, b = u64(0xD2511F53), u64(0xCD9E8D57)
    for _ in range(n_rounds):
        prod_a, prod_b = c0.astype(u64) * a, c2.astype(u64) * b
        c0, c1, c2, c3 = ((prod_b >> u64(32)).astype(u32) ^ c1 ^ k0, prod_b.astype(u32),
                          (prod_a >> u64(32)).astype(u32) ^ c3 ^ k1, prod_a.astype(u32))
        k0, k1 = u32((int(k0) + 0x9E3779B9) & 0xFFFFFFFF), u32((int(k1) + 0xBB67AE85) & 0xFFFFFFFF)
    signed = c0.view(np.int32)
    folded = np.where(signed < 0, ~signed, signed)  # -x - 1
    return folded.astype(np.float32) * np.float32(4.6566127342e-10)


def reference(x: np.ndarray, p: float, seed: int) -> np.ndarray:
    keep = philox_rand(seed, np.arange(x.size, dtype=np.int32)).reshape(x.shape) > np.float32(p)
    scale = np.float32(1) - np.float32(p)
    return np.where(keep, x / scale, np.float32(0)).astype(x.dtype)


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal(2_000_003).astype(np.float32)
    out = dropout(x, 0.3, seed=1234)
    ok = report(f"dropout p=0.3, n={x.size}", out, reference(x, 0.3, 1234), 0.0,
                lambda: dropout(x, 0.3, 1234), lambda: reference(x, 0.3, 1234))
    print(f"  kept {np.count_nonzero(out) / x.size:.4f} of the elements (expected 0.7)")
    sys.exit(0 if ok else 1)
