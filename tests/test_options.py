"""The options record (one place reads the environment, per-call overrides) and the
toolchain subprocess helper (return codes, timeouts, missing programs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dsl
from dsl.options import Options
from lowering.toolrun import LoweringError, ToolchainMissing, run_tool, workdir


@dsl.jit
def double(x, out, n, BLOCK: dsl.block_size):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        dsl.store(out, idx, dsl.load(x, idx, idx < n) * 2.0, idx < n)


def test_from_env_reads_every_setting():
    opts = Options.from_env({"DSL_BACKEND": "compiled-cpu", "DSL_INTERPRET": "1",
                             "DSL_DUMP_IR": "1", "DSL_CACHE_DIR": "/tmp/c",
                             "DSL_INTERPRETER_THREADS": "3", "DSL_LLVM_ROOT": "/opt/llvm"})
    assert opts == Options("compiled-cpu", True, True, Path("/tmp/c"), 3, Path("/opt/llvm"))
    assert opts.execution_backend == "interpreter" and opts.workers == 3
    defaults = Options.from_env({})
    assert defaults == Options() and defaults.cache_root == Path.home() / ".cache/ascend-dsl"
    assert Options.from_env({"DSL_INTERPRET": "0", "DSL_DUMP_IR": ""}) == Options()


@pytest.mark.parametrize(("env", "message"), [
    ({"DSL_INTERPRETER_THREADS": "many"}, "DSL_INTERPRETER_THREADS must be a non-negative "
                                          "integer"),
    # (the setting named, not the record's field, since session 25)
    ({"DSL_INTERPRETER_THREADS": "-1"}, "DSL_INTERPRETER_THREADS must be a non-negative"),
    ({"DSL_IR_CACHE": "maybe"}, "DSL_IR_CACHE must be one of 1, true"),
    ({"DSL_DUMP_IR": "2"}, "DSL_DUMP_IR must be one of"),
])
def test_bad_settings_are_named(env, message):
    with pytest.raises(ValueError, match=message):
        Options.from_env(env)


@pytest.mark.parametrize("variable, field, default", [
    ("DSL_INTERPRET", "force_interpreter", False), ("DSL_DUMP_IR", "dump_ir", False),
    ("DSL_VERIFY_PASSES", "verify_passes", False), ("DSL_IR_CACHE", "ir_cache", True)])
def test_boolean_settings_read_the_usual_words_alike(variable, field, default):
    """``DSL_DUMP_IR=false`` (or ``no``, ``off``) switched the dump on, and
    ``DSL_IR_CACHE=false`` left the cache on (found in session 19): every boolean
    variable reads 1/true/yes/on and 0/false/no/off, in any case."""
    assert getattr(Options.from_env({}), field) is default
    assert getattr(Options.from_env({variable: " "}), field) is default
    for word in ("1", "true", "YES", "On"):
        assert getattr(Options.from_env({variable: word}), field) is True
    for word in ("0", "false", "No", "OFF"):
        assert getattr(Options.from_env({variable: word}), field) is False


def test_options_are_frozen_and_replace_validates():
    opts = Options()
    with pytest.raises(AttributeError):
        opts.backend = "compiled-cpu"  # type: ignore[misc]
    assert opts.replace(interpreter_threads=2).workers == 2
    with pytest.raises(ValueError, match="backend"):
        opts.replace(backend="")
    with pytest.raises(ValueError, match="race_check"):
        opts.replace(race_check="sometimes")


def test_importing_reads_no_environment_and_calls_read_it_then():
    """Settings in the environment after import still apply (no import-time reads)."""
    code = ("import os, numpy as np, dsl\n"
            "from dsl.options import Options\n"
            "os.environ['DSL_INTERPRETER_THREADS'] = '5'\n"
            "print(Options.from_env().workers)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "5"


def test_per_call_options_override_the_environment(monkeypatch):
    monkeypatch.setenv("DSL_BACKEND", "no-such-backend")
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    with pytest.raises(ValueError, match="unknown backend 'no-such-backend'"):
        double(x, out, 100)
    assert not out.any()  # refused before anything ran
    double.launch(x, out, 100, options=Options(interpreter_threads=1))
    np.testing.assert_array_equal(out, 2 * x)


def test_grid_launches_take_options_and_backend_per_call(monkeypatch):
    """``kernel[grid](..., options=)`` raised "unexpected keyword" on a DSL kernel and was
    silently ignored on a ``from_triton`` one (session 24's contract check)."""
    import triton
    from test_triton_compat import add_kernel

    monkeypatch.setenv("DSL_BACKEND", "no-such-backend")
    x = np.arange(100, dtype=np.float32)
    add = dsl.from_triton(add_kernel)
    out = np.zeros_like(x)
    for launch in (lambda **kw: double[(1,)](x, out, 100, **kw),
                   lambda **kw: add[(triton.cdiv(100, 64),)](x, x, out, 100, BLOCK_SIZE=64,
                                                              **kw)):
        out[:] = 0
        launch(options=Options(interpreter_threads=1))
        np.testing.assert_array_equal(out, 2 * x)
        with pytest.raises(ValueError, match="unknown backend 'gpu'"):
            launch(options=Options(), backend="gpu")
        with pytest.raises(dsl.DSLLaunchError, match="options= takes a dsl.Options record"):
            launch(options={"backend": "interpreter"})


def test_interpreter_forced_still_checks_the_requested_backend_name():
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        double.launch(x, np.zeros_like(x), 8, options=Options(backend="gpu",
                                                               force_interpreter=True))
    with pytest.raises(ValueError, match="does not execute launches on the CPU"):
        double.launch(x, np.zeros_like(x), 8, backend="hivm")


def test_dump_ir_option_prints_the_passes(capsys):
    x = np.arange(8, dtype=np.float64)  # a specialization no other test builds
    double.launch(x, np.zeros_like(x), 8, options=Options(dump_ir=True))
    assert "// IR of double after prune-hidden-params" in capsys.readouterr().err


# ----------------------------------------------------------------------------- toolrun


def test_run_tool_returns_the_output_of_a_successful_program():
    done = run_tool("probe", [sys.executable, "-c", "print('hello')"])
    assert done.returncode == 0 and done.stdout.strip() == "hello"


def test_run_tool_maps_a_failure_to_the_stage_with_the_start_and_end_of_stderr():
    code = ("import sys; sys.stderr.write('the assertion' + 'x' * 9000 + 'the last words'); "
            "sys.exit(3)")
    with pytest.raises(LoweringError, match="lowering stage 'probe' failed: the assertionx+"
                       "\n\\[\\.\\.\\. 5027 characters left out \\.\\.\\.\\]\n"
                       "x+the last words") as info:
        run_tool("probe", [sys.executable, "-c", code])
    assert info.value.stage == "probe" and len(str(info.value)) < 4200


def test_run_tool_reports_a_silent_failure_by_its_status():
    with pytest.raises(LoweringError, match="exited with status 4"):
        run_tool("probe", [sys.executable, "-c", "raise SystemExit(4)"])
    done = run_tool("probe", [sys.executable, "-c", "raise SystemExit(4)"], check=False)
    assert done.returncode == 4


def test_run_tool_timeout_and_missing_program():
    with pytest.raises(LoweringError, match="ran past 1 s"):
        run_tool("probe", [sys.executable, "-c", "import time; time.sleep(30)"], timeout=1)
    with pytest.raises(ToolchainMissing, match="not installed"):
        run_tool("probe", ["/nonexistent/bishengir-compile"])


def test_run_tool_gives_the_child_extra_environment_only():
    import os

    done = run_tool("probe", [sys.executable, "-c", "import os; print(os.environ['MLIR_ROOT'])"],
                    env={"MLIR_ROOT": "/opt/mlir"})
    assert done.stdout.strip() == "/opt/mlir"
    assert os.environ.get("MLIR_ROOT") != "/opt/mlir"


def test_workdir_is_removed_afterwards():
    with workdir("probe") as path:
        (path / "file").write_text("x")
        assert path.is_dir()
    assert not path.exists()
