"""Argument validation of the two backward operators, in the spec's order.

``../shared/spec/bce_ops.md`` fixes the order of the checks and the status code of
each; the first failure wins. Nothing here computes or writes: the operators call
these functions before building any view or launching any kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsl import dtypes as dt
from dsl.dtypes import DType
from dsl.views import broadcast_shape_ok
from ops import status
from ops.tensors import MAX_RANK, SUPPORTED, device_error, dtype_name, dtype_of, is_tensor

REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


@dataclass(frozen=True)
class Checked:
    """What validation established about a call."""

    shape: tuple[int, ...]  # input's shape: the iteration space
    reduction: int  # 0 none, 1 mean, 2 sum
    out_dtype: DType
    promoted: DType

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


def _check_required(named: dict[str, Any]) -> None:
    """Step 1: required tensors present (161001)."""
    for name, value in named.items():
        if value is None:
            raise status.nullptr(f"{name} is a required tensor and must not be None")


def _check_rank(named: dict[str, Any]) -> None:
    """Step 2: every tensor (given ones) is a tensor of rank <= 8 (161002)."""
    for name, value in named.items():
        if value is None:
            continue
        if not is_tensor(value):
            raise status.invalid(f"{name} must be a NumPy array or a torch tensor, "
                                 f"got {type(value).__name__}")
        if value.ndim > MAX_RANK:
            raise status.invalid(f"{name} has rank {value.ndim}; at most {MAX_RANK} is supported")


def _check_dtypes(named: dict[str, Any]) -> None:
    """Step 3: dtype in FLOAT/FLOAT16/BFLOAT16 and the tensor usable here (161002)."""
    for name, value in named.items():
        if value is None:
            continue
        problem = device_error(value)
        if problem:
            raise status.invalid(f"{name}: {problem}")
        if dtype_of(value) not in SUPPORTED:
            raise status.invalid(f"{name} has dtype {dtype_name(value)}; supported: "
                                 "float32, float16, bfloat16")


def _check_broadcastable(shape: tuple[int, ...], named: dict[str, Any]) -> None:
    for name, value in named.items():
        if value is not None and not broadcast_shape_ok(tuple(value.shape), shape):
            raise status.invalid(f"{name} of shape {list(value.shape)} does not broadcast to "
                                 f"input's shape {list(shape)}")


def _check_same_shape(shape: tuple[int, ...], named: dict[str, Any]) -> None:
    for name, value in named.items():
        if value is not None and tuple(value.shape) != shape:
            raise status.invalid(f"{name} has shape {list(value.shape)} but must have input's "
                                 f"shape {list(shape)}")


def parse_reduction(reduction: Any) -> int:
    """Step 5: "none"/"mean"/"sum" or 0/1/2 (161002 otherwise)."""
    if isinstance(reduction, str) and reduction in REDUCTIONS:
        return REDUCTIONS[reduction]
    if not isinstance(reduction, bool) and hasattr(reduction, "__index__"):
        value = int(reduction.__index__())
        if value in (0, 1, 2):
            return value
    raise status.invalid(f"reduction must be 'none', 'mean', 'sum' or 0, 1, 2; got {reduction!r}")


def promote(a: DType, b: DType) -> DType:
    """PyTorch's promotion over the supported float types: fp16 + bf16 -> fp32,
    otherwise the wider type."""
    if a == b:
        return a
    if a.bits == b.bits:
        return dt.float32
    return a if a.bits > b.bits else b


def check_bce_backward(grad_output: Any, input: Any, target: Any, weight: Any,
                       reduction: Any, out: Any) -> Checked:
    """Validate ``binary_cross_entropy_backward`` (spec section 1)."""
    _check_required({"grad_output": grad_output, "input": input, "target": target})
    tensors = {"grad_output": grad_output, "input": input, "target": target,
               "weight": weight, "out": out}
    _check_rank(tensors)
    _check_dtypes(tensors)
    shape = tuple(input.shape)
    empty = 0 in shape
    if not empty:
        if out is not None:
            _check_same_shape(shape, {"out": out})
        _check_broadcastable(shape, {"target": target, "weight": weight,
                                     "grad_output": grad_output})
    code = parse_reduction(reduction)
    promoted = promote(promote(dtype_of(input), dtype_of(target)), dtype_of(grad_output))
    if weight is not None:
        promoted = promote(promoted, dtype_of(weight))
    out_dtype = dtype_of(out) if out is not None else dtype_of(input)
    # Step 6: every float type casts to every other, so promotion and the cast to out
    # cannot fail for the supported dtypes.
    return Checked(shape, code, out_dtype, promoted)


def check_bce_with_logits_target_backward(grad_output: Any, input: Any, target: Any, weight: Any,
                                          pos_weight: Any, reduction: Any, out: Any) -> Checked:
    """Validate ``binary_cross_entropy_with_logits_target_backward`` (spec section 2)."""
    _check_required({"grad_output": grad_output, "input": input, "target": target})
    tensors = {"grad_output": grad_output, "input": input, "target": target, "weight": weight,
               "pos_weight": pos_weight, "out": out}
    _check_rank(tensors)
    _check_dtypes(tensors)
    if out is not None and dtype_of(out) != dtype_of(target):
        raise status.invalid(f"out has dtype {dtype_name(out)} but must have target's dtype "
                             f"{dtype_name(target)}")
    shape = tuple(input.shape)
    empty = 0 in shape
    if not empty:
        _check_same_shape(shape, {"target": target, "out": out})
        _check_broadcastable(shape, {"grad_output": grad_output, "weight": weight,
                                     "pos_weight": pos_weight})
    code = parse_reduction(reduction)
    promoted = promote(promote(dtype_of(input), dtype_of(target)), dtype_of(grad_output))
    for optional in (weight, pos_weight):
        if optional is not None:
            promoted = promote(promoted, dtype_of(optional))
    # A promoted 16-bit type is forced to fp32: all arithmetic is fp32 (step 6 cannot fail).
    return Checked(shape, code, dtype_of(target), dt.float32 if promoted.bits < 32 else promoted)
