"""Vector addition: ``out = x + y`` over n elements, ragged against the block.

Mirrors Triton's tutorial 01 (vector-add). Builtins: ``dsl.tile_range`` (the Ascend
idiom: one program per vector core, each looping over tiles), ``dsl.arange``,
masked ``dsl.load``/``dsl.store``. The kernel never reads ``dsl.program_id``, so the
default grid (one program per vector core) would do; the host passes it explicitly.

    python examples/vector_add.py
"""

from __future__ import annotations

import sys

import numpy as np
from _bench import report

import dsl

PROGRAMS = 40  # one per vector core of an Ascend910B4


@dsl.jit
def add_kernel(x, y, out, n, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        mask = idx < n
        dsl.store(out, idx, dsl.load(x, idx, mask) + dsl.load(y, idx, mask), mask)


def add(x: np.ndarray, y: np.ndarray, block: int = 4096) -> np.ndarray:
    out = np.empty_like(x)
    add_kernel[(PROGRAMS,)](x, y, out, x.size, BLOCK=block)
    return out


def reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + y


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    n = 4_000_037
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    ok = report(f"vector add, n={n}", add(x, y), reference(x, y), 0.0,
                lambda: add(x, y), lambda: reference(x, y))
    sys.exit(0 if ok else 1)
