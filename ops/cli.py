"""The ``ascend-dsl`` command line.

``ascend-dsl demo`` runs both operators in interpreter mode on realistic cases (a
multi-label [batch, classes] loss with per-class weight and pos_weight, scalar
mean-reduced gradOutput, fp16/bf16/fp32), checks each result against its float64
reference and prints a table. It exits with status 1 if any result is off.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

import ops

_DTYPES = {"fp32": np.dtype(np.float32), "fp16": np.dtype(np.float16),
           "bf16": np.dtype(ml_dtypes.bfloat16)}
# Allowed max error in output ulps: fp32 outputs carry several fp32 roundings (see
# tests/numerics.py for the derivation), 16-bit outputs one.
_ALLOWED_ULPS = {"fp32": 8.0, "fp16": 1.0, "bf16": 1.0}


@dataclass
class Case:
    operator: str
    shape: tuple[int, ...]
    dtype: str
    reduction: str
    call: Callable[[], Any]
    reference: Callable[[], np.ndarray]


def _ulps(result: np.ndarray, reference: np.ndarray, scale: np.ndarray) -> float:
    """Max |result - reference| in ulps of the result dtype at ``scale``."""
    mant = {np.dtype(np.float32): 23, np.dtype(np.float16): 10,
            np.dtype(ml_dtypes.bfloat16): 7}[result.dtype]
    emin = -14 if result.dtype == np.float16 else -126
    mag = np.maximum(np.abs(scale), 2.0**emin)
    spacing = np.exp2(np.floor(np.log2(mag)) - mant)
    return float(np.max(np.abs(result.astype(np.float64) - reference) / spacing))


def _cases(batch: int, classes: int, seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    shape = (batch, classes)
    cases: list[Case] = []
    for name, dtype in _DTYPES.items():
        probs = rng.uniform(0.001, 0.999, shape).astype(dtype)
        labels = (rng.random(shape) < 0.1).astype(dtype)  # sparse multi-label targets
        logits = (rng.standard_normal(shape) * 3).astype(dtype)
        weight = rng.uniform(0.5, 2.0, (classes,)).astype(dtype)
        pos_weight = rng.uniform(1.0, 10.0, (classes,)).astype(dtype)
        grad = np.array(1.0, dtype)  # scalar gradOutput of a mean-reduced loss
        cases.append(Case(
            "bce_backward", shape, name, "mean",
            lambda g=grad, x=probs, y=labels, w=weight:
                ops.binary_cross_entropy_backward(g, x, y, w, "mean"),
            lambda g=grad, x=probs, y=labels, w=weight:
                ops.bce_backward_reference(g, x, y, w, "mean")))
        cases.append(Case(
            "bce_with_logits_target_backward", shape, name, "mean",
            lambda g=grad, x=logits, t=labels, w=weight, p=pos_weight:
                ops.binary_cross_entropy_with_logits_target_backward(g, x, t, w, p, "mean"),
            lambda g=grad, x=logits, t=labels, w=weight, p=pos_weight:
                ops.bce_with_logits_target_backward_reference(g, x, t, w, p, "mean")))
        grad_full = rng.standard_normal(shape).astype(dtype)
        cases.append(Case(
            "bce_with_logits_target_backward", shape, name, "none",
            lambda g=grad_full, x=logits, t=labels:
                ops.binary_cross_entropy_with_logits_target_backward(g, x, t, None, None, "none"),
            lambda g=grad_full, x=logits, t=labels:
                ops.bce_with_logits_target_backward_reference(g, x, t, None, None, "none")))
    return cases


def demo(batch: int, classes: int, seed: int, out: Any = sys.stdout) -> int:
    """Run the demo cases; print the table; return the number of failed cases."""
    header = f"{'operator':<33} {'shape':<12} {'dtypes':<6} {'reduction':<9} " \
             f"{'backend':<11} {'max error':>12} {'time':>10}"
    print(header, file=out)
    print("-" * len(header), file=out)
    failures = 0
    for case in _cases(batch, classes, seed):
        case.call()  # first call builds the specialization
        start = time.perf_counter()
        result = case.call()
        elapsed = time.perf_counter() - start
        reference = case.reference()
        # Error is measured against the size of the reference, or for the pos_weight
        # formula (which cancels near its root) against 1/N, the size of its terms.
        scale = np.maximum(np.abs(reference), 1.0 / result.size) \
            if case.operator != "bce_backward" else reference
        err = _ulps(result, reference, scale)
        ok = err <= _ALLOWED_ULPS[case.dtype]
        failures += not ok
        shape = "x".join(map(str, case.shape))
        mark = "" if ok else "  FAIL"
        print(f"{case.operator:<33} {shape:<12} {case.dtype:<6} {case.reduction:<9} "
              f"{'interpreter':<11} {err:>8.2f} ulp {elapsed * 1e3:>7.2f} ms{mark}", file=out)
    print(f"\n{'all results within tolerance' if not failures else f'{failures} case(s) FAILED'}"
          " (error in ulps of the output dtype against the float64 reference)", file=out)
    return failures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ascend-dsl", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo_parser = sub.add_parser("demo", help="run both operators on realistic cases")
    demo_parser.add_argument("--batch", type=int, default=256)
    demo_parser.add_argument("--classes", type=int, default=80)
    demo_parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "demo":
        return 1 if demo(args.batch, args.classes, args.seed) else 0
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
