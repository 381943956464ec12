"""aclnnBinaryCrossEntropyWithLogits: the BCE-with-logits loss.

    l = -w * (p * t * logsig(x) + (1 - t) * logsig(-x))
    logsig(v) = min(v, 0) - log1p(exp(-|v|))          (stable for large |v|)

p = 1 and w = 1 when absent. Reductions as in ``ops.bce_forward``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import dsl
from ops import reduction as red
from ops.bce_forward import loss_launch
from ops.chips import resolve_chip
from ops.kernel_parts import store_loss
from ops.launch import mark_written, operand, result
from ops.tensors import host_array
from ops.validation import BCE_WITH_LOGITS_FORWARD, Checked, validate


@dsl.jit
def bce_with_logits_forward_kernel(x, t, w, pw, out, partials, n, HAS_WEIGHT: dsl.constexpr,
                                   HAS_POS_WEIGHT: dsl.constexpr, REDUCE: dsl.constexpr,
                                   BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        mask = idx < n
        xv = dsl.load(x, idx, mask).to(dsl.float32)
        tv = dsl.load(t, idx, mask).to(dsl.float32)
        softplus_tail = dsl.log1p(dsl.exp(-dsl.abs(xv)))
        logsig_pos = dsl.minimum(xv, 0.0) - softplus_tail
        logsig_neg = dsl.minimum(-xv, 0.0) - softplus_tail
        positive = tv * logsig_pos
        if HAS_POS_WEIGHT:
            positive = positive * dsl.load(pw, idx, mask).to(dsl.float32)
        loss = -(positive + (1.0 - tv) * logsig_neg)
        store_loss(out, partials, start, idx, mask, loss, w, HAS_WEIGHT, REDUCE, BLOCK)


def check(input: Any, target: Any, weight: Any, pos_weight: Any, reduction: Any, out: Any,
          chip: str | None = None) -> Checked:
    return validate(BCE_WITH_LOGITS_FORWARD,
                    {"input": input, "target": target, "weight": weight,
                     "pos_weight": pos_weight, "out": out}, reduction, resolve_chip(chip))


def run(checked: Checked, input: Any, target: Any, weight: Any, pos_weight: Any, out_view: Any,
        workspace: np.ndarray | None, grid: Any = None) -> None:
    loss_launch(bce_with_logits_forward_kernel, checked, out_view, workspace, grid,
                lambda shape: [operand(input, shape), operand(target, shape),
                               operand(weight, shape), operand(pos_weight, shape)],
                HAS_WEIGHT=weight is not None, HAS_POS_WEIGHT=pos_weight is not None)


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None,
                                     pos_weight: Any = None, reduction: Any = "mean", *,
                                     out: Any = None) -> Any:
    """The BCE-with-logits loss of ``input`` (logits) against ``target`` (same shape);
    ``weight`` and ``pos_weight`` broadcast to input's shape. "mean"/"sum" return a
    0-d tensor; the result has input's dtype unless ``out`` says otherwise."""
    kind = input  # the result's kind (NumPy or torch)
    input, target, weight, pos_weight = map(host_array, (input, target, weight, pos_weight))
    checked = check(input, target, weight, pos_weight, reduction, out)
    res, out_view = result(out, kind, checked, checked.shape if checked.reduction == 0 else ())
    workspace = np.empty(red.workspace_bytes(checked.numel, checked.reduction), np.uint8)
    run(checked, input, target, weight, pos_weight, out_view, workspace)
    return res if out is None else mark_written(res)  # a new result has no readers yet
