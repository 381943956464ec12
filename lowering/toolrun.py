"""Running the toolchain's programs, and how their failures are reported.

One helper for every subprocess the lowering runs (bishengir-compile,
bishengir-opt, mlir-translate, llc, gcc, and triton-ascend's Linalg-to-LLVM step):
a fresh temporary folder removed afterwards, a timeout, the return code checked,
and every failure turned into a ``LoweringError`` that names the stage and quotes
the end of the tool's output (and, where the caller can map it, the user's kernel
line).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from dsl.errors import DSLError, SourceLoc

DEFAULT_TIMEOUT = 600.0
_QUOTED = 4000  # characters of a tool's output quoted in an error
_QUOTED_HEAD = 1500  # of those, from its start (an assertion's text comes first)
# where LLVM's crash handler starts (its request for a bug report, then "Stack dump:")
_STACK_DUMP = re.compile(r"^(PLEASE submit a bug report[^\n]*\n)?Stack dump:", re.MULTILINE)
# MLIR's verifier warning about an op without a location (and its note), which
# triton-adapter-opt prints before the error that stopped it
_NO_LOCATION = re.compile(r"^<unknown>:0: warning: [^\n]*have no location!\n"
                          r"(<unknown>:0: note: [^\n]*\n)?", re.MULTILINE)
# bishengir-compile's complaint, on every run off an Ascend host, that CANN's hivmc is
# missing (the NPU binary stage, reported as skipped): it opened every HIVM error
_NO_HIVMC = re.compile(r"^\[(ERROR|WARNING)\] (Cannot find hivmc under \$PATH|Failed to run "
                       r"`hivmc --version`\.|Failed to detect hivmc version[^\n]*)\s*\n",
                       re.MULTILINE)


# Toolchain failures whose text does not say what in the kernel causes them: the
# text, and what it means in the kernel's terms (appended to the error)
KNOWN_FAILURES = {
    "strides must not be zero":
        "triton-ascend cannot lower an access whose pointers repeat one address along an "
        "axis (a zero stride, such as `+ rn[None, :] * 0`); address each element once, "
        "for instance by storing the smaller block",
    "operation destroyed but still has uses":
        "triton-ascend's conversion to Linalg (triton-adapter-opt) crashed on this kernel, "
        "a bug of triton-ascend 3.2.0: its own compile of such a kernel crashes the same "
        "way (seen with several masked stride-2 loads and stores under a runtime `if`); "
        "the interpreter runs the kernel",
    "Only reduce or reduce with index are supported":
        "triton-ascend lowers a reduce of one tensor or of a (value, index) pair only, not "
        "of three or more tensors",
}


class LoweringError(DSLError):
    """A lowering stage failed. ``stage`` names it; ``loc`` is the user's kernel line
    when the toolchain reported a location in the generated code. A failure listed in
    ``KNOWN_FAILURES`` gets its meaning appended."""

    def __init__(self, stage: str, message: str, loc: SourceLoc | None = None) -> None:
        self.stage = stage
        self.loc = loc
        where = f"\n{loc}: in your kernel:\n{loc.excerpt()}" if loc else ""
        meaning = "".join(f"\nwhat this means: {text}" for known, text in KNOWN_FAILURES.items()
                          if known in message)
        super().__init__(f"lowering stage '{stage}' failed: {message.strip()}{meaning}{where}")


class ToolchainMissing(LoweringError):
    """A program of the toolchain (triton-ascend, ascendnpu-ir, LLVM) is not installed."""


@contextlib.contextmanager
def workdir(prefix: str) -> Iterator[Path]:
    """A fresh temporary folder, removed when the block ends."""
    path = Path(tempfile.mkdtemp(prefix=f"ascend-dsl-{prefix}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run_tool(stage: str, argv: Sequence[str | Path], *, check: bool = True,
             timeout: float = DEFAULT_TIMEOUT, env: Mapping[str, str] | None = None,
             locate: Callable[[str], SourceLoc | None] = lambda text: None
             ) -> subprocess.CompletedProcess[str]:
    """Run one program of stage ``stage`` and return its completed process (text
    output captured). ``env`` entries are added to this process's environment for
    the child only. A missing program, a timeout and, with ``check``, a non-zero
    return code raise ``LoweringError`` with the end of the program's output."""
    command = [str(a) for a in argv]
    child_env = None if env is None else {**os.environ, **env}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=child_env)
    except FileNotFoundError:
        raise ToolchainMissing(stage, f"{command[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise LoweringError(stage, f"{Path(command[0]).name} ran past {timeout:.0f} s") from None
    if check and done.returncode != 0:
        raise LoweringError(stage, failure_text(done), locate(done.stderr + done.stdout))
    return done


def failure_text(done: subprocess.CompletedProcess[str]) -> str:
    """A failed program's output (``quoted``), or its return code when it printed
    nothing."""
    detail = (done.stderr or done.stdout or "").strip()
    name = Path(str(done.args[0])).name if done.args else "the tool"
    return quoted(detail) if detail else f"{name} exited with status {done.returncode}"


def quoted(output: str) -> str:
    """A tool's output as an error quotes it: whole when short, else its start and its
    end. A crashing MLIR tool prints the assertion first and then a long stack dump,
    so the end alone hid what failed; the dump itself (addresses in the tool's
    binary) is left out, with its first line, the tool's arguments, kept; so is a
    verifier warning about an op without a location when an error follows it (it came
    first, and a summary's first line was the warning, not what failed)."""
    if "error:" in output or "ERROR" in output:
        output = _NO_HIVMC.sub("", _NO_LOCATION.sub("", output))
    dump = _STACK_DUMP.search(output)
    if dump is not None:
        arguments = output[dump.end():].lstrip("\n").split("\n", 1)[0]
        output = f"{output[:dump.start()].rstrip()}\n[the tool crashed; {arguments.strip()[:300]}; " \
            "its stack dump is left out]"
    if len(output) <= _QUOTED:
        return output
    left_out = len(output) - _QUOTED
    return (f"{output[:_QUOTED_HEAD]}\n[... {left_out} characters left out ...]\n"
            f"{output[-(_QUOTED - _QUOTED_HEAD):]}")
