"""What the operators accept as tensors: NumPy arrays (ml_dtypes bf16 included) and
CPU torch tensors, and how results of the caller's kind are made."""

from __future__ import annotations

from typing import Any

import numpy as np

from dsl import dtypes as dt
from dsl.dtypes import DType
from dsl.views import is_torch_tensor, to_numpy

# dtypes the two backward operators accept (spec tables).
SUPPORTED = (dt.float32, dt.float16, dt.bfloat16)
MAX_RANK = 8


def is_tensor(obj: Any) -> bool:
    """NumPy arrays, NumPy scalars (0-d) and torch tensors."""
    return isinstance(obj, (np.ndarray, np.generic)) or is_torch_tensor(obj)


def host_array(obj: Any) -> Any:
    """A CPU torch tensor as the NumPy array over its memory, when NumPy can hold its
    dtype and layout; anything else unchanged (validation then names its problem).
    The operators validate and launch on arrays: reading a torch tensor's dtype, shape
    and device costs several times more than an array's, on every call."""
    if obj is None or type(obj) is np.ndarray or not is_torch_tensor(obj) or not obj.is_cpu:
        return obj
    try:
        return to_numpy(obj)
    except (TypeError, RuntimeError):  # e.g. a float8 dtype, or a conjugate-bit view
        return obj


def dtype_of(obj: Any) -> DType | None:
    """The DSL dtype of a tensor, or None when it has none (e.g. int8, complex)."""
    try:
        if is_torch_tensor(obj):
            import torch

            names = {torch.float32: dt.float32, torch.float16: dt.float16,
                     torch.bfloat16: dt.bfloat16, torch.float64: dt.float64,
                     torch.int32: dt.int32, torch.int64: dt.int64, torch.bool: dt.int1}
            return names.get(obj.dtype)
        return dt.from_numpy(obj.dtype)
    except TypeError:
        return None


def dtype_name(obj: Any) -> str:
    return str(obj.dtype).replace("torch.", "")


def device_error(obj: Any) -> str | None:
    """Why a tensor cannot be used here (a non-CPU torch tensor, or one that is not a
    dense strided tensor: sparse, nested, MKL-DNN), or None."""
    if is_torch_tensor(obj) and obj.device.type != "cpu":
        return (f"tensor on device '{obj.device}': this build runs the operators in "
                "interpreter mode on CPU tensors and NumPy arrays only")
    if is_torch_tensor(obj) and (obj.is_nested or str(obj.layout) != "torch.strided"):
        kind = "a nested tensor" if obj.is_nested else f"layout {obj.layout}"
        return f"{kind}: the operators take dense (strided) tensors only"
    return None


def new_like_kind(kind_of: Any, shape: tuple[int, ...], dtype: DType) -> tuple[Any, np.ndarray]:
    """An uninitialised result of ``kind_of``'s kind (NumPy or torch), and a NumPy
    array sharing its memory."""
    if is_torch_tensor(kind_of):
        import torch

        if dtype.name == "bfloat16":  # NumPy has no bfloat16 torch would take (and a
            # name compare skips the dataclass __eq__ on every call)
            result = torch.empty(shape, dtype=torch.bfloat16)
            return result, to_numpy(result)
        array = np.empty(shape, dtype=dtype.np)  # and a tensor over it: cheaper both ways
        return torch.from_numpy(array), array
    result = np.empty(shape, dtype=dtype.np)
    return result, result
