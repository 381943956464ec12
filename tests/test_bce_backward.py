"""binary_cross_entropy_backward against its float64 reference over a matrix of
dtypes, ranks, broadcast patterns, reductions and layouts."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from numerics import FP32_ROUNDINGS_BCE_BACKWARD, max_ulp_error, ulp_bound

import ops

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
DTYPES = [F32, F16, BF16]
SHAPES = {0: (), 1: (1000,), 3: (3, 37, 11), 8: (2, 1, 3, 2, 1, 5, 2, 3)}


def probs(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    return rng.uniform(0.001, 0.999, size=shape).astype(dtype)


def check(result: np.ndarray, g, x, y, w, reduction) -> None:
    ref = ops.bce_backward_reference(g, x, y, w, reduction)
    bound = ulp_bound(result.dtype, FP32_ROUNDINGS_BCE_BACKWARD)
    err = max_ulp_error(result, ref)
    assert err <= bound, f"max error {err:.2f} ulp > {bound}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rank", sorted(SHAPES))
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_uniform_dtypes_and_ranks(dtype, rank, reduction):
    rng = np.random.default_rng(rank)
    shape = SHAPES[rank]
    x, y = probs(rng, shape, dtype), probs(rng, shape, dtype)
    g = rng.standard_normal(shape).astype(dtype)
    w = rng.uniform(0.5, 2.0, shape).astype(dtype)
    out = ops.binary_cross_entropy_backward(g, x, y, w, reduction)
    assert out.dtype == dtype and out.shape == shape
    check(out, g, x, y, w, reduction)


@pytest.mark.parametrize("dtypes", [
    (F16, BF16, F32, BF16), (BF16, F16, F16, F32), (F32, F16, BF16, F16)], ids=str)
@pytest.mark.parametrize("out_dtype", DTYPES, ids=str)
def test_mixed_dtypes_and_out_dtype(dtypes, out_dtype):
    rng = np.random.default_rng(7)
    shape = (5, 129)
    gd, xd, yd, wd = dtypes
    x, y = probs(rng, shape, xd), probs(rng, shape, yd)
    g = rng.standard_normal(shape).astype(gd)
    w = rng.uniform(0.5, 2, shape).astype(wd)
    out = np.zeros(shape, out_dtype)
    returned = ops.binary_cross_entropy_backward(g, x, y, w, "sum", out=out)
    assert returned is out
    check(out, g, x, y, w, "sum")


def test_default_out_dtype_is_inputs_dtype():
    rng = np.random.default_rng(0)
    x = probs(rng, (10,), F16)
    out = ops.binary_cross_entropy_backward(np.float32(1.0), x, probs(rng, (10,), F32))
    assert out.dtype == F16


@pytest.mark.parametrize("reduction", ["none", "mean", 1, 2, 0])
def test_broadcast_patterns(reduction):
    """Scalar gradOutput (0-d and [1]), per-channel weight, broadcast target."""
    rng = np.random.default_rng(3)
    shape = (4, 6, 9)
    x = probs(rng, shape, F32)
    cases = [
        (np.array(0.7, F32), probs(rng, shape, F32), None),
        (np.array([0.7], F32), probs(rng, (9,), F32), rng.uniform(0.5, 2, (6, 1)).astype(F32)),
        (rng.standard_normal((6, 1)).astype(F16), probs(rng, (1, 6, 9), BF16),
         rng.uniform(0.5, 2, (9,)).astype(F32)),
        (rng.standard_normal(shape).astype(F32), probs(rng, (4, 1, 1), F32),
         rng.uniform(0.5, 2, (4, 6, 1)).astype(BF16)),
    ]
    for g, y, w in cases:
        out = ops.binary_cross_entropy_backward(g, x, y, w, reduction)
        check(out, g, x, y, w, reduction)


def test_non_contiguous_inputs_and_out_are_used_in_place():
    rng = np.random.default_rng(4)
    base = probs(rng, (12, 20), F32)
    x = base.T  # transposed
    y = probs(rng, (40, 12), F32)[::-2][:, ::-1]  # negative strides, every other row
    assert y.shape == x.shape and not y.flags.c_contiguous
    g = rng.standard_normal((20, 24)).astype(F16)[:, ::2]
    w = rng.uniform(0.5, 2, (12,)).astype(F32)
    out_storage = np.full((12, 40), 99.0, F32)
    out = out_storage[:, ::2].T  # strided output view
    ops.binary_cross_entropy_backward(g, x, y, w, "none", out=out)
    check(out, g, x, y, w, "none")
    assert np.all(out_storage[:, 1::2] == 99.0), "elements outside the out view were written"


def test_probabilities_exactly_zero_and_one_use_the_clamp():
    x = np.array([0.0, 1.0, 0.0, 1.0, 0.5], F32)
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.5], F32)
    g = np.array(1.0, F32)
    out = ops.binary_cross_entropy_backward(g, x, y, None, "none")
    eps = np.float32(1e-12)
    np.testing.assert_array_equal(out, np.array([-1 / eps, 1 / eps, 0, 0, 0], F32))
    check(out, g, x, y, None, "none")


def test_worked_example():
    out = ops.binary_cross_entropy_backward(np.array(0.1, F32), np.array(0.3, F32),
                                            np.array(0.5, F32), None, "none")
    assert out.shape == ()
    # The spec prints -0.0952381 (7 digits): agree to those digits ...
    assert abs(float(out) - (-0.0952381)) <= 0.5e-7
    # ... and with the float64 formula on the same fp32 inputs, rounded once, within 1 ulp.
    assert max_ulp_error(out, ops.bce_backward_reference(
        np.array(0.1, F32), np.array(0.3, F32), np.array(0.5, F32), None, "none")) <= 1


def test_none_and_sum_are_identical_and_mean_scales():
    rng = np.random.default_rng(5)
    x, y = probs(rng, (300,), F32), probs(rng, (300,), F32)
    g = np.array(2.0, F32)
    none = ops.binary_cross_entropy_backward(g, x, y, None, "none")
    total = ops.binary_cross_entropy_backward(g, x, y, None, "sum")
    mean = ops.binary_cross_entropy_backward(g, x, y, None, "mean")
    np.testing.assert_array_equal(none, total)
    np.testing.assert_array_equal(mean, none * np.float32(1 / 300))


def test_values_outside_unit_interval_go_through_the_formula():
    x = np.array([-0.5, 1.5, 2.0], F32)
    y = np.array([0.0, 1.0, 0.5], F32)
    out = ops.binary_cross_entropy_backward(np.array(1.0, F32), x, y, None, "none")
    check(out, 1.0 * np.ones((), F32), x, y, None, "none")


@pytest.mark.parametrize("n,block", [(1000, 64), (100_003, 1024), (65, 16), (4097, 4096)])
def test_sizes_not_multiple_of_block_with_forced_blocks(n, block):
    """The kernel at explicit block sizes and grids: ragged last tiles, several tiles
    per program, more programs than tiles."""
    rng = np.random.default_rng(n)
    x, y = probs(rng, (n,), F32), probs(rng, (n,), BF16)
    g = np.array(0.25, F16)
    out = np.zeros(n, F16)
    shape = (n,)
    for grid in [(1,), (7,), (40,), (1000,)]:
        out[:] = 0
        ops.bce_backward_kernel[grid](
            ops_view(g, shape), ops_view(x, shape), ops_view(y, shape), None, out, n, 1.0,
            HAS_WEIGHT=False, APPLY_SCALE=False, BLOCK=block)
        check(out, g, x, y, None, "none")


def ops_view(a, shape):
    import dsl

    return dsl.broadcast_to(a, shape)


def test_large_tensor_several_tiles():
    rng = np.random.default_rng(11)
    n = 300_001
    x, y = probs(rng, (n,), BF16), probs(rng, (n,), BF16)
    out = ops.binary_cross_entropy_backward(np.array([0.5], BF16), x, y, None, "mean")
    check(out, np.array([0.5], BF16), x, y, None, "mean")


def test_empty_input_returns_empty_and_leaves_out_untouched():
    x = np.zeros((0, 4), F32)
    out = ops.binary_cross_entropy_backward(np.array(1.0, F32), x, np.zeros((0, 4), F32))
    assert out.shape == (0, 4) and out.dtype == F32
    sentinel = np.zeros((0, 4), F16)
    assert ops.binary_cross_entropy_backward(np.array(1.0, F32), x, x, out=sentinel) is sentinel


def test_torch_tensors_in_torch_tensor_out(torch):
    x = torch.rand(3, 5, dtype=torch.bfloat16) * 0.9 + 0.05
    y = torch.rand(5)
    g = torch.tensor(1.5)
    out = ops.binary_cross_entropy_backward(g, x, y, None, "mean")
    assert isinstance(out, torch.Tensor) and out.dtype == torch.bfloat16
    ref = ops.bce_backward_reference(g, x, y, None, "mean")
    assert max_ulp_error(out, ref) <= 1
    # non-contiguous torch input and an explicit torch out
    xt = (torch.rand(5, 3) * 0.9 + 0.05).t()
    dest = torch.zeros(3, 5, dtype=torch.float16)
    assert ops.binary_cross_entropy_backward(g, xt, y, reduction="sum", out=dest) is dest
    assert max_ulp_error(dest, ops.bce_backward_reference(g, xt, y, None, "sum")) <= 1


def test_every_dtype_combination_small():
    """All 81 (g, x, y, w) dtype combinations on a small ragged case."""
    rng = np.random.default_rng(12)
    shape = (3, 7)
    for gd, xd, yd, wd in itertools.product(DTYPES, repeat=4):
        x, y = probs(rng, shape, xd), probs(rng, (7,), yd)
        g, w = rng.standard_normal((3, 1)).astype(gd), rng.uniform(0.5, 2, (7,)).astype(wd)
        out = ops.binary_cross_entropy_backward(g, x, y, w, "none")
        check(out, g, x, y, w, "none")
