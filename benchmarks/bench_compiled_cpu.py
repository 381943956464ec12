"""Compiled-CPU mode: compile time per specialization, and run time next to the
interpreter's at 1M and 16M elements (BCE backward, scalar gradOutput, mean).

    python benchmarks/bench_compiled_cpu.py [--sizes 1M,16M] [--repeat 3]

Compile time is measured in a fresh cache folder (TTIR, Linalg, LLVM IR, llc, gcc).
Run times are best-of-N, interleaved; both modes start from the same prepared
launch, and the results are checked bit for bit.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

os.environ.setdefault("DSL_CACHE_DIR", tempfile.mkdtemp(prefix="ascend-dsl-bench-cpu-"))

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from bench_bce import parse_size  # noqa: E402

import dsl  # noqa: E402
import ops  # noqa: E402
from lowering import cpu  # noqa: E402
from lowering.triton_codegen import generate  # noqa: E402

DTYPES = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1M,16M")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'N':>9} {'dtype':<5} {'compile s':>9} {'interp ms':>10} {'cpu ms':>9} "
          f"{'cpu/interp':>10}  bit-exact")
    for size in (parse_size(s) for s in args.sizes.split(",")):
        for name, dtype in DTYPES.items():
            rng = np.random.default_rng(0)
            x = rng.uniform(0.01, 0.99, size).astype(dtype)
            y = rng.uniform(0, 1, size).astype(dtype)
            g = dsl.broadcast_to(np.array(1.0, dtype), (size,))
            out = np.empty(size, dtype)
            kwargs = {"HAS_WEIGHT": False, "APPLY_SCALE": True}
            launch = ops.bce_backward_kernel.prepare((g, x, y, None, out, size, 1.0 / size),
                                                     kwargs, None)
            started = time.perf_counter()
            cpu.compile_cpu(generate(launch.function, tree_sums=True))
            compile_s = time.perf_counter() - started
            best = {"interp": float("inf"), "cpu": float("inf")}
            results = {}
            for _ in range(args.repeat):
                for mode in best:
                    started = time.perf_counter()
                    ops.bce_backward_kernel.launch(g, x, y, None, out, size, 1.0 / size,
                                                   backend="interpreter" if mode == "interp"
                                                   else "compiled-cpu", **kwargs)
                    best[mode] = min(best[mode], time.perf_counter() - started)
                    results[mode] = out.copy()
            exact = np.array_equal(results["interp"].view(np.uint8),
                                   results["cpu"].view(np.uint8))
            print(f"{size:>9} {name:<5} {compile_s:>9.2f} {best['interp'] * 1e3:>10.1f} "
                  f"{best['cpu'] * 1e3:>9.1f} {best['cpu'] / best['interp']:>10.2f}  {exact}",
                  flush=True)


if __name__ == "__main__":
    main()
