"""Shared fixtures. In CI (``CI`` or ``DSL_REQUIRE_ORACLES`` set) a missing oracle
such as torch fails the tests that need it instead of skipping them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

ORACLES_REQUIRED = bool(os.environ.get("CI") or os.environ.get("DSL_REQUIRE_ORACLES"))


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory):
    """Lowering caches go to a fresh folder: tests start cold and leave no trace."""
    folder = tmp_path_factory.mktemp("ascend-dsl-cache")
    previous = os.environ.get("DSL_CACHE_DIR")
    os.environ["DSL_CACHE_DIR"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("DSL_CACHE_DIR", None)
    else:
        os.environ["DSL_CACHE_DIR"] = previous


@pytest.fixture(scope="session", autouse=True)
def _verify_every_pass():
    """The suite verifies the IR after every pass (``DSL_VERIFY_PASSES``), so that a
    pass that breaks an invariant is named; a user's launch verifies once, at the end."""
    previous = os.environ.get("DSL_VERIFY_PASSES")
    os.environ["DSL_VERIFY_PASSES"] = "1"
    yield
    if previous is None:
        os.environ.pop("DSL_VERIFY_PASSES", None)
    else:
        os.environ["DSL_VERIFY_PASSES"] = previous


@pytest.fixture
def kernel_from_source(tmp_path):
    """``make(name, text)``: the kernel ``name`` defined by module source ``text``,
    written to a file first so that errors can name its lines; returns (kernel, path)."""
    def make(name: str, text: str):
        path = tmp_path / f"{name}_kernel.py"
        path.write_text(text)
        namespace: dict = {}
        exec(compile(text, str(path), "exec"), namespace)  # noqa: S102
        return namespace[name], path
    return make


@pytest.fixture(scope="session")
def toolchain():
    """triton-ascend + ascendnpu-ir; skips on a laptop without them, fails in CI."""
    from lowering.compiler import ToolchainMissing
    from lowering.compiler import toolchain as find

    try:
        return find()
    except ToolchainMissing as err:
        if ORACLES_REQUIRED:
            pytest.fail(f"the lowering toolchain is required in CI (pip install '.[npu]'): {err}")
        pytest.skip(str(err))


@pytest.fixture(scope="session")
def cpu_toolchain(toolchain):
    """The compiled-CPU module once its LLVM/MLIR tools are found; skips on a laptop
    without them, fails in CI."""
    from lowering import cpu

    try:
        cpu.llvm_tools()
    except cpu.CompiledCPUError as err:
        if ORACLES_REQUIRED:
            pytest.fail(f"compiled-CPU mode is required in CI: {err}")
        pytest.skip(str(err))
    return cpu


@pytest.fixture(scope="session")
def torch():
    """The torch module; skips on a laptop without it, fails in CI."""
    try:
        import torch as module
    except ImportError:
        if ORACLES_REQUIRED:
            pytest.fail("torch==2.13.0 is required in CI (pip install '.[torch]')")
        pytest.skip("torch is not installed")
    return module


# Hypothesis: explore freshly on a laptop, replay a fixed set of examples in CI so a
# landing never depends on the luck of the draw.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if ORACLES_REQUIRED else "dev")
