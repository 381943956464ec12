"""Index values a launch shape computed once, replayed by its later launches.

The ops of a kernel's index slice (``lowering.prepass``: program ids, ``arange``,
offsets, masks, loop bounds) compute from the grid, the scalar and layout arguments
and the tensors' sizes alone, which is what a bounds proof's key fixes
(``interpreter.proof_key``). Every launch with one proof key computes the same index
values, batch by batch: a small 2-D kernel spent about half its launch building them
again (lazy ``Lanes``/``Affine`` forms, masks, broadcasts) around a few NumPy calls on
its data.

Data flow: ``Interpreter.prove_in_bounds`` takes the key's ``IndexValues`` (kept
with its proof) when the kernel allows it (``replayed_ops``). While a launch runs,
``Interpreter.run_block`` asks ``lookup`` before each pure op of the index slice
(``_KernelFacts.replayed_ops``: never a load or store, which the slice holds too, for
the pre-pass's checks) in a batch with a key: results recorded by an earlier launch
of the key are set in the batch and the op is skipped; otherwise the op runs and
``record`` keeps what it produced. A batch's key
(``Frame.key``) is its path from the launch's root: each step names the op that made
the batch and the rows it took (a chunk's row range, a loop's trip), which the proof
key fixes; a batch made where the rows depend on data has no key, and its ops run.

Eligible kernels: no index value read from memory (``gather_slice``'s loads), no
``if`` or ``while`` (their batches' rows depend on values), nothing that may fail
part way (a failing launch could leave a batch half recorded: harmless, its missing
ops run, but such kernels gain nothing), no host addresses, and no pure op that reads
a tensor argument itself rather than its elements (``tensor_address``: a pointer cast
to an integer is the buffer's address, which the proof key does not fix, and an
alignment test on it would replay the first launch's answer).

What is kept: the lazy index forms and arrays of at most ``MAX_ARRAY_ELEMENTS``,
arrays copied and made read-only (the recording launch may reuse one it owns as a
temporary's buffer, or a chunk's pooled buffer, after it was recorded); at most
``MAX_BYTES`` per key. A value not kept is computed by its op at every launch.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from dsl.ir import Function, ViewType
from dsl.opdefs import Effect
from lowering.lanes import Affine, BoxMask, LaneMask, Lanes, RowRuns

MAX_ARRAY_ELEMENTS = 1 << 16  # larger index arrays are computed again (memory)
MAX_BYTES = 1 << 20  # recorded bytes per proof key (kernels of the gallery: 2-64 KB)

_LAZY = (Lanes, LaneMask, Affine, BoxMask, RowRuns)


def replayed_ops(fn: Function, index_slice: set[int] | None, gathers_indices: bool,
                 may_fail: bool, host_addresses: bool) -> frozenset[int]:
    """The ids of the ops whose results launches of ``fn`` replay: the index slice's
    pure ops with results and no regions; none when the kernel is not eligible (see
    the module doc)."""
    if index_slice is None or gathers_indices or may_fail or host_addresses:
        return frozenset()
    ops = list(fn.walk())
    if not all(op.defn.regions <= 1 and not op.defn.conditional_loop and not (
            op.defn.effect is Effect.PURE and any(isinstance(v.type, ViewType)
                                                  for v in op.operands))
               for op in ops):
        return frozenset()
    return frozenset(id(op) for op in ops if id(op) in index_slice and op.results
                     and op.defn.effect is Effect.PURE and not op.regions)


class IndexValues:
    """The index values one proof key's launches computed, by (batch key, op id)."""

    __slots__ = ("values", "bytes", "_lock")

    def __init__(self) -> None:
        self.values: dict[Hashable, tuple[Any, ...]] = {}
        self.bytes = 0
        self._lock = threading.Lock()  # chunks record from worker threads

    def lookup(self, key: Hashable) -> tuple[Any, ...] | None:
        """The results recorded for ``key``, or None."""
        return self.values.get(key)

    def record(self, key: Hashable, results: list[Any]) -> None:
        """Keep ``results`` (one op's, in one batch) when every one may be kept."""
        kept = []
        size = 0
        for value in results:
            copy, nbytes = _kept(value)
            if copy is None:
                return
            kept.append(copy)
            size += nbytes
        with self._lock:
            if self.bytes + size > MAX_BYTES or key in self.values:
                return
            self.values[key] = tuple(kept)
            self.bytes += size

    def derived(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """What ``compute()`` derives from a batch's index values alone (an access's
        analysis): computed at the key's first launch, then kept. Its arrays are made
        read-only; it must not hold arrays that anything writes later."""
        found = self.values.get(key, _ABSENT)
        if found is not _ABSENT:
            return found[0]
        value = compute()
        size = _frozen_bytes(value)
        with self._lock:
            if self.bytes + size <= MAX_BYTES:
                self.values[key] = (value,)
                self.bytes += size
        return value


_ABSENT = object()


def _frozen_bytes(value: Any) -> int:
    """The bytes of the arrays in ``value`` (nested in tuples and lists), each made
    read-only."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return 8 * len(value) + sum(_frozen_bytes(v) for v in value)
    return 16


def _kept(value: Any) -> tuple[Any, int]:
    """(a read-only copy of ``value``, its bytes), or (None, 0) when it is not kept."""
    if isinstance(value, np.ndarray):
        if value.size > MAX_ARRAY_ELEMENTS or value.dtype.hasobject:
            return None, 0
        copy = np.array(value)
        copy.flags.writeable = False
        return copy, copy.nbytes
    if isinstance(value, _LAZY):
        changes: dict[str, Any] = {}
        size = 64
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if isinstance(item, (np.ndarray, *_LAZY)):
                item, nbytes = _kept(item)
                if item is None:
                    return None, 0
                size += nbytes
            elif isinstance(item, tuple):  # (a box mask's bounds: arrays or None)
                copies = []
                for part in item:
                    if isinstance(part, np.ndarray):
                        part, nbytes = _kept(part)
                        if part is None:
                            return None, 0
                        size += nbytes
                    copies.append(part)
                item = tuple(copies)
            changes[field.name] = item
        return dataclasses.replace(value, **changes), size
    return None, 0
