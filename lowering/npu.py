"""Running a kernel on an Ascend NPU (torch_npu tensors, CANN present).

Not executed on the machines this project is developed on (no NPU, no CANN): the
path is kept small so that what it relies on is what the rest of the project
checks. The kernel is specialized from the tensors' dtype and strides (coalesced
like any view), lowered with UB-aware blocking for the chip torch_npu reports, and
the generated Triton function -- an ordinary ``triton.jit`` function -- is called
with the NPU tensors: triton-ascend's own JIT then compiles it to an NPU binary
(TTIR -> Linalg -> HIVM -> hivmc, with its own cache) and launches it through its
driver on the current stream, one program per vector core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsl.errors import DSLLaunchError
from dsl.frontend import ArgSpec, ConstSpec, TensorSpec
from dsl.jit import hidden_value
from dsl.layout import classify
from dsl.views import is_torch_tensor

if TYPE_CHECKING:
    from dsl.jit import JITFunction


def is_npu_tensor(obj: Any) -> bool:
    return is_torch_tensor(obj) and obj.device.type == "npu"


def _tensor_spec(tensor: Any) -> tuple[TensorSpec, Any]:
    from ops.tensors import dtype_of

    dtype = dtype_of(tensor)
    if dtype is None:
        raise DSLLaunchError(f"unsupported element type {tensor.dtype}")
    coalesced = classify(tuple(tensor.shape), tuple(tensor.stride()))
    return TensorSpec(dtype, coalesced.layout), coalesced


def launch(kernel: JITFunction, args: tuple[Any, ...], kwargs: dict[str, Any],
           grid: Any) -> None:
    """Compile (first call) and launch ``kernel`` on the NPU that holds the tensors."""
    try:
        import torch
        import torch_npu  # noqa: F401
    except ImportError:
        raise DSLLaunchError("NPU tensors need torch_npu and CANN (an Ascend host)") from None
    from lowering.blocking import lower_specialization
    from lowering.compiler import import_kernel
    from lowering.targets import get_target

    target = get_target(str(torch.npu.get_device_name(0)))
    bound = kernel.signature_bind(args, kwargs)
    specs: dict[str, ArgSpec] = {}
    layouts: dict[str, Any] = {}
    for name, value in bound.items():
        if is_npu_tensor(value):
            specs[name], layouts[name] = _tensor_spec(value)
        elif name in kernel.source.constexpr_params or value is None:
            specs[name] = ConstSpec(value)
        else:
            specs[name] = kernel.scalar_spec(name, value)
    chosen = {n for n in kernel.source.block_size_params if n not in bound}
    for name in chosen:
        specs[name] = ConstSpec(0)  # replaced by the UB-aware choice
    specs = {p.name: specs[p.name] for p in kernel.source.params}
    lowered = lower_specialization(kernel, specs, chosen, target)
    fn = kernel.specialize({**specs, **{n: ConstSpec(lowered.extra["block"]) for n in chosen}})
    call: list[Any] = []
    for param in fn.params:
        if param.role in ("tensor", "scalar"):  # a tensor's data_ptr() is its lowest address
            call.append(bound[param.user_name])
        else:
            call.append(hidden_value(layouts, param))
    jit_fn = import_kernel(lowered.source_path, lowered.generated.name)
    programs = grid if grid is not None else (target.vector_cores or 1,)
    jit_fn[tuple(programs) if not isinstance(programs, int) else (programs,)](*call)
