"""Start-up hook of the children of benchmarks/triton_ascend_suite.py and
benchmarks/vs_triton_interpreter.py (this folder is first on their PYTHONPATH).

With ``DSL_SUITE_RUNNER`` unset it does nothing (``import torch_npu`` still finds the
shim). Otherwise it installs the torch_npu shim (``torch.npu``, NPU -> CPU), the CPU
fallback of Triton's driver and, unless ``DSL_SUITE_CANN_ALIAS=0``, the
``triton.language.extra.cann`` alias for a Triton wheel that predates it and the
checkout's ``triton.language.extra.kernels`` (triton_cann_alias.py), then the runner:

* ``dsl``: sets ``DSL_TRITON_INTERPRET=1`` and calls ``dsl.triton_compat.install()``,
  so ``@triton.jit`` kernels launched on CPU tensors run in ascend-dsl's interpreter;
  a launch given a tensor the test created in host memory (``torch_npu.is_host_tensor``)
  is refused as triton-ascend's driver refuses it.
* ``triton``: Triton's own interpreter (the parent sets ``TRITON_INTERPRET=1``), with
  the NumPy >= 2.4 patch of the repository's tests/triton_interpret_patch.py and,
  unless ``DSL_SUITE_TRITON_NPU_OPTIONS=keep``, triton_interpreter_options.py (Ascend
  compile options given at launch are dropped, not passed to the kernel).

``DSL_SUITE_MEMORY_LIMIT`` (bytes) caps the child's heap. A runner that cannot be
installed ends the child at once with exit status :data:`SETUP_FAILED` and one
``suite setup failed:`` line on stderr.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

SETUP_FAILED = 86
REPO_ROOT = Path(os.environ.get("DSL_SUITE_REPO", Path(__file__).resolve().parents[2]))


def _fail(what: str, error: BaseException) -> None:
    traceback.print_exception(error)
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    sys.stderr.write(f"suite setup failed: {what}: {type(error).__name__}: {first}\n")
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(SETUP_FAILED)


def _install_triton_numpy_patch() -> None:
    tests = str(REPO_ROOT / "tests")
    sys.path.insert(0, tests)
    try:
        import triton_interpret_patch
    finally:
        sys.path.remove(tests)
    triton_interpret_patch.install()


def _limit_memory() -> None:
    """Cap the heap (``RLIMIT_DATA``) at ``DSL_SUITE_MEMORY_LIMIT`` bytes: a test that would
    exhaust the machine gets a MemoryError instead of the kernel's OOM killer."""
    limit = int(os.environ.get("DSL_SUITE_MEMORY_LIMIT", "0"))
    if limit > 0:
        import resource

        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _refuse_host_tensors() -> None:
    """Launches of ``@triton.jit`` kernels given a host tensor raise the ``ValueError``
    triton-ascend's NPU driver raises for a pointer outside device memory."""
    import functools

    import torch_npu
    from triton.runtime.jit import JITFunction

    run = JITFunction.run

    def checked(self: JITFunction, *args: object, **kwargs: object) -> object:
        named = [(self.arg_names.index(name), value) for name, value in kwargs.items()
                 if name in self.arg_names]
        for index, value in [*enumerate(args), *named]:
            if torch_npu.is_host_tensor(value):
                raise ValueError(f"Pointer argument (at {index}) cannot be accessed from "
                                 "Triton (cpu tensor?)")
        return run(self, *args, **kwargs)

    functools.update_wrapper(checked, run)  # keeps dsl's markers on the method
    JITFunction.run = checked


def _install(runner: str) -> None:
    _limit_memory()
    try:
        import npu_cpu_driver
        import torch_npu  # noqa: F401  (installs torch.npu and the NPU -> CPU mapping)

        npu_cpu_driver.install()
        if os.environ.get("DSL_SUITE_CANN_ALIAS", "1") != "0":
            import triton_cann_alias

            triton_cann_alias.install()
            triton_cann_alias.install_kernels(os.environ.get("DSL_SUITE_CHECKOUT"))
    except Exception as error:  # noqa: BLE001
        _fail("torch_npu shim", error)
    if runner == "dsl":
        os.environ["DSL_TRITON_INTERPRET"] = "1"
        try:
            import dsl.triton_compat

            dsl.triton_compat.install()
            _refuse_host_tensors()
        except Exception as error:  # noqa: BLE001
            _fail("cannot install dsl.triton_compat", error)
    elif runner == "triton":
        os.environ["TRITON_INTERPRET"] = "1"
        try:
            _install_triton_numpy_patch()
            if os.environ.get("DSL_SUITE_TRITON_NPU_OPTIONS", "drop") == "drop":
                import triton_interpreter_options

                triton_interpreter_options.install()
        except Exception as error:  # noqa: BLE001
            _fail("cannot patch Triton's interpreter", error)
    else:
        sys.stderr.write(f"suite setup failed: DSL_SUITE_RUNNER={runner!r} is neither 'dsl' nor 'triton'\n")
        os._exit(SETUP_FAILED)


if os.environ.get("DSL_SUITE_RUNNER"):
    _install(os.environ["DSL_SUITE_RUNNER"])
