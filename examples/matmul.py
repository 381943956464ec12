"""Matrix multiplication ``c = a @ b`` with ``dsl.dot``, fp16 or fp32 inputs, fp32
accumulation, any M, N, K (edge tiles are masked).

Mirrors Triton's tutorial 03 (matrix-multiplication), including its grouped ordering
of the output tiles: consecutive programs take GROUP_M tiles down a column before
moving right, so the tiles of b they share stay in cache. Builtins: ``dsl.dot`` with an
accumulator (on the Cube unit when lowered; in the interpreter the products are summed
by BLAS, so the result is within fp32 rounding of the exact product, not bit-fixed),
``dsl.program_id`` with an explicit 1-D grid, ``dsl.cdiv``, ``dsl.minimum`` on
scalars, a dynamic ``range`` loop carrying the accumulator, ``x.shape``.

    python examples/matmul.py
"""

from __future__ import annotations

import sys
from functools import partial

import numpy as np
from _bench import report

import dsl


@dsl.jit
def matmul_kernel(a, b, c, BM: dsl.constexpr, BN: dsl.constexpr, BK: dsl.constexpr,
                  GROUP_M: dsl.constexpr = 8):
    M, K, N = a.shape[0], a.shape[1], b.shape[1]
    pid = dsl.program_id(0)
    tiles_n = dsl.cdiv(N, BN)
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    group_m = dsl.minimum(dsl.cdiv(M, BM) - first_m, GROUP_M)
    rm = (first_m + (pid % in_group) % group_m) * BM + dsl.arange(0, BM)
    rn = ((pid % in_group) // group_m) * BN + dsl.arange(0, BN)
    acc = dsl.zeros((BM, BN), dsl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + dsl.arange(0, BK)
        ta = dsl.load(a, rm[:, None] * K + rk[None, :], (rm[:, None] < M) & (rk[None, :] < K), 0.0)
        tb = dsl.load(b, rk[:, None] * N + rn[None, :], (rk[:, None] < K) & (rn[None, :] < N), 0.0)
        acc = dsl.dot(ta, tb, acc)
    dsl.store(c, rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) & (rn[None, :] < N))


def matmul(a: np.ndarray, b: np.ndarray, bm: int = 64, bn: int = 64, bk: int = 32) -> np.ndarray:
    """a (M, K) @ b (K, N) in fp32, a and b both fp16 or both fp32."""
    (M, _), N = a.shape, b.shape[1]
    c = np.empty((M, N), np.float32)
    grid = (-(-M // bm) * -(-N // bn),)
    matmul_kernel[grid](a, b, c, BM=bm, BN=bn, BK=bk)
    return c


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) @ b.astype(np.float32)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    M, N, K = 512, 384, 300
    ok = True
    for dtype in (np.float16, np.float32):
        a, b = (rng.standard_normal(s).astype(dtype) for s in ((M, K), (K, N)))
        # fp32 sums of K products, in another order than BLAS: within K * 2**-24 * sum|a||b|
        tol = K * 2.0**-24 * float((np.abs(a).astype(np.float32) @ np.abs(b).astype(np.float32)).max())
        ok &= report(f"matmul {np.dtype(dtype).name} {M}x{K} @ {K}x{N}", matmul(a, b),
                     reference(a, b), tol, partial(matmul, a, b), partial(reference, a, b), repeat=3)
    sys.exit(0 if ok else 1)
