"""First launches of the gallery kernels in fresh processes: IR cache cold vs warm.

    python benchmarks/bench_first_launch.py [--repeat 5] [--kernels vector_add,softmax,...]

A first launch in a new process traces, optimises, analyses and interprets its
kernel once. The on-disk IR cache (``dsl.ir_cache``) keeps the traced and optimised
IR, so a script run again skips the first two. Each sample is one child process
that imports numpy, the package and one example module (not timed), then times the
first call of the example's host function on small inputs: ``cold`` children get an
empty cache folder (``DSL_CACHE_DIR``), ``warm`` ones share a folder that one untimed
child filled. The modes alternate; the table prints the best and the median of
``--repeat`` samples per mode and the ratio cold / warm of the medians (these
machines are noisy: compare within one run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

# example module -> the call the child times (inputs built before timing)
CALLS = {
    "vector_add": ("x = rng.standard_normal(98432).astype(np.float32)", "m.add(x, x)"),
    "softmax": ("x = rng.standard_normal((128, 781)).astype(np.float32)", "m.softmax(x)"),
    "layer_norm": ("x = rng.standard_normal((256, 1024)).astype(np.float32); "
                   "w = rng.standard_normal(1024).astype(np.float32); b = w.copy()",
                   "m.layer_norm(x, w, b)"),
    "attention": ("q = rng.standard_normal((1, 128, 32)).astype(np.float16)",
                  "m.attention(q, q, q)"),
    "matmul": ("a = rng.standard_normal((128, 128)).astype(np.float16)", "m.matmul(a, a)"),
    "cumsum": ("x = rng.standard_normal((64, 1000)).astype(np.float32)", "m.cumsum(x)"),
}

CHILD = """
import importlib, json, sys, time
import numpy as np
sys.path.insert(0, {examples!r})
import dsl, lowering.backends, lowering.interpreter  # imports are not timed
m = importlib.import_module({name!r})
rng = np.random.default_rng(0)
{setup}
start = time.perf_counter()
{call}
print(json.dumps({{"seconds": time.perf_counter() - start}}))
"""


def sample(name: str, cache: str) -> float:
    setup, call = CALLS[name]
    code = CHILD.format(examples=str(EXAMPLES), name=name, setup=setup, call=call)
    env = dict(os.environ, DSL_CACHE_DIR=cache, PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.pop("DSL_IR_CACHE", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{name}: child failed\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="samples per kernel and mode")
    parser.add_argument("--kernels", default=",".join(CALLS), help="comma-separated examples")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.kernels.split(",") if n.strip()]
    unknown = [n for n in names if n not in CALLS]
    if unknown:
        parser.error(f"unknown kernels {unknown}; known: {', '.join(CALLS)}")
    print(f"first launch in a fresh process, best / median of {args.repeat} (ms)")
    print(f"{'kernel':<12} {'cold best':>10} {'cold med':>9} {'warm best':>10} {'warm med':>9} "
          f"{'cold/warm':>10}")
    ratios = []
    for name in names:
        times: dict[str, list[float]] = {"cold": [], "warm": []}
        with tempfile.TemporaryDirectory(prefix="first-launch-warm-") as warm:
            sample(name, warm)  # untimed: fills the warm folder
            for rep in range(args.repeat):
                for mode in ("cold", "warm") if rep % 2 == 0 else ("warm", "cold"):
                    if mode == "cold":
                        with tempfile.TemporaryDirectory(prefix="first-launch-cold-") as cold:
                            times[mode].append(sample(name, cold))
                    else:
                        times[mode].append(sample(name, warm))
        cold_med, warm_med = (statistics.median(times[m]) for m in ("cold", "warm"))
        ratios.append(cold_med / warm_med)
        print(f"{name:<12} {1e3 * min(times['cold']):>10.2f} {1e3 * cold_med:>9.2f} "
              f"{1e3 * min(times['warm']):>10.2f} {1e3 * warm_med:>9.2f} "
              f"{cold_med / warm_med:>9.2f}x")
    print(f"geometric mean cold/warm: {statistics.geometric_mean(ratios):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
