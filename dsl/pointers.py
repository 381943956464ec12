"""Triton's pointers over tensor arguments: ``x_ptr + offsets`` and block pointers.

A tensor argument is also a pointer to its first element. Pointers exist only at
compile time, in the frontend: a ``Pointer`` pairs the one argument it derives from
with an integer offset ``Value`` (in elements; the kernel applies strides itself, as
in Triton), and pointer arithmetic moves that offset. A load, store or atomic
through a pointer becomes the IR's ordinary memory op with a pointer ``Address``
(``dsl.semantic``): its physical offset is the pointer's offset plus the view's
base (when its layout has one), and its bounds check is against the memory the
argument spans, so a pointer that escapes its argument is an ``OutOfBoundsError``
naming that argument, program, lane and line. Because every pointer keeps its
argument, the backends need nothing new: the interpreter checks and addresses the
argument's buffer, and the code generator writes ``x_ptr + offset``.

A ``BlockPointer`` (``make_block_ptr``/``advance``) is a description: the parent
tensor's shape and strides, the block's offsets, its constexpr shape and order. A
load or store through it expands to the pointer block ``base + sum(coord_d *
stride_d)`` and, for the dimensions in ``boundary_check``, the mask ``0 <= coord_d <
shape_d``, so block pointers lower to the same ``tl.load(ptr + offsets, mask)``
calls as pointer arithmetic.

A ``PointerChoice`` is one pointer name that a runtime ``if`` bound to different
arguments in its branches (FlagGems' ``cat``: ``if pid == 0: p = a_ptr`` ... ``else:
p = b_ptr``). It keeps every argument it may point into, the program's choice
``which`` (a scalar int32 the ``if`` yields) and one offset. Pointer arithmetic
moves the offset; a load, store or atomic through it becomes one masked access per
argument (``mask & (which == k)``), each bound-checked against its own argument, and
a load's results are selected by ``which``. So the rule that each memory op
addresses one argument holds, and the backends need nothing new.

An ``AddressPointer`` is the one exception to that rule: a 64-bit integer cast to a
pointer (``tl.load(table + g).to(tl.pointer_type(tl.float16))``, the pointer tables
of grouped GEMMs and per-layer KV caches). It keeps the int64 byte address as cast
(a scalar, or a block of them) and an element offset, which pointer arithmetic moves,
as a ``Pointer`` keeps its argument and offset; its loads and stores are the IR's
``load_address``/``store_address`` of (address, offset), which the interpreter checks
lane by lane against the host memory the launch can see (``dsl.host_memory``)
and the code generator writes back as the kernel wrote it, ``address.to(
tl.pointer_type(T)) + offset`` (triton-ascend lowers a scalar address cast so, and
fails on a block of addresses computed first: the code generator rebases a block of
addresses on its smallest active one). A block pointer may have one as its
base (``BlockPointer.origin``), and atomics through it are the IR's
``atomic_address``/``atomic_cas_address``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsl import dtypes as dt
from dsl import semantic as sem
from dsl.ir import Type, Value
from dsl.semantic import Address, Builder, Operand, ViewArg, as_tuple


@dataclass(frozen=True)
class Pointer:
    """A scalar or block of pointers into one tensor argument."""

    view: ViewArg
    offset: Value  # elements from the argument's first element; an integer dtype
    # the element type read and written through it when a cast (``x_ptr.to(
    # tl.pointer_type(tl.int32))``) made it another of the same size; None: the
    # argument's own
    element: dt.DType | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.offset.shape

    @property
    def dtype(self) -> dt.DType:
        """The element type (``ptr.dtype.element_ty`` reads it too)."""
        return self.element or self.view.dtype


@dataclass(frozen=True)
class PointerChoice:
    """A pointer into ``views[which]`` at ``offset``: a name a runtime ``if`` bound to
    different tensor arguments in its branches (see the module doc)."""

    views: tuple[ViewArg, ...]  # distinct arguments, one element type
    which: Value  # scalar int32: the index of the program's argument in ``views``
    offset: Value  # elements from that argument's first element; an integer dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.offset.shape

    @property
    def dtype(self) -> dt.DType:
        return self.views[0].dtype

    @property
    def names(self) -> str:
        return ", ".join(f"'{v.name}'" for v in self.views)


@dataclass(frozen=True)
class AddressPointer:
    """A scalar or block of pointers cast from 64-bit integers (see the module doc)."""

    address: Value  # int64 byte addresses, as cast: a scalar or a block
    offset: Value  # elements from the address; an integer dtype
    element: dt.DType

    @property
    def shape(self) -> tuple[int, ...]:
        """The block of pointers: the address's and the offset's shapes broadcast."""
        return tuple(np.broadcast_shapes(self.address.shape, self.offset.shape))

    @property
    def dtype(self) -> dt.DType:
        return self.element

    @property
    def itemsize(self) -> int:
        return max(1, self.element.itemsize)  # (Triton's int1 pointer steps by a byte)


AnyPointer = Pointer | ViewArg | PointerChoice | AddressPointer


def is_pointer(x: object) -> bool:
    return isinstance(x, (Pointer, ViewArg, PointerChoice, AddressPointer))


def from_integer(b: Builder, x: Any, element: Any) -> AddressPointer:
    """``x.to(tl.pointer_type(element))`` of a 64-bit integer scalar or block."""
    if not isinstance(x, Value) or not x.dtype.is_int or x.dtype.is_bool:
        raise b.error(f"only a 64-bit integer or a pointer casts to a pointer type, got "
                      f"{getattr(x, 'type', type(x).__name__)}")
    if x.dtype.bits != 64:
        raise b.error(f"an integer cast to a pointer must be 64 bits wide (an address), got "
                      f"{x.dtype.name}")
    if not isinstance(element, dt.DType):
        raise b.error(f"a pointer cast from an integer points to a scalar type, got "
                      f"{element!r}")
    return AddressPointer(sem.cast(b, x, dt.int64), sem.constant(b, 0, dt.int32), element)


def byte_address(b: Builder, p: AddressPointer) -> Value:
    """The int64 address of every element ``p`` points to."""
    moved = sem.cast(b, p.offset, dt.int64)
    if p.itemsize != 1:
        moved = sem.binary(b, "mul", moved, p.itemsize)
    return sem.binary(b, "add", p.address, moved)


def retarget(b: Builder, p: AddressPointer, element: dt.DType) -> AddressPointer:
    """``p.to(tl.pointer_type(element))``: the same bytes as another element type."""
    if element == p.element:
        return p
    owner = p.offset.owner
    if owner is not None and owner.defn.constant and owner.attrs["value"] == 0:
        return AddressPointer(p.address, p.offset, element)  # (keeps the cast integer)
    return AddressPointer(byte_address(b, p), sem.constant(b, 0, dt.int32), element)


def pointer_as_integer(b: Builder, ptr: Pointer | ViewArg) -> Value:
    """``x_ptr.to(tl.int64)`` of a pointer into an argument: the byte address of the
    element it points to (the argument's buffer address plus its physical offset)."""
    p = as_pointer(b, ptr)
    start = b.emit("tensor_address", [p.view.value], [Type(dt.int64, ())]).result
    offset = element_address(b, p).offset
    moved = sem.cast(b, offset, dt.int64)
    if p.view.dtype.itemsize != 1:
        moved = sem.binary(b, "mul", moved, p.view.dtype.itemsize)
    return sem.binary(b, "add", start, moved)


def address_as_integer(b: Builder, p: AddressPointer, dtype: Any) -> Value:
    """``p.to(tl.int64)``: the addresses themselves."""
    if not isinstance(dtype, dt.DType) or not dtype.is_int or dtype.bits != 64:
        raise b.error(f"a pointer cast from an integer casts back only to a 64-bit integer "
                      f"type, got {dtype!r}")
    return sem.cast(b, byte_address(b, p), dtype)


def as_pointer(b: Builder, x: Pointer | ViewArg) -> Pointer:
    """A tensor argument as the pointer to its first element."""
    if isinstance(x, Pointer):
        return x
    if isinstance(x, AddressPointer):
        raise b.error("a pointer cast from an integer supports + and - of offsets, "
                      "comparisons, where(), load, store, atomics and make_block_ptr (not "
                      "index_select)")
    if isinstance(x, PointerChoice):
        raise b.error(f"a pointer that a runtime 'if' bound to different arguments "
                      f"({x.names}) supports + and - of offsets, load, store, atomics, "
                      "block pointers and where() on a scalar condition (not comparisons, "
                      "a block-shaped where(), casts or atomic_cas)")
    return Pointer(x, sem.constant(b, 0, dt.int32))


def views_of(p: Any) -> tuple[ViewArg, ...]:
    """The arguments a pointer (or a block pointer) may point into."""
    if isinstance(p, BlockPointer):
        p = p.origin
    if isinstance(p, PointerChoice):
        return p.views
    if isinstance(p, AddressPointer):
        return ()
    return (p if isinstance(p, ViewArg) else p.view,)


def merged_views(b: Builder, p: AnyPointer, q: AnyPointer) -> tuple[ViewArg, ...] | None:
    """The arguments a pointer bound to ``p`` in one branch of an ``if`` and to ``q``
    in the other may point into (``p``'s first); None when both point into one."""
    if isinstance(p, AddressPointer) or isinstance(q, AddressPointer):
        if not (isinstance(p, AddressPointer) and isinstance(q, AddressPointer)):
            raise b.error("a pointer cast from an integer and a pointer into an argument in "
                          "the branches of one 'if': cast both from integers, or use neither")
        return None
    views = list(views_of(p))
    if any(isinstance(x, Pointer) and x.element is not None for x in (p, q)) and \
            len({v.name for v in (*views, *views_of(q))}) > 1:
        raise b.error("a pointer cast to another element type cannot also be bound to "
                      "another argument")
    for v in views_of(q):
        if all(v.name != u.name for u in views):
            views.append(v)
    if len(views) == 1:
        return None
    if len({v.dtype for v in views}) != 1:
        kinds = " and ".join(f"'{v.name}' ({v.dtype.name})" for v in views)
        raise b.error(f"a pointer into {kinds} in the branches of one 'if': its arguments "
                      "must have one element type")
    return tuple(views)


def choice_over(b: Builder, p: AnyPointer, views: tuple[ViewArg, ...]) -> PointerChoice:
    """``p`` as a choice among ``views`` (which hold all of its arguments): emitted
    where ``p`` is, in its branch of the ``if``."""
    position = {v.name: k for k, v in enumerate(views)}
    if not isinstance(p, PointerChoice):
        ptr = as_pointer(b, p)
        return PointerChoice(views, sem.constant(b, position[ptr.view.name], dt.int32),
                             ptr.offset)
    which = p.which
    moves = [(k, position[v.name]) for k, v in enumerate(p.views) if position[v.name] != k]
    for old, new in moves:  # (its own arguments first: no move unless ``q`` came first)
        which = sem.where(b, sem.binary(b, "eq", p.which, old), new, which)
    return PointerChoice(views, which, p.offset)


def through_choice(b: Builder, p: PointerChoice, mask: Any,
                   access: Callable[[Address, Any], Value | None]) -> Value | None:
    """A memory op through a choice: ``access(address, mask)`` once per argument, its
    mask narrowed to the programs that chose that argument; the results (a load's
    values, an atomic's old ones) picked by the choice, None for a store."""
    picked = None
    for k, view in enumerate(p.views):
        chosen = sem.binary(b, "eq", p.which, k)
        narrowed = chosen if mask is None or mask is True else sem.binary(b, "and", mask,
                                                                          chosen)
        part = access(address(b, Pointer(view, p.offset)), narrowed)
        if part is not None:
            picked = part if picked is None else sem.where(b, chosen, part, picked)
    return picked


def _offset_operand(b: Builder, delta: Operand, what: str) -> Operand:
    if isinstance(delta, Value):
        if not delta.dtype.is_int or delta.dtype.is_bool:
            raise b.error(f"{what}: a pointer moves by an integer offset, got {delta.dtype.name}")
        return delta
    if isinstance(delta, bool) or not isinstance(delta, int):
        raise b.error(f"{what}: a pointer moves by an integer offset, got {delta!r}")
    return delta


def offset_by(b: Builder, ptr: AnyPointer, delta: Operand, subtract: bool = False
              ) -> Pointer | PointerChoice:
    """``ptr + delta`` (or ``ptr - delta``): a pointer into the same argument(s)."""
    what = "pointer " + ("-" if subtract else "+")
    step = _offset_operand(b, delta, what)
    if isinstance(ptr, (AddressPointer, PointerChoice)):
        return dataclasses.replace(ptr, offset=sem.binary(b, "sub" if subtract else "add",
                                                          ptr.offset, step))
    p = as_pointer(b, ptr)
    return dataclasses.replace(p, offset=sem.binary(b, "sub" if subtract else "add", p.offset,
                                                    step))


def _both_addresses(b: Builder, lhs: Any, rhs: Any, what: str) -> bool:
    """True for two pointers cast from integers (to one element type); an error for one
    such pointer and a pointer into an argument."""
    kinds = isinstance(lhs, AddressPointer), isinstance(rhs, AddressPointer)
    if kinds == (False, False):
        return False
    if kinds != (True, True):
        raise b.error(f"{what} of a pointer cast from an integer and a pointer into an "
                      "argument")
    if lhs.element != rhs.element:
        raise b.error(f"{what} of a pointer to {lhs.element.name} and one to "
                      f"{rhs.element.name}")
    return True


def _same_argument(b: Builder, p: Pointer, q: Pointer, what: str) -> None:
    if p.view.name != q.view.name:
        raise b.error(f"{what} of pointers into different arguments ('{p.view.name}' and "
                      f"'{q.view.name}'): each pointer derives from one argument")


def difference(b: Builder, lhs: Pointer | ViewArg, rhs: Pointer | ViewArg) -> Value:
    """``p - q`` of two pointers into one argument: their distance in elements."""
    if _both_addresses(b, lhs, rhs, "difference"):
        bytes_apart = sem.binary(b, "sub", byte_address(b, lhs), byte_address(b, rhs))
        return bytes_apart if lhs.itemsize == 1 else \
            sem.binary(b, "floordiv", bytes_apart, lhs.itemsize)
    p, q = as_pointer(b, lhs), as_pointer(b, rhs)
    _same_argument(b, p, q, "difference")
    return sem.binary(b, "sub", p.offset, q.offset)


def compare(b: Builder, op: str, lhs: Pointer | ViewArg, rhs: Pointer | ViewArg) -> Value:
    """A comparison of two pointers into one argument (their offsets compare)."""
    if _both_addresses(b, lhs, rhs, "comparison"):
        return sem.binary(b, op, byte_address(b, lhs), byte_address(b, rhs))
    p, q = as_pointer(b, lhs), as_pointer(b, rhs)
    _same_argument(b, p, q, "comparison")
    return sem.binary(b, op, p.offset, q.offset)


def select(b: Builder, cond: Operand, x: AnyPointer, y: AnyPointer
           ) -> Pointer | PointerChoice:
    """``where(cond, p, q)`` of two pointers into one argument, or, for a scalar
    ``cond`` (``a_ptr if flag else b_ptr``), into different ones: a choice."""
    if _both_addresses(b, x, y, "where()"):
        return AddressPointer(sem.where(b, cond, x.address, y.address),
                              sem.where(b, cond, x.offset, y.offset), x.element)
    views = merged_views(b, x, y) if is_pointer(x) and is_pointer(y) else None
    if views is not None and not getattr(cond, "shape", ()):
        p, q = choice_over(b, x, views), choice_over(b, y, views)
        return PointerChoice(views, sem.where(b, cond, p.which, q.which),
                             sem.where(b, cond, p.offset, q.offset))
    p, q = as_pointer(b, x), as_pointer(b, y)
    _same_argument(b, p, q, "where()")
    if p.dtype != q.dtype:
        raise b.error(f"where() of a pointer to {p.dtype.name} and one to {q.dtype.name}")
    return dataclasses.replace(p, offset=sem.where(b, cond, p.offset, q.offset))


def map_offsets(b: Builder, ptr: Pointer | PointerChoice | AddressPointer, fn: Any
                ) -> Pointer | PointerChoice | AddressPointer:
    """A shape op (broadcast, reshape, expand_dims, permute, a hint) applied to the
    offsets of a pointer block (and to a block of addresses cast from integers)."""
    if isinstance(ptr, AddressPointer):
        address, offset = ptr.address, ptr.offset
        if address.shape and offset.shape != address.shape:
            address = sem.broadcast_to(b, address, ptr.shape)
            offset = sem.broadcast_to(b, offset, ptr.shape)
        return AddressPointer(fn(address) if address.shape else address,
                              fn(offset) if offset.shape or not address.shape else offset,
                              ptr.element)
    return dataclasses.replace(ptr, offset=fn(ptr.offset))


def cast(b: Builder, ptr: Pointer | ViewArg, element: dt.DType) -> Pointer | AddressPointer:
    """``ptr.to(tl.pointer_type(element))``: the same memory read and written as
    ``element``. Of the argument's element size, a pointer into the argument still;
    of another size (or int1), a pointer cast from the element's address, since its
    offsets step by another size (SGLang copies bf16 rows as bytes)."""
    p = as_pointer(b, ptr)
    own = p.view.dtype
    if element == own:
        return dataclasses.replace(p, element=None)
    if element.bits != own.bits or element.is_bool or own.is_bool:
        # another size: the bytes at the element's address, as a pointer cast from that
        # address (bound-checked against the argument's memory as it runs)
        return AddressPointer(pointer_as_integer(b, p), sem.constant(b, 0, dt.int32), element)
    return dataclasses.replace(p, element=element)


def _uncast(b: Builder, p: Pointer | ViewArg, what: str) -> None:
    if isinstance(p, Pointer) and p.element is not None:
        raise b.error(f"{what} through a pointer cast to another element type "
                      f"({p.view.dtype.name} read as {p.element.name}) is not supported; "
                      "only load and store are")


def address(b: Builder, ptr: Pointer | ViewArg) -> Address:
    """The memory op address of a pointer: offsets in the argument's index width
    (int64 when either asks for it), plus the view's base. A cast pointer's loads
    and stores take ``element_address`` and convert the bits themselves."""
    _uncast(b, ptr, "an atomic")  # (loads and stores take element_address)
    return element_address(b, ptr)


def element_address(b: Builder, ptr: Pointer | ViewArg) -> Address:
    """``address`` of the argument's own elements, whatever type a cast reads them as."""
    p = as_pointer(b, ptr)
    view, offset = p.view, p.offset
    wide = view.value.type.layout.index_bits == 64 or offset.dtype.bits == 64
    offset = sem.cast(b, offset, dt.int64 if wide else dt.int32)
    if view.base is not None:
        offset = sem.binary(b, "add", offset, view.base)
    return Address(view, offset, offset, pointer=True)


def index_select(b: Builder, src: Any, dim: Any, index: Any, src_shape: Any, src_offset: Any,
                 read_shape: Any) -> tuple[Address, Value | None]:
    """triton-ascend's ``index_select_simd``: from the row-major tensor of ``src_shape``
    at ``src``, the tile of ``read_shape`` at ``src_offset`` whose dimension ``dim``
    runs through the 1-D ``index`` instead (``read_shape[dim]`` is -1 and
    ``src_offset[dim]`` is ignored). The address of every element and the mask that
    truncates the other dimensions at ``src_shape``, as the device does. The device does
    not check ``index``; here an index outside the tensor's memory is an
    ``OutOfBoundsError`` like any pointer's."""
    if not isinstance(src, (Pointer, ViewArg)) or (isinstance(src, Pointer) and src.shape):
        raise b.error("index_select_simd() src must be a tensor argument or a scalar pointer")
    shape = _operands(b, src_shape, "src_shape", None, "index_select_simd")
    rank = len(shape)
    offsets = _operands(b, src_offset, "src_offset", rank, "index_select_simd")
    reads = as_tuple(read_shape)
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < rank - 1:
        raise b.error(f"index_select_simd() dim must be a constexpr in [0, {rank - 1}) (not "
                      f"the trailing dimension), got {dim!r}")
    if len(reads) != rank or reads[dim] != -1 or any(
            isinstance(n, bool) or not isinstance(n, int) or n <= 0
            for d, n in enumerate(reads) if d != dim):
        raise b.error(f"index_select_simd() read_shape must be {rank} constexpr sizes with -1 "
                      f"at dim {dim}, got {reads!r}")
    idx = sem.as_value(b, index)
    if not idx.dtype.is_int or idx.dtype.is_bool or idx.rank != 1:
        raise b.error(f"index_select_simd() index must be a 1-D integer block, got {idx.type}")
    _uncast(b, src, "index_select_simd")
    offset: Value = as_pointer(b, src).offset
    mask: Value | None = None
    stride: Operand = 1
    for d in reversed(range(rank)):
        if d == dim:
            coord: Value = idx
        else:
            coord = sem.binary(b, "add", sem.arange(b, 0, reads[d]), offsets[d])
            inside = sem.binary(b, "lt", coord, shape[d])
        for axis in range(rank):
            if axis != d:
                coord = sem.expand_dims(b, coord, axis)
                if d != dim:
                    inside = sem.expand_dims(b, inside, axis)
        offset = sem.binary(b, "add", offset, sem.binary(b, "mul", coord, stride))
        if d != dim:
            mask = inside if mask is None else sem.binary(b, "and", mask, inside)
        stride = _mul(b, stride, shape[d])
    block = tuple(idx.shape[0] if d == dim else reads[d] for d in range(rank))
    offset = sem.broadcast_to(b, offset, block)
    if mask is not None:
        mask = sem.broadcast_to(b, mask, block)
    return address(b, Pointer(as_pointer(b, src).view, offset)), mask


def embedding_gather(b: Builder, src: Any, idx: Any, bound: Any, lstdim_blksiz: Any,
                     offsets: Any, numels: Any) -> tuple[Address, Value]:
    """triton-ascend 3.2's ``tl.index_select`` (``tt.embedding_gather``, an A5 library
    call on the device): for each position ``p`` of the 1-D or 2-D integer block
    ``idx``, ``lstdim_blksiz`` elements of row ``idx[p]`` of the row-major table at
    ``src`` (rows of ``numels[-1]`` elements), from column ``offsets[-1]``; the result
    has ``idx``'s shape plus ``lstdim_blksiz``. A negative index counts from ``bound``
    once. What the device leaves unwritten reads 0: a row whose index is still outside
    [0, bound), a position with ``offsets[d] + p[d] >= numels[d]``, and columns from
    ``numels[-1]`` on. The address of every element and that mask."""
    what = "index_select"
    if not isinstance(src, (Pointer, ViewArg)) or (isinstance(src, Pointer) and src.shape):
        raise b.error(f"{what}() src must be a tensor argument or a scalar pointer")
    _uncast(b, src, what)
    table = as_pointer(b, src)
    if not table.dtype.is_float:
        raise b.error(f"{what}() src must hold floating-point elements, got "
                      f"{table.dtype.name} (as triton-ascend)")
    index = sem.as_value(b, idx)
    if not index.dtype.is_int or index.dtype.is_bool or index.rank not in (1, 2):
        raise b.error(f"{what}() idx must be a 1-D or 2-D integer block, got {index.type}")
    for name, n in (("bound", bound), ("lstdim_blksiz", lstdim_blksiz)):
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise b.error(f"{what}() {name} must be a positive constexpr integer, got {n!r}")
    rank = index.rank + 1
    starts = _operands(b, offsets, "offsets", rank, what)
    sizes = _operands(b, numels, "numels", rank, what)
    wide = dt.int64 if index.dtype.bits == 64 else dt.int32
    row = sem.cast(b, index, wide)
    row = sem.where(b, sem.binary(b, "lt", row, 0), sem.binary(b, "add", row, bound), row)
    valid = sem.binary(b, "and", sem.binary(b, "ge", row, 0), sem.binary(b, "lt", row, bound))
    for d, extent in enumerate(index.shape):
        position = sem.binary(b, "add", sem.arange(b, 0, extent), starts[d])
        inside = sem.binary(b, "lt", position, sizes[d])
        for axis in range(index.rank):
            if axis != d:
                inside = sem.expand_dims(b, inside, axis)
        valid = sem.binary(b, "and", valid, inside)
    column = sem.binary(b, "add", sem.cast(b, sem.arange(b, 0, lstdim_blksiz), wide),
                        starts[-1])
    column_inside = sem.binary(b, "lt", column, sizes[-1])
    for _ in range(index.rank):
        column, column_inside = (sem.expand_dims(b, v, 0) for v in (column, column_inside))
    row = sem.expand_dims(b, row, index.rank)
    offset = sem.binary(b, "add", table.offset,
                        sem.binary(b, "add", sem.binary(b, "mul", row, sizes[-1]), column))
    mask = sem.binary(b, "and", sem.expand_dims(b, valid, index.rank), column_inside)
    shape = (*index.shape, lstdim_blksiz)
    offset, mask = sem.broadcast_to(b, offset, shape), sem.broadcast_to(b, mask, shape)
    return address(b, Pointer(table.view, offset)), mask


def _mul(b: Builder, x: Operand, y: Operand) -> Operand:
    if isinstance(x, int) and isinstance(y, int):
        return x * y
    return sem.binary(b, "mul", x, y)


# ----------------------------------------------------------------------------- block pointers


@dataclass(frozen=True)
class BlockPointer:
    """``make_block_ptr``'s description of one block of a strided parent tensor."""

    # the parent tensor's first element: in an argument, in one of several (a runtime
    # ``if`` bound it to different arguments), or cast from an integer
    origin: Pointer | PointerChoice | AddressPointer
    shape: tuple[Operand, ...]
    strides: tuple[Operand, ...]
    offsets: tuple[Operand, ...]
    block_shape: tuple[int, ...]
    order: tuple[int, ...]
    # ("shape" or "strides", dimension) of the entries a runtime ``if`` merged from two
    # branches that set them differently: carried out of the ``if`` as values (as the
    # offsets always are), where the others are the same expression in both branches
    carried: tuple[tuple[str, int], ...] = ()

    @property
    def view(self) -> ViewArg:
        assert isinstance(self.origin, Pointer), "a block pointer cast from an integer"
        return self.origin.view

    @property
    def dtype(self) -> dt.DType:
        return self.origin.dtype


@dataclass(frozen=True)
class TensorDescriptor:
    """``make_tensor_descriptor``'s parent tensor, accessed in ``block_shape`` blocks: a
    block pointer (at offsets 0, row-major order) whose offsets each access gives."""

    block: BlockPointer

    @property
    def block_shape(self) -> tuple[int, ...]:
        return self.block.block_shape

    @property
    def dtype(self) -> dt.DType:
        return self.block.dtype


def make_tensor_descriptor(b: Builder, base: Any, shape: Any, strides: Any, block_shape: Any
                           ) -> TensorDescriptor:
    """A tensor descriptor: checked as ``make_block_ptr`` checks its arguments."""
    rank = len(as_tuple(block_shape))
    return TensorDescriptor(make_block_ptr(b, base, shape, strides, (0,) * rank, block_shape,
                                           tuple(reversed(range(rank)))))


def descriptor_block(b: Builder, desc: Any, offsets: Any) -> tuple[BlockPointer, tuple[int, ...]]:
    """The block pointer of ``desc``'s block at ``offsets``, and every dimension to
    bounds-check."""
    if not isinstance(desc, TensorDescriptor):
        raise b.error(f"expected a tensor descriptor (make_tensor_descriptor), got "
                      f"{type(desc).__name__}")
    rank = len(desc.block_shape)
    at = _operands(b, offsets, "offsets", rank, "tensor descriptor access")
    return dataclasses.replace(desc.block, offsets=at), tuple(range(rank))


def _operands(b: Builder, values: Any, what: str, rank: int | None,
              builtin: str = "make_block_ptr") -> tuple[Operand, ...]:
    items = as_tuple(values)
    for x in items:
        if isinstance(x, Value):
            if not x.dtype.is_int or x.dtype.is_bool or x.shape:
                raise b.error(f"{builtin}() {what} must be integer scalars, got {x.type}")
        elif isinstance(x, bool) or not isinstance(x, int):
            raise b.error(f"{builtin}() {what} must be integers, got {x!r}")
    if rank is not None and len(items) != rank:
        raise b.error(f"{builtin}() {what} has {len(items)} entries for a {rank}-d block")
    return items


def make_block_ptr(b: Builder, base: Pointer | ViewArg, shape: Any, strides: Any,
                   offsets: Any, block_shape: Any, order: Any) -> BlockPointer:
    """A block pointer: ``block_shape`` elements of the parent tensor of ``shape`` and
    ``strides`` at base, starting at ``offsets``."""
    if not isinstance(base, (Pointer, ViewArg, AddressPointer, PointerChoice)) or (
            isinstance(base, (Pointer, AddressPointer, PointerChoice)) and base.shape):
        raise b.error("make_block_ptr() base must be a tensor argument or a scalar pointer")
    if isinstance(base, (Pointer, ViewArg)):
        _uncast(b, base, "a block pointer")
    blocks = as_tuple(block_shape)
    if not blocks or any(isinstance(n, bool) or not isinstance(n, int) or n <= 0
                         for n in blocks):
        raise b.error(f"make_block_ptr() block_shape must be positive constexpr integers, "
                      f"got {blocks!r}")
    rank = len(blocks)
    orders = as_tuple(order)
    if sorted(orders) != list(range(rank)):
        raise b.error(f"make_block_ptr() order must be a permutation of 0..{rank - 1}, "
                      f"got {orders!r}")
    origin = base if isinstance(base, (AddressPointer, PointerChoice)) else as_pointer(b, base)
    return BlockPointer(origin, _operands(b, shape, "shape", rank),
                        _operands(b, strides, "strides", rank),
                        _operands(b, offsets, "offsets", rank), blocks, orders)


def advance(b: Builder, bp: Any, offsets: Any) -> BlockPointer:
    """The block pointer moved by ``offsets`` (one per dimension)."""
    if not isinstance(bp, BlockPointer):
        raise b.error(f"advance() needs a block pointer (make_block_ptr), got "
                      f"{type(bp).__name__}")
    deltas = _operands(b, offsets, "advance offsets", len(bp.block_shape))
    moved = tuple(_add(b, o, d) for o, d in zip(bp.offsets, deltas))
    return dataclasses.replace(bp, offsets=moved)


def _add(b: Builder, x: Operand, y: Operand) -> Operand:
    if isinstance(x, int) and isinstance(y, int):
        return x + y
    return sem.binary(b, "add", x, y)


def _check_dims(b: Builder, dims: Any, rank: int, what: str) -> tuple[int, ...]:
    items = as_tuple(dims)
    if any(isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < rank for d in items):
        raise b.error(f"{what} must name dimensions in [0, {rank}), got {dims!r}")
    return items


def block_access(b: Builder, bp: BlockPointer, boundary_check: Any, padding_option: Any
                 ) -> tuple[Address | AddressPointer | PointerChoice, Value | None,
                            Operand | None]:
    """The address of every element of the block (a pointer block when the parent
    tensor's base was cast from an integer or is a choice among arguments), the
    boundary mask of the checked dimensions (None when none are) and the fill of
    masked-off lanes."""
    rank = len(bp.block_shape)
    checked = _check_dims(b, boundary_check or (), rank, "boundary_check")
    offset: Value = bp.origin.offset
    mask: Value | None = None
    for d, n in enumerate(bp.block_shape):
        coord = sem.binary(b, "add", sem.arange(b, 0, n), bp.offsets[d])
        for axis in range(rank):
            if axis != d:
                coord = sem.expand_dims(b, coord, axis)
        offset = sem.binary(b, "add", offset, sem.binary(b, "mul", coord, bp.strides[d]))
        if d in checked:
            inside = sem.binary(b, "and", sem.binary(b, "ge", coord, 0),
                                sem.binary(b, "lt", coord, bp.shape[d]))
            mask = inside if mask is None else sem.binary(b, "and", mask, inside)
    offset = sem.broadcast_to(b, offset, bp.block_shape)
    if mask is not None:
        mask = sem.broadcast_to(b, mask, bp.block_shape)
    fill: Operand | None = None
    if padding_option in (None, "", "zero"):
        fill = 0 if mask is not None else None
    elif padding_option == "nan":
        if not bp.dtype.is_float:
            raise b.error(f"padding_option='nan' needs a floating-point tensor, got "
                          f"{bp.dtype.name}")
        fill = float("nan") if mask is not None else None
    else:
        raise b.error(f"padding_option must be '', 'zero' or 'nan', got {padding_option!r}")
    if isinstance(bp.origin, (AddressPointer, PointerChoice)):
        return dataclasses.replace(bp.origin, offset=offset), mask, fill
    return address(b, Pointer(bp.view, offset)), mask, fill
