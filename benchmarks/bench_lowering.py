"""Lowering figures, per operator (needs the 'npu' extra; no NPU needed):

1. compile time per stage on the first call (fresh cache folder);
2. cached-call dispatch overhead: host time of a launch whose specialization is
   already compiled (argument checks, layout coalescing, specialization lookup),
   measured up to the point where a backend would be handed the kernel;
3. UB bytes per element of BLOCK, measured off the HIVM, for the generated kernel
   against a hand-written triton-ascend kernel of the same operator
   (benchmarks/handwritten_bce.py) through the same pipeline, at the same BLOCK.

    python benchmarks/bench_lowering.py [--block 2048]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

os.environ.setdefault("DSL_CACHE_DIR", tempfile.mkdtemp(prefix="ascend-dsl-bench-"))

import handwritten_bce  # noqa: E402

import dsl  # noqa: E402
import ops  # noqa: E402
from lowering import ub  # noqa: E402
from lowering.compiler import StageReport, compile_triton  # noqa: E402
from lowering.targets import get_target  # noqa: E402


def dispatch_overhead_us(repeat: int = 2000) -> float:
    """Median host time of preparing a cached launch (no execution)."""
    x = np.full(4096, 0.5, np.float32)
    g = dsl.broadcast_to(np.array(1.0, np.float32), x.shape)
    args = (g, x, x, None, np.empty_like(x), x.size, 1.0)
    kwargs = {"HAS_WEIGHT": False, "APPLY_SCALE": False}
    ops.bce_backward_kernel.prepare(args, kwargs, None)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        ops.bce_backward_kernel.prepare(args, kwargs, None)
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e6)


def handwritten_ub(kernel, signature, block: int) -> int:
    stages: list[StageReport] = []
    hivm = compile_triton(kernel, signature, {"BLOCK": block}, get_target("Ascend910B4"),
                          stages)[2]
    return ub.measured_bytes(hivm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block", type=int, default=2048)
    block = parser.parse_args().block
    f32, scalar = dsl.tensor_spec("float32"), dsl.tensor_spec("float32", "scalar")
    channel = dsl.tensor_spec("float32", "strided[0,1]")
    cases = [
        ("bce_backward", ops.bce_backward_kernel, (scalar, f32, f32, channel, f32, 1 << 20, 1.0),
         {"HAS_WEIGHT": True, "APPLY_SCALE": True},
         handwritten_bce.bce_backward,
         {"g_ptr": "*fp32", "x_ptr": "*fp32", "y_ptr": "*fp32", "w_ptr": "*fp32",
          "out_ptr": "*fp32", "n": "i32", "C": "i32", "scale": "fp32", "BLOCK": "constexpr"}),
        ("bce_with_logits_target_backward", ops.bce_with_logits_target_backward_kernel,
         (scalar, f32, channel, channel, f32, 1 << 20, 1.0),
         {"HAS_WEIGHT": True, "HAS_POS_WEIGHT": True, "APPLY_SCALE": True},
         handwritten_bce.bce_with_logits_target_backward,
         {"g_ptr": "*fp32", "x_ptr": "*fp32", "w_ptr": "*fp32", "p_ptr": "*fp32",
          "out_ptr": "*fp32", "n": "i32", "C": "i32", "scale": "fp32", "BLOCK": "constexpr"}),
    ]
    print(f"fp32, weight and pos_weight per channel, scalar gradOutput, Ascend910B4, "
          f"cache {os.environ['DSL_CACHE_DIR']}\n")
    for name, kernel, args, kwargs, hand, signature in cases:
        started = time.perf_counter()
        lowered = kernel.lower(*args, BLOCK=block, target="Ascend910B4", **kwargs)
        total = time.perf_counter() - started
        print(f"== {name} (BLOCK={block}; first call {total * 1e3:.0f} ms including two "
              "UB-calibration probe compiles)")
        print(lowered.stage_table())
        ours = lowered.ub_measured_bytes
        theirs = handwritten_ub(hand, signature, block)
        print(f"UB bytes per element: generated {ours / block:.2f}, hand-written "
              f"{theirs / block:.2f}, ratio generated/hand-written {ours / theirs:.2f}\n")
    print(f"cached-call dispatch overhead (host, interpreter path up to the backend): "
          f"{dispatch_overhead_us():.0f} us per launch (median of 2000)")


if __name__ == "__main__":
    main()
