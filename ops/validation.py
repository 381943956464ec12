"""Argument validation of the operators, in the spec's order.

``../shared/spec/bce_ops.md`` fixes the order of the checks and the status code of
each; the first failure wins:

1. a required tensor is None -> 161001
2. a tensor of rank > 8 (or not a tensor at all) -> 161002
3. the operator is not available on the chip, a dtype outside the chip's list, or
   an operator-specific dtype rule (e.g. out's dtype == target's) -> 161002
4. (non-empty input) a shape rule: operands that must equal input's shape, operands
   that must broadcast to exactly input's shape -> 161002
5. reduction outside none/mean/sum (0/1/2) -> 161002
6. promotion undefined or not castable to out: cannot fail among the float types.

Each operator describes its operands with an ``OperatorRules`` record; nothing here
computes or writes, so callers validate before building views or launching.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsl import dtypes as dt
from dsl.dtypes import DType
from dsl.views import broadcast_shape_ok, is_torch_tensor
from ops import status
from ops.chips import Chip, has_logits_target_backward
from ops.tensors import MAX_RANK, SUPPORTED, device_error, dtype_name, dtype_of, is_tensor

REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


@dataclass(frozen=True)
class Checked:
    """What validation established about a call."""

    shape: tuple[int, ...]  # input's shape: the iteration space
    reduction: int  # 0 none, 1 mean, 2 sum
    out_dtype: DType
    chip: Chip

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


@dataclass(frozen=True)
class OperatorRules:
    """The operand contract of one operator (names as the Python API spells them)."""

    name: str
    required: tuple[str, ...]  # tensors that may not be None (161001)
    same_shape: tuple[str, ...]  # must have exactly input's shape
    broadcast: tuple[str, ...]  # must broadcast to exactly input's shape
    out_like: str | None  # out's dtype must equal this operand's dtype
    default_out: str  # operand whose dtype the result takes by default
    reduces: bool = False  # mean/sum give a 0-d result (forward losses)
    a2_a3_only: bool = False


def parse_reduction(reduction: Any) -> int:
    """Step 5: "none"/"mean"/"sum" or 0/1/2 (161002 otherwise)."""
    if isinstance(reduction, str) and reduction in REDUCTIONS:
        return REDUCTIONS[reduction]
    if not isinstance(reduction, bool) and hasattr(reduction, "__index__"):
        try:  # arrays and tensors have __index__ but refuse it unless 0-d integers
            value = int(reduction.__index__())
        except (TypeError, ValueError, RuntimeError):
            value = None
        if value in (0, 1, 2):
            return value
    raise status.invalid(f"reduction must be 'none', 'mean', 'sum' or 0, 1, 2; got {reduction!r}")


def _signature(value: Any) -> tuple | None:
    """All that validation reads of one argument (its kind, dtype, shape and device),
    or None when it cannot say (then the call is validated in full)."""
    if value is None:
        return ()
    kind = type(value)
    if kind is np.ndarray or isinstance(value, np.generic):
        return (kind, value.dtype, value.shape)
    if is_torch_tensor(value):
        try:
            return (kind, value.dtype, tuple(value.shape), value.device.type)
        except RuntimeError:  # a nested tensor has no shape: validated in full
            return None
    return None


def _call_signature(rules: OperatorRules, tensors: dict[str, Any], reduction: Any,
                    chip: Chip) -> tuple | None:
    parts: list[Any] = [rules.name, chip]
    for name, value in tensors.items():
        signature = _signature(value)
        if signature is None:
            return None
        parts.append((name, signature))
    if type(reduction) is str or type(reduction) is int:
        parts.append((type(reduction), reduction))
        return tuple(parts)
    return None


# Successful validations by call signature: every step depends only on the
# arguments' kinds, dtypes, shapes and devices, the reduction and the chip, so a call
# with the same signature passes with the same result (a failing one is never kept).
_VALIDATED: dict[tuple, Checked] = {}


def validate(rules: OperatorRules, tensors: dict[str, Any], reduction: Any, chip: Chip) -> Checked:
    """Run the six steps for ``tensors`` (operand name -> tensor or None, with 'input'
    and 'out' among them)."""
    signature = _call_signature(rules, tensors, reduction, chip)
    checked = _VALIDATED.get(signature) if signature is not None else None
    if checked is None:
        checked = _validate(rules, tensors, reduction, chip)
        if signature is not None:
            if len(_VALIDATED) >= 256:
                _VALIDATED.clear()
            _VALIDATED[signature] = checked
    out = tensors.get("out")
    if is_torch_tensor(out) and out.requires_grad and sys.modules["torch"].is_grad_enabled():
        # after the spec's six steps, and on every call (grad mode is not part of the
        # cached signature): torch refuses such an out= too, and a launch refuses to
        # write a leaf that requires grad
        raise status.invalid("out requires grad: torch's functions with out= refuse it "
                             "while grad mode is on (write into a tensor that does not, "
                             "or under torch.no_grad())")
    return checked


def _validate(rules: OperatorRules, tensors: dict[str, Any], reduction: Any, chip: Chip
              ) -> Checked:
    for name in rules.required:  # step 1
        if tensors.get(name) is None:
            raise status.nullptr(f"{name} is a required tensor and must not be None")
    given = {name: value for name, value in tensors.items() if value is not None}
    for name, value in given.items():  # step 2
        if not is_tensor(value):
            raise status.invalid(f"{name} must be a NumPy array or a torch tensor, "
                                 f"got {type(value).__name__}")
        if value.ndim > MAX_RANK:
            raise status.invalid(f"{name} has rank {value.ndim}; at most {MAX_RANK} is supported")
    if rules.a2_a3_only and not has_logits_target_backward(chip):  # step 3
        raise status.invalid(f"{rules.name} is available on Atlas A2/A3 chips only, "
                             f"not on {chip.name}")
    supported = SUPPORTED if chip.supports_bf16 else (dt.float32, dt.float16)
    for name, value in given.items():
        problem = device_error(value)
        if problem:
            raise status.invalid(f"{name}: {problem}")
        if dtype_of(value) not in supported:
            names = ", ".join(d.name for d in supported)
            raise status.invalid(f"{name} has dtype {dtype_name(value)}; supported on "
                                 f"{chip.name}: {names}")
    out = given.get("out")
    if out is not None and rules.out_like and dtype_of(out) != dtype_of(given[rules.out_like]):
        raise status.invalid(f"out has dtype {dtype_name(out)} but must have "
                             f"{rules.out_like}'s dtype {dtype_name(given[rules.out_like])}")
    shape = tuple(given["input"].shape)
    if 0 not in shape:  # step 4
        for name in rules.same_shape:
            value = given.get(name)
            if value is not None and tuple(value.shape) != shape:
                raise status.invalid(f"{name} has shape {list(value.shape)} but must have "
                                     f"input's shape {list(shape)}")
        for name in rules.broadcast:
            value = given.get(name)
            if value is not None and not broadcast_shape_ok(tuple(value.shape), shape):
                raise status.invalid(f"{name} of shape {list(value.shape)} does not broadcast "
                                     f"to input's shape {list(shape)}")
    code = parse_reduction(reduction)  # step 5
    if rules.reduces and out is not None:
        expected = shape if code == 0 else ()
        if tuple(out.shape) != expected:
            raise status.invalid(f"out has shape {list(out.shape)} but reduction "
                                 f"{reduction!r} gives shape {list(expected)}")
    # Step 6 (promotion of the operand dtypes) cannot fail among the float types
    # accepted in step 2; the kernels compute in fp32 whatever it gives.
    out_dtype = dtype_of(out) if out is not None else dtype_of(given[rules.default_out])
    return Checked(shape, code, out_dtype, chip)


BCE_BACKWARD = OperatorRules(
    "binary_cross_entropy_backward", required=("grad_output", "input", "target"),
    same_shape=("out",), broadcast=("target", "weight", "grad_output"), out_like=None,
    default_out="input")
BCE_WITH_LOGITS_TARGET_BACKWARD = OperatorRules(
    "binary_cross_entropy_with_logits_target_backward",
    required=("grad_output", "input", "target"), same_shape=("target", "out"),
    broadcast=("grad_output", "weight", "pos_weight"), out_like="target",
    default_out="target", a2_a3_only=True)
BCE_FORWARD = OperatorRules(
    "binary_cross_entropy", required=("input", "target"), same_shape=("target",),
    broadcast=("weight",), out_like=None, default_out="input", reduces=True)
BCE_WITH_LOGITS_FORWARD = OperatorRules(
    "binary_cross_entropy_with_logits", required=("input", "target"), same_shape=("target",),
    broadcast=("weight", "pos_weight"), out_like=None, default_out="input", reduces=True)
BCE_WITH_LOGITS_BACKWARD = OperatorRules(
    "binary_cross_entropy_with_logits_backward", required=("grad_output", "input", "target"),
    same_shape=("target", "out"), broadcast=("grad_output", "weight", "pos_weight"),
    out_like="target", default_out="target")


def check_bce_backward(grad_output: Any, input: Any, target: Any, weight: Any,
                       reduction: Any, out: Any, chip: Chip) -> Checked:
    """Validate ``binary_cross_entropy_backward`` (spec section 1)."""
    return validate(BCE_BACKWARD, {"grad_output": grad_output, "input": input, "target": target,
                                   "weight": weight, "out": out}, reduction, chip)


def check_bce_with_logits_target_backward(grad_output: Any, input: Any, target: Any, weight: Any,
                                          pos_weight: Any, reduction: Any, out: Any,
                                          chip: Chip) -> Checked:
    """Validate ``binary_cross_entropy_with_logits_target_backward`` (spec section 2)."""
    return validate(BCE_WITH_LOGITS_TARGET_BACKWARD,
                    {"grad_output": grad_output, "input": input, "target": target,
                     "weight": weight, "pos_weight": pos_weight, "out": out}, reduction, chip)
