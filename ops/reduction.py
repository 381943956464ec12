"""Deterministic full reductions for the forward losses.

A loss kernel run with ``REDUCE=True`` writes one fp32 partial sum per *tile* of
``BLOCK`` elements into the workspace (``partials[t]`` for tile ``t``); then
``sum_partials_kernel`` (one program) adds the partials in a fixed order: lane ``j``
of a block accumulator takes partials ``j, j + BLOCK, ...`` in sequence, and the
lanes are then summed in ``dsl.sum``'s halving-tree order. Partials are per tile of the fixed
``LOSS_BLOCK``, not per program, so the result depends only on the input:
bit-identical from run to run, for any grid, and between the interpreter and the
compiled code. No atomics anywhere.
"""

from __future__ import annotations

import numpy as np

import dsl

COMBINE_BLOCK = 1024


@dsl.jit
def sum_partials_kernel(partials, out, count, divisor, MEAN: dsl.constexpr,
                        BLOCK: dsl.constexpr):
    acc = dsl.zeros((BLOCK,), dsl.float32)
    for start in range(0, count, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        acc = acc + dsl.load(partials, idx, idx < count)
    total = dsl.sum(acc, axis=0)
    if MEAN:
        total = total / divisor
    dsl.store(out, 0, total)


# Tile size of the loss kernels. It fixes the partials, so the result does not depend
# on the grid or on the backend's preferred block. ``sum`` adds in a halving tree (rule
# 10 of dsl.semantic): 10 levels per partial, then at most tiles/1024 partials in
# sequence per lane, then 10 levels over the 1024 lanes.
LOSS_BLOCK = 1024


def loss_block(numel: int) -> int:
    """The tile size of a loss kernel (fixed: ``LOSS_BLOCK``)."""
    return LOSS_BLOCK


def workspace_bytes(numel: int, reduction: int) -> int:
    """Workspace a loss needs: one fp32 partial per tile for mean/sum, none otherwise."""
    if reduction == 0 or numel == 0:
        return 0
    tiles = -(-numel // loss_block(numel))
    return tiles * np.dtype(np.float32).itemsize


def partials_view(workspace: np.ndarray, numel: int) -> np.ndarray:
    """The workspace bytes seen as the fp32 partials array."""
    tiles = -(-numel // loss_block(numel))
    return workspace[: tiles * 4].view(np.float32)


def combine(partials: np.ndarray, out: object, numel: int, mean: bool) -> None:
    """Sum the per-tile partials into the 0-d ``out`` in the fixed order."""
    sum_partials_kernel[(1,)](partials, out, partials.size, float(numel),
                              MEAN=mean, BLOCK=COMBINE_BLOCK)
