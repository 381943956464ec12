"""Per-call overhead of a cached launch, side by side in one run (issue 11's goals).

Times, interleaved and best-of-N, at n=1024 fp32 (contiguous, scalar gradOutput,
reduction "mean"):
  kernel     ``bce_backward_kernel`` launched directly on NumPy arrays (a cached
             launch: recipe + plan, see dsl/launch_cache.py and lowering/plan.py)
  interp     the same launch run by the interpreter, without recipe or plan
  numpy      the plain NumPy formula
  op         ``ops.binary_cross_entropy_backward`` on NumPy arrays
  op-torch   the same on CPU torch tensors
  aten       ``torch.ops.aten.binary_cross_entropy_backward`` (if torch is installed)
and vector add at 1K (``examples/vector_add.py``'s ``add`` against ``x + y``, and the
same add written against ``triton.language`` with pointers, through
``dsl.from_triton``, when triton is installed: on NumPy arrays, and on CPU torch
tensors, as a script under ``DSL_TRITON_INTERPRET=1`` launches it), and three small
2-D kernels the interpreter runs at every launch (no launch plan: reductions, 2-D
blocks), on an 8x1024 fp32 matrix against their NumPy references: a row sum
(``benchmarks/bench_kernels.py``'s), ``examples/softmax.py`` and
``examples/argmax.py``.
Prints microseconds and the ratios the goals name: kernel <= 50 us and
op / aten <= 5.

    python benchmarks/bench_overhead.py [--repeat 300] [--rounds 7]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import argmax as ex_argmax  # noqa: E402
import softmax as ex_softmax  # noqa: E402
import vector_add as ex_vector_add  # noqa: E402
from bench_kernels import row_reduce_host  # noqa: E402

import ops  # noqa: E402
from dsl.options import Options  # noqa: E402
from lowering.interpreter import Interpreter  # noqa: E402
from ops.bce_backward import bce_backward_kernel  # noqa: E402

try:  # the same vector add written against triton.language (module level: its
    # annotations are resolved in the module's globals)
    import triton
    import triton.language as tl

    @triton.jit
    def triton_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
                 + tl.load(y_ptr + offsets, mask=mask), mask=mask)
except ImportError:
    triton_add_kernel = None


def best_of(fns: dict[str, Callable[[], object]], repeat: int, rounds: int
            ) -> dict[str, float]:
    """Best time per call in microseconds. The candidates take turns, ``rounds``
    times, each turn ``repeat`` calls in a row: per-call overhead is a warm,
    steady-state cost, and calling one candidate between every two calls of
    another (whose temporaries evict the caches) would time the eviction."""
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            for _ in range(repeat):
                start = time.perf_counter()
                fn()
                best[name] = min(best[name], time.perf_counter() - start)
    return {name: t * 1e6 for name, t in best.items()}


def candidates() -> dict[str, Callable[[], object]]:
    n = 1024
    rng = np.random.default_rng(0)
    x = rng.uniform(0.05, 0.95, n).astype(np.float32)
    y = rng.uniform(0, 1, n).astype(np.float32)
    g = np.float32(1.0)
    grad = np.broadcast_to(g, x.shape)
    out = np.empty_like(x)
    kernel_args = (grad, x, y, None, out, n, 1.0 / n)
    flags = {"HAS_WEIGHT": False, "APPLY_SCALE": True}
    launch = bce_backward_kernel.prepare(kernel_args, flags, None)
    options = Options.from_env()

    def numpy_formula() -> np.ndarray:
        d = np.maximum(x * (np.float32(1) - x), np.float32(1e-12))
        return g * (x - y) / d * np.float32(1.0 / n)

    small = rng.standard_normal(1024).astype(np.float32)
    small_out = np.empty_like(small)
    fns: dict[str, Callable[[], object]] = {
        "kernel": lambda: bce_backward_kernel(*kernel_args, **flags),
        "interp": lambda: Interpreter(launch, options).run(),
        "numpy": numpy_formula,
        "op": lambda: ops.binary_cross_entropy_backward(g, x, y),
        "add 1K": lambda: ex_vector_add.add(small, small),
        "add 1K numpy": lambda: ex_vector_add.reference(small, small),
    }
    rows = rng.standard_normal((8, 1024)).astype(np.float32)
    fns.update({
        "row sum 8x1K": lambda: row_reduce_host(rows, False),
        "row sum 8x1K numpy": lambda: rows.sum(axis=1),
        "softmax 8x1K": lambda: ex_softmax.softmax(rows),
        "softmax 8x1K numpy": lambda: ex_softmax.reference(rows),
        "argmax 8x1K": lambda: ex_argmax.argmax(rows),
        "argmax 8x1K numpy": lambda: ex_argmax.reference(rows),
    })
    triton_add = _triton_vector_add()
    if triton_add is not None:  # the same add written against triton.language
        fns["triton add 1K"] = lambda: triton_add[(1,)](small, small, small_out, small.size,
                                                        BLOCK_SIZE=1024)
    try:
        import torch
    except ImportError:
        return fns
    xt, yt, gt = torch.from_numpy(x), torch.from_numpy(y), torch.tensor(1.0)
    fns["op-torch"] = lambda: ops.binary_cross_entropy_backward(gt, xt, yt)
    fns["aten"] = lambda: torch.ops.aten.binary_cross_entropy_backward(gt, xt, yt, None, 1)
    if triton_add is not None:
        small_t, small_out_t = torch.from_numpy(small.copy()), torch.empty(1024)
        fns["triton add 1K torch"] = lambda: triton_add[(1,)](
            small_t, small_t, small_out_t, 1024, BLOCK_SIZE=1024)
        fns["torch add 1K"] = lambda: small_t + small_t
    return fns


def _triton_vector_add() -> object | None:
    """Triton's tutorial-01 kernel, pointer arithmetic and all, through
    ``dsl.from_triton``; None without triton installed."""
    if triton_add_kernel is None:
        return None
    from dsl import from_triton

    return from_triton(triton_add_kernel)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300, help="calls in a row per turn")
    parser.add_argument("--rounds", type=int, default=7, help="turns per candidate")
    args = parser.parse_args()
    fns = candidates()
    for fn in fns.values():  # compile, record the plans, warm the caches
        fn()
        fn()
    t = best_of(fns, args.repeat, args.rounds)
    for name, us in t.items():
        print(f"{name:20s} {us:9.1f} us")
    print(f"kernel: {t['kernel']:.1f} us per cached launch (goal <= 50); "
          f"{t['interp'] / t['kernel']:.1f}x faster than interpreting it; "
          f"{t['kernel'] / t['numpy']:.1f}x the NumPy formula")
    print(f"vector add 1K: {t['add 1K'] / t['add 1K numpy']:.1f}x NumPy")
    for name in ("row sum 8x1K", "softmax 8x1K", "argmax 8x1K"):
        print(f"{name} (interpreted at each launch): {t[name]:.0f} us, "
              f"{t[name] / t[name + ' numpy']:.0f}x NumPy")
    if "triton add 1K" in t:
        print(f"the same add as a Triton kernel (pointers): "
              f"{t['triton add 1K'] / t['add 1K numpy']:.1f}x NumPy")
    if "triton add 1K torch" in t:
        print(f"the same on CPU torch tensors: "
              f"{t['triton add 1K torch'] / t['torch add 1K']:.1f}x torch's x + y")
    if "aten" in t:
        print(f"op / aten: {t['op'] / t['aten']:.1f} (NumPy in/out), "
              f"{t['op-torch'] / t['aten']:.1f} (torch in/out); goal <= 5")


if __name__ == "__main__":
    main()
