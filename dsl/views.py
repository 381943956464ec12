"""Host-side tensor views: NumPy arrays and CPU torch tensors seen as (buffer, strides).

A ``TensorView`` is what a kernel's tensor parameter is bound to: a flat 1-D NumPy
array over the memory the tensor spans (never a copy), the element dtype, the
logical shape, element strides (0 on broadcast dimensions, possibly negative) and
the element offset of logical element 0 inside the flat buffer. ``broadcast_to``
makes a stride-0 view of an operand at a larger shape, which is how operands are
broadcast to a kernel's iteration shape without copying.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from math import prod
from typing import Any

import ml_dtypes
import numpy as np

from dsl import dtypes as dt
from dsl.dtypes import DType
from dsl.host_memory import memory_at
from dsl.layout import CoalescedView, classify, span
from dsl.numerics import as_strided

_OVERLAP_EXACT = 1 << 24  # elements: above, a layout not proved apart is taken to overlap


class _Shaped:
    """What a view of any memory derives from its ``shape`` and element ``strides``."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_broadcast(self) -> bool:
        """True when a stride-0 axis makes some element reachable through two logical
        indices."""
        return self.numel > 0 and any(st == 0 and n > 1 for n, st in zip(self.shape, self.strides))

    def overlaps_itself(self) -> bool:
        """True when two logical indices reach one element: a broadcast, or strides
        whose rows overlap (``as_strided(buf, (4, 8), (16, 4))``). Decided by the axes
        sorted by stride, each stepping past everything the shorter ones reach; a
        layout that fails that test (interleaved axes) is decided by its offsets,
        which up to ``_OVERLAP_EXACT`` elements are listed and compared."""
        if self.numel <= 1:
            return False
        reach = 0  # the farthest element the axes so far reach from the first one
        for stride, n in sorted((abs(st), n) for n, st in zip(self.shape, self.strides)
                                if n > 1):
            if stride <= reach:
                break
            reach += stride * (n - 1)
        else:
            return False
        if self.numel > _OVERLAP_EXACT:
            return True  # (not proved apart: treated as overlapping)
        offsets = np.zeros(1, np.int64)
        for n, st in zip(self.shape, self.strides):
            offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * st).reshape(-1)
        return np.unique(offsets).shape[0] < offsets.shape[0]

    def coalesced(self) -> CoalescedView:
        """Coalesced sizes/strides and layout class (see ``dsl.layout``)."""
        return classify(self.shape, self.strides)


@dataclass(frozen=True, eq=False, slots=True)
class TensorView(_Shaped):
    """A strided view over a flat buffer. Build it with ``as_view`` or ``broadcast_to``."""

    buffer: np.ndarray  # 1-D, element stride 1, spans every element the view touches
    dtype: DType
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    base: int  # buffer index of logical element 0
    # The NumPy array or torch tensor viewed, None when unknown: its allocation's end
    # (``limit``) is where a Triton kernel's pointer may reach beyond the view.
    source: Any = None

    @property
    def limit(self) -> int:
        """Byte address one past the end of the allocation the view lives in (a torch
        tensor's storage, a NumPy array's owner), 0 when unknown: a Triton kernel may
        address through its pointer beyond the view, up to there (a row view of a
        matrix). Computed on demand: only pointer accesses need it."""
        if self.source is None:
            return 0
        arr = self.source if isinstance(self.source, np.ndarray) else None
        return _allocation_end(self.source, arr)

    def kernel_memory(self) -> np.ndarray:
        """``kernel_buffer()`` extended to the end of the allocation the view lives in:
        the memory a pointer to the view's first element may address."""
        buffer = self.kernel_buffer()
        limit = self.limit if buffer.size else 0  # (each address read costs ~1 us)
        if not limit:
            return buffer
        extra = (limit - (buffer.ctypes.data + buffer.nbytes)) // buffer.itemsize
        if extra <= 0:
            return buffer
        return as_strided(buffer, shape=(buffer.size + extra,), strides=(buffer.itemsize,),
                          writeable=buffer.flags.writeable)

    def kernel_buffer(self) -> np.ndarray:
        """The flat buffer starting at the lowest address the view touches, as kernels
        address it (logical element 0 sits at ``coalesced().base``)."""
        if self.numel == 0:
            return self.buffer[:0]
        lo, hi = span(self.shape, self.strides)
        return self.buffer[self.base + lo: self.base + hi + 1]

    def to_numpy(self) -> np.ndarray:
        """A strided NumPy view with this view's logical shape (no copy)."""
        item = self.buffer.itemsize
        if self.numel == 0:
            return np.empty(self.shape, self.buffer.dtype)
        return as_strided(self.buffer[self.base:], shape=self.shape,
                          strides=tuple(s * item for s in self.strides),
                          writeable=self.buffer.flags.writeable)

    def __repr__(self) -> str:
        return f"TensorView({self.dtype}, shape={list(self.shape)}, strides={list(self.strides)})"


# torch dtypes NumPy has no type for: (the torch integer type of the same width,
# the ml_dtypes type the interpreter stores them as)
TORCH_DTYPES_NUMPY_LACKS: dict[str, tuple[str, Any]] = {
    "torch.bfloat16": ("int16", ml_dtypes.bfloat16),
    "torch.float8_e4m3fn": ("uint8", ml_dtypes.float8_e4m3fn),
    "torch.float8_e5m2": ("uint8", ml_dtypes.float8_e5m2),
    "torch.float8_e4m3fnuz": ("uint8", ml_dtypes.float8_e4m3fnuz),
    "torch.float8_e5m2fnuz": ("uint8", ml_dtypes.float8_e5m2fnuz),
}


def _torch_to_numpy(t: Any) -> np.ndarray:
    # on every operator call with torch tensors: the cheap attributes first
    if not t.is_cpu:
        raise ValueError(
            f"tensor on device '{t.device}': this build runs kernels in interpreter mode on "
            "CPU tensors and NumPy arrays only")
    if t.requires_grad:
        t = t.detach()
    storage = TORCH_DTYPES_NUMPY_LACKS.get(str(t.dtype))  # (no torch import on the common path)
    if storage is not None:
        import torch

        bits, dtype = storage
        return t.view(getattr(torch, bits)).numpy().view(dtype)
    try:
        return t.numpy()
    except RuntimeError:
        if t.is_nested:  # (torch: "NestedTensorImpl doesn't support sizes")
            raise TypeError("a nested tensor: kernels take dense (strided) tensors") from None
        if t.is_conj() or t.is_neg():  # torch's lazy conjugation / negation bits
            dt.from_torch(t.dtype)  # (a complex tensor: its dtype is named first)
            raise TypeError(
                "a tensor with torch's negative bit set (a lazy negation, such as "
                "z.conj().imag): its memory holds the values negated, and kernels read and "
                "write memory as it is; pass t.resolve_neg() (a copy: writes to it do not "
                "reach t)") from None
        raise
    except TypeError:
        # torch names the dtype NumPy lacks ("Got unsupported ScalarType
        # Float8_e5m2"); say which element types a kernel takes instead
        dt.from_torch(t.dtype)
        raise


# type -> whether its instances are torch tensors (asked several times per call)
_TORCH_TYPES: dict[type, bool] = {}


def is_torch_tensor(obj: Any) -> bool:
    """True for a torch tensor, without importing torch."""
    kind = type(obj)
    known = _TORCH_TYPES.get(kind)
    if known is None:
        known = _TORCH_TYPES[kind] = kind.__module__.startswith("torch") and \
            hasattr(kind, "detach")
    return known


def same_elements(a: TensorView, b: TensorView) -> bool:
    """True when two views address exactly the same elements in the same order."""
    start = a.buffer.ctypes.data + a.base * a.buffer.itemsize
    other = b.buffer.ctypes.data + b.base * b.buffer.itemsize
    return (a.shape, a.strides, a.buffer.dtype, start) == (b.shape, b.strides, b.buffer.dtype,
                                                           other)


def partially_overlaps(a: TensorView, b: TensorView | np.ndarray | None) -> bool:
    """``a`` shares memory with ``b`` without being exactly the same view (an exact
    alias, ``out is input``, is safe for elementwise work: each element is read and
    written by the same lane)."""
    if b is None or not np.may_share_memory(a.buffer, b if type(b) is np.ndarray
                                            else b.buffer):
        return False
    b = as_view(b)
    return a.numel > 0 and b.numel > 0 and not same_elements(a, b) and _share_an_element(a, b)


def _share_an_element(a: TensorView, b: TensorView) -> bool:
    """Whether two views of one memory reach a common byte (``buf[::2]`` and
    ``buf[1::2]`` do not): NumPy's exact test on their strided forms, with a problem
    too hard for its work bound taken as shared."""
    try:
        return bool(np.shares_memory(_strided(a), _strided(b), max_work=1 << 16))
    except np.exceptions.TooHardError:
        return True


def _strided(view: TensorView) -> np.ndarray:
    """``view`` as a read-only NumPy array over its buffer (a negative stride reaches
    back from element 0 into the buffer, which spans every element)."""
    return as_strided(
        view.buffer[view.base:], shape=view.shape,
        strides=tuple(s * view.buffer.itemsize for s in view.strides), writeable=False)


def grad_leaf(obj: Any) -> bool:
    """True for a torch leaf tensor that requires grad while grad mode is on: torch
    refuses to write one in place then (its gradient would be taken through values the
    write replaced), and so does a launch that stores to it. Under ``torch.no_grad()``
    and in an ``autograd.Function``'s backward torch allows the write, and so does a
    launch (Liger-Kernel's backward kernels write gradients into saved inputs)."""
    return is_torch_tensor(obj) and obj.requires_grad and obj.is_leaf and \
        sys.modules["torch"].is_grad_enabled()


def mark_written(obj: Any) -> Any:
    """Tell autograd that a torch tensor was written in place: its version counter
    moves, so a backward through a saved use of it raises "modified by an inplace
    operation" as torch's own in-place ops make it raise. Returns ``obj``."""
    if is_torch_tensor(obj):
        import torch  # only reached with a torch tensor

        torch.autograd.graph.increment_version(obj)
    return obj


def to_numpy(obj: Any) -> np.ndarray:
    """A NumPy array sharing memory with a NumPy array or CPU torch tensor."""
    if isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, np.generic):  # a NumPy scalar: a read-only 0-d tensor
        return np.asarray(obj)
    if is_torch_tensor(obj):
        return _torch_to_numpy(obj)
    if isinstance(obj, TensorView):
        return obj.to_numpy()
    raise TypeError(f"expected a NumPy array or a torch tensor, got {type(obj).__name__}")


def wrapped_tensor(obj: Any) -> np.ndarray | None:
    """The NumPy view a tensor-like wrapper describes, or None for any other object.

    A wrapper (FlagGems' ``StridedBuffer``, which its generated launchers pass for
    strided and flipped operands) offers ``data_ptr()``, ``dtype``, ``shape`` and
    ``stride()`` and names the CPU torch tensor it reinterprets as ``_base``. Every
    element it describes must lie in that tensor's storage (``ValueError``
    otherwise), and the view is of that storage, so the bounds checks hold as for
    the tensor itself. Negative strides are fine (a flip). Triton's own wrapper,
    ``triton.reinterpret(tensor, dtype)``, is its tensor's memory read as ``dtype``."""
    if type(obj).__name__ == "TensorWrapper" and type(obj).__module__.startswith("triton."):
        return _reinterpreted(obj)
    if callable(getattr(obj, "data_ptr", None)) and hasattr(obj, "dtype") and \
            not hasattr(obj, "shape") and not hasattr(obj, "_base"):
        # only an address (FlagGems' TypedPtr): the memory from there to the end of
        # the tensor holding it, bound-checked as that 1-D tensor
        return memory_at(int(obj.data_ptr()), dt.from_torch(obj.dtype).np,
                         f"{type(obj).__name__} (an address and a dtype)")
    base = getattr(obj, "_base", None)
    if not (is_torch_tensor(base) and callable(getattr(obj, "data_ptr", None))
            and callable(getattr(obj, "stride", None)) and hasattr(obj, "shape")):
        return None
    if not base.is_cpu:
        raise ValueError(f"{type(obj).__name__} over a tensor on device '{base.device}': "
                         "this build runs kernels on CPU tensors and NumPy arrays only")
    import torch

    dtype = dt.from_torch(obj.dtype)
    shape = tuple(int(n) for n in obj.shape)
    strides = tuple(int(s) for s in obj.stride())
    if len(strides) != len(shape):
        raise ValueError(f"{type(obj).__name__} has shape {list(shape)} but strides "
                         f"{list(strides)}")
    storage = base.untyped_storage()
    start = obj.data_ptr() - storage.data_ptr()  # bytes into the storage
    item = dtype.np.itemsize
    if obj.data_ptr() % item:
        # (the device's loads are aligned: elements straddling two of the tensor's were
        # read, as a pointer cast from such an integer is refused)
        raise ValueError(f"{type(obj).__name__}'s data_ptr() {obj.data_ptr():#x} is not a "
                         f"multiple of its element size ({item} bytes, {dtype.name})")
    first, last = span(shape, strides) if all(shape) else (0, -1)  # elements from start
    if all(shape) and (start + first * item < 0 or
                       start + (last + 1) * item > storage.nbytes()):
        raise ValueError(f"{type(obj).__name__} of shape {list(shape)} and strides "
                         f"{list(strides)} at byte {start} of its tensor's storage reaches "
                         f"outside its {storage.nbytes()} bytes")
    raw = torch.empty(0, dtype=torch.uint8).set_(storage, 0, (storage.nbytes(),), (1,))
    return np.ndarray(shape, dtype.np, buffer=raw.numpy(), offset=start,
                      strides=tuple(s * item for s in strides))


def _reinterpreted(wrapper: Any) -> np.ndarray:
    """``triton.reinterpret(tensor, dtype)``: the tensor's memory as ``dtype``, which
    must have its element size (Triton's unsigned integers over torch's signed ones)."""
    name = getattr(wrapper.dtype, "name", str(wrapper.dtype))
    try:
        dtype = dt.by_name(name)  # (Triton's names: fp32, bf16, ... are aliases)
    except (KeyError, ValueError):
        raise TypeError(f"triton.reinterpret to {name}: not an element type of this "
                        "project") from None
    arr = to_numpy(wrapper.base)
    if arr.itemsize != dtype.np.itemsize:
        raise ValueError(f"triton.reinterpret of {arr.dtype} elements as {name}: the "
                         "element sizes differ")
    return arr.view(dtype.np)


# (dtype, shape, strides) of C-contiguous arrays seen -> (DType, element strides):
# viewing an array is on every launch's path.
_CONTIGUOUS: dict[tuple, tuple[DType, tuple[int, ...]]] = {}


def as_view(obj: Any) -> TensorView:
    """View a NumPy array, CPU torch tensor or TensorView (no copy)."""
    if isinstance(obj, TensorView):
        return obj
    arr = obj if type(obj) is np.ndarray else to_numpy(obj)
    if type(arr) is not np.ndarray:  # a subclass (np.matrix, np.memmap): plain indexing
        arr = arr.view(np.ndarray)
    if arr.flags.c_contiguous and arr.size:
        key = (arr.dtype, arr.shape, arr.strides)
        known = _CONTIGUOUS.get(key)
        if known is None:
            item = arr.itemsize
            known = (dt.from_numpy(arr.dtype), tuple(s // item for s in arr.strides))
            if len(_CONTIGUOUS) >= 1024:
                _CONTIGUOUS.clear()
            _CONTIGUOUS[key] = known
        return TensorView(arr.reshape(-1), known[0], arr.shape, known[1], 0, obj)
    dtype = dt.from_numpy(arr.dtype)
    item = arr.itemsize
    if any(s % item for s in arr.strides):
        raise ValueError(f"strides {arr.strides} are not multiples of the element size {item}")
    strides = tuple(s // item for s in arr.strides)
    shape = tuple(arr.shape)
    if arr.size == 0:
        return TensorView(np.empty(0, arr.dtype), dtype, shape, strides, 0)
    # Element strides let us find the lowest address; the buffer starts there.
    # The trailing Ellipsis keeps a 0-d array a view (arr[()] would copy out a scalar).
    corner = arr[tuple(slice(n - 1, n) if s < 0 else slice(0, 1)
                       for n, s in zip(shape, strides)) + (Ellipsis,)]
    lo, hi = span(shape, strides)
    if lo == hi:  # one element (a broadcast scalar): the corner is the buffer
        return TensorView(corner.reshape(1), dtype, shape, strides, 0, obj)
    buffer = as_strided(
        corner, shape=(hi - lo + 1,), strides=(item,), writeable=arr.flags.writeable)
    return TensorView(buffer, dtype, shape, strides, -lo, obj)


def _allocation_end(obj: Any, arr: np.ndarray | None) -> int:
    """Byte address one past the allocation ``obj`` lives in: a torch tensor's storage,
    or the NumPy array that owns the memory when it is contiguous; 0 when unknown."""
    if is_torch_tensor(obj):
        storage = obj.untyped_storage()
        return storage.data_ptr() + storage.nbytes()
    if arr is None:
        return 0
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        return 0
    return root.ctypes.data + root.nbytes


@dataclass(frozen=True, eq=False)
class DeviceTensorView(_Shaped):
    """A tensor in a device's memory (a torch_npu tensor): dtype, shape and element
    strides, read without touching its data. Kernels bound to one are launched by
    that device's backend, which passes ``tensor`` itself to the compiled kernel."""

    tensor: Any
    device: str
    dtype: DType
    shape: tuple[int, ...]
    strides: tuple[int, ...]


def device_of(obj: Any) -> str:
    """``"cpu"`` for NumPy arrays, views and CPU torch tensors, else the torch device
    type (``"npu"`` for a torch_npu tensor)."""
    if is_torch_tensor(obj):
        return str(obj.device.type)
    return "cpu"


def bind_view(obj: Any) -> TensorView | DeviceTensorView:
    """The view a kernel argument is bound to: a host ``TensorView`` (no copy), or a
    ``DeviceTensorView`` for a tensor in a device's memory."""
    device = device_of(obj)
    if device == "cpu":
        return as_view(obj)
    return DeviceTensorView(obj, device, dt.from_torch(obj.dtype), tuple(obj.shape),
                            tuple(obj.stride()))


def broadcast_shape_ok(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """True when ``shape`` broadcasts to exactly ``target`` (NumPy rules)."""
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(shape[::-1], target[::-1]))


def broadcast_to(obj: Any, shape: tuple[int, ...] | list[int]) -> TensorView:
    """A view of ``obj`` broadcast to ``shape`` with stride 0 on stretched dims (no copy)."""
    view = as_view(obj)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"shape {list(shape)} has a negative dimension")
    if view.shape == shape:
        return view
    if not broadcast_shape_ok(view.shape, shape):
        raise ValueError(f"shape {list(view.shape)} does not broadcast to {list(shape)}")
    lead = len(shape) - len(view.shape)
    strides = [0] * lead
    for n, st, t in zip(view.shape, view.strides, shape[lead:]):
        strides.append(0 if n == 1 and t != 1 else st)
    if prod(shape) == 0:
        return TensorView(view.buffer[:0], view.dtype, shape, tuple(strides), 0)
    return TensorView(view.buffer, view.dtype, shape, tuple(strides), view.base, view.source)
