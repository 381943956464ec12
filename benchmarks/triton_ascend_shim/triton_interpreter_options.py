"""Let Triton's interpreter ignore triton-ascend's compile options given at launch.

triton-ascend's kernels and autotune configs pass Ascend compiler options with the
launch (``kernel[grid](..., debug=True, multibuffer=False)``, ``num_buffers_warp_spec``
from an autotune config). The compiled path turns them into ``NPUOptions``; the 3.2
interpreter only drops the upstream ones (``num_warps``, ``num_stages``, ...) and hands
the rest to the kernel, which fails with "unexpected keyword argument". :func:`install`
makes ``GridExecutor`` drop every ``NPUOptions`` field name that is not one of the
kernel's own parameters, as the compiled path and dsl.triton_compat do.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def install() -> None:
    """Patch ``triton.runtime.interpreter.GridExecutor.__call__`` (idempotent)."""
    from triton.backends.ascend.compiler import NPUOptions
    from triton.runtime.interpreter import GridExecutor

    original = GridExecutor.__call__
    if getattr(original, "_drops_npu_options", False):
        return
    options = frozenset(field.name for field in dataclasses.fields(NPUOptions))

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs = {k: v for k, v in kwargs.items() if k not in options or k in self.arg_names}
        return original(self, *args, **kwargs)

    call._drops_npu_options = True  # type: ignore[attr-defined]
    GridExecutor.__call__ = call
