"""Running a kernel on an Ascend NPU (torch_npu tensors, CANN present).

Not executed on the machines this project is developed on (no NPU, no CANN): the
path is kept small so that what it relies on is what the rest of the project
checks. The JIT binds the arguments as for any launch (``dsl.jit.Binding``: the
NPU tensors become ``DeviceTensorView``s, specialized by dtype and coalesced
layout); this backend lowers that specialization with UB-aware blocking for the
chip torch_npu reports, builds the runtime arguments with the JIT's own
``runtime_arguments`` (hidden sizes, strides and base offsets included), and calls
the generated Triton function -- an ordinary ``triton.jit`` function -- with the
NPU tensors: triton-ascend's own JIT then compiles it to an NPU binary (TTIR ->
Linalg -> HIVM -> hivmc, with its own cache) and launches it through its driver on
the current stream, one program per vector core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsl.backends import get_backend
from dsl.errors import DSLLaunchError
from dsl.frontend import ConstSpec
from dsl.language import SUB_VECTOR_BLOCKS
from dsl.options import Options
from dsl.targets import get_target
from lowering.compiler import import_kernel

if TYPE_CHECKING:
    from dsl.jit import Binding, JITFunction


def launch(kernel: JITFunction, binding: Binding, grid: Any, options: Options) -> None:
    """Compile (first call) and launch ``kernel`` on the NPU that holds the tensors."""
    try:
        import torch
        import torch_npu  # noqa: F401
    except ImportError:
        raise DSLLaunchError("NPU tensors need torch_npu and CANN (an Ascend host)") from None
    target = get_target(str(torch.npu.get_device_name(0)))
    lowered = get_backend("hivm").lower(kernel, binding.specs, binding.open_blocks, target,
                                        options)
    binding = binding.with_blocks({name: lowered.extra["block"] for name in binding.open_blocks})
    fn = kernel.specialize(binding.specs, options)
    meta = {name: spec.value for name, spec in binding.specs.items()
            if isinstance(spec, ConstSpec)}
    if grid is None:
        grid = kernel.default_grid(fn, target.vector_cores or 1)
    grid3 = kernel.grid(grid, meta)
    # a torch tensor's data_ptr() is its lowest address: the kernel's base offset is 0
    tensors = {name: view.tensor for name, view in binding.values.items()
               if hasattr(view, "tensor")}
    call = kernel.runtime_arguments(fn, binding.values, tensors)
    jit_fn = import_kernel(lowered.source_path, lowered.generated.name)
    if not fn.sub_blocks:
        jit_fn[grid3](*call)
        return
    for index in range(SUB_VECTOR_BLOCKS):  # sub_vec_id(): the grid once per sub-block
        jit_fn[grid3](*call[:-1], index)
