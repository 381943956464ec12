"""Property tests for both operators: random ranks, shapes, broadcast patterns,
dtypes, layouts and reductions against the float64 references."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numerics import FP32_ROUNDINGS_BCE_BACKWARD, max_ulp_error, ulp_bound

import ops

DTYPES = [np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]


@st.composite
def cases(draw):
    rank = draw(st.integers(0, 5))
    shape = tuple(draw(st.lists(st.integers(0 if rank else 1, 5), min_size=rank,
                                max_size=rank)))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)

    def operand(low, high, may_broadcast=True):
        dims = list(shape)
        if may_broadcast and dims:
            # drop leading dims and set some to 1: a broadcastable operand
            dims = dims[draw(st.integers(0, len(dims))):]
            dims = [1 if draw(st.booleans()) else d for d in dims]
        arr = rng.uniform(low, high, size=dims).astype(draw(st.sampled_from(DTYPES)))
        if arr.ndim >= 2 and draw(st.booleans()):
            arr = np.ascontiguousarray(arr.swapaxes(0, 1)).swapaxes(0, 1)  # non-contiguous
        return arr

    return shape, operand, draw(st.sampled_from(["none", "mean", "sum", 0, 1, 2]))


@settings(max_examples=120, deadline=None)
@given(cases(), st.booleans())
def test_bce_backward_property(case, with_weight):
    shape, operand, reduction = case
    x = operand(0.001, 0.999, may_broadcast=False)
    y, g = operand(0, 1), operand(-2, 2)
    w = operand(0.5, 2) if with_weight else None
    out = ops.binary_cross_entropy_backward(g, x, y, w, reduction)
    assert out.shape == shape and out.dtype == x.dtype
    ref = ops.bce_backward_reference(g, x, y, w, reduction)
    assert max_ulp_error(out, ref) <= ulp_bound(out.dtype, FP32_ROUNDINGS_BCE_BACKWARD)


@settings(max_examples=120, deadline=None)
@given(cases(), st.booleans())
def test_logits_target_backward_property_without_pos_weight(case, with_weight):
    shape, operand, reduction = case
    x = operand(-50, 50, may_broadcast=False)
    t = operand(0, 1, may_broadcast=False)
    g = operand(-2, 2)
    w = operand(0.5, 2) if with_weight else None
    out = ops.binary_cross_entropy_with_logits_target_backward(g, x, t, w, None, reduction)
    assert out.shape == shape and out.dtype == t.dtype
    ref = ops.bce_with_logits_target_backward_reference(g, x, t, w, None, reduction)
    assert max_ulp_error(out, ref) <= ulp_bound(out.dtype, 3)
