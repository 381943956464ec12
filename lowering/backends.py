"""The backend registry: every backend the JIT can hand a kernel to, by name.

``dsl.backends.get_backend(name)`` finds this registry through the package's
entry point (group ``ascend_dsl.backends`` in ``pyproject.toml``), so ``dsl``
never imports ``lowering``. Each entry is a factory; the heavy modules (the
toolchain drivers) are imported only when a backend is first used.

- ``interpreter``: the NumPy interpreter (``lowering.interpreter``): ``run``.
- ``compiled-cpu``: the lowered kernel through triton-ascend's CPU target, MLIR
  and LLVM, called through ctypes (``lowering.cpu``, route 1): ``run``.
- ``compiled-cpu-hfusion``: the same from bishengir's HFusion IR (route 2): ``run``.
- ``npu``: triton-ascend's NPU runtime for torch_npu tensors (``lowering.npu``):
  ``launch_on_device``.
- ``hivm``: lowering to HIVM with UB-aware blocking (``lowering.blocking``):
  ``lower``; it owns the in-memory cache of lowered kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dsl.errors import DSLRuntimeError
from dsl.options import Options
from dsl.targets import Target

if TYPE_CHECKING:
    from dsl.frontend import ArgSpec
    from dsl.jit import Binding, JITFunction, Launch


class InterpreterBackend:
    """Runs launches with the vectorized NumPy interpreter."""

    name = "interpreter"

    def run(self, launch: Launch, options: Options) -> None:
        from lowering.interpreter import execute

        try:
            execute(launch, options)
        except MemoryError as err:
            gx, gy, gz = launch.grid
            raise DSLRuntimeError(
                f"kernel '{launch.function.name}': the interpreter ran out of memory "
                f"({err}) running {gx * gy * gz} programs (grid {tuple(launch.grid)}): its "
                "blocks and grid are too large for this machine (a launch proved in bounds "
                "writes in place: stores that ran before this are kept)") from None

    def replay_plan(self, launch: Launch, options: Options) -> Any:
        """The launch plan later launches with ``launch``'s proof hint may replay
        without a ``Launch`` (``lowering.interpreter.replay_plan``), or None."""
        from lowering.interpreter import replay_plan

        return replay_plan(launch, options)


class CompiledCPUBackend:
    """Runs launches with the lowered kernel compiled for this CPU."""

    def __init__(self, route: int) -> None:
        self.route = route
        self.name = "compiled-cpu" if route == 1 else "compiled-cpu-hfusion"

    def run(self, launch: Launch, options: Options) -> None:
        from lowering import cpu

        cpu.run(launch, options, self.route)


class NPUBackend:
    """Compiles and launches kernels on torch_npu tensors (Ascend hosts only)."""

    name = "npu"

    def launch_on_device(self, kernel: JITFunction, binding: Binding, grid: Any,
                         options: Options) -> None:
        from lowering import npu

        npu.launch(kernel, binding, grid, options)


class HIVMBackend:
    """Lowers specializations to HIVM; keeps lowered kernels in memory by cache key."""

    name = "hivm"

    def __init__(self) -> None:
        self.memory: dict[str, Any] = {}

    def lower(self, kernel: JITFunction, specs: dict[str, ArgSpec], open_blocks: Any,
              target: Target, options: Options) -> Any:
        from lowering.blocking import lower_specialization

        return lower_specialization(kernel, specs, open_blocks, target, options, self.memory)

    def triton_stages(self, jit_fn: Any, signature: dict[str, str], constants: dict[str, Any],
                      target: Target) -> dict[str, Callable[[], str]]:
        """``lowering.compiler.triton_stages``: a Triton kernel's own IR, stage by stage."""
        from lowering.compiler import triton_stages

        return triton_stages(jit_fn, signature, constants, target)


REGISTRY: dict[str, Callable[[], Any]] = {
    "interpreter": InterpreterBackend,
    "compiled-cpu": lambda: CompiledCPUBackend(1),
    "compiled-cpu-hfusion": lambda: CompiledCPUBackend(2),
    "npu": NPUBackend,
    "hivm": HIVMBackend,
}
