"""aclnnBinaryCrossEntropy: the BCE loss (companion of the backward operator).

    l = -w * (y * max(log(x), -100) + (1 - y) * max(log(1 - x), -100))

reduction "none" gives ``l`` (input's shape); "mean"/"sum" give a 0-d result through
the deterministic per-tile reduction of ``ops.reduction``. Empty input: mean -> NaN,
sum -> 0. Computed in fp32; the result has ``out``'s dtype, by default input's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import dsl
from dsl.views import to_numpy
from ops import reduction as red
from ops.chips import resolve_chip
from ops.kernel_parts import store_loss
from ops.launch import mark_written, operand, result, unaliased
from ops.tensors import host_array
from ops.validation import BCE_FORWARD, Checked, validate

LOG_CLAMP = -100.0  # PyTorch's clamp of each log term


@dsl.jit
def bce_forward_kernel(x, y, w, out, partials, n, HAS_WEIGHT: dsl.constexpr,
                       REDUCE: dsl.constexpr, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        mask = idx < n
        xv = dsl.load(x, idx, mask).to(dsl.float32)
        yv = dsl.load(y, idx, mask).to(dsl.float32)
        # clamp at -100 as PyTorch does, letting a NaN through (maximum would drop it)
        log_x = dsl.log(xv)
        log_x = dsl.where(log_x < LOG_CLAMP, LOG_CLAMP, log_x)
        log_1mx = dsl.log(1.0 - xv)
        log_1mx = dsl.where(log_1mx < LOG_CLAMP, LOG_CLAMP, log_1mx)
        loss = -(yv * log_x + (1.0 - yv) * log_1mx)
        store_loss(out, partials, start, idx, mask, loss, w, HAS_WEIGHT, REDUCE, BLOCK)


def check(input: Any, target: Any, weight: Any, reduction: Any, out: Any,
          chip: str | None = None) -> Checked:
    return validate(BCE_FORWARD, {"input": input, "target": target, "weight": weight,
                                  "out": out}, reduction, resolve_chip(chip))


def run(checked: Checked, input: Any, target: Any, weight: Any, out_view: Any,
        workspace: np.ndarray | None, grid: Any = None) -> None:
    """Launch the loss (and the combine step) for validated arguments."""
    loss_launch(bce_forward_kernel, checked, out_view, workspace, grid,
                lambda shape: [operand(input, shape), operand(target, shape),
                               operand(weight, shape)], HAS_WEIGHT=weight is not None)


def loss_launch(kernel: Any, checked: Checked, out_view: Any, workspace: np.ndarray | None,
                grid: Any, operands: Callable[[tuple[int, ...]], list[Any]],
                **constexprs: Any) -> None:
    """Shared by the forward losses: elementwise for "none", partials + combine else.
    ``operands(shape)`` views the operands at the iteration shape; it is not called
    for an empty input, whose other operands the spec does not constrain."""
    n = checked.numel
    reduce = checked.reduction != 0
    if n == 0:
        if reduce:  # spec: empty mean -> NaN, sum -> 0
            to_numpy(out_view)[...] = np.nan if checked.reduction == 1 else 0.0
        return
    operands = operands(checked.shape)
    with unaliased(out_view, operands) as target_view:
        _loss_launch(kernel, checked, target_view, workspace, grid, operands, n, reduce,
                     constexprs)


def _loss_launch(kernel: Any, checked: Checked, out_view: Any, workspace: np.ndarray | None,
                 grid: Any, operands: list[Any], n: int, reduce: bool,
                 constexprs: dict[str, Any]) -> None:
    block = red.loss_block(n)
    partials = red.partials_view(workspace, n) if reduce else np.zeros(1, np.float32)
    launch = kernel if grid is None else kernel[grid]
    launch(*operands, out_view, partials, n, REDUCE=reduce, BLOCK=block, **constexprs)
    if reduce:
        red.combine(partials, out_view, n, mean=checked.reduction == 1)


def binary_cross_entropy(input: Any, target: Any, weight: Any = None, reduction: Any = "mean",
                         *, out: Any = None) -> Any:
    """The BCE loss of probabilities ``input`` against ``target`` (same shape);
    ``weight`` broadcasts to input's shape. Same tensor kinds and error contract as
    the backward operators; "mean"/"sum" return a 0-d tensor."""
    kind = input  # the result's kind (NumPy or torch)
    input, target, weight = map(host_array, (input, target, weight))
    checked = check(input, target, weight, reduction, out)
    shape = checked.shape if checked.reduction == 0 else ()
    res, out_view = result(out, kind, checked, shape)
    workspace = np.empty(red.workspace_bytes(checked.numel, checked.reduction), np.uint8)
    run(checked, input, target, weight, out_view, workspace)
    return res if out is None else mark_written(res)  # a new result has no readers yet
