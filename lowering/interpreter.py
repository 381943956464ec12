"""Backend A: a vectorized NumPy interpreter for the IR.

Execution model. The interpreter never runs one Python call per program. It runs
*batches of rows*: a row is one program instance, or one (program, iteration) pair
once an independent loop has been flattened. Every runtime value is a NumPy array
whose axis 0 indexes the rows of the current batch (length 1 when the value is the
same for every row, such as a constant or a scalar argument) and whose other axes
are the value's block shape, each either full or 1 when the value does not vary
along it, so NumPy broadcasting replaces explicit ``broadcast`` ops and a broadcast
scalar operand is never expanded. ``lowering.lanes`` adds two lazy forms for index
blocks (``start + arange`` and ``idx < n``) so that contiguous loads and stores
become slices.

- The kernel body starts with one batch holding every program of the grid (split
  into chunks when its own blocks would make the arrays too large).
- A ``for`` loop without loop-carried values, in a launch where no stored tensor is
  also read, has independent iterations: all (row, iteration) pairs become one new
  batch, ordered iteration-major (so a tile loop's tiles come out in memory order),
  processed in chunks of about ``CHUNK_ELEMENTS`` elements per op.
- Any other loop runs iteration by iteration, each iteration on the rows whose
  trip count is not exhausted; loop-carried values are updated on those rows only.
- Values of an enclosing batch are gathered into a sub-batch on first use
  (``Frame.get``).

Elementwise semantics come from the shared op table (``dsl.opdefs``). Memory
accesses go through ``lowering.memory``: bounds-checked against the tensor view,
all-or-nothing per launch.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from dsl.dtypes import DType
from dsl.errors import DSLRuntimeError
from dsl.ir import Block, Function, Op, Value, walk_block
from dsl.opdefs import OPS
from lowering.lanes import LaneMask, Lanes, materialize, take_rows
from lowering.memory import AccessSite, StoreJournal, check_bounds, load

if TYPE_CHECKING:
    from dsl.jit import BoundTensor, Launch

# Elements per op in one batch: large enough to amortise NumPy's per-call overhead,
# small enough that a chunk's arrays stay in the CPU caches.
CHUNK_ELEMENTS = 1 << 18


class Frame:
    """Runtime values of one batch; misses are gathered from the enclosing batch."""

    __slots__ = ("values", "parent", "rows", "pid")

    def __init__(self, parent: Frame | None, rows: np.ndarray | None, pid: np.ndarray) -> None:
        self.values: dict[int, Any] = {}
        self.parent = parent
        self.rows = rows  # indices into the parent's batch, or None for the same rows
        self.pid = pid  # (rows, 3) program ids, for error messages and program_id

    def get(self, v: Value) -> Any:
        try:
            return self.values[v.uid]
        except KeyError:
            pass
        if self.parent is None:
            raise DSLRuntimeError(f"internal error: value {v} used before definition")
        x = self.parent.get(v)
        if self.rows is not None:
            x = take_rows(x, self.rows)
        self.values[v.uid] = x
        return x

    def set(self, v: Value, x: Any) -> None:
        self.values[v.uid] = x

    @property
    def size(self) -> int:
        return self.pid.shape[0]


def _cast(x: np.ndarray, dtype: DType) -> np.ndarray:
    """Rule 9 of dsl.semantic: RNE between floats, truncation float->int, != 0 to int1."""
    if dtype.is_bool:
        return x != 0
    if dtype.is_int and x.dtype.kind not in "biu":  # from a float type (bf16 included)
        with np.errstate(invalid="ignore"):
            return np.trunc(x.astype(np.float64)).astype(dtype.np)
    with np.errstate(over="ignore"):
        return x.astype(dtype.np)


def _max_block(block: Block, nested: bool) -> int:
    """Largest block (in elements) an op of ``block`` produces."""
    ops = walk_block(block) if nested else block.ops
    return max((prod(r.shape) for op in ops for r in op.results), default=1)


def _trip_counts(lo: np.ndarray, hi: np.ndarray, step: np.ndarray) -> np.ndarray:
    lo, hi, step = (np.asarray(a, dtype=np.int64).reshape(-1) for a in (lo, hi, step))
    if np.any(step == 0):
        raise DSLRuntimeError("range() step is zero")
    up = (hi - lo + step - 1) // np.where(step > 0, step, 1)
    down = (lo - hi - step - 1) // np.where(step < 0, -step, 1)
    return np.maximum(np.where(step > 0, up, down), 0)


class Interpreter:
    """Runs one launch. Create, then ``run()``."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        self.fn: Function = launch.function
        loaded = {op.attrs["tensor"] for op in self.fn.walk() if op.kind == "load"}
        stored = {op.attrs["tensor"] for op in self.fn.walk() if op.kind == "store"}
        self.journal = StoreJournal(deferred=not _overlaps(launch.tensors, loaded, stored))
        self.sites: dict[int, AccessSite] = {}
        self.consts: dict[int, np.ndarray] = {}
        self.block_sizes: dict[int, int] = {}

    # -- entry

    def run(self) -> None:
        gx, gy, gz = self.launch.grid
        n = gx * gy * gz
        ids = np.arange(n, dtype=np.int64)
        pid = np.stack([ids % gx, (ids // gx) % gy, ids // (gx * gy)], axis=1).astype(np.int32)
        root = Frame(None, None, pid)
        for param, arg in zip(self.fn.params, self.launch.args):
            root.set(param.value, arg if param.role == "tensor" else np.asarray([arg]))
        try:
            per_row = _max_block(self.fn.body, nested=False)
            if self.journal.deferred and n * per_row > CHUNK_ELEMENTS:
                step = max(1, CHUNK_ELEMENTS // per_row)
                for start in range(0, n, step):
                    rows = ids[start:start + step]
                    self.run_block(self.fn.body, Frame(root, rows, pid[rows]))
            else:
                self.run_block(self.fn.body, Frame(root, None, pid))
        except BaseException:
            self.journal.rollback()
            raise
        self.journal.commit()

    # -- blocks and ops

    def run_block(self, block: Block, frame: Frame) -> None:
        for op in block.ops:
            handler = _HANDLERS.get(op.kind)
            if handler is not None:
                handler(self, op, frame)
            elif op.kind in OPS:
                self.elementwise(op, frame)
            elif op.kind == "yield":
                return
            else:
                raise DSLRuntimeError(f"interpreter: unknown op '{op.kind}'")

    def elementwise(self, op: Op, frame: Frame) -> None:
        args = [frame.get(v) for v in op.operands]
        dtype = op.operands[-1].dtype  # where's condition comes first
        lazy = _lazy_elementwise(op.kind, args)
        if lazy is not None:
            frame.set(op.result, lazy)
            return
        out = OPS[op.kind].evaluate(*(materialize(a) for a in args), dtype=dtype)
        frame.set(op.result, out)

    # -- structural ops

    def op_const(self, op: Op, frame: Frame) -> None:
        arr = self.consts.get(id(op))
        if arr is None:
            arr = np.full((1,) * (1 + op.result.type.rank), op.attrs["value"],
                          dtype=op.result.dtype.np)
            self.consts[id(op)] = arr
        frame.set(op.result, arr)

    def op_arange(self, op: Op, frame: Frame) -> None:
        start, end = op.attrs["start"], op.attrs["end"]
        frame.set(op.result, Lanes(np.array([start], dtype=np.int64), end - start,
                                   op.result.dtype.np))

    def op_program_id(self, op: Op, frame: Frame) -> None:
        frame.set(op.result, frame.pid[:, op.attrs["axis"]].copy())

    def op_num_programs(self, op: Op, frame: Frame) -> None:
        frame.set(op.result, np.array([self.launch.grid[op.attrs["axis"]]], dtype=np.int32))

    def op_cast(self, op: Op, frame: Frame) -> None:
        x = frame.get(op.operands[0])
        target = op.result.dtype
        if isinstance(x, Lanes) and target.is_int and not target.is_bool:
            lanes = x.shifted(np.zeros(1, dtype=np.int64)) if target.np.itemsize >= 8 else None
            if lanes is not None:
                frame.set(op.result, Lanes(lanes.base, lanes.length, target.np))
                return
        frame.set(op.result, _cast(materialize(x), target))

    def op_broadcast(self, op: Op, frame: Frame) -> None:
        arr = materialize(frame.get(op.operands[0]))
        src, dst = op.operands[0].type.rank, op.result.type.rank
        frame.set(op.result, arr.reshape((arr.shape[0],) + (1,) * (dst - src) + arr.shape[1:]))

    def op_expand_dims(self, op: Op, frame: Frame) -> None:
        arr = materialize(frame.get(op.operands[0]))
        frame.set(op.result, np.expand_dims(arr, 1 + op.attrs["axis"]))

    def op_reduce(self, op: Op, frame: Frame) -> None:
        arr = materialize(frame.get(op.operands[0]))
        full = np.broadcast_to(arr, (arr.shape[0],) + op.operands[0].shape)
        axis = 1 + op.attrs["axis"]
        combine = op.attrs["combine"]
        with np.errstate(all="ignore"):
            if combine == "sum":
                out = np.add.reduce(full, axis=axis, dtype=op.result.dtype.np)
            elif combine == "max":
                out = np.fmax.reduce(full, axis=axis)
            else:
                out = np.fmin.reduce(full, axis=axis)
        frame.set(op.result, np.asarray(out, dtype=op.result.dtype.np))

    def op_where(self, op: Op, frame: Frame) -> None:
        cond, a, b = (frame.get(v) for v in op.operands)
        if isinstance(cond, LaneMask) and cond.all_true():
            frame.set(op.result, materialize(a))
            return
        frame.set(op.result, np.where(materialize(cond), materialize(a), materialize(b)))

    def _site(self, op: Op) -> AccessSite:
        site = self.sites.get(id(op))
        if site is None:
            tensor = self.launch.tensors[op.attrs["tensor"]]
            site = AccessSite(self.fn.name, op.kind, tensor.name, tensor.view.numel, op.loc)
            self.sites[id(op)] = site
        return site

    def op_load(self, op: Op, frame: Frame) -> None:
        tensor: BoundTensor = frame.get(op.operands[0])
        index, offset = frame.get(op.operands[1]), frame.get(op.operands[2])
        mask = frame.get(op.operands[3]) if op.attrs["masked"] else None
        other = frame.get(op.operands[4]) if op.attrs["masked"] else None
        check_bounds(self._site(op), index, mask, frame.pid)
        if isinstance(mask, LaneMask) and mask.all_true():
            mask = None
        if isinstance(offset, np.ndarray) and offset.size == 1 and mask is None:
            # Every lane reads the same element (a broadcast scalar): keep it a scalar.
            value = tensor.buffer[offset.reshape(-1)[:1]]
            frame.set(op.result, value.reshape((1,) * (1 + op.result.type.rank)))
            return
        value = load(tensor.buffer, offset, mask, other, copy=not self.journal.deferred)
        frame.set(op.result, value)

    def op_store(self, op: Op, frame: Frame) -> None:
        tensor: BoundTensor = frame.get(op.operands[0])
        index, offset, value = (frame.get(v) for v in op.operands[1:4])
        mask = frame.get(op.operands[4]) if op.attrs["masked"] else None
        check_bounds(self._site(op), index, mask, frame.pid)
        rows = frame.size
        shape = (rows,) + op.operands[3].shape
        self.journal.store(tensor.buffer, offset, materialize(value), mask, shape)

    def op_for(self, op: Op, frame: Frame) -> None:
        lo, hi, step = (materialize(frame.get(v)) for v in op.operands[:3])
        inits = [frame.get(v) for v in op.operands[3:]]
        body = op.regions[0]
        trips = _trip_counts(lo, hi, step)
        if trips.shape[0] == 1 and frame.size > 1:
            trips = np.broadcast_to(trips, (frame.size,))
        iv_dtype = body.args[0].dtype.np
        if not inits and self.journal.deferred:
            self._for_flattened(op, frame, lo, step, trips, iv_dtype)
        else:
            self._for_sequential(op, frame, lo, step, trips, inits, iv_dtype)

    def _for_flattened(self, op: Op, frame: Frame, lo: np.ndarray, step: np.ndarray,
                       trips: np.ndarray, iv_dtype: np.dtype) -> None:
        body = op.regions[0]
        max_trip = int(trips.max()) if trips.size else 0
        if max_trip == 0:
            return
        ks, rows = np.nonzero(np.arange(max_trip)[:, None] < trips[None, :])
        lo64, step64 = lo.astype(np.int64).reshape(-1), step.astype(np.int64).reshape(-1)
        lo_r = lo64 if lo64.shape[0] == 1 else lo64[rows]
        st_r = step64 if step64.shape[0] == 1 else step64[rows]
        ivs = (lo_r + ks * st_r).astype(iv_dtype)
        per_row = self.block_sizes.setdefault(id(op), _max_block(body, nested=True))
        chunk = max(1, CHUNK_ELEMENTS // per_row)
        for start in range(0, rows.shape[0], chunk):
            sel = rows[start:start + chunk]
            inner = Frame(frame, sel, frame.pid[sel])
            inner.set(body.args[0], ivs[start:start + chunk])
            self.run_block(body, inner)

    def _for_sequential(self, op: Op, frame: Frame, lo: np.ndarray, step: np.ndarray,
                        trips: np.ndarray, inits: list[Any], iv_dtype: np.dtype) -> None:
        body = op.regions[0]
        carried = [materialize(v) for v in inits]
        max_trip = int(trips.max()) if trips.size else 0
        lo64, step64 = lo.astype(np.int64).reshape(-1), step.astype(np.int64).reshape(-1)
        yield_op = body.ops[-1]
        for k in range(max_trip):
            active = trips > k
            if bool(active.all()):
                rows, inner = None, Frame(frame, None, frame.pid)
            else:
                rows = np.nonzero(active)[0]
                inner = Frame(frame, rows, frame.pid[rows])
            iv = lo64 + k * step64
            if rows is not None and iv.shape[0] > 1:
                iv = iv[rows]
            inner.set(body.args[0], iv.astype(iv_dtype))
            for arg, value in zip(body.args[1:], carried):
                inner.set(arg, value if rows is None else take_rows(value, rows))
            self.run_block(body, inner)
            new = [materialize(inner.get(v)) for v in yield_op.operands]
            if rows is None:
                carried = new
            else:
                carried = [_scatter_rows(old, value, rows, frame.size)
                           for old, value in zip(carried, new)]
        for result, value in zip(op.results, carried):
            frame.set(result, value)


def _scatter_rows(old: np.ndarray, new: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    shape = (size,) + tuple(max(a, b) for a, b in zip(old.shape[1:], new.shape[1:]))
    out = np.array(np.broadcast_to(old, shape))
    out[rows] = new
    return out


def _lazy_elementwise(kind: str, args: list[Any]) -> Any:
    """Keep ``lanes + uniform`` lazy and turn ``lanes < bound`` into a ``LaneMask``."""
    if kind not in ("add", "lt"):
        return None
    a, b = args
    if kind == "add" and isinstance(b, Lanes) and not isinstance(a, Lanes):
        a, b = b, a
    if not isinstance(a, Lanes) or not isinstance(b, np.ndarray) or b.ndim != 2 \
            or b.shape[1] != 1:
        return None
    per_row = b[:, 0]
    if kind == "add":
        return a.shifted(per_row)
    return LaneMask(a, per_row.astype(np.int64))


def _overlaps(tensors: dict[str, BoundTensor], loaded: set[str], stored: set[str]) -> bool:
    """True when some stored tensor may share memory with a loaded one (or is loaded)."""
    for s in stored:
        for name in loaded:
            if name == s or np.may_share_memory(tensors[s].buffer, tensors[name].buffer):
                return True
    return False


_HANDLERS: dict[str, Callable[[Interpreter, Op, Frame], None]] = {
    "const": Interpreter.op_const,
    "arange": Interpreter.op_arange,
    "program_id": Interpreter.op_program_id,
    "num_programs": Interpreter.op_num_programs,
    "cast": Interpreter.op_cast,
    "broadcast": Interpreter.op_broadcast,
    "expand_dims": Interpreter.op_expand_dims,
    "reduce": Interpreter.op_reduce,
    "where": Interpreter.op_where,
    "load": Interpreter.op_load,
    "store": Interpreter.op_store,
    "for": Interpreter.op_for,
}


def run(launch: Launch) -> None:
    """Execute a prepared launch with NumPy."""
    Interpreter(launch).run()
