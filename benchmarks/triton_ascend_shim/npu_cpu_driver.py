"""A CPU stand-in for triton-ascend's NPU driver, for machines without CANN.

Triton looks its driver up lazily (``triton.runtime.driver.active``) and raises
"0 active drivers" when no backend finds its toolchain. The tutorials and unit tests
ask that driver for device properties (``num_vectorcore``), the current target, and
the benchmarker (``@triton.autotune`` asks at decoration time), even when kernels run
in an interpreter. :func:`install` keeps Triton's own lookup and falls back to
:class:`CpuNpuDriver` only when it finds no driver. Launching a *compiled* kernel
through it is impossible and says so.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

ARCH = "Ascend910B4"
AICORE_NUM = 20
VECTOR_CORE_NUM = 40


class CpuNpuUtils:
    """The ``driver.active.utils`` calls Python code makes (an Ascend910B4's numbers)."""

    def get_device_properties(self, device: Any = None) -> dict[str, int]:
        return {"max_shared_mem": 1, "num_aicore": AICORE_NUM, "num_vectorcore": VECTOR_CORE_NUM}

    def get_arch(self) -> str:
        return ARCH

    def get_aicore_num(self) -> int:
        return AICORE_NUM

    def get_aivector_core_num(self) -> int:
        return VECTOR_CORE_NUM

    def set_device_limit(self, device: Any, ty: str, val: int) -> None:
        pass

    def load_binary(self, *args: Any) -> Any:
        raise RuntimeError("npu_cpu_driver: no NPU here, compiled kernels cannot be loaded")


class CpuNpuLauncher:
    def __init__(self, src: Any, metadata: Any):
        raise RuntimeError("npu_cpu_driver: no NPU here, compiled kernels cannot be launched")


class CpuNpuDriver:
    """Answers like triton-ascend's NPUDriver; the device is the CPU (see torch_npu shim)."""

    def __init__(self) -> None:
        self.utils = CpuNpuUtils()
        self.launcher_cls = CpuNpuLauncher

    @classmethod
    def is_active(cls) -> bool:
        return False

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        return GPUTarget("npu", ARCH, 0)

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: Any) -> None:
        pass

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_benchmarker(self) -> Any:
        from triton.testing import do_bench

        return do_bench

    def get_device_interface(self) -> Any:
        import torch

        return torch.npu

    def get_empty_cache_for_benchmark(self) -> Any:
        import torch

        return torch.empty(64 * 1024, dtype=torch.int)  # no L2 to flush; keep zero_() cheap


def install() -> None:
    """Make ``triton.runtime.driver.active`` fall back to :class:`CpuNpuDriver` (idempotent)."""
    import triton.runtime.driver  # noqa: F401  (binds the submodule in sys.modules)

    config = sys.modules["triton.runtime.driver"].driver
    original = config.default._init_fn
    if getattr(original, "_npu_cpu_fallback", False):
        return

    def create_driver() -> Any:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NPUDriver.is_active warns when bisheng is missing
                return original()
        except RuntimeError:
            return CpuNpuDriver()

    create_driver._npu_cpu_fallback = True  # type: ignore[attr-defined]
    config.default._init_fn = create_driver
