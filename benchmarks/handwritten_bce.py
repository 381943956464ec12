"""Hand-written triton-ascend kernels of the two operators, the way a kernel author
would write them directly (contiguous operands, scalar gradOutput, per-channel
weight), used by bench_lowering.py as the UB baseline."""

import triton
import triton.language as tl
from triton.language.extra.ascend import libdevice


@triton.jit
def bce_backward(g_ptr, x_ptr, y_ptr, w_ptr, out_ptr, n, C, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    for start in range(pid * BLOCK, n, tl.num_programs(0) * BLOCK):
        idx = start + tl.arange(0, BLOCK)
        mask = idx < n
        x = tl.load(x_ptr + idx, mask=mask, other=0.0).to(tl.float32)
        y = tl.load(y_ptr + idx, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + idx % C, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(g_ptr).to(tl.float32)
        d = tl.maximum(x * (1.0 - x), 1e-12)
        r = g * (x - y) / d * w * scale
        tl.store(out_ptr + idx, r.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def bce_with_logits_target_backward(g_ptr, x_ptr, w_ptr, p_ptr, out_ptr, n, C, scale,
                                    BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    for start in range(pid * BLOCK, n, tl.num_programs(0) * BLOCK):
        idx = start + tl.arange(0, BLOCK)
        mask = idx < n
        x = tl.load(x_ptr + idx, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + idx % C, mask=mask, other=0.0).to(tl.float32)
        p = tl.load(p_ptr + idx % C, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(g_ptr).to(tl.float32)
        tail = libdevice.log1p(tl.exp(-tl.abs(x)))
        logsig_pos = tl.minimum(x, 0.0) - tail
        logsig_neg = tl.minimum(-x, 0.0) - tail
        r = g * (logsig_neg - p * logsig_pos) * w * scale
        tl.store(out_ptr + idx, r.to(out_ptr.dtype.element_ty), mask=mask)
