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


HOST_RULES_CHILD = '''
import json, math, torch, torch_npu
out = {}
a, b = torch.tensor([1.0, 2.0], dtype=torch.float32), torch.tensor([1.0, 2.0000001], dtype=torch.float64)
out["isclose"] = torch.isclose(a, b).tolist()
out["allclose_far"] = torch.allclose(a, b + 1.0)
x = torch.tensor([True, False, True, False])
y = torch.tensor([True, True, True, True])
out["floordiv"] = (x // y).tolist()
out["floordiv_dtype"] = str(torch.floor_divide(x, y).dtype)
out["div_floor"] = torch.div(x, y, rounding_mode="floor").tolist()
try:
    x // torch.tensor([True, False, True, True])
    out["floordiv_by_false"] = "no error"
except Exception as e:
    out["floordiv_by_false"] = type(e).__name__
t8 = torch.zeros(3, dtype=torch.int8)
t8[0] = 128
t8[1] = -129
t8[2] = 5
out["int8"] = t8.tolist()
t32 = torch.zeros(2, dtype=torch.int32)
t32[0] = 2**31
t32[1] = float("nan")
out["int32"] = t32.tolist()
out["nan_as_int32"] = torch.tensor(float("nan"), dtype=torch.float64).to(torch.int32).item()
f = torch.full((2,), 3, dtype=torch.int16).fill_(2**15)
out["fill"] = f.tolist()
print(json.dumps(out))
'''


def _run_host_rules(tmp_path: Path, code: str) -> tuple[dict, list[str]]:
    import json

    log = tmp_path / "rules.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SHIM), os.environ.get("PYTHONPATH", "")]),
           "DSL_SUITE_HOST_RULES_LOG": str(log)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), (log.read_text().split() if log.exists() else [])


def test_host_rules_emulate_what_torch_cpu_refuses_and_report_it(tmp_path, torch):
    """The shim's torch_npu runs the host calls torch_npu accepts and torch's CPU
    kernels refuse (each would raise without the rule), and notes each rule once."""
    out, rules = _run_host_rules(tmp_path, HOST_RULES_CHILD)
    assert out["isclose"] == [True, True] and out["allclose_far"] is False
    assert out["floordiv"] == [True, False, True, False] == out["div_floor"]
    assert out["floordiv_dtype"] == "torch.bool"
    assert out["floordiv_by_false"] == "RuntimeError"  # x // 0 stays an error
    assert out["int8"] == [-128, 127, 5]  # wrapped as a C cast; in range untouched
    assert out["int32"] == [-2**31, out["nan_as_int32"]]
    assert out["fill"] == [-2**15, -2**15]
    assert rules == ["isclose-dtypes", "bool-floor-division", "integer-scalar-wrap"]


def test_host_rules_leave_what_torch_cpu_accepts_alone(tmp_path, torch):
    code = '''
import json, torch, torch_npu
t = torch.zeros(2, dtype=torch.int32)
t[0] = 2**31 - 1
t[1] = 2.75
a = torch.tensor([1.0, 2.0])
print(json.dumps({"t": t.tolist(), "close": torch.isclose(a, a + 1e-9).tolist(),
                  "div": (torch.tensor([7, 8]) // torch.tensor([2, 3])).tolist()}))
'''
    out, rules = _run_host_rules(tmp_path, code)
    assert out == {"t": [2**31 - 1, 2], "close": [True, True], "div": [3, 2]}
    assert rules == []


def test_the_suite_shows_which_passes_needed_host_emulation(capsys):
    sys.path.insert(0, str(SHIM.parent))
    try:
        import triton_ascend_suite as suite
    finally:
        sys.path.remove(str(SHIM.parent))
    plain = suite.FileResult("unittests", "test_add.py", "pass", seconds=1.0)
    emulated = suite.FileResult("unittests", "test_mod.py", "pass", seconds=1.0,
                                host_rules=["isclose-dtypes"])
    assert "host emulation" not in plain.line(12)
    assert emulated.line(12).endswith("host emulation: isclose-dtypes")
    suite.print_totals([plain, emulated])
    assert "passes that needed the shim's host emulation: 1 (isclose-dtypes 1)" in capsys.readouterr().out


HOST_TENSOR_CHILD = '''
import json
import torch
import torch_npu
import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n):
    offs = tl.arange(0, 16)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


def launch(x, y, out=None, **named):
    """True when the launch ran and added, else the error it raised."""
    try:
        add[(1,)](x, y, *([] if out is None else [out, 8]), **named)
    except ValueError as error:
        return str(error)
    return torch.equal(named.get("out_ptr", out), x + y)


npu = [torch.rand(8, device="npu") for _ in range(3)]
host = torch.rand(8, device="cpu")
moved, moved_to = torch.rand(8, device="cpu").npu(), torch.rand(8, device="cpu").to("npu")
back = npu[0].to(device="cpu")  # the same object here: still the NPU tensor
print(json.dumps({
    "npu": launch(*npu),
    "host first": launch(host, npu[1], npu[2]),
    "host output": launch(npu[0], npu[1], torch.empty(8, device="cpu")),
    "host by name": launch(npu[0], npu[1], out_ptr=torch.zeros(8, device="cpu"), n=8),
    "npu by name": launch(npu[0], npu[1], out_ptr=npu[2], n=8),
    "moved": launch(moved, moved_to, npu[2]),
    "default device": launch(torch.rand(8), npu[1], npu[2]),
    "to cpu": launch(back, npu[1], npu[2]),
    "beside": launch(npu[0], npu[1], torch.empty(8, device=npu[0].device)),
    "marks": [torch_npu.is_host_tensor(t) for t in (
        host, moved, moved_to, back, host + 1, torch.zeros(8, device=torch.device("cpu")))],
}))
'''


def test_a_launch_given_a_host_tensor_is_refused_as_the_npu_driver_refuses_it(tmp_path, torch):
    """Under the suite's ``dsl`` runner, a tensor created on the CPU named as a string
    is host memory until moved (``.npu()``, ``.to(...)``), and a Triton launch given
    one raises triton-ascend's driver error (``test_address_check.py``). Tensors on the
    NPU, allocated beside one (``device=x.device``, the CPU here), moved, or not known
    to be on the host launch as before."""
    import json

    script = tmp_path / "child.py"
    script.write_text(HOST_TENSOR_CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SHIM), os.environ.get("PYTHONPATH", "")]),
           "DSL_SUITE_RUNNER": "dsl", "DSL_SUITE_CANN_ALIAS": "0"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    refused = "Pointer argument (at {}) cannot be accessed from Triton (cpu tensor?)"
    assert out["npu"] is True and out["moved"] is True and out["npu by name"] is True
    assert out["host first"] == refused.format(0)
    assert out["host output"] == refused.format(2)
    assert out["host by name"] == refused.format(2)
    assert out["default device"] is True, "only an explicit CPU device marks a tensor"
    assert out["to cpu"] is True
    assert out["beside"] is True, "device=x.device allocates beside an NPU tensor"
    assert out["marks"] == [True, False, False, False, False, False]
