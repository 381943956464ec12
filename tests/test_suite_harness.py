"""The peer-suite harness's aliases (benchmarks/triton_ascend_shim): a checkout's
Triton-language kernel package runs through this project when the installed Triton
predates it. Each case runs in a child, as the harness's children do, so no alias
leaks into this process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SHIM = Path(__file__).resolve().parents[1] / "benchmarks" / "triton_ascend_shim"

KERNEL_PACKAGE = '''
import triton
import triton.language as tl

__all__ = ["double_it"]


@triton.jit
def double_it(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)
'''

CHILD = '''
import os, sys
import torch
import triton_cann_alias
import dsl.triton_compat

dsl.triton_compat.install()
assert triton_cann_alias.install_kernels(os.environ.get("DSL_SUITE_CHECKOUT"))
from triton.language.extra.kernels import double_it

x = torch.arange(8, dtype=torch.float32)
out = torch.zeros(8)
double_it[(1,)](x, out, N=8)
print(out.tolist())
assert not triton_cann_alias.install_kernels(os.environ.get("DSL_SUITE_CHECKOUT"))
'''


def _run(checkout: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SHIM), os.environ.get("PYTHONPATH", "")]),
           "DSL_TRITON_INTERPRET": "1", "DSL_SUITE_CHECKOUT": str(checkout)}
    return subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                          timeout=300)


def test_checkout_kernel_package_is_loaded_and_runs(tmp_path, torch):
    package = tmp_path / "third_party" / "ascend" / "language" / "kernels"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(KERNEL_PACKAGE))
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str([2.0 * i for i in range(8)])


def test_no_kernel_package_in_the_checkout_installs_nothing(tmp_path, torch):
    done = _run(tmp_path)
    assert done.returncode != 0
    assert "AssertionError" in done.stderr


def test_default_device_npu_is_the_cpu(torch):
    code = ("import torch, torch_npu; torch.set_default_device('npu'); "
            "t = torch.empty(3); print(t.device.type)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SHIM), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cpu"


def test_children_side_by_side_get_their_share_of_the_threads(monkeypatch):
    """``child_env(threads=...)`` caps each thread pool a child starts (OpenMP,
    OpenBLAS, MKL, the interpreter's workers) unless the caller's environment already
    chose; without ``threads`` nothing is added."""
    sys.path.insert(0, str(SHIM.parent))
    try:
        import triton_ascend_suite as suite
    finally:
        sys.path.remove(str(SHIM.parent))
    for name in suite.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")  # the user's choice stands
    env = suite.child_env("dsl", threads=1)
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"
    assert env["DSL_INTERPRETER_THREADS"] == "1"
    assert env["OPENBLAS_NUM_THREADS"] == "3"
    alone = suite.child_env("dsl")
    assert "OMP_NUM_THREADS" not in alone and "DSL_INTERPRETER_THREADS" not in alone
