"""aclnnBinaryCrossEntropyBackward: gradient of BCE w.r.t. the probabilities.

    d   = max(x * (1 - x), 1e-12)
    out = g * (x - y) / d * w * s        (s = 1/N for mean, else 1)

One fused elementwise kernel reads each operand once, in its own dtype and layout
(broadcast operands through stride-0 views), computes in fp32 and writes ``out``
once. Weight present/absent and mean/other are constexpr specializations.
"""

from __future__ import annotations

from typing import Any

import dsl
from ops.chips import resolve_chip
from ops.kernel_parts import store_gradient
from ops.launch import mark_written, operand, result, scale_of, unaliased
from ops.tensors import host_array
from ops.validation import Checked, check_bce_backward

EPSILON = 1e-12  # PyTorch's and CANN's clamp of x * (1 - x)


@dsl.jit
def bce_backward_kernel(grad, x, y, w, out, n, scale,
                        HAS_WEIGHT: dsl.constexpr, APPLY_SCALE: dsl.constexpr,
                        BLOCK: dsl.block_size):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        mask = idx < n
        xv = dsl.load(x, idx, mask).to(dsl.float32)
        yv = dsl.load(y, idx, mask).to(dsl.float32)
        gv = dsl.load(grad, idx, mask).to(dsl.float32)
        d = dsl.maximum(xv * (1.0 - xv), EPSILON)
        r = gv * (xv - yv) / d
        store_gradient(out, idx, mask, r, w, scale, HAS_WEIGHT, APPLY_SCALE)


def run(checked: Checked, grad_output: Any, input: Any, target: Any, weight: Any,
        out_view: Any) -> None:
    """Launch the kernel for validated arguments (nothing for an empty input)."""
    if checked.numel == 0:
        return
    shape = checked.shape
    operands = [operand(grad_output, shape), operand(input, shape), operand(target, shape),
                operand(weight, shape)]
    with unaliased(out_view, operands) as target_view:
        bce_backward_kernel(*operands, target_view, checked.numel, scale_of(checked),
                            HAS_WEIGHT=weight is not None, APPLY_SCALE=checked.reduction == 1)


def binary_cross_entropy_backward(grad_output: Any, input: Any, target: Any, weight: Any = None,
                                  reduction: Any = "mean", *, out: Any = None) -> Any:
    """Gradient of ``binary_cross_entropy(input, target, weight, reduction)`` w.r.t. ``input``.

    Accepts NumPy arrays (ml_dtypes bfloat16 included) and CPU torch tensors of
    float32/float16/bfloat16, rank 0 to 8, any strides. ``grad_output``, ``target``
    and ``weight`` broadcast to ``input``'s shape (no copies). ``reduction`` is
    "none"/"mean"/"sum" or 0/1/2. The result has ``out``'s dtype, by default
    ``input``'s; it is written into ``out`` when given and returned. Invalid
    arguments raise ``ops.AclnnError`` with the spec's status, before anything is
    computed or written.
    """
    kind = input  # the result's kind (NumPy or torch)
    grad_output, input, target, weight = map(host_array, (grad_output, input, target, weight))
    checked = check_bce_backward(grad_output, input, target, weight, reduction, out,
                                 resolve_chip())
    res, out_view = result(out, kind, checked)
    run(checked, grad_output, input, target, weight, out_view)
    return res if out is None else mark_written(res)  # a new result has no readers yet
