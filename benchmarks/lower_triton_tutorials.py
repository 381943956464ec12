"""Lower triton-ascend's tutorial kernels through this project's pipeline to HIVM.

    python benchmarks/lower_triton_tutorials.py PATH [--tutorials 01,02,03,04,05,09]

Each tutorial runs unchanged in a child process under ``DSL_TRITON_INTERPRET``-style
routing (the ``benchmarks/triton_ascend_shim`` start-up maps the NPU onto the CPU and
sends every Triton launch to this project's interpreter). The child wraps the record
of each launch (``dsl.triton_compat.LaunchedKernel``) so that the first launch of each
kernel is also lowered, with the very arguments the tutorial passed, for an
Ascend910B4 (``kernel.lower``: generated Triton -> triton-ascend -> bishengir ->
HIVM), and prints the Unified Buffer (or, for dot kernels, L1/L0) use against
capacity. For comparison the tutorial's own ``@triton.jit`` kernel is compiled too,
with the same arguments and config, by triton-ascend's own front end (TTIR ->
Linalg) and the same bishengir-compile: its "tutorial's own kernel" figure says
whether an overflow is this project's code generation or the kernel's. The parent
prints one line per kernel and whether every kernel fits.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from triton_ascend_suite import child_env, git_commit, run_child  # (benchmarks/ is the script's folder)

TUTORIALS = Path("third_party/ascend/tutorials")
MARK = "LOWERED "

# The child: wrap LaunchedKernel (the record of a Triton launch routed to the
# interpreter), then run the tutorial as __main__.
CHILD = r"""
import json, runpy, sys
import dsl.triton_compat as tc
from dsl.targets import get_target
from lowering import ub
from lowering.compiler import run_bishengir, toolchain

seen = set()
original_init = tc.LaunchedKernel.__init__

def own_kernel_ub(record):
    # the tutorial's own kernel through triton-ascend's front end and bishengir-compile
    try:
        hivm = run_bishengir(toolchain()[1], record.asm["ttadapter"], get_target("Ascend910B4"))
        return ub.measured_bytes(hivm), "fits"
    except Exception as exc:
        overflow = ub.reported_overflow(str(exc))
        if overflow is not None:
            return overflow[1], "overflows"
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"

def init_then_lower(self, kernel, dsl_kernel, args, kwargs):
    original_init(self, kernel, dsl_kernel, args, kwargs)
    if self.name in seen:
        return
    seen.add(self.name)
    row = {"kernel": self.name}
    chosen = dsl_kernel
    try:
        if len(dsl_kernel.configs) > 1:  # autotuned: every config, the best fit first
            ranked = dsl_kernel.rank_configs(*args, target="Ascend910B4", **kwargs)
            row["configs"] = [[getattr(c, "kwargs", c), ub_, note] for c, ub_, note in ranked]
            row["config_list"] = [getattr(c, "kwargs", c) for c in dsl_kernel.configs]
            best = ranked[0][0]
            chosen = dsl_kernel.with_config(dsl_kernel.configs.index(best))
            row["config"] = str(getattr(best, "kwargs", best))
        lowered = chosen.lower(*args, target="Ascend910B4", **kwargs)
        row.update(ub=lowered.ub_measured_bytes, capacity=lowered.ub_capacity_bytes,
                   hivm_lines=lowered.hivm.count("\n"))
    except Exception as exc:  # reported, not raised: the tutorial goes on
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    row["own"] = own_kernel_ub(tc.LaunchedKernel(kernel, chosen, args, kwargs))
    if len(dsl_kernel.configs) > 1:
        row["own_configs"] = [own_kernel_ub(tc.LaunchedKernel(
            kernel, dsl_kernel.with_config(i), args, kwargs)) for i in range(len(dsl_kernel.configs))]
    print("LOWERED " + json.dumps(row), flush=True)

tc.LaunchedKernel.__init__ = init_then_lower
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def lower_tutorial(path: Path, timeout: float) -> tuple[list[dict], str]:
    """(one row per kernel, the tail of the child's output on failure)."""
    # the suite's child set-up: the shim, runner dsl, and a heap cap (a MemoryError in
    # the tutorial's own largest cases, not the machine's OOM killer)
    env = child_env("dsl", memory_gib=12)
    code, output, _ = run_child([sys.executable, "-c", CHILD, str(path)], env, timeout)
    if code is None:
        output += "\n(timed out)"
    rows = [json.loads(line[len(MARK):]) for line in output.splitlines() if line.startswith(MARK)]
    return rows, "\n".join(output.strip().splitlines()[-3:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="triton-ascend checkout")
    parser.add_argument("--tutorials", default="01,02,03,04,05,09")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    root = args.path.resolve()
    print(f"triton-ascend {root} @ {git_commit(root)}; target Ascend910B4")
    every_fits = True
    for prefix in args.tutorials.split(","):
        for tutorial in sorted((root / TUTORIALS).glob(f"{prefix.strip()}*.py")):
            rows, tail = lower_tutorial(tutorial, args.timeout)
            if not rows:
                every_fits = False
                print(f"{tutorial.name}: no kernel lowered ({tail})")
            for row in rows:
                own_bytes, own_note = row.get("own", (None, "not compiled"))
                own = f"; tutorial's own kernel: {own_note}" + \
                    (f", {own_bytes} B" if own_bytes is not None else "")
                if "error" in row:
                    every_fits = False
                    print(f"{tutorial.name:34} {row['kernel']:28} FAILED {row['error']}{own}")
                else:
                    fits = row["ub"] <= row["capacity"]
                    every_fits &= fits
                    print(f"{tutorial.name:34} {row['kernel']:28} HIVM {row['hivm_lines']:5} lines, "
                          f"UB {row['ub']:7} of {row['capacity']} B "
                          f"{'fits' if fits else 'OVERFLOWS'}"
                          + (f" with config {row['config']}" if "config" in row else "") + own)
                for config, _ub, note in row.get("configs", []):
                    print(f"{'':34}   autotune config {config}: {note}")
                for config, (own_bytes, own_note) in zip(
                        row.get("config_list", []), row.get("own_configs", [])):
                    print(f"{'':34}   tutorial's own kernel, config {config}: {own_note}"
                          + (f", {own_bytes} B" if own_bytes is not None else ""))
    print("every kernel lowered within UB" if every_fits else "some kernel did not lower or fit")
    return 0 if every_fits else 1


if __name__ == "__main__":
    sys.exit(main())
