"""Property tests (hypothesis) over every operator: random valid calls match the
float64 references; random invalid calls give the status an independent model of
the spec's check order predicts, leave outputs untouched and never raise anything
unexpected."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numerics import FP32_ROUNDINGS_BCE_BACKWARD, loss_sum_bound, max_ulp_error, ulp, ulp_bound

import ops

FLOATS = [np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
BAD_DTYPES = [np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int8)]


@st.composite
def shapes(draw, max_rank=4):
    rank = draw(st.integers(0, max_rank))
    return tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))


def broadcastable_to(draw, shape):
    dims = list(shape)[draw(st.integers(0, len(shape))):]
    return tuple(1 if draw(st.booleans()) else d for d in dims)


def strided(draw, rng, shape, dtype, low, high):
    """An array of ``shape``: contiguous, or a non-contiguous view of a larger one."""
    if draw(st.booleans()) or not shape:
        return rng.uniform(low, high, shape).astype(dtype)
    padded = tuple(s * 2 for s in shape)
    big = rng.uniform(low, high, padded).astype(dtype)
    return big[tuple(slice(None, None, 2) for _ in shape)]


@st.composite
def valid_calls(draw):
    shape = draw(shapes())
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    dtype = lambda: draw(st.sampled_from(FLOATS))  # noqa: E731
    return {
        "shape": shape,
        "probs": strided(draw, rng, shape, dtype(), 0.01, 0.99),
        "logits": strided(draw, rng, shape, dtype(), -30, 30),
        "target": strided(draw, rng, shape, dtype(), 0, 1),
        "target_b": strided(draw, rng, broadcastable_to(draw, shape), dtype(), 0, 1),
        "grad": strided(draw, rng, broadcastable_to(draw, shape), dtype(), -2, 2),
        "weight": draw(st.sampled_from([None, strided(
            draw, rng, broadcastable_to(draw, shape), dtype(), 0.5, 2)])),
        "pos_weight": draw(st.sampled_from([None, strided(
            draw, rng, broadcastable_to(draw, shape), dtype(), 0.5, 3)])),
        "reduction": draw(st.sampled_from(["none", "mean", "sum", 0, 1, 2])),
    }


@settings(max_examples=100, deadline=None)
@given(valid_calls())
def test_every_operator_matches_its_reference(c):
    r, w, p = c["reduction"], c["weight"], c["pos_weight"]
    out = ops.binary_cross_entropy_backward(c["grad"], c["probs"], c["target_b"], w, r)
    ref = ops.bce_backward_reference(c["grad"], c["probs"], c["target_b"], w, r)
    assert max_ulp_error(out, ref) <= ulp_bound(out.dtype, FP32_ROUNDINGS_BCE_BACKWARD)

    out = ops.binary_cross_entropy_with_logits_target_backward(c["grad"], c["logits"],
                                                              c["target"], w, None, r)
    ref = ops.bce_with_logits_target_backward_reference(c["grad"], c["logits"], c["target"],
                                                        w, None, r)
    assert out.dtype == c["target"].dtype
    assert max_ulp_error(out, ref) <= ulp_bound(out.dtype, 3)

    out = ops.binary_cross_entropy_with_logits_backward(c["grad"], c["logits"], c["target"],
                                                       w, p, r)
    ref = ops.bce_with_logits_backward_reference(c["grad"], c["logits"], c["target"], w, p, r)
    # sigmoid's rounding is amplified by up to |p t + 1 - t| / |result|: absolute bound
    scale = np.abs(ref) + np.broadcast_to(
        np.abs(c["grad"].astype(np.float64)) * (1 + (0 if p is None else np.abs(
            p.astype(np.float64)))) * (1 if w is None else np.abs(w.astype(np.float64))),
        ref.shape) / (max(ref.size, 1) if r in ("mean", 1) else 1)
    tolerance = 16 * 2.0**-24 * scale + ulp(ref, out.dtype)  # + the final rounding
    assert np.all(np.abs(out.astype(np.float64) - ref) <= tolerance)

    for loss, reference in [
        (ops.binary_cross_entropy(c["probs"], c["target"], w, r),
         ops.bce_forward_reference(c["probs"], c["target"], w, r)),
        (ops.binary_cross_entropy_with_logits(c["logits"], c["target"], w, p, r),
         ops.bce_with_logits_forward_reference(c["logits"], c["target"], w, p, r)),
    ]:
        # non-negative terms: the fp32 sum's relative bound, plus one rounding to a
        # 16-bit result (half an ulp of bf16 is 2**-9 relative; 1e-6 covers subnormals)
        got = loss.astype(np.float64)
        relative = loss_sum_bound(c["probs"].size) + (
            0 if loss.dtype == np.float32 else 2.0**-8)
        both_nan = np.isnan(got) & np.isnan(reference)
        assert np.all(both_nan | (np.abs(got - reference) <= relative * np.abs(reference)
                                  + 1e-6 * (loss.dtype != np.float32)))


# ----------------------------------------------------------------------------- invalid calls


@st.composite
def invalid_calls(draw):
    """A call of binary_cross_entropy_backward with random defects."""
    shape = draw(shapes(3).filter(lambda s: 0 not in s))
    reduction = draw(st.sampled_from(["mean", "sum", "none", 0, 2, 5, "avg", None, True]))
    tensors = {name: defective(draw, shape, name, broadcast=name == "weight")
               for name in ("grad_output", "input", "target", "weight")}
    return tensors, reduction, shape


def defective(draw, shape, kind, broadcast):
    """A tensor for argument ``kind`` that is fine most of the time, else None, of
    rank 9, of an unsupported dtype or of a shape that never fits (``input`` keeps
    its shape: it defines the others). ``broadcast`` draws a per-channel shape."""
    choice = draw(st.sampled_from(["ok", "ok", "ok", "none", "rank9", "dtype", "shape"]))
    if kind == "input" and choice == "shape":
        choice = "ok"
    if choice == "none":
        return None
    if choice == "rank9":
        return np.zeros((1,) * 9, np.float32)
    if choice == "dtype":
        return np.zeros(shape, draw(st.sampled_from(BAD_DTYPES)))
    if choice == "shape":
        return np.zeros(shape + (2,), np.float32)  # higher rank than input: never fits
    return np.full(shape[-1:] if broadcast else shape, 0.5, draw(st.sampled_from(FLOATS)))


def expected_status(tensors, reduction, shape) -> int:
    """An independent model of the spec's order of checks (section 1)."""
    if any(tensors[n] is None for n in ("grad_output", "input", "target")):
        return 161001
    given = [t for t in tensors.values() if t is not None]
    if any(t.ndim > 8 for t in given):
        return 161002
    if any(t.dtype not in FLOATS for t in given):
        return 161002
    for t in (tensors["target"], tensors["weight"], tensors["grad_output"]):
        if t is None:
            continue
        try:
            if np.broadcast_shapes(t.shape, shape) != shape:
                return 161002
        except ValueError:
            return 161002
    if reduction not in ("none", "mean", "sum", 0, 1, 2) or isinstance(reduction, bool):
        return 161002
    return 0


@settings(max_examples=600, deadline=None)
@given(invalid_calls())
def test_random_invalid_calls_give_the_predicted_status(call):
    tensors, reduction, shape = call
    expected = expected_status(tensors, reduction, shape)
    out = np.full(shape, 7.0, np.float32)
    status, size, executor = ops.binary_cross_entropy_backward_get_workspace_size(
        tensors["grad_output"], tensors["input"], tensors["target"], tensors["weight"],
        reduction, out)
    assert status == expected
    assert (executor is None) == (expected != 0)
    assert np.all(out == 7.0)
    try:
        ops.binary_cross_entropy_backward(tensors["grad_output"], tensors["input"],
                                          tensors["target"], tensors["weight"], reduction,
                                          out=out)
        assert expected == 0
    except ops.AclnnError as err:
        assert err.status == expected
        assert np.all(out == 7.0)


@st.composite
def invalid_logits_calls(draw):
    """A call of binary_cross_entropy_with_logits_target_backward with random defects."""
    shape = draw(shapes(3).filter(lambda s: 0 not in s))
    tensors = {name: defective(draw, shape, name, broadcast=name in (
        "grad_output", "weight", "pos_weight") and draw(st.booleans()))
        for name in ("grad_output", "input", "target", "weight", "pos_weight")}
    out_dtype = draw(st.sampled_from(FLOATS))
    reduction = draw(st.sampled_from(["mean", "none", 1, 3, "avg"]))
    return tensors, out_dtype, reduction, shape


def expected_logits_status(tensors, out_dtype, reduction, shape) -> int:
    """Independent model of the spec's section 2 order of checks."""
    if any(tensors[n] is None for n in ("grad_output", "input", "target")):
        return 161001
    given = [t for t in tensors.values() if t is not None]
    if any(t.ndim > 8 for t in given):
        return 161002
    if any(t.dtype not in FLOATS for t in given) or out_dtype != tensors["target"].dtype:
        return 161002
    if tensors["target"].shape != shape:
        return 161002
    for name in ("grad_output", "weight", "pos_weight"):
        t = tensors[name]
        if t is not None:
            try:
                if np.broadcast_shapes(t.shape, shape) != shape:
                    return 161002
            except ValueError:
                return 161002
    if reduction not in ("none", "mean", "sum", 0, 1, 2):
        return 161002
    return 0


@settings(max_examples=600, deadline=None)
@given(invalid_logits_calls())
def test_random_invalid_logits_calls_give_the_predicted_status(call):
    tensors, out_dtype, reduction, shape = call
    expected = expected_logits_status(tensors, out_dtype, reduction, shape)
    grad_target = np.full(shape, 3.0, out_dtype)
    before = grad_target.copy()
    status, _, executor = ops.binary_cross_entropy_with_logits_target_backward_get_workspace_size(
        *tensors.values(), reduction, grad_target)
    assert status == expected and (executor is None) == (expected != 0)
    np.testing.assert_array_equal(grad_target, before)
    try:
        ops.binary_cross_entropy_with_logits_target_backward(*tensors.values(), reduction,
                                                             out=grad_target)
        assert expected == 0
    except ops.AclnnError as err:
        assert err.status == expected
        np.testing.assert_array_equal(grad_target, before)


@settings(max_examples=60, deadline=None)
@given(valid_calls())
def test_target_gradient_with_pos_weight_property(c):
    p = c["pos_weight"]
    if p is None:
        return
    r = c["reduction"]
    out = ops.binary_cross_entropy_with_logits_target_backward(c["grad"], c["logits"],
                                                              c["target"], None, p, r)
    ref = ops.bce_with_logits_target_backward_reference(c["grad"], c["logits"], c["target"],
                                                        None, p, r)
    x = np.broadcast_to(c["logits"].astype(np.float64), ref.shape)
    pw = np.broadcast_to(p.astype(np.float64), ref.shape)
    g = np.broadcast_to(np.abs(c["grad"].astype(np.float64)), ref.shape)
    terms = np.abs(pw - 1) * np.log1p(np.exp(-np.abs(x))) + np.abs(np.where(x >= 0, x, pw * x))
    scale = g * terms / (max(ref.size, 1) if r in ("mean", 1) else 1)
    tolerance = 8 * 2.0**-24 * scale + 4 * ulp(ref, out.dtype)
    assert np.all(np.abs(out.astype(np.float64) - ref) <= tolerance)
