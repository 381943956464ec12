"""Shared host side of the elementwise operators: operand views and the result."""

from __future__ import annotations

from typing import Any

import numpy as np

from dsl.jit import is_planning
from dsl.views import (
    TensorView,
    as_view,
    broadcast_to,
    is_torch_tensor,
    mark_written,
    partially_overlaps,
    to_numpy,
)

__all__ = ["mark_written", "operand", "partially_overlaps", "result", "scale_of", "unaliased"]
from ops import status
from ops.tensors import new_like_kind
from ops.validation import Checked


def operand(obj: Any, shape: tuple[int, ...]) -> TensorView | np.ndarray | None:
    """``obj`` broadcast to the iteration shape without copying (None stays None).
    A NumPy array of that shape is passed as it is, and a NumPy scalar becomes a
    stride-0 array: kernels bind arrays directly, and building a view costs more
    than the rest of a small operator call's host side."""
    if obj is None:
        return None
    array = obj
    if type(array) is not np.ndarray:
        if isinstance(obj, np.generic):
            array = np.asarray(obj)
        elif is_torch_tensor(obj):
            try:
                array = to_numpy(obj)  # shares the tensor's memory
            except TypeError:
                if not obj.is_neg():
                    raise
                # a lazy negation (``z.conj().imag``): its memory holds the values
                # negated; an operand is only read, so its values' copy will do
                array = to_numpy(obj.resolve_neg())
    if type(array) is np.ndarray:
        if array.shape == shape:
            return array
        if array.ndim == 0:  # one element read by every lane
            return np.ndarray(shape, array.dtype, array, 0, (0,) * len(shape))
    return broadcast_to(array, shape)


def result(out: Any, input: Any, checked: Checked,
           shape: tuple[int, ...] | None = None) -> tuple[Any, TensorView | np.ndarray]:
    """The object to return (``out`` itself, or a new tensor of ``input``'s kind and
    ``shape``, by default input's) and what the kernel writes: a view of ``out``, or
    the NumPy array of a new result (which nothing else can overlap: ``unaliased``
    skips it, and kernels take arrays as they are)."""
    if out is None:
        return new_like_kind(input, checked.shape if shape is None else shape,
                             checked.out_dtype)
    try:
        view = as_view(out)
    except TypeError:
        if not (is_torch_tensor(out) and out.is_neg()):
            raise
        raise status.invalid("out has torch's negative bit set (a lazy negation, such as "
                             "z.conj().imag): the result would land negated; pass a tensor "
                             "without it") from None
    if view.is_broadcast or not view.buffer.flags.writeable:
        raise status.invalid("out must be writeable and must not be a broadcast (stride 0) view")
    return out, view


class unaliased:  # noqa: N801 -- used as a function: ``with unaliased(out, ops) as v``
    """The view a kernel should write: ``out`` itself, or, when ``out`` partially
    overlaps an operand (``out=buf[1:]`` for ``buf[:-1]``, ``out=x.T``), a fresh
    temporary copied into ``out`` once the kernel has read every operand -- so the
    result is what it would be without the overlap, at any size. (A class rather than
    a generator context manager: it is on every operator call's path.)"""

    def __init__(self, out: TensorView | np.ndarray,
                 operands: list[TensorView | np.ndarray | None]) -> None:
        self.out = out
        self.staging: TensorView | None = None
        if type(out) is not np.ndarray and any(partially_overlaps(out, op) for op in operands):
            self.staging = as_view(np.empty(out.shape, out.buffer.dtype))

    def __enter__(self) -> TensorView | np.ndarray:
        return self.out if self.staging is None else self.staging

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        # phase 1 of the aclnn API runs nothing and writes nothing
        if self.staging is not None and kind is None and not is_planning():
            np.copyto(self.out.to_numpy(), self.staging.to_numpy())


def scale_of(checked: Checked) -> float:
    """The reduction's scale s: 1/N for mean, 1 otherwise."""
    return 1.0 / checked.numel if checked.reduction == 1 else 1.0
