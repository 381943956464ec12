"""aclnnBinaryCrossEntropyWithLogitsTargetBackward: gradient of BCE-with-logits w.r.t. target.

    gradTarget = g * (logsig(-x) - p * logsig(x)) * w * s     (s = 1/N for mean, else 1)
    logsig(v)  = min(v, 0) - log1p(exp(-|v|))                  (stable for large |v|)

With sp = log1p(exp(-|x|)) shared by both log-sigmoids, the bracket is exactly
``(p - 1) * sp - (x if x >= 0 else p * x)``; the kernel evaluates that form, which
avoids the cancellation between the two log-sigmoids (CANN evaluates both). Without
pos_weight (p = 1) it is ``-x * g * w * s``, computed directly, as PyTorch does.

The values of ``target`` never enter the formula; only its shape and dtype matter,
so the kernel does not read it. CANN runs a chain of 8-9 elementwise kernels here;
this is one fused pass.
"""

from __future__ import annotations

from typing import Any

import dsl
from ops.launch import operand, result, scale_of
from ops.validation import check_bce_with_logits_target_backward


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
            r = gv * ((pv - 1.0) * softplus_tail - linear)
        else:
            r = -xv * gv
        if HAS_WEIGHT:
            r = r * dsl.load(w, idx, mask).to(dsl.float32)
        if APPLY_SCALE:
            r = r * scale
        dsl.store(out, idx, r, mask)


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
    checked = check_bce_with_logits_target_backward(grad_output, input, target, weight,
                                                    pos_weight, reduction, out)
    res, out_view = result(out, input, checked)
    if checked.numel == 0:
        return res
    shape = checked.shape
    bce_with_logits_target_backward_kernel(
        operand(grad_output, shape), operand(input, shape), operand(weight, shape),
        operand(pos_weight, shape), out_view, checked.numel, scale_of(checked),
        HAS_WEIGHT=weight is not None, HAS_POS_WEIGHT=pos_weight is not None,
        APPLY_SCALE=checked.reduction == 1)
    return res
