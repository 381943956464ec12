"""binary_cross_entropy_with_logits_target_backward against its float64 reference."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from numerics import FP32_ROUNDINGS_LOGITS_NO_POS_WEIGHT, max_ulp_error, ulp, ulp_bound

import ops
from dsl.views import to_numpy

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
DTYPES = [F32, F16, BF16]
SHAPES = {0: (), 1: (1000,), 3: (3, 37, 11), 8: (2, 1, 3, 2, 1, 5, 2, 3)}
EPS32 = 2.0**-24


def check(result, g, x, t, w, p, reduction) -> None:
    """16-bit outputs: 1 ulp. fp32 outputs: a bound from counting fp32 roundings;
    with pos_weight the bracket can cancel near its root, so the bound there is
    absolute, scaled by the magnitudes of the two terms that cancel."""
    ref = ops.bce_with_logits_target_backward_reference(g, x, t, w, p, reduction)
    out = to_numpy(result)
    if p is None or out.dtype != F32:
        bound = ulp_bound(out.dtype, FP32_ROUNDINGS_LOGITS_NO_POS_WEIGHT)
        err = max_ulp_error(out, ref)
        assert err <= bound, f"max error {err:.2f} ulp > {bound}"
        return
    shape = out.shape
    x64 = np.broadcast_to(to_numpy(x).astype(np.float64), shape)
    p64 = np.broadcast_to(to_numpy(p).astype(np.float64), shape)
    factor = np.abs(np.broadcast_to(to_numpy(g).astype(np.float64), shape))
    if w is not None:
        factor = factor * np.abs(to_numpy(w).astype(np.float64))
    if reduction in ("mean", 1):
        factor = factor / max(out.size, 1)
    softplus = np.log1p(np.exp(-np.abs(x64)))
    terms = np.abs((p64 - 1) * softplus) + np.abs(np.where(x64 >= 0, x64, p64 * x64))
    allowed = 8 * EPS32 * terms * factor + 4 * ulp(ref, F32)
    err = np.abs(out.astype(np.float64) - ref)
    assert np.all(err <= allowed), f"worst excess {np.max(err / allowed):.2f}x the bound"


def logits(rng, shape, dtype, scale=4.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rank", sorted(SHAPES))
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("with_pos_weight", [False, True])
def test_uniform_dtypes_and_ranks(dtype, rank, reduction, with_pos_weight):
    rng = np.random.default_rng(rank + 10)
    shape = SHAPES[rank]
    x, t = logits(rng, shape, dtype), rng.random(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    w = rng.uniform(0.5, 2.0, shape).astype(dtype)
    p = rng.uniform(0.1, 4.0, shape).astype(dtype) if with_pos_weight else None
    out = ops.binary_cross_entropy_with_logits_target_backward(g, x, t, w, p, reduction)
    assert out.dtype == dtype and out.shape == shape
    check(out, g, x, t, w, p, reduction)


@pytest.mark.parametrize("target_dtype", DTYPES, ids=str)
def test_mixed_dtypes_result_has_targets_dtype(target_dtype):
    rng = np.random.default_rng(1)
    shape = (6, 33)
    x = logits(rng, shape, BF16)
    t = rng.random(shape).astype(target_dtype)
    g = rng.standard_normal((1,)).astype(F16)
    w = rng.uniform(0.5, 2, (33,)).astype(F32)
    p = rng.uniform(0.1, 4, (33,)).astype(F16)
    out = ops.binary_cross_entropy_with_logits_target_backward(g, x, t, w, p, "mean")
    assert out.dtype == target_dtype
    check(out, g, x, t, w, p, "mean")


def test_multilabel_per_class_weight_and_pos_weight_scalar_grad():
    rng = np.random.default_rng(2)
    batch, classes = 64, 80
    x = logits(rng, (batch, classes), F32)
    t = (rng.random((batch, classes)) < 0.2).astype(F32)
    w = rng.uniform(0.5, 2, (classes,)).astype(F32)
    p = rng.uniform(1, 10, (classes,)).astype(F32)
    g = np.array(1.0, F32)
    for reduction in ("none", "mean", "sum"):
        out = ops.binary_cross_entropy_with_logits_target_backward(g, x, t, w, p, reduction)
        check(out, g, x, t, w, p, reduction)


def test_large_logits_are_stable():
    x = np.array([-1000.0, -150.0, -100.5, -30.0, 0.0, 30.0, 100.5, 150.0, 1000.0], F32)
    t = np.zeros_like(x)
    g = np.array(1.0, F32)
    p = np.full(x.shape, 3.0, F32)
    out = ops.binary_cross_entropy_with_logits_target_backward(g, x, t, None, p, "none")
    assert np.all(np.isfinite(out))
    check(out, g, x, t, None, p, "none")
    plain = ops.binary_cross_entropy_with_logits_target_backward(g, x, t, None, None, "none")
    np.testing.assert_array_equal(plain, -x)


def test_worked_example():
    v = np.array([0, 1, 2, 3], F32)
    out = ops.binary_cross_entropy_with_logits_target_backward(
        v, v, np.full(4, 0.1, F32), v, v, "none")
    printed = np.array([0, -1.0, -7.4922880, -26.1254277])
    # agree with the spec's digits to within half a printed digit or one fp32 ulp
    allowed = np.maximum(0.5e-7, ulp(printed, F32))
    assert np.all(np.abs(out.astype(np.float64) - printed) <= allowed), out


def test_target_values_do_not_matter_only_shape_and_dtype():
    rng = np.random.default_rng(3)
    x, g = logits(rng, (50,), F32), rng.standard_normal((50,)).astype(F32)
    a = ops.binary_cross_entropy_with_logits_target_backward(g, x, np.zeros(50, F16), None,
                                                             np.full(50, 2.0, F32), "sum")
    b = ops.binary_cross_entropy_with_logits_target_backward(g, x, np.ones(50, F16) * 9,
                                                             None, np.full(50, 2.0, F32), "sum")
    np.testing.assert_array_equal(a, b)
    assert a.dtype == F16


def test_non_contiguous_operands():
    rng = np.random.default_rng(4)
    x = logits(rng, (30, 8), F32).T
    t = rng.random((8, 60)).astype(BF16)[:, ::2]
    g = rng.standard_normal((8, 1)).astype(F32)
    p = rng.uniform(0.5, 3, (60,)).astype(F32)[::-2]
    out_storage = np.zeros((8, 30, 2), BF16)
    out = out_storage[:, :, 0]
    ops.binary_cross_entropy_with_logits_target_backward(g, x, t, None, p, "none", out=out)
    check(out, g, x, t, None, p, "none")
    assert np.all(out_storage[:, :, 1] == 0)


def test_empty_input():
    x = np.zeros((2, 0), F32)
    out = ops.binary_cross_entropy_with_logits_target_backward(np.array(1.0, F32), x,
                                                              np.zeros((2, 0), F16))
    assert out.shape == (2, 0) and out.dtype == F16


def test_torch_tensors(torch):
    x = torch.randn(4, 10) * 3
    t = torch.rand(4, 10, dtype=torch.float16)
    p = torch.rand(10) * 3
    out = ops.binary_cross_entropy_with_logits_target_backward(torch.tensor(1.0), x, t,
                                                              pos_weight=p, reduction="mean")
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float16
    check(out, torch.tensor(1.0), x, t, None, p, "mean")
