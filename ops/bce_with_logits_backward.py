"""The two gradients of BCE-with-logits.

aclnnBinaryCrossEntropyWithLogitsTargetBackward, w.r.t. the target:

    gradTarget = g * (logsig(-x) - p * logsig(x)) * w * s     (s = 1/N for mean, else 1)
    logsig(v)  = min(v, 0) - log1p(exp(-|v|))                  (stable for large |v|)

With sp = log1p(exp(-|x|)) shared by both log-sigmoids, the bracket is exactly
``(p - 1) * sp - (x if x >= 0 else p * x)``; the kernel evaluates that form, which
avoids the cancellation between the two log-sigmoids (CANN evaluates both). Without
pos_weight (p = 1) it is ``-x * g * w * s``, computed directly, as PyTorch does.

The values of ``target`` never enter the formula; only its shape and dtype matter,
so the kernel does not read it. CANN runs a chain of 8-9 elementwise kernels here;
this is one fused pass.

aclnnBinaryCrossEntropyWithLogitsBackward, w.r.t. the input (the logits):

    out = ((p * t + 1 - t) * sigmoid(x) - p * t) * g * w * s     (out dtype = target's)
"""

from __future__ import annotations

from typing import Any

import dsl
from ops.chips import resolve_chip
from ops.kernel_parts import store_gradient
from ops.launch import mark_written, operand, result, scale_of, unaliased
from ops.tensors import host_array
from ops.validation import BCE_WITH_LOGITS_BACKWARD, Checked, check_bce_with_logits_target_backward, validate

INF = float("inf")


@dsl.jit
def _tail_term(xv, pv, tail):
    """(pv - 1) * tail, also where tail = log1p(exp(-|x|)) underflows to 0 for x below
    +inf: its true value is positive, so an infinite pos_weight gives that infinity
    there, as the spec's formula does (inf * 0 would give NaN). At x = +inf the tail is
    exactly 0 and (pv - 1) * 0 stays, as in the spec; a NaN pos_weight propagates."""
    underflow = (tail == 0.0) & (dsl.abs(pv) == INF) & (xv != INF)
    return dsl.where(underflow, pv, (pv - 1.0) * tail)


@dsl.jit
def bce_with_logits_target_backward_kernel(grad, x, w, pw, out, n, scale,
                                           HAS_WEIGHT: dsl.constexpr,
                                           HAS_POS_WEIGHT: dsl.constexpr,
                                           APPLY_SCALE: dsl.constexpr,
                                           BLOCK: dsl.block_size):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        mask = idx < n
        xv = dsl.load(x, idx, mask).to(dsl.float32)
        gv = dsl.load(grad, idx, mask).to(dsl.float32)
        if HAS_POS_WEIGHT:
            pv = dsl.load(pw, idx, mask).to(dsl.float32)
            softplus_tail = dsl.log1p(dsl.exp(-dsl.abs(xv)))
            linear = dsl.where(xv >= 0.0, xv, pv * xv)
            r = gv * (_tail_term(xv, pv, softplus_tail) - linear)
        else:
            r = -xv * gv
        store_gradient(out, idx, mask, r, w, scale, HAS_WEIGHT, APPLY_SCALE)


def run_target_backward(checked: Checked, grad_output: Any, input: Any, weight: Any,
                        pos_weight: Any, out_view: Any) -> None:
    """Launch the target-gradient kernel for validated arguments."""
    if checked.numel == 0:
        return
    shape = checked.shape
    operands = [operand(grad_output, shape), operand(input, shape), operand(weight, shape),
                operand(pos_weight, shape)]
    with unaliased(out_view, operands) as target_view:
        bce_with_logits_target_backward_kernel(
            *operands, target_view, checked.numel, scale_of(checked),
            HAS_WEIGHT=weight is not None, HAS_POS_WEIGHT=pos_weight is not None,
            APPLY_SCALE=checked.reduction == 1)


def binary_cross_entropy_with_logits_target_backward(
        grad_output: Any, input: Any, target: Any, weight: Any = None, pos_weight: Any = None,
        reduction: Any = "mean", *, out: Any = None) -> Any:
    """Gradient of ``binary_cross_entropy_with_logits(input, target, weight, pos_weight,
    reduction)`` w.r.t. ``target``.

    ``target`` and ``out`` have ``input``'s shape; ``grad_output``, ``weight`` and
    ``pos_weight`` broadcast to it (no copies). The result has ``target``'s dtype
    (``out`` must match it). Same tensor kinds, dtypes, ranks and error contract as
    ``binary_cross_entropy_backward``.
    """
    kind = input  # the result's kind (NumPy or torch)
    grad_output, input, target, weight, pos_weight = map(
        host_array, (grad_output, input, target, weight, pos_weight))
    checked = check_bce_with_logits_target_backward(grad_output, input, target, weight,
                                                    pos_weight, reduction, out, resolve_chip())
    res, out_view = result(out, kind, checked)
    run_target_backward(checked, grad_output, input, weight, pos_weight, out_view)
    return res if out is None else mark_written(res)  # a new result has no readers yet


@dsl.jit
def bce_with_logits_backward_kernel(grad, x, t, w, pw, out, n, scale,
                                    HAS_WEIGHT: dsl.constexpr, HAS_POS_WEIGHT: dsl.constexpr,
                                    APPLY_SCALE: dsl.constexpr, BLOCK: dsl.block_size):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        mask = idx < n
        xv = dsl.load(x, idx, mask).to(dsl.float32)
        tv = dsl.load(t, idx, mask).to(dsl.float32)
        gv = dsl.load(grad, idx, mask).to(dsl.float32)
        if HAS_POS_WEIGHT:
            pt = dsl.load(pw, idx, mask).to(dsl.float32) * tv
            r = ((pt + 1.0 - tv) * dsl.sigmoid(xv) - pt) * gv
        else:
            r = (dsl.sigmoid(xv) - tv) * gv
        store_gradient(out, idx, mask, r, w, scale, HAS_WEIGHT, APPLY_SCALE)


def check_input_backward(grad_output: Any, input: Any, target: Any, weight: Any, pos_weight: Any,
                         reduction: Any, out: Any, chip: str | None = None) -> Checked:
    return validate(BCE_WITH_LOGITS_BACKWARD,
                    {"grad_output": grad_output, "input": input, "target": target,
                     "weight": weight, "pos_weight": pos_weight, "out": out},
                    reduction, resolve_chip(chip))


def run_input_backward(checked: Checked, grad_output: Any, input: Any, target: Any, weight: Any,
                       pos_weight: Any, out_view: Any) -> None:
    if checked.numel == 0:
        return
    shape = checked.shape
    operands = [operand(grad_output, shape), operand(input, shape), operand(target, shape),
                operand(weight, shape), operand(pos_weight, shape)]
    with unaliased(out_view, operands) as target_view:
        bce_with_logits_backward_kernel(
            *operands, target_view, checked.numel, scale_of(checked),
            HAS_WEIGHT=weight is not None, HAS_POS_WEIGHT=pos_weight is not None,
            APPLY_SCALE=checked.reduction == 1)


def binary_cross_entropy_with_logits_backward(
        grad_output: Any, input: Any, target: Any, weight: Any = None, pos_weight: Any = None,
        reduction: Any = "mean", *, out: Any = None) -> Any:
    """Gradient of ``binary_cross_entropy_with_logits`` w.r.t. ``input`` (the logits).
    ``target`` and ``out`` have input's shape, the result target's dtype; the other
    operands broadcast. Same tensor kinds and error contract as the other operators."""
    kind = input  # the result's kind (NumPy or torch)
    grad_output, input, target, weight, pos_weight = map(
        host_array, (grad_output, input, target, weight, pos_weight))
    checked = check_input_backward(grad_output, input, target, weight, pos_weight, reduction,
                                   out)
    res, out_view = result(out, kind, checked)
    run_input_backward(checked, grad_output, input, target, weight, pos_weight, out_view)
    return res if out is None else mark_written(res)  # a new result has no readers yet
