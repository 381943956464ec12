"""Run triton-ascend's tutorials and pytest unit tests on the CPU, in an interpreter.

    python benchmarks/triton_ascend_suite.py PATH [--runner dsl|triton]
        [--only tutorials|unittests] [-k SUBSTRING] [--first N] [--jobs N]
        [--tutorial-timeout 300] [--test-timeout 120] [--json FILE] [--log-dir DIR]
        [--show-output LINES]

PATH is a checkout (or exported tree) of triton-ascend. Each file runs in its own child
process, in a fresh temporary folder, with benchmarks/triton_ascend_shim first on
PYTHONPATH: its sitecustomize maps torch_npu/``device="npu"`` onto the CPU and installs
the runner -- ``dsl`` (ascend-dsl's interpreter through dsl.triton_compat) or
``triton`` (Triton's own ``TRITON_INTERPRET=1``). Tutorials
(third_party/ascend/tutorials/*.py) run as scripts, with the unit tests' folder last on
PYTHONPATH for the ones importing its helper test_common (a tutorial with test
functions and no ``__main__`` block runs under pytest instead); unit test files
(third_party/ascend/unittest/pytest_ut/test_*.py, except helpers without tests) run with
``python -m pytest -q -p no:cacheprovider -p triton_ascend_suite_plugin``. Nothing is
written under PATH.

Each file gets one status:

* ``pass``: exit status 0 with at least one test run (a script: exit status 0);
* ``skipped``: exit status 0, every test skipped by the file's own marks (not a pass);
* ``unsupported (<feature>)``: the output names a missing feature -- an exception class
  starting with ``DSL`` or containing ``Unsupported``, a message saying "unsupported",
  "not supported", "not implemented" or "missing feature", or a torch_npu shim gap;
* ``fail (<first line>)``: assertion or mismatch failures (``AssertionError``,
  ``torch.testing.assert_close``, pytest's ``Failed`` such as "DID NOT RAISE");
* ``error (<first line>)``: any other exception, a crash, or no tests collected;
* ``timeout``: still running after the per-file limit.

Each child's heap is capped (``--memory-limit``), so a test too big for the machine
ends in a MemoryError (an ``error``) rather than in the kernel's OOM killer. With
``--jobs N`` above 1, each child's thread pools (OpenMP, OpenBLAS, MKL, the
interpreter's workers) are capped at the cores divided by N, unless the environment
sets them.

The installed Triton may predate the checkout: unless ``--no-cann-alias``, a child whose
Triton lacks ``triton.language.extra.cann`` gets an alias of it, and one whose Triton
lacks ``triton.language.extra.kernels`` gets the checkout's own Triton-language kernel
package, loaded from ``third_party/ascend/language/kernels`` (see
triton_ascend_shim/triton_cann_alias.py). Under ``--runner triton`` the interpreter
drops Ascend compile options given at launch (``debug=``, ``multibuffer=``, autotune
configs' ``num_buffers_warp_spec``), as the compiled path does, unless
``--strict-triton`` (triton_ascend_shim/triton_interpreter_options.py).

For pytest files the reason is taken from pytest's short summary (FAILED/ERROR lines)
and the "N passed, M failed" line is printed next to the status.

The shim's torch_npu emulates a few host calls that torch_npu accepts and torch's CPU
kernels refuse (``torch_npu/host_rules.py``: mixed-dtype ``isclose``, floor division
of bools, out-of-range scalars written into integer tensors). Each rule that fired in a
file is printed after its status ("host emulation: ..."), is saved in the JSON, and
the totals count the passes that needed one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHIM_DIR = REPO_ROOT / "benchmarks" / "triton_ascend_shim"
PLUGIN = "triton_ascend_suite_plugin"
# the file where the shim's torch_npu notes each host emulation rule that fired
# (triton_ascend_shim/torch_npu/host_rules.py reads the same variable)
HOST_RULES_LOG = "DSL_SUITE_HOST_RULES_LOG"
SETUP_FAILED = 86  # sitecustomize's exit status when the runner cannot be installed
TUTORIALS = Path("third_party/ascend/tutorials")
UNITTESTS = Path("third_party/ascend/unittest/pytest_ut")
# "skipped": every test of the file was skipped by its own marks; nothing ran, so it
# is not counted as a pass
STATUSES = ("pass", "fail", "unsupported", "error", "timeout", "skipped")

_EXCEPTION_LINE = re.compile(
    r"^(?:E\s+)?(?P<cls>[A-Za-z_][\w.]*(?:Error|Exception|Failure|Exit|Interrupt|Feature))(?::\s*(?P<msg>.*))?$"
)
_LEADING_CLASS = re.compile(r"(?:E\s+)?([A-Za-z_][\w.]*)(?=:|\s|$)")
_SUMMARY_LINE = re.compile(r"^=*\s*(?:\d+ \w+(?:, )?)+.* in [\d.]+s")
_SUMMARY_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")
_SHORT_SUMMARY = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<node>\S+)(?: - (?P<reason>.*))?$")
_UNSUPPORTED_CLASS = re.compile(r"(?:^|\.)(?:DSL\w*|\w*Unsupported\w*)$")
_UNSUPPORTED_TEXT = re.compile(r"unsupported|not supported|not implemented|missing feature|torch_npu shim:"
                               r"|No module named 'torch_npu", re.IGNORECASE)
_MISSING_FEATURE = re.compile(r"\(missing feature: ([^()]*(?:\([^()]*\)[^()]*)*)\)")
_LOCATION = re.compile(r"^\S+:\d+(?::\d+)?: (?:error: )?")
_FAIL_TEXT = re.compile(r"Mismatched elements|Tensor-likes are not (?:close|equal)|Arrays are not")


@dataclass
class FileResult:
    """The outcome of one tutorial or test file."""

    section: str  # "tutorials" or "unittests"
    name: str
    status: str
    reason: str = ""
    seconds: float = 0.0
    returncode: int | None = None
    tests: dict[str, int] = field(default_factory=dict)  # pytest's summary counts
    host_rules: list[str] = field(default_factory=list)  # the shim's host emulations that fired

    def line(self, width: int) -> str:
        status = self.status if not self.reason else f"{self.status} ({self.reason})"
        tests = f"  [{format_counts(self.tests)}]" if self.tests else ""
        rules = f"  host emulation: {', '.join(self.host_rules)}" if self.host_rules else ""
        return f"{self.name:<{width}}  {status}{tests}  {self.seconds:.1f}s{rules}"


def format_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {what}" for what, n in counts.items())


# --- classification -----------------------------------------------------------------


def _first_line(text: str, limit: int = 200) -> str:
    line = next((s.strip() for s in text.strip().splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def concise(reason: str) -> str:
    """One short line for a failure: the missing feature a DSL error names, else
    ``Class: message`` with the class's module and the message's source location dropped."""
    feature = _MISSING_FEATURE.search(reason)
    if feature:
        return _first_line(feature.group(1))
    cls, sep, message = reason.strip().partition(": ")
    if sep and re.fullmatch(r"[\w.]+", cls):
        cls = cls.rsplit(".", 1)[-1]
    message = _LOCATION.sub("", message)
    return _first_line(f"{cls}{sep}{message}")


def kind_of(reason: str) -> str:
    """``unsupported``, ``fail`` or ``error`` for one exception line ``Class: message``."""
    match = _LEADING_CLASS.match(reason.strip())
    cls = match.group(1) if match else ""
    if _UNSUPPORTED_CLASS.search(cls) or _UNSUPPORTED_TEXT.search(reason):
        return "unsupported"
    if cls.endswith(("AssertionError", "Failed")) or reason.startswith("assert "):
        return "fail"
    if _FAIL_TEXT.search(reason):
        return "fail"
    return "error"


def _markers(lines: list[str]) -> list[str]:
    """Exception lines anywhere in the output that name a missing feature."""
    found = []
    for line in lines:
        match = _EXCEPTION_LINE.match(line.strip())
        if match and kind_of(line.strip().removeprefix("E").strip()) == "unsupported":
            found.append(line.strip().removeprefix("E").strip())
        elif line.startswith("torch_npu shim:") or "AttributeError: torch_npu shim:" in line:
            found.append(line.strip())
    return found


def last_exception(lines: list[str]) -> str:
    """The exception line that ends the last traceback (or the last line of output)."""
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if starts:
        block = lines[starts[-1] + 1 :]
        for i, line in enumerate(block):
            if line and not line[0].isspace():
                code = [c.strip() for c in block[:i] if c.strip() and set(c.strip()) - set("^~")]
                if ":" not in line and code and not code[-1].startswith("File "):  # a bare ``assert``
                    return f"{line.strip()} at {code[-1]}"
                return line.strip()
    for line in reversed(lines):
        if _EXCEPTION_LINE.match(line.strip()):
            return line.strip()
    return next((line.strip() for line in reversed(lines) if line.strip()), "")


def _last_e_line(lines: list[str]) -> str | None:
    for line in reversed(lines):
        if line.startswith("E ") and _EXCEPTION_LINE.match(line.strip()):
            return line[1:].strip()
    return None


def pytest_counts(lines: list[str]) -> dict[str, int]:
    for line in reversed(lines):
        if _SUMMARY_LINE.match(line.strip()) or line.strip().startswith("no tests ran"):
            counts = {what: int(n) for n, what in _SUMMARY_COUNT.findall(line)}
            if "error" in counts:
                counts["errors"] = counts.pop("error")
            return counts
    return {}


def _pick(reasons: Iterable[str]) -> tuple[str, str]:
    """The file's status and reason from its failures: unsupported > fail > error."""
    by_kind: dict[str, Counter[str]] = {"unsupported": Counter(), "fail": Counter(), "error": Counter()}
    for reason in reasons:
        by_kind[kind_of(reason)][concise(reason)] += 1
    for kind in ("unsupported", "fail", "error"):
        if by_kind[kind]:
            return kind, by_kind[kind].most_common(1)[0][0]
    return "error", ""


def classify(mode: str, returncode: int, output: str) -> tuple[str, str, dict[str, int]]:
    """(status, reason, pytest counts) of one finished child; ``mode`` is "script" or "pytest"."""
    lines = output.splitlines()
    setup = [line for line in lines if line.startswith("suite setup failed:")]
    if returncode == SETUP_FAILED or setup:
        return "error", _first_line(setup[-1] if setup else "suite setup failed"), {}
    counts = pytest_counts(lines) if mode == "pytest" else {}
    if returncode == 0:
        if mode == "pytest" and counts.get("skipped") and not counts.get("passed"):
            return "skipped", "every test is skipped by the file's own marks", counts
        return "pass", "", counts
    if returncode < 0:
        return "error", f"killed by signal {-returncode}", counts
    if mode == "pytest" and returncode == 5:
        return "error", "no tests collected", counts
    reasons = []
    if mode == "pytest":
        for line in lines:
            match = _SHORT_SUMMARY.match(line.strip())
            if match:  # a collection error has no reason there: take pytest's last "E   Class: ..." line
                reasons.append(match.group("reason") or _last_e_line(lines) or match.group("node"))
    markers = _markers(lines)
    if markers:
        return "unsupported", Counter(concise(m) for m in markers).most_common(1)[0][0], counts
    if not reasons:
        reasons = [last_exception(lines)]
    status, reason = _pick(reasons)
    return status, reason, counts


# --- running ------------------------------------------------------------------------


def default_memory_limit() -> float:
    """GiB per child: a quarter of the machine's memory, at least 2."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 1024**3
    return max(2.0, float(int(total / 4)))


# The thread counts a child's libraries read at start-up: OpenMP (torch's intra-op
# pool), OpenBLAS, MKL, and this project's interpreter workers.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "DSL_INTERPRETER_THREADS")


def child_env(
    runner: str, cann_alias: bool = True, memory_gib: float | None = None, strict_triton: bool = False,
    checkout: Path | None = None, threads: int | None = None,
) -> dict[str, str]:
    """The environment of a child: shim first on PYTHONPATH, runner, heap cap (GiB), and
    the triton-ascend checkout whose Python-only packages the aliases may load.
    ``threads``, when given, caps each of ``THREAD_VARIABLES`` that the caller's
    environment does not set: children running side by side then share the cores
    instead of each starting a pool per core, whose spinning threads took the cores
    from each other (``test_fusedattention.py`` ran 45 s alone and past 120 s beside
    another file, while with one thread of each kind alone it takes 47 s)."""
    env = dict(os.environ)
    if threads is not None:
        for name in THREAD_VARIABLES:
            env.setdefault(name, str(max(1, threads)))
    if checkout is not None:
        env["DSL_SUITE_CHECKOUT"] = str(checkout)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SHIM_DIR), env.get("PYTHONPATH", "")) if p)
    env["DSL_SUITE_RUNNER"] = runner
    env["DSL_SUITE_REPO"] = str(REPO_ROOT)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "300"  # pytest's short summary keeps whole reasons
    env["DSL_SUITE_CANN_ALIAS"] = "1" if cann_alias else "0"
    env["DSL_SUITE_TRITON_NPU_OPTIONS"] = "keep" if strict_triton else "drop"
    memory_gib = default_memory_limit() if memory_gib is None else memory_gib
    env["DSL_SUITE_MEMORY_LIMIT"] = str(int(memory_gib * 1024**3))
    if runner == "triton":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def run_child(cmd: list[str], env: dict[str, str], timeout: float) -> tuple[int | None, str, float]:
    """Run ``cmd`` in a fresh temporary folder: (exit status or None on timeout, output, seconds)."""
    with tempfile.TemporaryDirectory(prefix="triton-ascend-suite-") as cwd:
        env = {**env, "TRITON_CACHE_DIR": os.path.join(cwd, ".triton-cache")}
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the child's own session: it and what it started
            out, _ = proc.communicate()
            code = None
        return code, out.decode(errors="replace"), time.perf_counter() - start


def mode_of(section: str, path: Path) -> str:
    """"pytest" for unit test files and for tutorials that only define tests, else "script"."""
    if section == "unittests":
        return "pytest"
    text = path.read_text(errors="replace")
    return "script" if "__main__" in text or not _has_tests(path) else "pytest"


def command(mode: str, path: Path) -> list[str]:
    if mode == "script":
        return [sys.executable, str(path)]
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", PLUGIN,
            "-rfE", "--tb=short", "--color=no", str(path)]


def run_file(
    section: str, path: Path, env: dict[str, str], timeout: float, log_dir: Path | None
) -> tuple[FileResult, str]:
    mode = mode_of(section, path)
    if section == "tutorials":  # some import the unit tests' helper module test_common
        helpers = str(path.parents[1] / "unittest" / "pytest_ut")
        env = {**env, "PYTHONPATH": os.pathsep.join((env["PYTHONPATH"], helpers))}
    with tempfile.TemporaryDirectory(prefix="triton-ascend-suite-rules-") as notes:
        rules_log = Path(notes) / "host-rules.log"
        code, output, seconds = run_child(command(mode, path), {**env, HOST_RULES_LOG: str(rules_log)},
                                          timeout)
        host_rules = sorted(set(rules_log.read_text().split())) if rules_log.exists() else []
    if log_dir is not None:
        (log_dir / section).mkdir(parents=True, exist_ok=True)
        (log_dir / section / f"{path.stem}.log").write_text(output)
    if code is None:
        counts = pytest_counts(output.splitlines()) if mode == "pytest" else {}
        result = FileResult(section, path.name, "timeout", f"after {timeout:g}s", seconds, None, counts,
                            host_rules)
    else:
        status, reason, counts = classify(mode, code, output)
        result = FileResult(section, path.name, status, reason, seconds, code, counts, host_rules)
    return result, output


def discover(
    root: Path, only: str | None, substring: str | None, first: int | None
) -> list[tuple[str, Path]]:
    files: list[tuple[str, Path]] = []
    if only in (None, "tutorials"):
        tutorials = sorted((root / TUTORIALS).glob("*.py"))
        files += [("tutorials", p) for p in _filter(tutorials, substring, first)]
    if only in (None, "unittests"):
        tests = [p for p in sorted((root / UNITTESTS).glob("test_*.py")) if _has_tests(p)]
        files += [("unittests", p) for p in _filter(tests, substring, first)]
    return files


def _filter(paths: list[Path], substring: str | None, first: int | None) -> list[Path]:
    kept = [p for p in paths if substring is None or substring in p.name]
    return kept[:first] if first is not None else kept


def _has_tests(path: Path) -> bool:
    """False for helper modules such as test_common.py that pytest would collect nothing from."""
    text = path.read_text(errors="replace")
    return re.search(r"^\s*(?:async\s+)?def test|^class Test", text, re.M) is not None


def git_commit(root: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return out.stdout.strip()


def preflight(env: dict[str, str]) -> str | None:
    """None if a child can install the runner, else why not."""
    code, output, _ = run_child([sys.executable, "-c", "pass"], env, timeout=300)
    if code == 0:
        return None
    lines = [line for line in output.splitlines() if line.startswith("suite setup failed:")]
    return lines[-1] if lines else f"exit status {code}: {_first_line(output[-2000:])}"


# --- reporting ----------------------------------------------------------------------


def print_totals(results: list[FileResult]) -> None:
    sections = [s for s in ("tutorials", "unittests") if any(r.section == s for r in results)]
    for section in [*sections, "all"] if len(sections) > 1 else sections:
        chosen = [r for r in results if section == "all" or r.section == section]
        counts = Counter(r.status for r in chosen)
        parts = ", ".join(
            f"{counts[s]} {s} ({100.0 * counts[s] / len(chosen):.0f}%)" for s in STATUSES if counts[s]
        )
        print(f"{section}: {len(chosen)} files: {parts}")
    tests: Counter[str] = Counter()
    for r in results:
        tests.update(r.tests)
    if tests:
        ran = sum(tests[k] for k in ("passed", "failed", "errors"))
        share = f" ({100.0 * tests['passed'] / ran:.0f}% of those that ran)" if ran else ""
        print(f"tests in pytest files: {format_counts(dict(tests.most_common()))}{share}")
    emulated = [r for r in results if r.status == "pass" and r.host_rules]
    if emulated:
        rules = Counter(rule for r in emulated for rule in r.host_rules)
        print(f"passes that needed the shim's host emulation: {len(emulated)} "
              f"({', '.join(f'{rule} {n}' for rule, n in rules.most_common())})")
    reasons = Counter(
        f"{r.status}: {r.reason}" for r in results if r.status not in ("pass", "timeout") and r.reason
    )
    if reasons:
        print("most common reasons:")
        for reason, n in reasons.most_common(10):
            print(f"  {n:4d}  {reason}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="triton-ascend checkout (left unmodified)")
    parser.add_argument("--runner", choices=("dsl", "triton"), default="dsl")
    parser.add_argument("--only", choices=("tutorials", "unittests"))
    parser.add_argument("-k", dest="substring", help="only files whose name contains SUBSTRING")
    parser.add_argument("--first", type=int, help="only the first N files of each section (after -k)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--tutorial-timeout", type=float, default=300.0, help="seconds per tutorial")
    parser.add_argument("--test-timeout", type=float, default=120.0, help="seconds per unit test file")
    parser.add_argument("--no-cann-alias", action="store_true",
                        help="do not alias triton.language.extra.cann when the installed Triton lacks it")
    parser.add_argument("--strict-triton", action="store_true",
                        help="runner triton: pass Ascend compile options given at launch on to the kernel")
    parser.add_argument("--memory-limit", type=float, default=default_memory_limit(), metavar="GIB",
                        help="heap cap per child in GiB (default: a quarter of this machine's memory)")
    parser.add_argument("--json", type=Path, help="save the results here")
    parser.add_argument("--log-dir", type=Path, help="save each child's output here")
    parser.add_argument("--show-output", type=int, default=0, metavar="LINES",
                        help="print the last LINES lines of output of files that did not pass")
    args = parser.parse_args(argv)

    root = args.path.resolve()
    if not (root / TUTORIALS).is_dir() and not (root / UNITTESTS).is_dir():
        parser.error(f"{root} has neither {TUTORIALS} nor {UNITTESTS}")
    files = discover(root, args.only, args.substring, args.first)
    commit = git_commit(root)
    print(f"triton-ascend: {root} @ {commit}")
    # side by side, each child gets its share of the cores (see ``child_env``)
    threads = max(1, (os.cpu_count() or 1) // args.jobs) if args.jobs > 1 else None
    notes = [f"jobs {args.jobs}" + (f" ({threads} threads each)" if threads else ""),
             f"cann alias {'off' if args.no_cann_alias else 'on'}",
             f"heap cap {args.memory_limit:g} GiB per child"]
    if args.runner == "triton":
        notes.append("Ascend launch options " + ("kept" if args.strict_triton else "dropped"))
    print(f"runner: {args.runner}; {len(files)} files; " + "; ".join(notes))
    if not files:
        return 0
    env = child_env(args.runner, not args.no_cann_alias, args.memory_limit, args.strict_triton, root,
                    threads)
    problem = preflight(env)
    if problem is not None:
        print(f"runner {args.runner} cannot start: {problem}")
        return 2

    width = max(len(p.name) for _, p in files)
    results: list[FileResult] = []
    timeouts = {"tutorials": args.tutorial_timeout, "unittests": args.test_timeout}
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_file, section, path, env, timeouts[section], args.log_dir)
                   for section, path in files]
        section = None
        for future in futures:
            result, output = future.result()
            if result.section != section:
                section = result.section
                print(f"\n== {section} ({root / (TUTORIALS if section == 'tutorials' else UNITTESTS)})")
            results.append(result)
            print(result.line(width), flush=True)
            if args.show_output and result.status != "pass":
                tail = output.rstrip().splitlines()[-args.show_output :]
                print("\n".join("    | " + line for line in tail))

    print()
    print_totals(results)
    if args.json:
        payload = {"path": str(root), "commit": commit, "runner": args.runner,
                   "results": [asdict(r) for r in results]}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
