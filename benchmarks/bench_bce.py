"""Interpreter speed for binary_cross_entropy_backward, side by side in one run.

For each size and dtype it times, interleaved and best-of-N:
  interp  ops.binary_cross_entropy_backward (DSL kernel in the NumPy interpreter)
  numpy   the plain whole-array NumPy formula, fp32 compute, cast to the dtype
  torch   the backward pass of torch CPU autograd (torch.autograd.grad of a
          mean-reduced F.binary_cross_entropy), if torch is installed
and prints the ratios interp/numpy and interp/torch (below 1 means the interpreter
is faster). Inputs: contiguous x and y, a scalar gradOutput, reduction "mean".

    python benchmarks/bench_bce.py [--sizes 1M,16M] [--repeat 5]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import ml_dtypes
import numpy as np
from _timing import best_of

import ops

DTYPES = {"fp32": np.float32, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}


def numpy_formula(g: np.ndarray, x: np.ndarray, y: np.ndarray, n: int, dtype) -> np.ndarray:
    xf, yf, gf = x.astype(np.float32), y.astype(np.float32), g.astype(np.float32)
    d = np.maximum(xf * (np.float32(1) - xf), np.float32(1e-12))
    return (gf * (xf - yf) / d * np.float32(1.0 / n)).astype(dtype)


def torch_backward(x: np.ndarray, y: np.ndarray, dtype_name: str) -> Callable[[], object] | None:
    try:
        import torch
    except ImportError:
        return None
    tdtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
    xt = torch.from_numpy(x.astype(np.float32)).to(tdtype).requires_grad_()
    yt = torch.from_numpy(y.astype(np.float32)).to(tdtype)
    loss = torch.nn.functional.binary_cross_entropy(xt, yt, reduction="mean")
    grad = torch.ones((), dtype=tdtype)
    return lambda: torch.autograd.grad(loss, xt, grad, retain_graph=True)


def parse_size(text: str) -> int:
    text = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20}.get(text[-1], 1)
    return int(text[:-1] if text[-1] in "KM" else text) * mult


def measure(size: int, name: str, dtype, repeat: int) -> dict[str, float]:
    """Best-of-``repeat`` seconds of each candidate on one case (results cross-checked)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0.001, 0.999, size).astype(dtype)
    y = rng.uniform(0, 1, size).astype(dtype)
    g = np.array(1.0, dtype)
    out = np.empty(size, dtype)
    candidates: dict[str, Callable[[], object]] = {
        "interp": lambda: ops.binary_cross_entropy_backward(g, x, y, None, "mean", out=out),
        "numpy": lambda: numpy_formula(g, x, y, size, dtype),
    }
    torch_fn = torch_backward(x, y, name)
    if torch_fn is not None:
        candidates["torch"] = torch_fn
    candidates["interp"]()  # compile the specialization outside the timing
    np.testing.assert_array_equal(out, numpy_formula(g, x, y, size, dtype))
    return best_of(candidates, repeat, warm_up=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1M,16M")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'N':>10} {'dtype':<5} {'interp ms':>10} {'numpy ms':>10} {'torch ms':>10} "
          f"{'interp/numpy':>13} {'interp/torch':>13}")
    for size in (parse_size(s) for s in args.sizes.split(",")):
        for name, dtype in DTYPES.items():
            t = measure(size, name, dtype, args.repeat)
            torch_ms = f"{t['torch'] * 1e3:10.1f}" if "torch" in t else f"{'-':>10}"
            vs_torch = f"{t['interp'] / t['torch']:13.2f}" if "torch" in t else f"{'-':>13}"
            print(f"{size:>10} {name:<5} {t['interp'] * 1e3:10.1f} {t['numpy'] * 1e3:10.1f} "
                  f"{torch_ms} {t['interp'] / t['numpy']:13.2f} {vs_torch}", flush=True)


if __name__ == "__main__":
    main()
