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
    failures += lower_both(out)
    return failures


def lower_both(out: Any = sys.stdout) -> int:
    """Lower both operators to HIVM on Ascend910B4 when the toolchain is installed;
    print one row per kernel. Returns the number of failures."""
    from lowering.compiler import LoweringError, ToolchainMissing, toolchain

    try:
        toolchain()
    except ToolchainMissing as err:
        print(f"\nlowering skipped: {err}", file=out)
        return 0
    print(f"\n{'kernel':<42} {'target':<12} {'dtype':<9} {'block':>6} "
          f"{'UB estimate':>12} {'UB measured':>12} {'stages to HIVM':>15}", file=out)
    failures = 0
    for op in ("bce_backward", "bce_with_logits_target_backward"):
        for dtype in ("float32", "bfloat16"):
            kernel, args, kwargs = _compile_specs(op, dtype, weight=True, pos_weight=True)
            try:
                lowered = kernel.lower(*args, target="Ascend910B4", **kwargs)
            except LoweringError as err:
                failures += 1
                print(f"{kernel.name:<42} FAILED: {err}", file=out)
                continue
            seconds = sum(s.seconds for s in lowered.stages)
            # a lowering served from the on-disk cache was not timed now: say so
            timing = f"{seconds * 1e3:>12.1f} ms" if lowered.extra.get("compiled_now", True) \
                else f"{'cached':>15}"
            print(f"{kernel.name:<42} {lowered.target.name:<12} {dtype:<9} "
                  f"{lowered.extra['block']:>6} {lowered.ub_estimate_bytes:>10} B "
                  f"{lowered.ub_measured_bytes:>10} B {timing}", file=out)
    return failures


# Operator -> (kernel, argument builder for a dtype). Layouts are the common case of
# each operator: scalar gradOutput, contiguous operands, per-channel weights.
def _compile_specs(op: str, dtype: str, weight: bool, pos_weight: bool) -> tuple[Any, tuple, dict]:
    import dsl

    t = dsl.tensor_spec(dtype)
    scalar = dsl.tensor_spec(dtype, "scalar")
    channel = dsl.tensor_spec(dtype, "strided[0,1]")
    w = channel if weight else None
    p = channel if pos_weight else None
    if op == "bce_backward":
        return ops.bce_backward_kernel, (scalar, t, t, w, t, 1 << 20, 1.0), \
            {"HAS_WEIGHT": weight, "APPLY_SCALE": True}
    if op == "bce_with_logits_target_backward":
        return ops.bce_with_logits_target_backward_kernel, (scalar, t, w, p, t, 1 << 20, 1.0), \
            {"HAS_WEIGHT": weight, "HAS_POS_WEIGHT": pos_weight, "APPLY_SCALE": True}
    if op == "bce_with_logits_backward":
        return ops.bce_with_logits_backward_kernel, (scalar, t, t, w, p, t, 1 << 20, 1.0), \
            {"HAS_WEIGHT": weight, "HAS_POS_WEIGHT": pos_weight, "APPLY_SCALE": True}
    raise SystemExit(f"unknown operator {op!r}; choose from {', '.join(COMPILABLE)}")


COMPILABLE = ("bce_backward", "bce_with_logits_target_backward", "bce_with_logits_backward")


def _small_case(op: str, dtype: str, weight: bool, pos_weight: bool
                ) -> tuple[Any, tuple, dict, np.ndarray]:
    """Real arrays with the layouts of ``_compile_specs``: (kernel, args, kwargs, out)."""
    import dsl

    dt = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}[dtype]
    rng = np.random.default_rng(0)
    shape = (61, 49)  # ragged against every block
    n = shape[0] * shape[1]
    scalar = dsl.broadcast_to(np.array(0.8, dt), shape)
    channel = dsl.broadcast_to(rng.uniform(0.5, 2, shape[1]).astype(dt), shape)
    probs = rng.uniform(0.01, 0.99, shape).astype(dt)
    logits = (rng.standard_normal(shape) * 8).astype(dt)
    target = rng.uniform(0, 1, shape).astype(dt)
    out = np.zeros(shape, dt)
    w, p = (channel if weight else None), (channel if pos_weight else None)
    if op == "bce_backward":
        return ops.bce_backward_kernel, (scalar, probs, target, w, out, n, 1.0 / n), \
            {"HAS_WEIGHT": weight, "APPLY_SCALE": True}, out
    if op == "bce_with_logits_target_backward":
        return ops.bce_with_logits_target_backward_kernel, (scalar, logits, w, p, out, n,
                                                            1.0 / n), \
            {"HAS_WEIGHT": weight, "HAS_POS_WEIGHT": pos_weight, "APPLY_SCALE": True}, out
    return ops.bce_with_logits_backward_kernel, (scalar, logits, target, w, p, out, n, 1.0 / n), \
        {"HAS_WEIGHT": weight, "HAS_POS_WEIGHT": pos_weight, "APPLY_SCALE": True}, out


def run_cpu_diff(op: str, dtype: str, weight: bool, pos_weight: bool, out: Any) -> int:
    """Run the compiled kernel on a small case and print its diff against the interpreter."""
    kernel, args, kwargs, result = _small_case(op, dtype, weight, pos_weight)
    kernel.launch(*args, backend="interpreter", **kwargs)
    expected = result.copy()
    result[...] = 0
    started = time.perf_counter()
    kernel.launch(*args, backend="compiled-cpu", **kwargs)
    elapsed = time.perf_counter() - started
    same = result.view(np.uint8).reshape(result.size, -1) == \
        expected.view(np.uint8).reshape(expected.size, -1)
    differing = int((~same.all(axis=1)).sum())
    diff = np.abs(result.astype(np.float64) - expected.astype(np.float64))
    print(f"\ncompiled-cpu run of {kernel.name} on {result.size} elements ({dtype}, "
          f"{elapsed * 1e3:.0f} ms including the first compile): {differing} elements differ "
          f"from the interpreter, max |difference| {float(np.max(diff)):.3g}"
          + (" -- bit-exact" if not differing else ""), file=out)
    if differing:
        i = int(np.argmax(~same.all(axis=1)))
        print(f"first difference at element {i}: compiled {result.reshape(-1)[i]!r}, "
              f"interpreter {expected.reshape(-1)[i]!r}", file=out)
    return 1 if differing else 0


# the stages --emit prints or writes, and the suffix of each one's file
_EMIT_SUFFIX = {"triton": "py", "ttir": "ttir.mlir", "linalg": "linalg.mlir",
                "hivm": "hivm.mlir"}


def compile_command(op: str, target: str, dtype: str, emit: str, out_dir: str | None,
                    weight: bool, pos_weight: bool, out: Any = sys.stdout,
                    run_cpu: bool = False) -> int:
    """Lower one operator's kernel and print the stage table and UB figures."""
    from pathlib import Path

    from lowering.compiler import LoweringError
    from lowering.ub import UBOverflowError

    # every argument checked before the (long) compile
    stages = [e.strip() for e in emit.split(",") if e.strip()]
    unknown = [stage for stage in stages if stage not in _EMIT_SUFFIX]
    if unknown:
        print(f"error: --emit accepts {', '.join(_EMIT_SUFFIX)}; got {unknown[0]!r}", file=out)
        return 2
    if pos_weight and op == "bce_backward":
        print("error: --pos-weight: bce_backward has no pos_weight operand", file=out)
        return 2
    if out_dir is not None and not stages:
        print("error: --out names the folder for the files of --emit, and no --emit was "
              "given (e.g. --emit triton,hivm)", file=out)
        return 2
    if not target:
        print("error: --target is empty; name a chip (e.g. Ascend910B4)", file=out)
        return 2
    folder = Path(out_dir) if out_dir else None
    if folder is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            print(f"error: --out {out_dir}: cannot make that folder ({err.strerror or err})",
                  file=out)
            return 2
    kernel, args, kwargs = _compile_specs(op, dtype, weight, pos_weight)
    try:
        lowered = kernel.lower(*args, target=target, **kwargs)
    except (LoweringError, UBOverflowError, ValueError) as err:
        print(f"error: {err}", file=out)
        return 1
    print(f"{kernel.name} on {lowered.target.name}, {dtype}, "
          f"BLOCK={lowered.extra.get('block')} (largest that fits the UB)", file=out)
    print(lowered.stage_table(), file=out)
    print(lowered.ub_report(), file=out)
    texts = {"triton": lowered.triton, "ttir": lowered.ttir, "linalg": lowered.linalg,
             "hivm": lowered.hivm}
    for stage in stages:
        if folder is not None:
            path = folder / f"{kernel.name}.{_EMIT_SUFFIX[stage]}"
            try:
                path.write_text(texts[stage])
            except OSError as err:
                print(f"error: cannot write {path} ({err.strerror or err})", file=out)
                return 1
            print(f"wrote {path}", file=out)
        else:
            print(f"\n// ---- {stage} ----\n{texts[stage]}", file=out)
    if run_cpu:
        return run_cpu_diff(op, dtype, weight, pos_weight, out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ascend-dsl", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo_parser = sub.add_parser("demo", help="run both operators on realistic cases")
    demo_parser.add_argument("--batch", type=int, default=256)
    demo_parser.add_argument("--classes", type=int, default=80)
    demo_parser.add_argument("--seed", type=int, default=0)
    compile_parser = sub.add_parser("compile", help="lower an operator's kernel to HIVM")
    compile_parser.add_argument("op", choices=COMPILABLE)
    compile_parser.add_argument("--target", default="Ascend910B4")
    compile_parser.add_argument("--dtype", default="float32",
                                choices=["float32", "float16", "bfloat16"])
    compile_parser.add_argument("--emit", default="",
                                help="comma-separated stages to print or write: "
                                     "triton,ttir,linalg,hivm")
    compile_parser.add_argument("--out", default=None, help="folder for --emit files")
    compile_parser.add_argument("--weight", action="store_true", help="with a weight operand")
    compile_parser.add_argument("--pos-weight", action="store_true",
                                help="with a pos_weight operand")
    compile_parser.add_argument("--run-cpu", action="store_true",
                                help="also compile for this CPU, run a small case and "
                                     "print the diff against the interpreter")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return 1 if demo(args.batch, args.classes, args.seed) else 0
    return compile_command(args.op, args.target, args.dtype, args.emit, args.out, args.weight,
                           args.pos_weight, run_cpu=args.run_cpu)


if __name__ == "__main__":
    raise SystemExit(main())
