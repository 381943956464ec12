"""The ``ascend-dsl demo`` main job."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from ops import cli


def test_demo_table_lists_every_case_and_passes():
    buffer = io.StringIO()
    failures = cli.demo(batch=32, classes=10, seed=1, out=buffer)
    text = buffer.getvalue()
    assert failures == 0, text
    header = text.splitlines()[0].split()
    assert header[:5] == ["operator", "shape", "dtypes", "reduction", "backend"]
    rows = [line for line in text.splitlines() if line.startswith("bce") and "interpreter" in line]
    assert len(rows) == 9
    for dtype in ("fp32", "fp16", "bf16"):
        assert sum(f" {dtype} " in row for row in rows) == 3
    assert all("interpreter" in row and "ulp" in row and "ms" in row for row in rows)
    assert "all results within tolerance" in text


def test_demo_reports_a_wrong_result(monkeypatch):
    """The demo's check can fail: corrupt one operator and it must say so."""
    import ops

    real = ops.binary_cross_entropy_backward
    monkeypatch.setattr(ops, "binary_cross_entropy_backward",
                        lambda *a, **k: real(*a, **k) * 1.01)
    buffer = io.StringIO()
    assert cli.demo(batch=8, classes=4, seed=0, out=buffer) == 3
    assert "FAIL" in buffer.getvalue()


def test_console_command_runs():
    result = subprocess.run([sys.executable, "-m", "ops.cli", "demo", "--batch", "16",
                             "--classes", "8"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bce_with_logits_target_backward" in result.stdout


def test_demo_lowers_both_operators(toolchain):
    buffer = io.StringIO()
    assert cli.lower_both(buffer) == 0
    rows = [line for line in buffer.getvalue().splitlines() if "Ascend910B4" in line]
    assert len(rows) == 4 and all(" B " in row for row in rows)


def test_compile_command_prints_stages_and_writes_files(toolchain, tmp_path):
    buffer = io.StringIO()
    status = cli.compile_command("bce_backward", "Ascend910B4", "float16", "triton,hivm",
                                 str(tmp_path), weight=True, pos_weight=False, out=buffer)
    text = buffer.getvalue()
    assert status == 0, text
    for stage in ("triton", "ttir", "linalg", "hivm", "npubin"):
        assert any(line.startswith(stage) for line in text.splitlines()), stage
    assert "UB: estimate" in text and "measured" in text
    assert (tmp_path / "bce_backward_kernel.py").read_text().startswith('"""Generated')
    assert "hivm.hir" in (tmp_path / "bce_backward_kernel.hivm.mlir").read_text()


def test_compile_command_reports_bad_input(toolchain):
    buffer = io.StringIO()
    assert cli.compile_command("bce_backward", "Ascend310P", "float32", "", None, False, False,
                               out=buffer) == 1
    assert "cannot be lowered" in buffer.getvalue()
    buffer = io.StringIO()
    assert cli.compile_command("bce_backward", "Ascend910B4", "float32", "llvm", None, False,
                               False, out=buffer) == 2


def test_compile_command_checks_its_arguments_before_compiling(tmp_path, monkeypatch):
    """``--emit bogus`` was reported after the whole compile (the stage table printed
    first), ``--out`` at a file gave a raw FileExistsError traceback and
    ``--pos-weight`` was silently ignored for bce_backward (found in session 19)."""
    monkeypatch.setattr(cli, "_compile_specs", lambda *a: pytest.fail("compiled anyway"))
    afile = tmp_path / "afile"
    afile.write_text("")
    for emit, out_dir, pos_weight, message in [
            ("triton,bogus", None, False, "--emit accepts triton, ttir, linalg, hivm; got "
                                          "'bogus'"),
            ("triton", str(afile), False, f"--out {afile}: cannot make that folder"),
            ("", None, True, "--pos-weight: bce_backward has no pos_weight operand"),
            # (session 25: --out without --emit wrote nothing and exited 0; an empty
            # --target took the default chip)
            ("", str(tmp_path / "made"), False, "--out names the folder for the files of "
                                                "--emit, and no --emit was given"),
            ("triton", None, False, "--target is empty")]:
        buffer = io.StringIO()
        target = "" if message == "--target is empty" else "Ascend910B4"
        assert cli.compile_command("bce_backward", target, "float32", emit, out_dir,
                                   False, pos_weight, out=buffer) == 2
        assert buffer.getvalue().startswith(f"error: {message}"), buffer.getvalue()
    assert not (tmp_path / "made").exists()


def test_compile_run_cpu_prints_the_diff(cpu_toolchain):
    buffer = io.StringIO()
    status = cli.compile_command("bce_with_logits_backward", "Ascend910B4", "bfloat16", "", None,
                                 weight=True, pos_weight=True, out=buffer, run_cpu=True)
    text = buffer.getvalue()
    assert status == 0, text
    assert "compiled-cpu run of bce_with_logits_backward_kernel on 2989 elements" in text
    assert "0 elements differ from the interpreter" in text and "bit-exact" in text
