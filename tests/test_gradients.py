"""Each backward operator equals the numerical derivative of its forward operator
(central differences in float64), and mean-reduced losses match the reference."""

from __future__ import annotations

import numpy as np
import pytest
from numerics import loss_sum_bound

import ops

F32 = np.float32


def central_difference(loss, values: np.ndarray, h: float) -> np.ndarray:
    """d loss / d values, elementwise, by central differences in float64."""
    grad = np.zeros(values.shape)
    flat = values.reshape(-1)
    for i in range(flat.size):
        saved = flat[i]
        flat[i] = saved + h
        up = float(loss(values))
        flat[i] = saved - h
        down = float(loss(values))
        flat[i] = saved
        grad.reshape(-1)[i] = (up - down) / (2 * h)
    return grad


def data(seed: int):
    rng = np.random.default_rng(seed)
    shape = (3, 5)
    return (rng.uniform(0.1, 0.9, shape), rng.uniform(0, 1, shape),
            rng.standard_normal(shape) * 2, rng.uniform(0.5, 2, (5,)), rng.uniform(0.2, 4, (5,)))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("with_weight", [False, True])
def test_bce_backward_is_the_derivative_of_bce(reduction, with_weight):
    probs, target, _, weight, _ = data(0)
    w = weight if with_weight else None
    exact = central_difference(lambda p: ops.bce_forward_reference(p, target, w, reduction),
                               probs.copy(), 1e-6)
    ours_forward = central_difference(  # the fp32 forward operator itself, coarser steps
        lambda p: ops.binary_cross_entropy(p.astype(F32), target.astype(F32),
                                           None if w is None else w.astype(F32), reduction),
        probs.copy(), 1e-2)
    grad = ops.binary_cross_entropy_backward(np.array(1.0, F32), probs.astype(F32),
                                             target.astype(F32),
                                             None if w is None else w.astype(F32), reduction)
    np.testing.assert_allclose(grad, exact, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(grad, ours_forward, rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("with_pos_weight", [False, True])
def test_with_logits_gradients_are_the_derivatives_of_the_loss(reduction, with_pos_weight):
    _, target, logits, weight, pos_weight = data(1)
    p = pos_weight if with_pos_weight else None
    f32 = lambda a: None if a is None else a.astype(F32)  # noqa: E731
    one = np.array(1.0, F32)
    by_input = central_difference(
        lambda x: ops.bce_with_logits_forward_reference(x, target, weight, p, reduction),
        logits.copy(), 1e-6)
    by_target = central_difference(
        lambda t: ops.bce_with_logits_forward_reference(logits, t, weight, p, reduction),
        target.copy(), 1e-6)
    grad_input = ops.binary_cross_entropy_with_logits_backward(
        one, f32(logits), f32(target), f32(weight), f32(p), reduction)
    grad_target = ops.binary_cross_entropy_with_logits_target_backward(
        one, f32(logits), f32(target), f32(weight), f32(p), reduction)
    np.testing.assert_allclose(grad_input, by_input, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(grad_target, by_target, rtol=2e-5, atol=1e-6)
    ours_forward = central_difference(
        lambda t: ops.binary_cross_entropy_with_logits(f32(logits), t.astype(F32), f32(weight),
                                                       f32(p), reduction), target.copy(), 1e-2)
    np.testing.assert_allclose(grad_target, ours_forward, rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("n", [1, 1000, 123_457, 2_000_003])
def test_mean_reduced_losses_match_the_reference_within_fp32_accumulation(n):
    rng = np.random.default_rng(n)
    probs = rng.uniform(0.01, 0.99, n).astype(F32)
    logits = (rng.standard_normal(n) * 4).astype(F32)
    target = rng.uniform(0, 1, n).astype(F32)
    for ours, ref in [
        (ops.binary_cross_entropy(probs, target), ops.bce_forward_reference(probs, target)),
        (ops.binary_cross_entropy_with_logits(logits, target),
         ops.bce_with_logits_forward_reference(logits, target)),
    ]:
        bound = loss_sum_bound(n) * abs(float(ref))  # all terms are non-negative
        assert abs(float(ours) - float(ref)) <= bound, (float(ours), float(ref))
