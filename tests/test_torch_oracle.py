"""Both operators against PyTorch CPU autograd (torch==2.13.0), the second oracle.

PyTorch computes these gradients with its own formulas and op order, in fp32 or
fp64. Our fp32 results must match torch's fp64 gradient within the same rounding
bound used against the float64 reference, and torch's fp32 gradient within that
bound doubled (both sides round)."""

from __future__ import annotations

import numpy as np
import pytest
from numerics import FP32_ROUNDINGS_BCE_BACKWARD, FP32_ROUNDINGS_LOGITS_NO_POS_WEIGHT, ulp

import ops

REDUCTIONS = ["none", "mean", "sum"]


def as_torch(torch, a: np.ndarray, dtype):
    return torch.from_numpy(np.array(a)).to(dtype)  # np.array keeps 0-d arrays 0-d


def assert_close_ulps(ours: np.ndarray, theirs: np.ndarray, ulps: float, floor: np.ndarray) -> None:
    """|ours - theirs| <= ulps * fp32-ulp(max(|theirs|, floor))."""
    scale = np.maximum(np.abs(theirs), floor)
    err = np.abs(ours.astype(np.float64) - theirs) / ulp(scale, np.float32)
    assert err.max() <= ulps, f"max {err.max():.2f} fp32 ulps > {ulps}"


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("with_weight", [False, True])
def test_bce_backward_matches_torch_autograd(torch, reduction, with_weight):
    rng = np.random.default_rng(0)
    shape = (16, 10)
    x = rng.uniform(0.01, 0.99, shape).astype(np.float32)
    y = rng.uniform(0, 1, shape).astype(np.float32)
    w = rng.uniform(0.5, 2, (10,)).astype(np.float32) if with_weight else None
    g = (rng.standard_normal(shape) if reduction == "none" else rng.standard_normal(())
         ).astype(np.float32)
    ours = ops.binary_cross_entropy_backward(g, x, y, w, reduction)
    for dtype, ulps in ((torch.float64, FP32_ROUNDINGS_BCE_BACKWARD),
                        (torch.float32, 2 * FP32_ROUNDINGS_BCE_BACKWARD)):
        xt = as_torch(torch, x, dtype).requires_grad_()
        wt = as_torch(torch, w, dtype) if w is not None else None
        loss = torch.nn.functional.binary_cross_entropy(xt, as_torch(torch, y, dtype), wt,
                                                        reduction=reduction)
        loss.backward(as_torch(torch, g, dtype))
        assert_close_ulps(ours, xt.grad.numpy().astype(np.float64), ulps, np.zeros(1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("with_weight,with_pos_weight",
                         [(False, False), (True, False), (False, True), (True, True)])
def test_logits_target_backward_matches_torch_autograd(torch, reduction, with_weight,
                                                       with_pos_weight):
    rng = np.random.default_rng(1)
    shape = (16, 10)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    target = rng.uniform(0, 1, shape).astype(np.float32)
    w = rng.uniform(0.5, 2, (10,)).astype(np.float32) if with_weight else None
    p = rng.uniform(0.2, 5, (10,)).astype(np.float32) if with_pos_weight else None
    g = (rng.standard_normal(shape) if reduction == "none" else rng.standard_normal(())
         ).astype(np.float32)
    ours = ops.binary_cross_entropy_with_logits_target_backward(g, x, target, w, p, reduction)
    # With pos_weight the bracket cancels near its root: measure error against the
    # size of the terms (|x| and |(p-1) softplus| are at most |x| + |p| + 1).
    scale = np.broadcast_to(np.abs(g.astype(np.float64)), shape)
    if with_weight:
        scale = scale * w
    if reduction == "mean":
        scale = scale / x.size
    floor = scale * (np.abs(x) * (p if p is not None else 1) + 1) if p is not None else \
        np.zeros(1)
    for dtype, ulps in ((torch.float64, 8), (torch.float32, 16)):
        tt = as_torch(torch, target, dtype).requires_grad_()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            as_torch(torch, x, dtype), tt,
            as_torch(torch, w, dtype) if w is not None else None,
            reduction=reduction,
            pos_weight=as_torch(torch, p, dtype) if p is not None else None)
        loss.backward(as_torch(torch, g, dtype))
        bound = ulps if p is not None else \
            FP32_ROUNDINGS_LOGITS_NO_POS_WEIGHT * (2 if dtype == torch.float32 else 1)
        assert_close_ulps(ours, tt.grad.numpy().astype(np.float64), bound, floor)


def test_half_inputs_are_computed_in_fp32_not_half(torch):
    """Ascend computes half inputs in fp32: compare with torch's fp64 gradient of the
    same half-rounded inputs, rounded once to half (not with torch's half result)."""
    rng = np.random.default_rng(2)
    x = rng.uniform(0.05, 0.95, (200,)).astype(np.float16)
    y = rng.uniform(0, 1, (200,)).astype(np.float16)
    ours = ops.binary_cross_entropy_backward(np.array(1.0, np.float16), x, y, None, "none")
    xt = torch.from_numpy(x).double().requires_grad_()
    torch.nn.functional.binary_cross_entropy(xt, torch.from_numpy(y).double(),
                                             reduction="none").backward(torch.ones(200).double())
    expected = xt.grad.numpy()
    err = np.abs(ours.astype(np.float64) - expected) / ulp(expected, np.float16)
    assert err.max() <= 1
