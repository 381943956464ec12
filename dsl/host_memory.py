"""Host memory behind integer addresses: what a pointer cast from an integer may reach.

A Triton kernel may load a 64-bit integer and use it as a pointer
(``tl.load(table + i).to(tl.pointer_type(tl.float16))``): pointer tables of grouped
GEMMs, SGLang's per-layer KV caches. Such a pointer derives from no argument, so the
interpreter runs its loads and stores (the IR's ``load_address``/``store_address``)
against a ``HostMemory``: the regions of host memory this launch can see, each one
allocation whose owner this object keeps alive while the launch runs:

1. the memory of every tensor argument (its NumPy buffer's whole allocation);
2. when an address falls outside those, the storage of the torch tensors earlier
   launches found there (``_FOUND``: weak references, so a freed tensor's memory is
   never reached through it), then of every live CPU torch tensor (found through the
   garbage collector, which tracks torch tensors; a scan costs ~50-100 ms in a process
   holding 200,000 objects, so its finds are remembered) and every NumPy array that
   the calling frames hold (in their locals, and in lists, tuples and dicts there;
   NumPy arrays are not tracked by the garbage collector).

An argument that is only an address (a wrapper offering ``data_ptr()`` and
``dtype``, FlagGems' ``TypedPtr``) is bound the same way: ``memory_at`` gives the
elements from its address to the end of the allocation holding it.

A lane's element must lie wholly inside one region and its address must be a
multiple of the element size; otherwise the access is an ``OutOfBoundsError`` that
names the address, the program, the lane and the line, and, as for every access, the
launch writes nothing. An address the host code made up (one past every tensor,
freed memory) is therefore never dereferenced. Regions are byte arrays over the
owner's memory (``ctypes`` over its address), viewed as the accessed element type,
so reads and writes go to the tensor itself.

What it does not see: memory no Python object here owns (a C library's buffer), and
a NumPy array reachable only through an object's attributes. Those addresses are
refused, naming the address.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsl.errors import OutOfBoundsError, SourceLoc


@dataclass(frozen=True)
class Region:
    """One allocation: ``size`` bytes from ``start``, kept alive by ``owner``."""

    start: int
    size: int
    owner: Any  # the NumPy array or torch storage whose memory this is
    name: str  # how error messages name it
    writeable: bool
    tensor: Any = None  # a torch tensor over it (remembered for later launches)

    @property
    def end(self) -> int:
        return self.start + self.size

    def elements(self, dtype: np.dtype) -> tuple[np.ndarray, int]:
        """The region as an array of ``dtype`` starting at its first aligned address,
        and that address."""
        item = dtype.itemsize
        first = -(-self.start // item) * item
        count = max(0, (self.end - first) // item)
        if count == 0:
            return np.empty(0, dtype), first
        raw = (ctypes.c_uint8 * (count * item)).from_address(first)
        array = np.frombuffer(raw, np.uint8).view(dtype)
        if not self.writeable:
            array.flags.writeable = False
        return array, first


def _array_region(array: np.ndarray, name: str) -> Region | None:
    """The whole allocation behind ``array`` (its outermost NumPy base)."""
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root.size == 0 or not (root.flags.c_contiguous or root.flags.f_contiguous):
        root = array
        if root.size == 0 or not (root.flags.c_contiguous or root.flags.f_contiguous):
            return None
    return Region(root.ctypes.data, root.nbytes, root, name, bool(root.flags.writeable))


# torch tensors whose storage held an address a launch reached (``_remember``)
_FOUND: list[weakref.ref] = []
_FOUND_LIMIT = 1024


def _remember(tensors: list[Any]) -> None:
    live = [r for r in _FOUND if r() is not None]
    known = {id(r()) for r in live}
    live += [weakref.ref(t) for t in tensors if id(t) not in known]
    _FOUND[:] = live[-_FOUND_LIMIT:]


def _torch_region(tensor: Any) -> Region | None:
    try:
        if tensor.device.type != "cpu" or tensor.is_sparse or tensor.is_quantized:
            return None
        storage = tensor.untyped_storage()
        start, size = storage.data_ptr(), storage.nbytes()
    except (RuntimeError, AttributeError, NotImplementedError):
        return None  # (a tensor without storage: meta, functional wrappers)
    if not start or not size:
        return None
    return Region(start, size, storage, f"a torch tensor of {size} bytes at {start:#x}", True,
                  tensor)


class HostMemory:
    """The regions one launch may address (see the module doc)."""

    def __init__(self, arguments: dict[str, np.ndarray]) -> None:
        self._regions: list[Region] = []
        self._searched = False  # whether the live tensors have been added
        for name, buffer in arguments.items():
            region = _array_region(buffer, f"tensor '{name}'")
            if region is not None:
                self._add(region)
        self._index()

    def _add(self, region: Region) -> None:
        self._regions.append(region)  # (merged by the next ``_index``)

    def _index(self) -> None:
        """Sort the regions and merge the ones that overlap (a view inside its base's
        allocation, two views of one buffer): overlapping memory is one allocation, so
        their union is too. Regions stay disjoint, which ``_lookup`` relies on."""
        merged: list[Region] = []
        for region in sorted(self._regions, key=lambda r: (r.start, -r.size)):
            last = merged[-1] if merged else None
            if last is None or region.start >= last.end:
                merged.append(region)
            elif region.end > last.end:  # a partial overlap: one allocation, the union
                merged[-1] = Region(last.start, region.end - last.start,
                                    (last.owner, region.owner), last.name,
                                    last.writeable and region.writeable, last.tensor)
            # (else already covered)
        self._regions = merged
        self._starts = np.array([r.start for r in merged], np.int64)
        self._ends = np.array([r.end for r in merged], np.int64)

    def _add_torch(self, tensors: Any) -> None:
        for tensor in tensors:
            region = _torch_region(tensor)
            if region is not None:
                self._add(region)
        self._index()

    def _search_live(self) -> None:
        """Add every live CPU torch tensor's storage and the NumPy arrays the calling
        frames hold (once per launch: only when some address missed)."""
        self._searched = True
        torch = sys.modules.get("torch")
        if torch is not None:
            tensor_type = torch.Tensor
            # (type(), not isinstance: proxies answer __class__ with warnings)
            self._add_torch(obj for obj in gc.get_objects() if issubclass(type(obj), tensor_type))
        frame = sys._getframe(1)
        while frame is not None:
            for value in list(frame.f_locals.values()):
                items = value.values() if isinstance(value, dict) else \
                    value if isinstance(value, (list, tuple)) else (value,)
                for item in items:
                    if isinstance(item, np.ndarray):
                        region = _array_region(item, f"a NumPy array of {item.nbytes} bytes "
                                                     f"at {item.ctypes.data:#x}")
                        if region is not None:
                            self._add(region)
            frame = frame.f_back
        self._index()

    def locate(self, addresses: np.ndarray) -> np.ndarray:
        """The region index of each address (its first byte, or one past its last),
        -1 where none holds it: searching the tensors earlier launches found, then
        the live ones (once per launch), when some address misses."""
        found = self._lookup(addresses)
        if (found < 0).any() and not self._searched:
            self._add_torch(r() for r in list(_FOUND) if r() is not None)
            found = self._lookup(addresses)
            if (found < 0).any():
                missed = addresses[found < 0]
                self._search_live()
                found = self._lookup(addresses)
                hits = np.unique(self._lookup(missed))
                _remember([self._regions[k].tensor for k in hits
                           if k >= 0 and self._regions[k].tensor is not None])
        return found

    def _lookup(self, addresses: np.ndarray) -> np.ndarray:
        if not len(self._starts):
            return np.full(addresses.shape, -1, np.int64)
        k = np.searchsorted(self._starts, addresses, side="right") - 1
        inside = (k >= 0) & (addresses <= self._ends[np.maximum(k, 0)])
        return np.where(inside, k, -1)

    def region(self, k: int) -> Region:
        return self._regions[k]

    def starts_and_ends(self) -> tuple[np.ndarray, np.ndarray]:
        return self._starts, self._ends


def memory_at(address: int, dtype: np.dtype, what: str) -> np.ndarray:
    """The ``dtype`` elements from ``address`` to the end of the allocation holding it
    (a 1-D array over that memory): the tensor an argument that is only an address
    stands for. ``ValueError`` naming ``what`` when no tensor this process can see
    holds the address, or it is not a multiple of the element size."""
    memory = HostMemory({})
    if not 0 <= address < 1 << 63:  # (no allocation lies there; int64 cannot hold it)
        raise ValueError(f"{what}: address {address:#x} is in no tensor this process can see")
    k = int(memory.locate(np.array([address], np.int64))[0])
    item = dtype.itemsize
    if k < 0 or address % item or address + item > memory.region(k).end:
        where = "is not a multiple of the element size" if k >= 0 and address % item else \
            "is in no tensor this process can see (live CPU torch tensors, NumPy arrays " \
            "held by the calling frames)"
        raise ValueError(f"{what}: address {address:#x} {where}")
    typed, first = memory.region(k).elements(dtype)
    return typed[(address - first) // item:]


@dataclass
class AddressAccess:
    """A load's or store's lanes at integer addresses, resolved to regions: per region
    touched, the active lanes' flat positions and their element indices."""

    groups: list[tuple[Region, np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=list)  # (region, typed array, lane positions, element indices)


def resolve(memory: HostMemory, bases: np.ndarray, addresses: np.ndarray,
            active: np.ndarray | None, dtype: np.dtype, what: str, kernel: str, loc: SourceLoc,
            pid: np.ndarray) -> AddressAccess:
    """Check every active lane and group the lanes by region. A lane's ``base`` (the
    integer the kernel cast to a pointer) names its region, as an argument names a
    pointer's; its address (the base moved by the lane's offset) must lie with its
    whole element inside that region and be a multiple of the element size, so a
    pointer moved past its tensor's end is an error even where another tensor lies
    next to it. The first offending lane raises ``OutOfBoundsError``. ``what`` is
    "load", "store" or "atomic"."""
    flat = addresses.reshape(-1)
    lanes = np.arange(flat.size) if active is None else np.flatnonzero(active.reshape(-1))
    wanted = flat[lanes]
    origin = np.broadcast_to(bases, addresses.shape).reshape(-1)[lanes]
    item = dtype.itemsize
    found = memory.locate(origin)
    starts, ends = memory.starts_and_ends()
    k = np.maximum(found, 0)
    good = (found >= 0) & (wanted % item == 0)
    if len(starts):
        good &= (wanted >= starts[k]) & (wanted + item <= ends[k])
    if not good.all():
        first = int(np.argmin(good))
        _raise_bad(memory, int(found[first]), int(origin[first]), int(wanted[first]),
                   int(lanes[first]), addresses.shape, item, what, kernel, loc, pid)
    access = AddressAccess()
    for region_index in np.unique(found):
        region = memory.region(int(region_index))
        if what != "load" and not region.writeable:
            raise OutOfBoundsError(f"{loc}: {what} in kernel '{kernel}' through an address cast "
                                   f"from an integer into {region.name}, which is read-only"
                                   f"\n{loc.excerpt()}")
        typed, first_element = region.elements(dtype)
        here = found == region_index
        access.groups.append((region, typed, lanes[here], (wanted[here] - first_element) // item))
    return access


def _raise_bad(memory: HostMemory, region_index: int, base: int, address: int, lane: int,
               shape: tuple[int, ...], item: int, what: str, kernel: str, loc: SourceLoc,
               pid: np.ndarray) -> None:
    per_row = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    row, within = divmod(lane, per_row)
    program = tuple(int(p) for p in pid[row]) if pid.shape[0] > row else (0, 0, 0)
    if region_index < 0:
        problem = (f"address {base:#x}, cast from an integer, is in no tensor this launch can "
                   "see (its arguments, live CPU torch tensors, NumPy arrays held by the "
                   "calling frames)")
    elif address % item:
        problem = f"address {address:#x} is not a multiple of the element size ({item} bytes)"
    else:
        region = memory.region(region_index)
        problem = (f"pointer {address:#x} is {address - region.start} bytes from the start of "
                   f"{region.name}, whose memory holds {region.size} bytes (the pointer was "
                   f"cast from {base:#x})")
    raise OutOfBoundsError(
        f"{loc}: out-of-bounds {what} in kernel '{kernel}' through a pointer cast from an "
        f"integer: {problem} (program id {program}, lane {within})\n{loc.excerpt()}")
