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
