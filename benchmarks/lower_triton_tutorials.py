"""Lower triton-ascend's tutorial kernels through this project's pipeline to HIVM.

    python benchmarks/lower_triton_tutorials.py PATH [--tutorials 01,02,03,04,05,09]

Each tutorial runs unchanged in a child process under ``DSL_TRITON_INTERPRET``-style
routing (the ``benchmarks/triton_ascend_shim`` start-up maps the NPU onto the CPU and
sends every Triton launch to this project's interpreter). The child wraps the launch
of ``dsl.triton_compat.TritonKernel`` so that the first launch of each kernel is
also lowered, with the very arguments the tutorial passed, for an Ascend910B4
(``kernel.lower``: generated Triton -> triton-ascend -> bishengir -> HIVM), and
prints the Unified Buffer (or, for dot kernels, L1/L0) use against capacity. The
parent prints one line per kernel and whether every kernel fits.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from triton_ascend_suite import child_env, git_commit, run_child  # (benchmarks/ is the script's folder)

TUTORIALS = Path("third_party/ascend/tutorials")
MARK = "LOWERED "

# The child: wrap TritonKernel._launch, then run the tutorial as __main__.
CHILD = r"""
import json, runpy, sys
import dsl.triton_compat as tc

seen = set()
original = tc.TritonKernel._launch

def launch_then_lower(self, args, kwargs, grid, *rest, **more):
    original(self, args, kwargs, grid, *rest, **more)
    if self.name in seen:
        return
    seen.add(self.name)
    row = {"kernel": self.name}
    try:
        if len(self.configs) > 1:  # autotuned: every config, the best fit first
            ranked = self.rank_configs(*args, target="Ascend910B4", **kwargs)
            row["configs"] = [[getattr(c, "kwargs", c), ub, note] for c, ub, note in ranked]
            best = ranked[0][0]
            lowered = self.with_config(self.configs.index(best)).lower(
                *args, target="Ascend910B4", **kwargs)
            row["config"] = str(getattr(best, "kwargs", best))
        else:
            lowered = self.lower(*args, target="Ascend910B4", **kwargs)
        row.update(ub=lowered.ub_measured_bytes, capacity=lowered.ub_capacity_bytes,
                   hivm_lines=lowered.hivm.count("\n"), report=lowered.ub_report.splitlines()[:3]
                   if isinstance(lowered.ub_report, str) else None)
    except Exception as exc:  # reported, not raised: the tutorial goes on
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    print("LOWERED " + json.dumps(row), flush=True)

tc.TritonKernel._launch = launch_then_lower
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
                if "error" in row:
                    every_fits = False
                    print(f"{tutorial.name:34} {row['kernel']:28} FAILED {row['error']}")
                else:
                    fits = row["ub"] <= row["capacity"]
                    every_fits &= fits
                    print(f"{tutorial.name:34} {row['kernel']:28} HIVM {row['hivm_lines']:5} lines, "
                          f"UB {row['ub']:7} of {row['capacity']} B "
                          f"{'fits' if fits else 'OVERFLOWS'}"
                          + (f" with config {row['config']}" if "config" in row else ""))
                    for config, _ub, note in row.get("configs", []):
                        print(f"{'':34}   autotune config {config}: {note}")
    print("every kernel lowered within UB" if every_fits else "some kernel did not lower or fit")
    return 0 if every_fits else 1


if __name__ == "__main__":
    sys.exit(main())
