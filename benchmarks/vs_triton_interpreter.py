"""Kernel launch times of triton-ascend's tutorials: Triton's interpreter vs ascend-dsl's.

    python benchmarks/vs_triton_interpreter.py PATH [--tutorials 01,02,03,04,05,09]
        [--runners triton,dsl,dsl-warm] [--repeat 1] [--timeout 900] [--max-launches N]
        [--json FILE]

PATH is a triton-ascend checkout. Each tutorial (PATH/third_party/ascend/tutorials,
at its own sizes) runs in child processes through the torch_npu shim of
benchmarks/triton_ascend_suite.py, once per runner and repetition, alternating the
runners:

- ``triton``: Triton's interpreter (``TRITON_INTERPRET=1``);
- ``dsl``: ours (dsl.triton_compat), each run with an empty cache folder
  (``DSL_CACHE_DIR``): every specialization is traced and optimised in the run, as on
  a machine that never ran the script;
- ``dsl-warm``: ours with the on-disk IR cache (``dsl.ir_cache``) of one untimed run
  of the same tutorial before the timed ones, as when a script runs again.

The child times only kernel launches -- Triton's ``GridExecutor.__call__`` (every
``kernel[grid](...)``, autotuner benchmark launches included) or, for ours, the
``run`` methods of ``JITFunction``/``Autotuner``/``Heuristics`` that dsl.triton_compat
patches (the outermost of nested calls) -- and logs one line per launch, so a run that
times out still reports the launches it finished. Ours runs an autotuned kernel once,
with its first config, which is also Triton's first benchmark launch.

Per kernel the table shows the launches every runner completed (the common prefix, the
same launches when the tutorial is deterministic), the best-of-``--repeat`` time of
those launches under each runner, the speed-ups (Triton's time / ours) and whether each
run passed the tutorial's own checks. A runner that fails a tutorial gets a line with
the reason instead of a crash. ``--max-launches N`` stops every run after N launches
(the tutorial's checks then do not run).
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import runpy
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from triton_ascend_suite import (  # noqa: E402
    TUTORIALS,
    child_env,
    classify,
    default_memory_limit,
    git_commit,
    preflight,
    run_child,
)

DEFAULT_TUTORIALS = ("01", "02", "03", "04", "05", "09")
RUNNERS = ("triton", "dsl", "dsl-warm")
OURS = ("dsl", "dsl-warm")


# --- the child: run one tutorial, logging each launch --------------------------------


class LaunchBudgetReached(BaseException):
    """Raised after ``--max-launches`` launches (a BaseException: tutorials catch Exception)."""


class LaunchTimer:
    """Wraps a launch method; the outermost launch of each call chain is logged."""

    def __init__(self, log: Path, max_launches: int | None):
        self.log = log.open("a", buffering=1)
        self.max_launches = max_launches
        self.count = 0
        self.local = threading.local()

    def event(self, **record: Any) -> None:
        self.log.write(json.dumps(record) + "\n")

    def wrap(self, owner: type, attribute: str, kernel_name: Callable[[Any], str]) -> None:
        original = getattr(owner, attribute)
        timer = self

        def timed(this: Any, *args: Any, **kwargs: Any) -> Any:
            depth = getattr(timer.local, "depth", 0)
            if depth == 0 and timer.count == 0:
                # The tutorial's imports (torch, triton, sympy) leave millions of objects
                # for the process's first full garbage collection, ~0.1 s, which would
                # land in whichever launch allocates next: collect before the first
                # timed launch, for both runners alike.
                gc.collect()
            timer.local.depth = depth + 1
            try:
                start = time.perf_counter()
                result = original(this, *args, **kwargs)
                seconds = time.perf_counter() - start
            finally:
                timer.local.depth = depth
            if depth == 0:
                timer.count += 1
                timer.event(kernel=kernel_name(this), seconds=seconds)
                if timer.max_launches is not None and timer.count >= timer.max_launches:
                    raise LaunchBudgetReached
            return result

        functools.update_wrapper(timed, original)  # keeps markers such as dsl's __dsl_patched__
        setattr(owner, attribute, timed)


def _fn_name(launcher: Any) -> str:
    """The Python function's name under JITFunction/Autotuner/Heuristics/GridExecutor wrappers."""
    fn = launcher
    while hasattr(fn, "fn") and fn.fn is not fn:
        fn = fn.fn
    return getattr(fn, "__name__", type(launcher).__name__)


def install_timer(runner: str, timer: LaunchTimer) -> None:
    """Time each kernel execution: Triton's GridExecutor runs one grid (autotuner
    benchmark launches included); dsl.triton_compat replaces the ``run`` methods."""
    if runner == "triton":
        from triton.runtime.interpreter import GridExecutor

        timer.wrap(GridExecutor, "__call__", _fn_name)
    else:
        from triton.runtime.autotuner import Autotuner, Heuristics
        from triton.runtime.jit import JITFunction

        # Loaded before anything is timed, as Triton's interpreter is by ``import
        # triton``: the modules ours imports on its first launch (where no bytecode
        # cache is written, compiling them from source took ~0.1 s of that launch).
        import lowering.backends  # noqa: F401
        import lowering.interpreter  # noqa: F401

        for owner in (JITFunction, Autotuner, Heuristics):
            timer.wrap(owner, "run", _fn_name)


def child_main(tutorial: Path, log: Path, max_launches: int | None) -> int:
    timer = LaunchTimer(log, max_launches)
    install_timer(os.environ["DSL_SUITE_RUNNER"], timer)
    sys.argv = [str(tutorial)]
    sys.path.insert(0, str(tutorial.parent))
    try:
        runpy.run_path(str(tutorial), run_name="__main__")
    except LaunchBudgetReached:
        timer.event(end="stopped", launches=timer.count)
        return 0
    except BaseException as error:  # noqa: BLE001  (the parent classifies the traceback)
        traceback.print_exc()
        timer.event(end="raised", error=f"{type(error).__name__}: {error}".splitlines()[0])
        return 1
    timer.event(end="done", launches=timer.count)
    return 0


# --- the parent ---------------------------------------------------------------------


@dataclass
class Run:
    """One child: a tutorial under one runner."""

    runner: str
    status: str  # pass, stopped, fail, unsupported, error, timeout
    reason: str = ""
    seconds: float = 0.0
    launches: dict[str, list[float]] = field(default_factory=dict)


def run_tutorial(tutorial: Path, runner: str, env: dict[str, str], timeout: float,
                 max_launches: int | None) -> Run:
    handle, name = tempfile.mkstemp(prefix=f"vs-triton-{runner}-", suffix=".jsonl")
    os.close(handle)
    log = Path(name)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(tutorial), "--launch-log", str(log)]
    if max_launches is not None:
        cmd += ["--max-launches", str(max_launches)]
    try:
        code, output, seconds = run_child(cmd, env, timeout)
        records = [json.loads(line) for line in log.read_text().splitlines()]
    finally:
        log.unlink(missing_ok=True)
    launches: dict[str, list[float]] = {}
    for record in records:
        if "kernel" in record:
            launches.setdefault(record["kernel"], []).append(record["seconds"])
    end = next((r for r in records if "end" in r), {})
    if code is None:
        return Run(runner, "timeout", f"after {timeout:g}s", seconds, launches)
    if code == 0 and end.get("end") == "stopped":
        return Run(runner, "stopped", f"after {end['launches']} launches, checks skipped", seconds, launches)
    status, reason, _ = classify("script", code, output)
    return Run(runner, status, reason, seconds, launches)


@dataclass
class KernelRow:
    tutorial: str
    kernel: str
    launches: int
    counts: dict[str, int]
    seconds: dict[str, float | None]

    def speedup(self, runner: str = "dsl") -> float | None:
        """Triton's time over ``runner``'s."""
        ours, theirs = self.seconds.get(runner), self.seconds.get("triton")
        return theirs / ours if ours and theirs is not None else None


def compare(tutorial: str, runs: list[Run]) -> list[KernelRow]:
    """Per kernel: the launches every run with that kernel finished, best time per runner."""
    kernels: list[str] = []
    for run in runs:
        kernels += [k for k in run.launches if k not in kernels]
    present = [runner for runner in RUNNERS if any(run.runner == runner for run in runs)]
    rows = []
    for kernel in kernels:
        having = [run for run in runs if kernel in run.launches]
        common = min(len(run.launches[kernel]) for run in having)
        counts = {runner: max((len(r.launches[kernel]) for r in having if r.runner == runner), default=0)
                  for runner in present}
        seconds = {runner: min((sum(r.launches[kernel][:common]) for r in having if r.runner == runner),
                               default=None)
                   for runner in present}
        rows.append(KernelRow(tutorial, kernel, common, counts, seconds))
    return rows


def _checks(runs: list[Run], runner: str) -> str:
    statuses = sorted({run.status for run in runs if run.runner == runner})
    return "/".join(statuses) if statuses else "-"


def _time(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f}s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, nargs="?", help="triton-ascend checkout")
    parser.add_argument("--tutorials", default=",".join(DEFAULT_TUTORIALS), help="comma-separated prefixes")
    parser.add_argument("--runners", default=",".join(RUNNERS),
                        help=f"comma-separated, some of {', '.join(RUNNERS)}")
    parser.add_argument("--repeat", type=int, default=1, help="runs per runner; the best counts")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per child")
    parser.add_argument("--max-launches", type=int, help="stop each run after N launches")
    parser.add_argument("--memory-limit", type=float, default=default_memory_limit(), metavar="GIB",
                        help="heap cap per child in GiB (default: a quarter of this machine's memory)")
    parser.add_argument("--json", type=Path, help="save every run's launch times here")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--launch-log", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        return child_main(args.child, args.launch_log, args.max_launches)
    if args.path is None:
        parser.error("PATH is required")

    root = args.path.resolve()
    available = sorted((root / TUTORIALS).glob("*.py"))
    prefixes = [prefix.strip() for prefix in args.tutorials.split(",")]
    wanted = [p for prefix in prefixes for p in available if p.name.startswith(prefix)]
    if not wanted:
        parser.error(f"no tutorial in {root / TUTORIALS} matches {args.tutorials}")
    print(f"triton-ascend: {root} @ {git_commit(root)}")
    limit = f"; at most {args.max_launches} launches per run" if args.max_launches else ""
    names = ", ".join(p.name for p in wanted)
    print(f"tutorials: {names}; repeat {args.repeat}; timeout {args.timeout:g}s{limit}")
    runners = [r.strip() for r in args.runners.split(",") if r.strip()]
    unknown = sorted(set(runners) - set(RUNNERS))
    if unknown or not runners:
        parser.error(f"--runners takes some of {', '.join(RUNNERS)}, got {args.runners!r}")
    envs = {runner: child_env("triton" if runner == "triton" else "dsl", memory_gib=args.memory_limit)
            for runner in runners}
    broken = {runner: preflight(envs[runner]) for runner in runners}
    for runner, problem in broken.items():
        if problem is not None:
            print(f"runner {runner} cannot start: {problem}")

    all_rows: list[KernelRow] = []
    all_runs: dict[str, list[Run]] = {}
    ours = [r for r in OURS if r in runners]
    header = f"{'kernel':<28} {'launches':>9}" + "".join(f" {r:>14}" for r in runners) + \
        "".join(f" {'x ' + r:>12}" for r in ours)
    for tutorial in wanted:
        with tempfile.TemporaryDirectory(prefix="vs-triton-ir-") as warm_cache:
            runs: list[Run] = []
            envs_now = dict(envs)
            if "dsl-warm" in envs:
                envs_now["dsl-warm"] = envs["dsl-warm"] | {"DSL_CACHE_DIR": warm_cache}
                if broken["dsl-warm"] is None:  # untimed: fills the IR cache
                    run_tutorial(tutorial, "dsl-warm", envs_now["dsl-warm"], args.timeout,
                                 args.max_launches)
            for rep in range(args.repeat):
                order = runners if rep % 2 == 0 else runners[::-1]
                for runner in order:
                    if broken[runner] is not None:
                        continue
                    if runner == "dsl":  # cold: a cache folder of its own, empty
                        with tempfile.TemporaryDirectory(prefix="vs-triton-cold-") as cold:
                            env = envs["dsl"] | {"DSL_CACHE_DIR": cold}
                            runs.append(run_tutorial(tutorial, runner, env, args.timeout,
                                                     args.max_launches))
                    else:
                        runs.append(run_tutorial(tutorial, runner, envs_now[runner], args.timeout,
                                                 args.max_launches))
        all_runs[tutorial.name] = runs
        checks = ", ".join(f"{r} {_checks(runs, r)}" for r in runners)
        print(f"\n== {tutorial.name}   checks: {checks}")
        for runner in runners:
            for run in runs:
                if run.runner == runner and run.status not in ("pass", "stopped"):
                    print(f"  {runner} failed ({run.status}): {run.reason}")
                    break
        rows = compare(tutorial.name, runs)
        all_rows += rows
        if not rows:
            print("  no kernel launch finished")
            continue
        print("  " + header)
        for row in rows:
            speedups = "".join(f" {_ratio(row.speedup(r)):>12}" for r in ours)
            note = ""
            if len(set(row.counts.values())) > 1:
                note = "  (launches: " + ", ".join(f"{r} {n}" for r, n in row.counts.items()) + ")"
            times = "".join(f" {_time(row.seconds.get(r)):>14}" for r in runners)
            print(f"  {row.kernel:<28} {row.launches:>9}{times}{speedups}{note}")

    if args.json:
        payload = {
            "path": str(root), "commit": git_commit(root), "runners": runners,
            "runs": {name: [asdict(run) for run in runs] for name, runs in all_runs.items()},
            "kernels": [asdict(row) | {"speedup": {r: row.speedup(r) for r in ours}}
                        for row in all_rows],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}x"


if __name__ == "__main__":
    sys.exit(main())
