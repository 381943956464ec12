"""Float64 NumPy references of the operators, written from the spec alone.

They share no code with the DSL kernels: every operand is converted exactly to
float64 (the inputs' own rounding is kept, as a kernel sees it), broadcast with
NumPy, and the spec's formula is evaluated in float64. Tests compare kernel results
against these, rounded once into the output dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dsl.views import to_numpy

EPSILON = 1e-12
_REDUCTION = {"none": 0, "mean": 1, "sum": 2, 0: 0, 1: 1, 2: 2}


def _f64(obj: Any, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(np.asarray(to_numpy(obj)).astype(np.float64), shape)


def _scale(reduction: Any, shape: tuple[int, ...]) -> float:
    # an empty input has nothing to scale
    return 1.0 / max(int(np.prod(shape)), 1) if _REDUCTION[reduction] == 1 else 1.0


def bce_backward_reference(grad_output: Any, input: Any, target: Any, weight: Any = None,
                           reduction: Any = "mean") -> np.ndarray:
    """d = max(x(1-x), 1e-12); out = g (x - y) / d * w * s, in float64."""
    shape = tuple(to_numpy(input).shape)
    x = _f64(input, shape)
    y = _f64(target, shape)
    g = _f64(grad_output, shape)
    w = _f64(weight, shape) if weight is not None else 1.0
    d = np.maximum(x * (1.0 - x), EPSILON)
    with np.errstate(all="ignore"):
        return g * (x - y) / d * w * _scale(reduction, shape)


def log_sigmoid(v: np.ndarray) -> np.ndarray:
    """Stable log(sigmoid(v)) = min(v, 0) - log1p(exp(-|v|))."""
    return np.minimum(v, 0.0) - np.log1p(np.exp(-np.abs(v)))


def bce_with_logits_target_backward_reference(grad_output: Any, input: Any, target: Any,
                                              weight: Any = None, pos_weight: Any = None,
                                              reduction: Any = "mean") -> np.ndarray:
    """g (logsig(-x) - p logsig(x)) w s in float64 (p = 1 when pos_weight is None)."""
    shape = tuple(to_numpy(input).shape)
    x = _f64(input, shape)
    g = _f64(grad_output, shape)
    w = _f64(weight, shape) if weight is not None else 1.0
    p = _f64(pos_weight, shape) if pos_weight is not None else 1.0
    with np.errstate(all="ignore"):
        return g * (log_sigmoid(-x) - p * log_sigmoid(x)) * w * _scale(reduction, shape)


def _reduce(loss: np.ndarray, reduction: Any) -> np.ndarray:
    code = _REDUCTION[reduction]
    if code == 0:
        return loss
    if loss.size == 0:
        return np.array(np.nan if code == 1 else 0.0)
    return np.array(loss.mean() if code == 1 else loss.sum())


def bce_forward_reference(input: Any, target: Any, weight: Any = None,
                          reduction: Any = "mean") -> np.ndarray:
    """-w (y max(log x, -100) + (1 - y) max(log(1 - x), -100)), reduced, in float64."""
    shape = tuple(to_numpy(input).shape)
    x, y = _f64(input, shape), _f64(target, shape)
    w = _f64(weight, shape) if weight is not None else 1.0
    with np.errstate(all="ignore"):
        loss = -w * (y * np.maximum(np.log(x), -100.0) + (1 - y) * np.maximum(np.log1p(-x), -100.0))
    return _reduce(np.broadcast_to(loss, shape), reduction)


def bce_with_logits_forward_reference(input: Any, target: Any, weight: Any = None,
                                      pos_weight: Any = None,
                                      reduction: Any = "mean") -> np.ndarray:
    """-w (p t logsig(x) + (1 - t) logsig(-x)), reduced, in float64."""
    shape = tuple(to_numpy(input).shape)
    x, t = _f64(input, shape), _f64(target, shape)
    w = _f64(weight, shape) if weight is not None else 1.0
    p = _f64(pos_weight, shape) if pos_weight is not None else 1.0
    loss = -w * (p * t * log_sigmoid(x) + (1 - t) * log_sigmoid(-x))
    return _reduce(np.broadcast_to(loss, shape), reduction)


def bce_with_logits_backward_reference(grad_output: Any, input: Any, target: Any,
                                       weight: Any = None, pos_weight: Any = None,
                                       reduction: Any = "mean") -> np.ndarray:
    """((p t + 1 - t) sigmoid(x) - p t) g w s in float64."""
    shape = tuple(to_numpy(input).shape)
    x, t, g = _f64(input, shape), _f64(target, shape), _f64(grad_output, shape)
    w = _f64(weight, shape) if weight is not None else 1.0
    p = _f64(pos_weight, shape) if pos_weight is not None else 1.0
    sigmoid = 1.0 / (1.0 + np.exp(-x))
    return ((p * t + 1 - t) * sigmoid - p * t) * g * w * _scale(reduction, shape)
