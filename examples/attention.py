"""Fused attention forward: ``out = softmax(q @ k^T * scale) @ v`` per (batch x head),
small head dims (16, 32, 64), any sequence length (the last key block is masked).

Mirrors Triton's tutorial 06 (fused-attention), forward pass, non-causal: the
attention matrix is never stored; each program takes BM queries of one head and
streams the keys and values in blocks of BN with the online softmax (a running max
``m``, a running sum ``l`` and a rescaled accumulator). Builtins: two ``dsl.dot`` per
step (the second on fp16 probabilities when the inputs are fp16, as in Triton),
``dsl.full``/``dsl.zeros`` accumulators carried through a dynamic ``range`` loop,
``dsl.max``/``dsl.sum`` along rows, ``dsl.exp``, ``dsl.maximum``, ``dsl.where``, a
block transposed with ``.T``, a 2-D grid of
``dsl.program_id(0)``/``dsl.program_id(1)``, ``x.shape``.

    python examples/attention.py
"""

from __future__ import annotations

import sys
from functools import partial

import numpy as np
from _bench import report

import dsl


@dsl.jit
def attention_fwd(q, k, v, out, scale, BM: dsl.constexpr, BN: dsl.constexpr,
                  HEAD_DIM: dsl.constexpr):
    n_ctx = q.shape[1]
    base = dsl.program_id(1) * n_ctx * HEAD_DIM  # this (batch x head)
    rm = dsl.program_id(0) * BM + dsl.arange(0, BM)
    d = dsl.arange(0, HEAD_DIM)
    qt = dsl.load(q, base + rm[:, None] * HEAD_DIM + d[None, :], rm[:, None] < n_ctx, 0.0)
    m = dsl.full((BM,), -float("inf"), dsl.float32)
    l = dsl.zeros((BM,), dsl.float32)
    acc = dsl.zeros((BM, HEAD_DIM), dsl.float32)
    for n0 in range(0, n_ctx, BN):
        rn = n0 + dsl.arange(0, BN)
        kt = dsl.load(k, base + rn[:, None] * HEAD_DIM + d[None, :], rn[:, None] < n_ctx, 0.0)
        s = dsl.where(rn[None, :] < n_ctx, dsl.dot(qt, kt.T) * scale, -float("inf"))
        m_new = dsl.maximum(m, dsl.max(s, 1))
        p = dsl.exp(s - m_new[:, None])
        alpha = dsl.exp(m - m_new)  # 0 on the first block (m = -inf)
        l = l * alpha + dsl.sum(p, 1)
        vt = dsl.load(v, base + rn[:, None] * HEAD_DIM + d[None, :], rn[:, None] < n_ctx, 0.0)
        acc = dsl.dot(p.to(vt.dtype), vt, acc * alpha[:, None])
        m = m_new
    dsl.store(out, base + rm[:, None] * HEAD_DIM + d[None, :], acc / l[:, None],
              rm[:, None] < n_ctx)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, bm: int = 32, bn: int = 64
              ) -> np.ndarray:
    """q, k, v of shape (batch x heads, n_ctx, head_dim), all fp16 or all fp32; the
    result is fp32."""
    bh, n_ctx, head_dim = q.shape
    out = np.empty(q.shape, np.float32)
    grid = (-(-n_ctx // bm), bh)
    attention_fwd[grid](q, k, v, out, np.float32(head_dim ** -0.5), BM=bm, BN=bn,
                        HEAD_DIM=head_dim)
    return out


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Plain softmax attention in float64."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    s = q @ k.transpose(0, 2, 1) * np.float64(np.float32(q.shape[-1] ** -0.5))
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def tolerance(v: np.ndarray) -> float:
    """A bound on |out - reference|. out is a convex combination of rows of v: sum p v /
    sum p. In fp32 each sum of n_ctx terms is off by at most n_ctx * 2**-24 relative
    (recursive summation); with the exps, the rescalings by alpha and the head_dim-term
    score dots, 4 * (n_ctx + head_dim) * 2**-24 relative to max|v|. With fp16 inputs the
    probabilities are also rounded to fp16 (2**-11 relative) before the second dot."""
    _, n_ctx, head_dim = v.shape
    rel = 4 * (n_ctx + head_dim) * 2.0**-24 + (2.0**-11 if v.dtype == np.float16 else 0.0)
    return rel * float(np.abs(v).max())


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    shape = (2 * 8, 1000, 32)  # batch 2 x 8 heads, 1000 tokens, head dim 32
    ok = True
    for dtype in (np.float16, np.float32):
        q, k, v = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
        ok &= report(f"attention {np.dtype(dtype).name} {shape}", attention(q, k, v),
                     reference(q, k, v), tolerance(v), partial(attention, q, k, v),
                     partial(reference, q, k, v), repeat=3)
    sys.exit(0 if ok else 1)
