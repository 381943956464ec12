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

- Before the real run, a pre-pass executes only the index slice of the kernel
  (``lowering.prepass``) to prove every access in bounds; then stores are written
  directly. If indices depend on loaded data, stores go through a journal instead
  (``lowering.memory``). Either way a failing launch writes nothing.
- The kernel body starts with one batch holding every program of the grid (split
  into chunks when its own blocks would make the arrays too large).
- A ``for`` loop without loop-carried values, in a launch where no stored tensor is
  also read, has independent iterations: all (row, iteration) pairs become one new
  batch, ordered iteration-major (so a tile loop's tiles come out in memory order),
  processed in chunks of about ``CHUNK_ELEMENTS`` elements per op.
- A temporary whose last use is an elementwise op is overwritten by that op's
  result (``out=``), so a chunk reuses a few cache-resident buffers.
- Any other loop runs iteration by iteration, each iteration on the rows whose
  trip count is not exhausted; loop-carried values are updated on those rows only.
- Values of an enclosing batch are gathered into a sub-batch on first use
  (``Frame.get``).

Elementwise semantics come from the shared op table (``dsl.opdefs``). Memory
accesses go through ``lowering.memory``: bounds-checked against the tensor view,
all-or-nothing per launch.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from dsl import inline_asm as asm_eval
from dsl import philox
from dsl.errors import DataRaceError, DeviceAssertionError, DSLRuntimeError, OutOfBoundsError
from dsl.host_memory import AddressAccess, HostMemory, resolve
from dsl.ir import Block, Function, Op, Value, walk_block
from dsl.numerics import (
    apply_atomics,
    arg_fold_and_nan,
    bitcast_array,
    cast_array,
    dot_steps,
    dot_steps_shared,
    ignore_fp_errors,
    max_ignoring_nan,
    min_ignoring_nan,
    scan_in_order,
    widen_to_float32,
)
from dsl.numerics import dot as dot_product
from dsl.opdefs import COMBINES, OPS, Effect
from dsl.options import Options
from dsl.views import same_elements
from lowering import workers
from lowering.buffers import borrow, give_back, scratch
from lowering.index_replay import IndexValues, replayed_ops
from lowering.lanes import (
    Affine,
    BoxedValues,
    BoxMask,
    LaneMask,
    Lanes,
    RowRuns,
    TakenLines,
    materialize,
    take_rows,
)
from lowering.memory import (
    AccessSite,
    StoreJournal,
    affine_access,
    check_bounds,
    check_store_race,
    load,
)
from lowering.plan import FlatForm, Plan, Recorder, flat_form
from lowering.prepass import gather_slice, index_slice
from lowering.tiles import SharedTiles, distinct_rows

if TYPE_CHECKING:
    from dsl.jit import BoundTensor, Launch

# Elements per op in one batch: large enough to amortise the per-op Python overhead
# (2**18 ran 1.3x and 2**16 2.4x slower at 16M elements, benchmarks/bench_bce.py),
# small enough that the reused chunk buffers take a few MB each. 2**21 against 2**20
# (toggled in one process, best of 3; session 10): embedding 13.9 -> 10.8 ms, matmul
# 17.5 -> 14.2, attention 45.1 -> 34.4, BCE backward 16M fp32 51.1 -> 46.3, no kernel
# of bench_kernels.py slower by more than the noise; 2**22 slowed layer norm
# backward by a fifth and BCE by a tenth.
CHUNK_ELEMENTS = 1 << 21

# Below this many elements a batch stays one chunk even when chunks may run on
# several threads: handing work to a thread costs more than the work.
PARALLEL_MIN_ELEMENTS = 1 << 16
# A loop of a kernel whose programs wait on memory (``Interpreter.waits_on_memory``) is checked
# every this many trips: one that changes neither its values nor memory is stuck.
STUCK_CHECK_TRIPS = 10_000
# ... and one that waits on memory stops when memory stays the same for this many checks.
QUIET_WINDOWS = 10

# Bounds proofs kept per specialization (most recent launches' argument sets).
PROOFS_PER_KERNEL = 64

# Set on a worker thread while it runs a chunk: nested batches stay on that thread.
_worker = threading.local()


class Frame:
    """Runtime values of one batch; misses are gathered from the enclosing batch."""

    __slots__ = ("values", "parent", "rows", "pid", "owned", "pooled", "fold", "key")

    def __init__(self, parent: Frame | None, rows: np.ndarray | None, pid: np.ndarray,
                 pooled: bool = False, key: tuple | None = None) -> None:
        self.values: dict[int, Any] = {}
        # the batch's path from the launch's root, the same in every launch with the
        # same proof key (``lowering.index_replay``); None where rows depend on data
        self.key = key
        self.owned: set[int] = set()  # values whose arrays this frame allocated
        # True when this frame is one chunk of a batch whose values all die with the
        # chunk: results may then go into buffers reused from the previous chunk.
        self.pooled = pooled
        self.parent = parent
        self.rows = rows  # indices into the parent's batch, or None for the same rows
        self.pid = pid  # (rows, 3) program ids, for error messages and program_id
        # the last argmax/argmin: (its operand's value id and array, axis, largest,
        # the extremes it picked), for a max/min of the same operand (``op_reduce``)
        self.fold: tuple[int, np.ndarray, int, bool, np.ndarray] | None = None

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


def _alias_names(tensors: dict[str, BoundTensor]) -> dict[str, str]:
    """Each tensor argument's name mapped to the first argument's name that views the
    same elements (itself when none does)."""
    names: dict[str, str] = {}
    for name, tensor in tensors.items():
        names[name] = next((first for first in names if names[first] == first and
                            same_elements(tensors[first].view, tensor.view)), name)
    return names


def _extent(op: Op, tensor: BoundTensor) -> int:
    """The index range an access is checked against: the view's elements for a
    logical index, the memory the view spans (its buffer) for a pointer."""
    return len(tensor.buffer) if op.attrs.get("pointer") else tensor.view.numel


def _max_block(block: Block, nested: bool) -> int:
    """Largest block (in elements) an op of ``block`` produces."""
    ops = walk_block(block) if nested else block.ops
    return max((prod(r.shape) for op in ops for r in op.results), default=1)


_INT64_MAX = np.iinfo(np.int64).max


def _program_ids(gx: int, gy: int, gz: int) -> tuple[np.ndarray, np.ndarray]:
    """A grid's program numbers (int64, in launch order) and ``(n, 3)`` int32 program
    ids, read-only: made once per grid of up to ``_SHARED_GRID_PROGRAMS`` programs and
    shared by every launch of it (larger ones are made per launch: memory)."""
    if gx * gy * gz <= _SHARED_GRID_PROGRAMS:
        return _shared_program_ids(gx, gy, gz)
    return _new_program_ids(gx, gy, gz)


_SHARED_GRID_PROGRAMS = 1 << 16


def _new_program_ids(gx: int, gy: int, gz: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.arange(gx * gy * gz, dtype=np.int64)
    pid = np.stack([ids % gx, (ids // gx) % gy, ids // (gx * gy)], axis=1).astype(np.int32)
    ids.flags.writeable = pid.flags.writeable = False
    return ids, pid


_shared_program_ids = functools.lru_cache(maxsize=64)(_new_program_ids)


def _as_int64(a: np.ndarray) -> np.ndarray:
    """Loop bounds as int64; a uint64 bound from 2**63 on is taken as the largest int64
    (no loop reaches it: ``astype`` made it negative, and the loop ran no trip)."""
    a = np.asarray(a).reshape(-1)
    if a.dtype == np.uint64:
        a = np.minimum(a, np.uint64(_INT64_MAX))
    return a.astype(np.int64)


# (trip, row) pairs a flattened loop runs at once (see ``_for_flattened``)
_FLAT_TRIP_PAIRS = 1 << 22


def _trip_counts(lo: np.ndarray, hi: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Trips of ``range(lo, hi, step)`` per row, without overflow: the distance is
    taken in uint64 (it fits there whenever the loop runs at all), and counts past
    int64 are clamped (``hi - lo + step - 1`` overflowed int64: 0 trips)."""
    lo, hi, step = np.asarray(lo), np.asarray(hi), np.asarray(step)
    if lo.dtype.itemsize <= 4 and hi.dtype.itemsize <= 4 and step.dtype.itemsize <= 4:
        # bounds of 32 bits or fewer (the usual loop): no int64 step below overflows,
        # and ceil(distance / step) is the trip count (~3x quicker than the general way)
        step = step.reshape(-1).astype(np.int64)
        if not step.all():
            raise DSLRuntimeError("range() step is zero")
        distance = hi.reshape(-1).astype(np.int64) - lo.reshape(-1).astype(np.int64)
        return np.maximum(-(-distance // step), 0)
    lo, hi, step = _as_int64(lo), _as_int64(hi), _as_int64(step)
    if np.any(step == 0):
        raise DSLRuntimeError("range() step is zero")
    up = step > 0
    runs = np.where(up, hi > lo, hi < lo)
    distance = np.where(up, hi.astype(np.uint64) - lo.astype(np.uint64),
                        lo.astype(np.uint64) - hi.astype(np.uint64))
    size = np.where(up, step, -step).astype(np.uint64)  # (-INT64_MIN wraps to 2**63: right)
    trips = (np.where(runs, distance, 1) - np.uint64(1)) // size + np.uint64(1)
    return np.where(runs, np.minimum(trips, np.uint64(_INT64_MAX)), 0).astype(np.int64)


class _UndecidedRace(Exception):
    """Raised inside the bounds pre-pass: lanes of a store clash, and whether they
    race depends on the values they store, which the pre-pass does not compute."""


class Interpreter:
    """Runs one launch. Create, then ``run()``."""

    def __init__(self, launch: Launch, options: Options | None = None) -> None:
        self.launch = launch
        options = options or Options.from_env()
        # Worker threads for independent chunks (NumPy releases the GIL in its loops).
        self.workers = options.workers
        self.race_check = options.race_check != "off"
        # the full race check: per stored tensor, which program wrote (and read) each
        # element in this launch (-1: nobody, -2: several programs read it)
        self.full_race = options.race_check == "full"
        self.writers: dict[tuple[str, bool], np.ndarray] = {}
        self.readers: dict[tuple[str, bool], np.ndarray] = {}
        # the full check tracks one tensor passed as several arguments (``x is out``:
        # exact aliases, partial overlaps being refused) as one, by its first name
        self.tracked_as = _alias_names(launch.tensors) if self.full_race else {}
        self.fn: Function = launch.function
        facts = _facts(self.fn)
        # Iterations and programs are independent unless the kernel reads what it writes
        # (an access at an integer address may reach any tensor: never independent).
        self.host_addresses = facts.host_addresses
        self.independent = not facts.host_addresses and \
            not _overlaps(launch.tensors, facts.loaded, facts.stored)
        self._host_memory: HostMemory | None = None  # built on the first such access
        # a while loop reads memory the launch writes (through any argument: the same
        # tensor may be passed twice): programs run one at a time (``_run_grid``)
        self.waits_on_memory = bool(facts.waited_on) and (
            facts.host_addresses or _overlaps(launch.tensors, facts.waited_on, facts.stored))
        self.index_slice = facts.index_slice
        # loads whose data decide other accesses' indices, run by the pre-pass itself
        # (``gather_slice``): only while the tensors they read share no memory with one
        # the launch writes, so that the pre-pass sees what the run will see
        self.data_loads = facts.data_loads
        if self.data_loads and any(
                np.may_share_memory(launch.tensors[read].buffer, launch.tensors[written].buffer)
                for read in facts.gather_tensors for written in facts.stored):
            self.index_slice, self.data_loads = None, frozenset()
        self.small_data_loads = facts.small_data_loads
        self.proofs = facts.proofs
        self.replayed_ops = facts.replayed_ops
        # the index values of this launch's proof key, once proved (``run_block``)
        self.index_values: IndexValues | None = None
        self.wide_loads = facts.wide_loads
        self.widened: dict[str, np.ndarray | None] = {}  # tensor name -> float32 copy
        # buffers this launch borrowed (``lowering.buffers``), given back when it ends
        self.borrowed: list[tuple[Any, np.ndarray]] = []
        self.unwritten: dict[str, bool] = {}  # tensor name -> ``_unwritten``
        self.dot_loops = facts.dot_loops
        self.shareable = facts.shareable
        # "direct" once the pre-pass has proved every access in bounds; a kernel that
        # may fail while it runs (device_assert) keeps what it overwrites, to undo it.
        # IO ops may fail mid-launch (and prints stay in program order); a race the
        # full check finds late is undone too
        self.may_fail = may_fail = facts.may_fail or self.full_race
        self.stored = facts.stored
        self.stored_memory = {self.tracked_as.get(name, name) for name in facts.stored}
        self.journal = StoreJournal("direct" if self.index_slice is not None and not may_fail
                                    else "deferred" if self.independent else "undo")
        self.only: set[int] | None = None  # during the pre-pass: the ops to run
        self.sites: dict[int, AccessSite] = {}
        # what the IR alone decides, kept with the specialization's facts (computed
        # at a launch's first need, then shared by every later launch)
        self._address_only = facts.address_only
        self._boxed_loads = facts.boxed_loads
        self.block_sizes = facts.block_sizes
        self._nested_regions = facts.nested_regions
        self.consts: dict[int, np.ndarray] = {}
        self.dying = facts.dying
        self.parallel = False  # decided after the pre-pass
        self.store_runs: dict[str, list[tuple[int, int]]] = {}  # filled by the pre-pass
        self.store_runs_provable = True
        self.recorder: Recorder | None = None  # set to capture a launch plan
        # set when lanes of a store clash and only the stored values tell whether they
        # race: that verdict holds for this launch's data, so no plan may keep it
        self.race_by_value = False
        # True once this launch's pre-pass has proved every load and store in bounds
        # (``prove_in_bounds``): the run then skips their checks, which cost more than
        # the access itself on a chunk of small rows (a third of a row argmax's time)
        self.proved = False
        # the launch shape's choice of threads, when its chunks may run in parallel
        self.threading: workers.ThreadingChoice | None = None

    @property
    def checking(self) -> bool:
        """True during the bounds pre-pass: only index ops run, nothing is loaded."""
        return self.only is not None

    @property
    def chunk_elements(self) -> int:
        # The pre-pass mostly handles lazy index blocks: take bigger batches, unless it
        # loads index data that would then take more memory than a chunk of the run.
        # A run that decides races by the stored values (the pre-pass found lanes of a
        # store clashing) takes the pre-pass's batches too: the race check compares
        # the lanes of one batch, so lanes the pre-pass saw together must meet again.
        big = (self.checking and (not self.data_loads or self.small_data_loads)) or \
            self.race_by_value
        return CHUNK_ELEMENTS * 16 if big else CHUNK_ELEMENTS

    # -- entry

    def prove_in_bounds(self) -> bool:
        """Run only the bounds pre-pass (raises on a violation). False when indices
        depend on loaded data, so nothing could be proved ahead of running. After it,
        ``parallel`` says whether the launch's stores are proved disjoint."""
        if self.index_slice is None:
            return False
        # The proof depends only on the index computations: the grid, the scalar and
        # layout arguments and the tensors' sizes. A launch that repeats them (the
        # common case in a loop) reuses it instead of running the pre-pass again.
        # (a proof that loaded index data holds for that data only: never kept)
        key = proof_key(self.launch, self.race_check, self.full_race)
        proved = self.proofs.get(key) if not self.data_loads else None
        if proved is None:
            with ignore_fp_errors():
                self.only = self.index_slice
                try:
                    self._run_grid()
                except _UndecidedRace:
                    # lanes of one store clash: a race unless they write the same
                    # values, which only the run knows. It keeps its stores in the
                    # journal and checks with the values, before anything lands.
                    self.index_slice, self.store_runs = None, {}
                    self.journal = StoreJournal("deferred" if self.independent else "undo")
                    self.race_by_value = True
                    return False
                except OutOfBoundsError:
                    if not self.may_fail:
                        raise
                    # the pre-pass skips the checks that are not accesses (a
                    # device_assert, a gather's index check), which may come first in
                    # program order: PyTorch Inductor asserts an index's range on the
                    # line before the load it guards. Run the launch in order, undone,
                    # to raise the first failure (this one, when nothing precedes it)
                    self.only, self.index_slice, self.store_runs = None, None, {}
                    try:
                        self.dry_run()
                    except DSLRuntimeError as first:
                        raise first from None  # (not "during handling of" the access's)
                    raise
                finally:
                    self.only = None
            proved = (self.store_runs_provable,
                      {name: list(runs) for name, runs in self.store_runs.items()},
                      workers.ThreadingChoice(), IndexValues())
            if not self.data_loads:
                if len(self.proofs) >= PROOFS_PER_KERNEL:
                    self.proofs.pop(next(iter(self.proofs)))
                self.proofs[key] = proved
        self.store_runs_provable = proved[0]
        self.store_runs = {name: list(runs) for name, runs in proved[1].items()}
        self.parallel = self._decide_parallel()
        if self.parallel:
            self.threading = proved[2]
        if self.replayed_ops and not self.may_fail and not self.waits_on_memory:
            self.index_values = proved[3]
        self.proved = True
        return True

    def dry_run(self) -> None:
        """Execute the launch and undo every write: raises what a real run would (an
        out-of-bounds access, a failed device_assert) and leaves memory as it was.
        Compiled-CPU mode checks indices that depend on loaded data this way."""
        self.journal = StoreJournal("undo")
        with ignore_fp_errors():
            try:
                self._run_grid()
            finally:
                self.journal.rollback()
                self._give_back()

    def run(self) -> None:
        """Prove the launch in bounds if its indices allow, then execute it; a
        failure leaves every output as it was."""
        self.prove_in_bounds()
        choice = self.threading
        if choice is not None:
            self.parallel = choice.parallel()
            started = time.perf_counter()
        with ignore_fp_errors():  # IEEE semantics: inf/NaN, never warnings
            try:
                self._run_grid()
                if choice is not None:
                    choice.record(self.parallel, time.perf_counter() - started)
            except BaseException:
                self.journal.rollback()
                raise
            else:
                self.journal.commit()
            finally:
                self._give_back()

    def _give_back(self) -> None:
        """Return the launch's borrowed buffers: nothing reads them after its stores."""
        for key, buffer in self.borrowed:
            give_back(key, buffer)
        self.borrowed.clear()

    def _run_grid(self) -> None:
        gx, gy, gz = self.launch.grid
        n = gx * gy * gz
        ids, pid = _program_ids(gx, gy, gz)
        root = Frame(None, None, pid, key=())
        for param, arg in zip(self.fn.params, self.launch.args):
            root.set(param.value, arg if param.role == "tensor" else np.asarray([arg]))
        per_row = self._block_size(self.fn.body, nested=False)
        if self.waits_on_memory:
            # one program at a time, in program-id order, each to its end: a program
            # that waits for a lock or a flag runs after the one that sets it (run in
            # lockstep, the waiting programs' loop would hold back the others forever)
            for row in range(n):
                self.run_block(self.fn.body, Frame(root, ids[row:row + 1], pid[row:row + 1]))
        elif self.independent and n * per_row > self.chunk_elements:
            step = self._chunk_rows(n, per_row)
            pooled = self._poolable(self.fn.body)
            frames = [Frame(root, ids[start:start + step], pid[start:start + step], pooled,
                            ("chunk", start, start + step))
                      for start in range(0, n, step)]
            self._run_chunks(self.fn.body, frames)
        else:
            self.run_block(self.fn.body, Frame(root, None, pid, key=("all",)))

    # -- chunks and threads

    def _chunk_rows(self, rows: int, per_row: int) -> int:
        """Rows per chunk: about ``chunk_elements`` elements, and at least one chunk
        per worker thread when chunks run in parallel."""
        chunk = max(1, self.chunk_elements // per_row)
        if self.parallel and rows * per_row >= PARALLEL_MIN_ELEMENTS:
            chunk = min(chunk, max(1, -(-rows // self.workers)))
        return chunk

    def _run_chunks(self, block: Block, frames: list[Frame]) -> None:
        """Run ``block`` once per chunk frame, on worker threads when allowed."""
        if self.parallel and len(frames) > 1 and not getattr(_worker, "active", False):
            workers.run_all([lambda f=f: self._run_in_worker(block, f) for f in frames],
                            self.workers)
        else:
            for frame in frames:
                self.run_block(block, frame)

    def _run_in_worker(self, block: Block, frame: Frame) -> None:
        with ignore_fp_errors():  # error state is per thread
            _worker.active = True
            try:
                self.run_block(block, frame)
            finally:
                _worker.active = False

    def _run_all(self, tasks: list[Callable[[], None]]) -> None:
        """Run independent NumPy tasks on the worker threads (tasks that never call
        back into the interpreter). On a worker thread already, run them one after
        another: the pool must not wait on itself."""
        if getattr(_worker, "active", False):
            for task in tasks:
                task()
        else:
            workers.run_all(tasks, self.workers)

    def _decide_parallel(self) -> bool:
        """Chunks may run concurrently when the pre-pass proved that their stores hit
        disjoint index ranges of tensors that do not share memory (then the order of
        the writes cannot matter)."""
        if self.workers < 2 or self.may_fail or not self.store_runs_provable or self.journal.mode != "direct":
            return False
        for runs in self.store_runs.values():
            runs.sort()
            if any(b[0] < a[1] for a, b in zip(runs, runs[1:])):
                return False
        stored = [self.launch.tensors[name].buffer for name in self.store_runs]
        return not any(np.may_share_memory(a, b)
                       for i, a in enumerate(stored) for b in stored[i + 1:])

    # -- blocks and ops

    def run_block(self, block: Block, frame: Frame) -> None:
        only = self.only
        recorder = self.recorder if only is None else None
        if only is None and frame.key is not None and self.index_values is not None:
            self._run_block_replaying(block, frame, self.index_values, recorder)
            return
        for op in block.ops:
            if only is not None and id(op) not in only:
                continue
            if recorder is not None:
                recorder.before(op, frame)
            HANDLERS[op.kind](self, op, frame)

    def elementwise(self, op: Op, frame: Frame, args: list[Any] | None = None) -> None:
        """Any elementwise kind, through its registry record (``dsl.opdefs``)."""
        if args is None:
            args = [frame.get(v) for v in op.operands]
        dtype = op.compute_dtype
        arrays = [materialize(a) for a in args]
        opdef = op.defn.elementwise
        assert opdef is not None
        out = None
        if (opdef.ufunc is not None or opdef.numpy_out) and op.result.dtype == dtype:
            out = self._reusable(op, frame, arrays)
            if out is None and frame.pooled:
                shape = np.broadcast_shapes(*(a.shape for a in arrays))
                out = self._pool_buffer(op, shape, op.result.dtype.np)
        if out is not None:
            result = opdef.ufunc(*arrays, out=out) if opdef.ufunc is not None else \
                opdef.numpy(*arrays, dtype=dtype, out=out)
        else:
            result = np.asarray(opdef.numpy(*arrays, dtype=dtype))
            if result.dtype != op.result.dtype.np:
                result = result.astype(op.result.dtype.np)
        frame.set(op.result, result)
        frame.owned.add(op.result.uid)

    def _poolable(self, block: Block) -> bool:
        """Chunks of ``block`` may reuse buffers: no value outlives its chunk (no
        nested loop carries one over, no store is queued by reference)."""
        if self.journal.mode == "deferred":
            return False
        nested = self._nested_regions.get(id(block))
        if nested is None:
            nested = self._nested_regions[id(block)] = any(op.regions for op in walk_block(block))
        return not nested

    def _block_size(self, block: Block, nested: bool) -> int:
        """``_max_block`` of ``block``, computed once per specialization."""
        key = (id(block), nested)
        size = self.block_sizes.get(key)
        if size is None:
            size = self.block_sizes[key] = _max_block(block, nested)
        return size

    def op_add(self, op: Op, frame: Frame) -> None:
        """``lanes + uniform`` stays a lazy ``Lanes``, an affine block plus a uniform
        value or another affine block stays ``Affine``; anything else is elementwise."""
        a, b = args = [frame.get(op.lhs), frame.get(op.rhs)]
        if isinstance(b, (Lanes, Affine)) and not isinstance(a, (Lanes, Affine)):
            a, b = b, a
        if isinstance(a, (Lanes, Affine)):
            per_row = _row_uniform(b)
            result: Lanes | Affine | None = None
            if per_row is not None:
                result = a.shifted(per_row)
            elif isinstance(b, (Lanes, Affine)) and not (isinstance(a, Lanes) and
                                                        isinstance(b, Lanes)):
                first, second = Affine.of(a), Affine.of(b)
                result = first.plus(second) if first and second else None
            if result is not None:
                frame.set(op.result, result.simplest() if isinstance(result, Affine)
                          else result)
                return
            if isinstance(a, Affine) and isinstance(b, np.ndarray) and \
                    b.dtype == a.dtype and self._only_addresses(op.result):
                runs = RowRuns.of(a, b)
                if runs is not None:
                    frame.set(op.result, runs)
                    return
        self.elementwise(op, frame, args)

    def _only_addresses(self, value: Value) -> bool:
        """True when ``value`` is read by loads alone, as their index or offset: only
        the memory paths (``lowering.memory``) ever see a ``RowRuns``."""
        known = self._address_only.get(value.uid)
        if known is None:
            known = value.has_uses and all(
                user.defn.effect is Effect.READ and not user.defn.host_address and not any(
                    v is value for v in user.operands if v is not user.index and
                    v is not user.offset) for user in value.users)
            self._address_only[value.uid] = known
        return known

    def op_mul(self, op: Op, frame: Frame) -> None:
        """An affine block (``Lanes`` included) times a scalar that is the same for
        every row and lane stays ``Affine``; anything else is elementwise."""
        a, b = args = [frame.get(op.lhs), frame.get(op.rhs)]
        if isinstance(b, (Lanes, Affine)) and not isinstance(a, (Lanes, Affine)):
            a, b = b, a
        affine = Affine.of(a)
        if affine is not None and isinstance(b, np.ndarray) and b.size == 1 \
                and np.issubdtype(b.dtype, np.integer) and \
                int(b.reshape(-1)[0]) <= _INT64_MAX:  # (uint64 from 2**63 wraps)
            scaled = affine.scaled(int(b.reshape(-1)[0]))
            if scaled is not None:
                frame.set(op.result, scaled.simplest())
                return
        self.elementwise(op, frame, args)

    def op_lt(self, op: Op, frame: Frame) -> None:
        """``lanes < uniform`` becomes a lazy ``LaneMask``, an affine block that varies
        along one axis compared with a uniform value a ``BoxMask``; anything else is
        elementwise."""
        a, b = args = [frame.get(op.lhs), frame.get(op.rhs)]
        per_row = _row_uniform(b) if isinstance(a, (Lanes, Affine)) else None
        if per_row is not None and per_row.dtype == np.uint64:
            # an unsigned comparison: a bound from 2**63 on holds every lane that is
            # not negative (``astype(int64)`` made it negative: every lane was false)
            if isinstance(a, Lanes) and (a.base >= 0).all():
                frame.set(op.result, LaneMask(a, _as_int64(per_row)))
                return
            per_row = None
        if per_row is not None and isinstance(a, Lanes):
            frame.set(op.result, LaneMask(a, per_row.astype(np.int64)))
            return
        if per_row is not None and isinstance(a, Affine):
            box = a.mask_below(per_row)
            if box is not None:
                frame.set(op.result, box)
                return
        self.elementwise(op, frame, args)

    def op_and(self, op: Op, frame: Frame) -> None:
        """``&`` of two box masks (of 2-D or more blocks) is a box; anything else is
        elementwise."""
        a, b = args = [frame.get(op.lhs), frame.get(op.rhs)]
        if isinstance(a, BoxMask) or isinstance(b, BoxMask):
            first, second = BoxMask.of(a), BoxMask.of(b)
            both = first.both(second) if first and second else None
            if both is not None:
                frame.set(op.result, both)
                return
        self.elementwise(op, frame, args)

    def _fold(self, op: Op, frame: Frame, scan: bool) -> None:
        """Run the combine region along the axis: a left fold in index order (from
        the end for a reverse scan), every other position and row at once."""
        axis = 1 + op.attrs["axis"]
        moved = [np.moveaxis(self._full(v, frame), axis, -1) for v in op.operands]
        rows = max(a.shape[0] for a in moved)
        moved = [np.broadcast_to(a, (rows,) + a.shape[1:]) for a in moved]
        length = moved[0].shape[-1]
        order = list(range(length))[::-1] if op.attrs.get("reverse") else list(range(length))
        region = op.body
        acc = [a[..., order[0]] for a in moved]
        outs = [np.empty(a.shape, r.dtype.np) for a, r in zip(moved, op.results)] if scan else []
        for out, value in zip(outs, acc):
            out[..., order[0]] = value
        for position in order[1:]:
            inner = Frame(frame, None, frame.pid,
                          key=None if frame.key is None else (frame.key, id(op), position))
            for arg, value in zip(region.args, acc + [a[..., position] for a in moved]):
                inner.set(arg, value)
            self.run_block(region, inner)
            shape = acc[0].shape
            acc = [np.broadcast_to(materialize(inner.get(v)), shape) for v in region.yielded()]
            for out, value in zip(outs, acc):
                out[..., position] = value
        finals = [np.moveaxis(out, -1, axis) for out in outs] if scan else acc
        for result, value in zip(op.results, finals):
            frame.set(result, np.ascontiguousarray(value, dtype=result.dtype.np))

    def op_reduce_fn(self, op: Op, frame: Frame) -> None:
        self._fold(op, frame, scan=False)

    def op_scan_fn(self, op: Op, frame: Frame) -> None:
        self._fold(op, frame, scan=True)

    def op_hint(self, op: Op, frame: Frame) -> None:
        frame.owned.discard(op.source.uid)  # the result is the same array
        frame.set(op.result, frame.get(op.source))

    def op_print(self, op: Op, frame: Frame) -> None:
        """One line per row (program, or program and iteration) of the batch."""
        values = [np.broadcast_to(materialize(frame.get(v)), (frame.size,) + v.shape)
                  for v in op.operands]
        with np.printoptions(threshold=64, formatter={"int": hex} if op.attrs["hex"] else None):
            for row in range(frame.size):
                shown = " ".join(str(v[row]) for v in values)
                print(f"pid ({', '.join(str(int(p)) for p in frame.pid[row])}) "
                      f"{op.attrs['prefix']}{shown}", flush=True)

    def op_device_assert(self, op: Op, frame: Frame) -> None:
        cond = op.require("condition")
        ok = np.broadcast_to(materialize(frame.get(cond)), (frame.size,) + cond.shape)
        if ok.all():
            return
        row, *lane = np.unravel_index(int(np.argmin(ok)), ok.shape)
        lane_text = f", lane {int(np.ravel_multi_index(lane, cond.shape))}" if lane else ""
        message = op.attrs["message"] or "device_assert failed"
        raise DeviceAssertionError(
            f"{op.loc}: {message} in kernel '{self.fn.name}' (program id "
            f"{tuple(int(p) for p in frame.pid[row])}{lane_text})\n{op.loc.excerpt()}")

    def op_yield(self, op: Op, frame: Frame) -> None:
        """The end of a loop body: ``_for_sequential`` reads the yielded values."""

    def _run_block_replaying(self, block: Block, frame: Frame, replay: IndexValues,
                             recorder: Recorder | None) -> None:
        """``run_block`` setting the index ops' results an earlier launch of the proof
        key recorded for this batch, and recording those it computes
        (``lowering.index_replay``)."""
        replayed = self.replayed_ops
        for op in block.ops:
            if recorder is not None:
                recorder.before(op, frame)
            if id(op) in replayed:
                self._replay_op(op, frame, replay)
            else:
                HANDLERS[op.kind](self, op, frame)

    def _replay_op(self, op: Op, frame: Frame, replay: IndexValues) -> None:
        """Run the replayed index op ``op`` on ``frame`` (whose key is not None): set
        the results recorded for it, or compute and record them."""
        key = (frame.key, id(op))
        found = replay.lookup(key)
        if found is not None:
            for result, value in zip(op.results, found):
                frame.set(result, value)
            return
        HANDLERS[op.kind](self, op, frame)
        replay.record(key, [frame.get(result) for result in op.results])

    def _pool_buffer(self, op: Op, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """The buffer ``op`` wrote in an earlier chunk on this thread, or a new one
        (see ``lowering.buffers``)."""
        return scratch(id(op), shape, dtype)

    def _reusable(self, op: Op, frame: Frame, arrays: list[np.ndarray]) -> np.ndarray | None:
        """An operand buffer this op may overwrite: allocated by this frame, dying
        here, and already of the result's shape and dtype. None while stores are
        queued by reference (deferred mode): a stored value, or a view of one, may
        be an operand that dies later, and writing over it would change the queued
        store (a block stored in each unrolled trip stored its last trip's values)."""
        dying = self.dying.get(id(op))
        if not dying or self.journal.mode == "deferred":
            return None
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        for value, array in zip(op.operands, arrays):
            if value.uid in dying and value.uid in frame.owned and array.shape == shape \
                    and array.dtype == op.result.dtype.np and value.uid in frame.values:
                return array
        return None

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
        x = frame.get(op.source)
        target = op.result.dtype
        if isinstance(x, Lanes) and target.is_int and not target.is_bool:
            lanes = x.shifted(np.zeros(1, dtype=np.int64)) if target.np.itemsize >= 8 else None
            if lanes is not None:
                frame.set(op.result, Lanes(lanes.base, lanes.length, target.np))
                return
        arr = materialize(x)
        if frame.pooled and target.is_float and arr.dtype.itemsize < target.np.itemsize:
            # widening float casts are exact: assignment into a reused buffer is astype
            out = self._pool_buffer(op, arr.shape, target.np)
            if arr.dtype == np.float16 and target.np == np.float32 and out.flags.c_contiguous:
                widen_to_float32(arr, out)  # (NumPy's own cast is ~4x slower)
            else:
                np.copyto(out, arr, casting="unsafe")
            frame.set(op.result, out)
        else:
            frame.set(op.result, cast_array(arr, target))
        frame.owned.add(op.result.uid)

    def op_bitcast(self, op: Op, frame: Frame) -> None:
        arr = materialize(frame.get(op.source))
        frame.set(op.result, bitcast_array(arr, op.result.dtype.np))

    def op_broadcast(self, op: Op, frame: Frame) -> None:
        source = op.source
        src, dst = source.type.rank, op.result.type.rank
        x = frame.get(source)
        if src >= 1 and isinstance(x, (Affine, BoxMask)) or (
                dst > src >= 1 and isinstance(x, (Lanes, LaneMask))):
            lazy = Affine.of(x) if isinstance(x, (Lanes, Affine)) else BoxMask.of(x)
            assert lazy is not None
            frame.set(op.result, lazy.lead(dst - src))  # NumPy broadcasting does the rest
            return
        arr = materialize(x)
        frame.owned.discard(source.uid)  # the result is a view of it
        frame.set(op.result, arr.reshape((arr.shape[0],) + (1,) * (dst - src) + arr.shape[1:]))

    def op_expand_dims(self, op: Op, frame: Frame) -> None:
        x = frame.get(op.source)
        lazy = Affine.of(x) if isinstance(x, (Lanes, Affine)) else BoxMask.of(x)
        if lazy is not None:
            frame.set(op.result, lazy.expanded(op.attrs["axis"]))
            return
        arr = materialize(x)
        frame.owned.discard(op.source.uid)  # the result is a view of it
        frame.set(op.result, np.expand_dims(arr, 1 + op.attrs["axis"]))

    def _full(self, v: Value, frame: Frame) -> np.ndarray:
        """``v`` with every block axis at full size (axis 0 stays the rows)."""
        arr = materialize(frame.get(v))
        return np.broadcast_to(arr, (arr.shape[0],) + v.shape)

    def _full_pair(self, a: Value, b: Value, frame: Frame) -> tuple[np.ndarray, np.ndarray]:
        x, y = self._full(a, frame), self._full(b, frame)
        rows = max(x.shape[0], y.shape[0])
        return (np.broadcast_to(x, (rows,) + x.shape[1:]),
                np.broadcast_to(y, (rows,) + y.shape[1:]))

    def op_reshape(self, op: Op, frame: Frame) -> None:
        full = self._full(op.source, frame)
        frame.set(op.result, full.reshape((full.shape[0],) + op.result.shape))

    def op_permute(self, op: Op, frame: Frame) -> None:
        axes = (0,) + tuple(1 + d for d in op.attrs["dims"])
        frame.set(op.result, np.transpose(self._full(op.source, frame), axes))

    def op_cat(self, op: Op, frame: Frame) -> None:
        frame.set(op.result, np.concatenate(self._full_pair(op.lhs, op.rhs, frame), axis=1))

    def op_join(self, op: Op, frame: Frame) -> None:
        frame.set(op.result, np.stack(self._full_pair(op.lhs, op.rhs, frame), axis=-1))

    def op_split(self, op: Op, frame: Frame) -> None:
        full = self._full(op.source, frame)
        for i, result in enumerate(op.results):
            frame.set(result, full[..., i])

    def op_flip(self, op: Op, frame: Frame) -> None:
        frame.set(op.result, np.flip(self._full(op.source, frame), axis=1 + op.attrs["axis"]))

    def _slice_positions(self, op: Op, frame: Frame, shape: tuple[int, ...],
                         offsets: tuple[Value, ...]) -> tuple[int, tuple[np.ndarray, ...]]:
        """(rows, fancy index) of the elements extract_slice/insert_slice touch in a
        block of ``shape``, checked inside it (offsets may differ per row)."""
        sizes, strides = op.attrs["sizes"], op.attrs["strides"]
        starts = [np.asarray(materialize(frame.get(v)), np.int64).reshape(-1) for v in offsets]
        rows = max([frame.size] + [len(o) for o in starts])
        rank = len(sizes)
        index: list[np.ndarray] = [np.arange(rows).reshape((-1,) + (1,) * rank)]
        for d, (start, n, step) in enumerate(zip(starts, sizes, strides)):
            if (start < 0).any() or (start + (n - 1) * step >= shape[d]).any():
                bad = int(start[(start < 0) | (start + (n - 1) * step >= shape[d])][0])
                raise DSLRuntimeError(
                    f"{op.loc}: {op.attrs.get('spelled', op.kind)} in kernel "
                    f"'{self.fn.name}': offset {bad} with size "
                    f"{n} and stride {step} leaves dimension {d} of a block of shape "
                    f"{list(shape)}\n{op.loc.excerpt()}")
            lanes = (np.arange(n) * step).reshape((1,) * (d + 1) + (n,) + (1,) * (rank - d - 1))
            index.append(start.reshape((-1,) + (1,) * rank) + lanes)
        return rows, tuple(index)

    def op_extract_slice(self, op: Op, frame: Frame) -> None:
        rows, index = self._slice_positions(op, frame, op.source.shape, op.offsets)
        src = self._full(op.source, frame)
        frame.set(op.result, np.broadcast_to(src, (rows,) + src.shape[1:])[index])

    def op_insert_slice(self, op: Op, frame: Frame) -> None:
        dest, sub = op.require("dest"), op.require("sub")
        rows, index = self._slice_positions(op, frame, dest.shape, op.offsets)
        full = self._full(dest, frame)
        out = np.array(np.broadcast_to(full, (rows,) + full.shape[1:]))
        out[index] = self._full(sub, frame)
        frame.set(op.result, out)

    def op_gather(self, op: Op, frame: Frame) -> None:
        src, index = self._full_pair(op.source, op.require("index"), frame)
        axis = 1 + op.attrs["axis"]
        idx = index.astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= src.shape[axis]):
            bad = int(idx[(idx < 0) | (idx >= src.shape[axis])].reshape(-1)[0])
            raise DSLRuntimeError(
                f"{op.loc}: gather in kernel '{self.fn.name}': index {bad} is outside axis "
                f"{op.attrs['axis']} of length {src.shape[axis]}\n{op.loc.excerpt()}")
        frame.set(op.result, np.take_along_axis(src, idx, axis=axis))

    def op_inline_asm(self, op: Op, frame: Frame) -> None:
        args = [self._full(v, frame) for v in op.operands]
        rows = max((a.shape[0] for a in args), default=frame.size)
        shape = (rows,) + op.result.shape
        frame.set(op.result, asm_eval.evaluate(
            op.attrs["program"], [np.broadcast_to(a, shape) for a in args], shape,
            op.result.dtype.np))

    def op_histogram(self, op: Op, frame: Frame) -> None:
        bins = op.attrs["num_bins"]
        if op.mask is None:
            values = self._full(op.source, frame)  # [rows, n]
            counted = np.ones(values.shape, bool)
        else:
            values, counted = self._full_pair(op.source, op.mask, frame)
        inside = (values >= 0) & (values < bins)
        if not inside[counted].all():
            # the device's histogram has no meaning for such a value (as a gather's
            # index outside its axis): report it rather than pick a bin
            bad = values[counted & ~inside].reshape(-1)[0]
            raise DSLRuntimeError(
                f"{op.loc}: histogram in kernel '{self.fn.name}': value {bad} is outside "
                f"the bins [0, {bins})\n{op.loc.excerpt()}")
        counted = counted & inside
        # one bincount over all rows: row r's bin v is flat slot r * bins + v
        rows = np.broadcast_to(np.arange(values.shape[0])[:, None], values.shape)
        slots = rows[counted] * bins + values[counted].astype(np.int64)
        counts = np.bincount(slots, minlength=values.shape[0] * bins)
        frame.set(op.result, counts.reshape(values.shape[0], bins).astype(np.int32))

    def op_sort(self, op: Op, frame: Frame) -> None:
        axis = 1 + op.attrs["axis"]
        ordered = np.sort(self._full(op.source, frame), axis=axis, kind="stable")
        frame.set(op.result, np.flip(ordered, axis=axis) if op.attrs["descending"] else ordered)

    def _philox(self, op: Op, frame: Frame, fn: Callable[..., Any]) -> Any:
        """``fn(seed, offsets, n_rounds)`` of ``dsl.philox``; a scalar seed is one per
        row, a block seed one per lane."""
        offset = materialize(frame.get(op.require("offset")))
        seed = materialize(frame.get(op.require("seed")))
        if not op.require("seed").shape:
            seed = seed.reshape((-1,) + (1,) * (offset.ndim - 1))
        with ignore_fp_errors():
            return fn(seed, offset, op.attrs["n_rounds"])

    def op_randint(self, op: Op, frame: Frame) -> None:
        frame.set(op.result, self._philox(op, frame, philox.randint))

    def op_randint4x(self, op: Op, frame: Frame) -> None:
        for result, words in zip(op.results, self._philox(op, frame, philox.randint4x)):
            frame.set(result, words)

    def op_rand(self, op: Op, frame: Frame) -> None:
        frame.set(op.result, self._philox(op, frame, philox.rand))

    def op_randn(self, op: Op, frame: Frame) -> None:
        frame.set(op.result, self._philox(op, frame, philox.randn))

    def op_dot(self, op: Op, frame: Frame) -> None:
        a, b = self._full_pair(op.lhs, op.rhs, frame)
        acc = self._full(op.require("acc"), frame)
        rows = max(a.shape[0], acc.shape[0])
        acc = np.broadcast_to(acc, (rows,) + acc.shape[1:])
        frame.set(op.result, dot_product(a, b, acc))

    def op_arg_reduce(self, op: Op, frame: Frame) -> None:
        source = frame.get(op.source)
        full = self._full(op.source, frame)
        largest = op.attrs["combine"] == "argmax"
        value, index, nan = arg_fold_and_nan(full, 1 + op.attrs["axis"], largest,
                                             op.attrs["tie_break_left"])
        if isinstance(source, np.ndarray) and not nan:
            frame.fold = (op.source.uid, source, op.attrs["axis"], largest, value)
        frame.set(op.results[0], value)
        frame.set(op.results[1], index)

    def op_scan(self, op: Op, frame: Frame) -> None:
        full = self._full(op.source, frame)
        frame.set(op.result, scan_in_order(full, 1 + op.attrs["axis"], op.attrs["combine"],
                                           op.attrs["reverse"]))

    def op_reduce(self, op: Op, frame: Frame) -> None:
        arr = materialize(frame.get(op.source))
        full = np.broadcast_to(arr, (arr.shape[0],) + op.source.shape)
        combine = COMBINES[op.attrs["combine"]]
        out = self._extremes_already_found(op, frame, arr)
        if out is None:
            with ignore_fp_errors():
                out = combine.numpy(full, 1 + op.attrs["axis"], op.result.dtype.np)
        frame.set(op.result, np.asarray(out, dtype=op.result.dtype.np))

    @staticmethod
    def _extremes_already_found(op: Op, frame: Frame, arr: np.ndarray) -> np.ndarray | None:
        """A max (min) of the operand an argmax (argmin) just folded along the same
        axis, when no row held a NaN (``op_arg_reduce`` records only such folds: a NaN
        resets the fold, ``numerics.arg_fold_and_nan``): the values it picked, without
        a second pass. Equal to ``max_ignoring_nan`` (``min_ignoring_nan``): a nonzero
        extreme has one bit pattern, and the rows whose extreme is a zero (-0.0 or
        +0.0, whichever the reduce keeps) are reduced again. None: reduce as usual."""
        fold = frame.fold
        reduce = COMBINES[op.attrs["combine"]].numpy
        if fold is None or reduce not in (max_ignoring_nan, min_ignoring_nan) or \
                fold[2:4] != (op.attrs["axis"], reduce is max_ignoring_nan):
            return None
        # the same value (a dead operand's buffer may hold a later value: the array
        # alone does not tell) on the same rows, or a widening float cast of it (a
        # 16-bit float's max reduces float32 copies): exact, so the same picks
        source, value = op.source, fold[4]
        if source.uid != fold[0]:
            cast = source.owner
            if cast is None or cast.defn is not OPS["cast"] or cast.source.uid != fold[0] or \
                    not (source.dtype.is_float and cast.source.dtype.is_float and
                         source.dtype.bits > cast.source.dtype.bits):
                return None
            if frame.values.get(fold[0]) is not fold[1]:
                return None
            value = value.astype(op.result.dtype.np)
        elif fold[1] is not arr:
            return None
        if value.dtype != op.result.dtype.np:
            return None
        out = value.copy()
        if np.issubdtype(value.dtype, np.integer) or value.dtype == np.bool_:
            return out
        again = np.nonzero(value == 0)
        if again[0].size:
            full = np.broadcast_to(arr, (arr.shape[0],) + op.source.shape)
            moved = np.moveaxis(full, 1 + op.attrs["axis"], -1)
            out[again] = reduce(moved[again], -1, value.dtype)
        return out

    def op_where(self, op: Op, frame: Frame) -> None:
        """An all-true lazy mask selects the first value as it is; else elementwise."""
        cond, a, b = args = [frame.get(v) for v in op.operands]
        if isinstance(cond, LaneMask) and cond.all_true():
            frame.owned.discard(op.require("x").uid)  # the result is the same array
            frame.set(op.result, materialize(a))
            return
        self.elementwise(op, frame, args)

    def _site(self, op: Op) -> AccessSite:
        site = self.sites.get(id(op))
        if site is None:
            tensor = self.launch.tensors[op.tensor]
            site = AccessSite(self.fn.name, op.kind, tensor.name, _extent(op, tensor), op.loc,
                              bool(op.attrs.get("pointer")))
            self.sites[id(op)] = site
        return site

    def op_load(self, op: Op, frame: Frame) -> None:
        tensor: BoundTensor = frame.get(op.view)
        index = frame.get(op.index)
        mask = frame.get(op.mask) if op.mask is not None else None
        if not self.proved:
            check_bounds(self._site(op), index, mask, frame.pid)
        if self.checking and id(op) not in self.data_loads:
            return  # (a data load's value decides other indices: the pre-pass loads it)
        if self.full_race and not self.checking and \
                self.tracked_as.get(op.tensor, op.tensor) in self.stored_memory:
            self._track(op, frame, index, mask, write=False)
        offset = frame.get(op.offset)
        other = frame.get(op.other) if op.other is not None else None
        if isinstance(mask, (LaneMask, BoxMask)) and mask.all_true():
            mask = None
        if isinstance(offset, np.ndarray) and offset.size == 1 and mask is None:
            # Every lane reads the same element (a broadcast scalar): keep it a scalar.
            value = tensor.buffer[offset.reshape(-1)[:1]]
            frame.set(op.result, value.reshape((1,) * (1 + op.result.type.rank)))
            return
        buffer = tensor.buffer
        if id(op) in self.wide_loads:
            buffer = self._widened(op, tensor, frame.size)
        # a chunk's values die with it: its loads may reuse the previous chunk's buffers
        allocate = functools.partial(scratch, id(op)) if frame.pooled and not self.checking \
            else np.empty
        boxed = mask is not None and self._stored_under_its_mask(op)
        value = load(buffer, offset, mask, other, not self.independent, allocate, boxed=boxed,
                     late=boxed and self._unwritten(op.tensor))
        frame.set(op.result, value)

    def _stored_under_its_mask(self, op: Op) -> bool:
        """True when stores under the load's own mask are the only readers of its value:
        it may then stay ``BoxedValues``, the valid box without the padding around it."""
        known = self._boxed_loads.get(id(op))
        if known is None:
            known = op.result.has_uses and all(
                user.defn.effect is Effect.WRITE and not user.defn.host_address and
                user.mask is op.mask and
                all(v is not op.result for v in user.operands if v is not user.value)
                for user in op.result.users)
            self._boxed_loads[id(op)] = known
        return known

    def _unwritten(self, name: str) -> bool:
        """True when this launch writes neither tensor ``name`` nor memory it shares: a
        value read from it may be read late (``TakenLines``) or from a copy made once
        (``_widened``)."""
        known = self.unwritten.get(name)
        if known is None:
            buffer = self.launch.tensors[name].buffer
            known = self.unwritten[name] = not self.host_addresses and \
                name not in self.stored and not any(
                np.may_share_memory(buffer, self.launch.tensors[w].buffer) for w in self.stored)
        return known

    def _widened(self, op: Op, tensor: BoundTensor, rows: int) -> np.ndarray:
        """The buffer a load of dot operands reads (``_dot_operand_loads``): a float32
        copy of the tensor, made once per launch, when this launch writes neither it
        nor memory it shares and the load reads at least a quarter as many elements
        as the copy converts (tiles of a matrix that many programs read); else the
        tensor's own buffer."""
        wide = self.widened.get(op.tensor, False)
        if wide is False:
            buffer = tensor.buffer
            wide = None
            if 4 * rows * prod(op.result.shape) >= buffer.shape[0] and \
                    self._unwritten(op.tensor):
                # borrowed: a fresh megabyte copy per launch costs more in page faults
                # than the conversion (and ``self.widened`` keeps it for the launch)
                key = ("widened", id(op))
                wide = widen_to_float32(buffer, borrow(key, buffer.shape, np.dtype(np.float32)))
                self.borrowed.append((key, wide))
            self.widened[op.tensor] = wide
        return tensor.buffer if wide is None else wide

    def op_store(self, op: Op, frame: Frame) -> None:
        tensor: BoundTensor = frame.get(op.view)
        index = frame.get(op.index)
        mask = frame.get(op.mask) if op.mask is not None else None
        if not self.proved:
            check_bounds(self._site(op), index, mask, frame.pid)
        value = None  # the stored values, once materialized
        if self.race_check and (self.checking or self.journal.mode != "direct"):
            # (a launch written directly was checked by the pre-pass, before any write)
            # Lanes storing the same bits do not race, but only where no stored tensor
            # is also read: a read-modify-write (``x[i] = x[i] + 1`` across programs)
            # loses updates even when every lane writes the same value.
            by_value = self.independent
            if by_value and not self.checking:
                value = materialize(frame.get(op.value))  # (and stored below)
            try:
                check_store_race(self._site(op), index, mask, frame.pid, (frame.size,) +
                                 op.value.shape, value)
            except DataRaceError:
                if self.checking and by_value:  # no values yet: the run compares them
                    raise _UndecidedRace from None
                raise
        if self.checking:
            self._record_store_run(op, frame, index)
            return
        if self.full_race:
            self._track(op, frame, index, mask, write=True)
        if value is None:
            value = frame.get(op.value)  # a BoxedValues stays one (``_stored_under_its_mask``)
            value = value if isinstance(value, (BoxedValues, TakenLines)) else materialize(value)
        shape = (frame.size,) + op.value.shape
        self.journal.store(tensor.buffer, frame.get(op.offset), value, mask, shape)

    def _memory(self) -> HostMemory:
        if self._host_memory is None:
            self._host_memory = HostMemory({name: t.buffer
                                            for name, t in self.launch.tensors.items()})
        return self._host_memory

    def _addresses(self, op: Op, frame: Frame, shape: tuple[int, ...], itemsize: int
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The cast integer (the lane's base) and the int64 byte address of every lane of
        a ``load_address``/``store_address`` (wrapping as the device's 64-bit pointer
        arithmetic does)."""
        base = materialize(frame.get(op.require("address"))).astype(np.int64, copy=False)
        offset = materialize(frame.get(op.offset)).astype(np.int64, copy=False)
        base = base.reshape(base.shape[:1] + (1,) * (len(shape) - base.ndim) + base.shape[1:])
        return base, np.broadcast_to(base + offset * np.int64(itemsize), shape)

    def _resolved(self, op: Op, frame: Frame, dtype: Any, what: str
                  ) -> tuple[AddressAccess, np.ndarray, np.ndarray | None, np.dtype]:
        """Every active lane of an access at integer addresses checked and grouped by
        region (``dsl.host_memory.resolve``): the access, the lanes' addresses and mask
        (rows first) and the NumPy element type (a byte for Triton's int1)."""
        shape = (frame.size,) + op.require("offset").shape
        element = np.dtype(np.uint8) if dtype.is_bool else dtype.np
        bases, addresses = self._addresses(op, frame, shape, element.itemsize)
        mask = None if op.mask is None else \
            np.broadcast_to(materialize(frame.get(op.mask)), shape)
        access = resolve(self._memory(), bases, addresses, mask, element, what,
                         self.fn.name, op.loc, frame.pid)
        return access, addresses, mask, element

    def op_load_address(self, op: Op, frame: Frame) -> None:
        """A load through a pointer cast from an integer (``dsl.host_memory``)."""
        dtype = op.result.dtype
        access, addresses, _, element = self._resolved(op, frame, dtype, "load")
        if op.other is not None:
            # (C order: a copy of a broadcast keeps its axis order, and ``flat`` below
            # must be a view of ``out``, not a copy that the loaded values are lost in)
            out = np.array(np.broadcast_to(materialize(frame.get(op.other)), addresses.shape),
                           dtype=element, order="C")
        else:
            out = np.zeros(addresses.shape, element)
        flat = out.reshape(-1)
        for _, typed, lanes, elements in access.groups:
            flat[lanes] = typed[elements]
        frame.set(op.result, out != 0 if dtype.is_bool else out)

    def op_store_address(self, op: Op, frame: Frame) -> None:
        """A store through a pointer cast from an integer: every lane checked first,
        then written through the journal (undo mode: such a launch is never
        independent), so a failing launch writes nothing."""
        access, addresses, mask, element = self._resolved(op, frame, op.value.dtype, "store")
        if self.race_check:
            _check_address_race(op, self.fn.name, addresses, mask, frame.pid)
        values = np.broadcast_to(materialize(frame.get(op.value)), addresses.shape).reshape(-1)
        for _, typed, lanes, elements in access.groups:
            self.journal.write_elements(typed, elements, values[lanes].astype(element))

    def _atomic_at_addresses(self, op: Op, frame: Frame, compare: Value | None) -> None:
        """Atomics through a pointer cast from an integer: every lane checked first, then
        applied as ``_atomic`` applies them, one region at a time (lanes at one address
        are in one region, in lane order)."""
        access, addresses, _, element = self._resolved(op, frame, op.value.dtype, "atomic")
        shape = addresses.shape
        values = np.broadcast_to(materialize(frame.get(op.value)), shape).reshape(-1)
        cmp = None if compare is None else \
            np.broadcast_to(materialize(frame.get(compare)), shape).reshape(-1)
        old = np.zeros(values.shape, element)
        for _, typed, lanes, elements in access.groups:
            previous = apply_atomics(
                lambda where, typed=typed: typed[where],
                lambda where, new, typed=typed: self.journal.update(typed, where, new),
                elements, values[lanes].astype(element), op.attrs.get("op", "cas"),
                None if cmp is None else cmp[lanes].astype(element),
                want_old=op.result.has_uses)
            if previous is not None:
                old[lanes] = previous
        frame.set(op.result, old.reshape(shape))

    def op_tensor_address(self, op: Op, frame: Frame) -> None:
        tensor: BoundTensor = frame.get(op.view)
        frame.set(op.result, np.array([tensor.buffer.ctypes.data], np.int64))

    def op_atomic_address(self, op: Op, frame: Frame) -> None:
        self._atomic_at_addresses(op, frame, None)

    def op_atomic_cas_address(self, op: Op, frame: Frame) -> None:
        self._atomic_at_addresses(op, frame, op.require("compare"))

    def _track(self, op: Op, frame: Frame, index: Any, mask: Any, write: bool) -> None:
        """The full race check: an element one program writes may be neither written
        nor read by another program in the same launch (atomics excepted)."""
        shape = (frame.size,) + (op.value.shape if write else op.result.shape)
        idx = np.broadcast_to(materialize(index), shape)
        active = np.ones(shape, bool) if mask is None else \
            np.broadcast_to(materialize(mask), shape)
        gx, gy, _ = self.launch.grid
        pid = frame.pid.astype(np.int64)
        program = pid[:, 0] + gx * (pid[:, 1] + gy * pid[:, 2])
        program = np.broadcast_to(program.reshape((-1,) + (1,) * (len(shape) - 1)), shape)
        where, who = idx[active].astype(np.int64), program[active]
        numel = _extent(op, self.launch.tensors[op.tensor])
        # (a pointer access counts buffer elements, a logical one view elements)
        key = (self.tracked_as.get(op.tensor, op.tensor), bool(op.attrs.get("pointer")))
        writers = self.writers.setdefault(key, np.full(numel, -1, np.int64))
        readers = self.readers.setdefault(key, np.full(numel, -1, np.int64))
        previous, seen = writers[where], readers[where]
        clash = (previous != -1) & (previous != who)
        if write:
            clash |= (seen != -1) & (seen != who)
        if clash.any():
            k = int(np.argmax(clash))
            by_writer = bool(previous[k] != -1 and previous[k] != who[k])
            other = int(previous[k] if by_writer else seen[k])
            raise DataRaceError(
                f"{op.loc}: data race in kernel '{self.fn.name}' (full check): element "
                f"{int(where[k])} of tensor '{op.tensor}' is "
                f"{'written' if write else 'read'} by program {int(who[k])} and "
                f"{'written' if by_writer else 'read'} by "
                f"{'program ' + str(other) if other >= 0 else 'several programs'} in the "
                f"same launch\n{op.loc.excerpt()}")
        if write:
            writers[where] = who
        else:
            readers[where] = np.where((seen == -1) | (seen == who), who, -2)

    def _atomic(self, op: Op, frame: Frame, compare: Value | None) -> None:
        """Atomics: lanes apply one at a time in row (program) order, then lane order;
        masked-off lanes return 0 and touch nothing (``numerics.apply_atomics``)."""
        tensor: BoundTensor = frame.get(op.view)
        index = frame.get(op.index)
        mask = frame.get(op.mask) if op.mask is not None else None
        check_bounds(self._site(op), index, mask, frame.pid)
        if self.checking:
            self.store_runs_provable = False  # programs interact: never in parallel
            return
        shape = (frame.size,) + op.value.shape
        offsets = np.broadcast_to(materialize(frame.get(op.offset)), shape).reshape(-1)
        values = np.broadcast_to(materialize(frame.get(op.value)), shape).reshape(-1)
        active = np.ones(offsets.shape, bool) if mask is None else \
            np.broadcast_to(materialize(mask), shape).reshape(-1)
        cmp = None if compare is None else \
            np.broadcast_to(materialize(frame.get(compare)), shape).reshape(-1)[active]
        buffer = tensor.buffer
        want_old = op.result.has_uses
        previous = apply_atomics(
            lambda where: buffer[where], lambda where, new: self.journal.update(
                buffer, where, new), offsets[active].astype(np.int64), values[active],
            op.attrs.get("op", "cas"), cmp, want_old=want_old)
        if want_old:
            old = np.zeros(offsets.shape, buffer.dtype)
            old[active] = previous
            frame.set(op.result, old.reshape(shape))

    def op_atomic(self, op: Op, frame: Frame) -> None:
        self._atomic(op, frame, None)

    def op_atomic_cas(self, op: Op, frame: Frame) -> None:
        self._atomic(op, frame, op.require("compare"))

    def _record_store_run(self, op: Op, frame: Frame, index: Any) -> None:
        """Pre-pass: note the logical index range a store covers in this batch, or
        that it is not one range (then chunks do not run in parallel)."""
        if isinstance(index, Lanes) and index.base.shape[0] == frame.size:
            start = index.consecutive_start()
            if start is not None:
                runs = self.store_runs.setdefault(op.tensor, [])
                runs.append((start, start + frame.size * index.length))
                return
        mask = frame.get(op.mask) if op.mask is not None else None
        access = affine_access(index, mask)
        if access is not None and access.extents.shape[0] == frame.size and \
                access.injective():
            # distinct elements in every row and between rows: the range they span
            # is this batch's, whichever chunk writes which rows
            active, low, high = access.span()
            if active.any():
                runs = self.store_runs.setdefault(op.tensor, [])
                runs.append((int(low[active].min()), int(high[active].max()) + 1))
            return
        self.store_runs_provable = False

    def op_for(self, op: Op, frame: Frame) -> None:
        lo, hi, step = (materialize(frame.get(v)) for v in (op.start, op.end, op.step))
        body = op.body
        # The pre-pass skips loop-carried values unless indices depend on them.
        carried = not self.checking or id(body.ops[-1]) in (self.only or ())
        inits = [frame.get(v) for v in op.inits] if carried else []
        try:
            trips = _trip_counts(lo, hi, step)
        except DSLRuntimeError as err:  # (a runtime step of 0: say where)
            raise DSLRuntimeError(f"{op.loc}: {err} in kernel '{self.fn.name}'\n"
                                  f"{op.loc.excerpt()}") from None
        if trips.shape[0] == 1 and frame.size > 1:
            trips = np.broadcast_to(trips, (frame.size,))
        iv_dtype = body.args[0].dtype.np
        if not inits and (self.independent or self.checking):
            self._for_flattened(op, frame, lo, step, trips, iv_dtype)
            return
        dots = None
        if inits and not self.checking and trips.size and trips.min() == trips.max():
            dots = self.dot_loops.get(id(op), False)
            if dots is False:
                dots = self.dot_loops[id(op)] = dot_accumulation(op)
        if dots is not None:
            self._for_dot_sums(op, frame, lo, step, int(trips[0]), inits, iv_dtype, dots)
        else:
            self._for_sequential(op, frame, lo, step, trips, inits, iv_dtype)

    def _subframe(self, frame: Frame, rows: np.ndarray | None, key: tuple | None = None
                  ) -> Frame:
        """A frame over ``rows`` of ``frame`` (the same frame's rows when None or all);
        ``key`` names it when its rows follow from the launch's proof key alone."""
        if rows is None or rows.shape[0] == frame.size:
            return Frame(frame, None, frame.pid, key=key)
        return Frame(frame, rows, frame.pid[rows], key=key)

    def _row_flags(self, value: Any, frame: Frame) -> np.ndarray:
        flags = materialize(value).reshape(-1)
        return np.broadcast_to(flags, (frame.size,)) if flags.shape[0] == 1 else flags

    def op_if(self, op: Op, frame: Frame) -> None:
        """Each branch runs on the rows whose condition selects it; results merge."""
        cond = self._row_flags(frame.get(op.require("condition")), frame)
        merged: list[Any] = [None] * len(op.results)
        for region, rows in zip(op.regions, (np.nonzero(cond)[0], np.nonzero(~cond)[0])):
            if rows.shape[0] == 0:
                continue
            inner = self._subframe(frame, rows)
            self.run_block(region, inner)
            if not op.results or (self.checking and id(region.ops[-1]) not in self.only):
                continue  # the pre-pass needs no result of this if
            values = [materialize(inner.get(v)) for v in region.ops[-1].operands]
            for i, value in enumerate(values):
                merged[i] = _merge_rows(merged[i], value, rows, frame.size)
        for result, value in zip(op.results, merged):
            frame.set(result, value)

    def op_while(self, op: Op, frame: Frame) -> None:
        """Rows leave the loop when their condition fails; the others run the body."""
        condition, body = op.regions
        carried = [materialize(frame.get(v)) for v in op.inits]
        active: np.ndarray | None = None  # None: every row
        trips, check, window, quiet = 0, None, None, 0
        # memory a trip may change: none when the loop writes nothing and no other
        # program runs meanwhile (then a snapshot is not worth its copy)
        watched = self.waits_on_memory or any(
            inner.defn.writes_memory for region in op.regions for inner in walk_block(region))
        while True:
            (flags,) = self._run_on_rows(condition, frame, active, carried)
            rows = np.arange(frame.size) if active is None else active
            rows = rows[np.broadcast_to(flags.reshape(-1), rows.shape)]
            if not rows.shape[0]:
                break
            active = None if rows.shape[0] == frame.size else rows
            if check is not None:  # (the condition runs once a trip: it may have effects)
                if self._stuck(check, carried):
                    raise self._waits_forever(op, frame, f"after {trips} trips a trip "
                                                         "changes neither its values nor memory")
                check = None
            trips += 1
            if trips % STUCK_CHECK_TRIPS == 0:
                # a trip that changes nothing repeats forever (the other programs wait at
                # this loop, or have run to their end); a program that waits on memory
                # no other program can change any more also spins forever, counting or not
                memory = self._written_snapshot() if watched else []
                check = ([np.copy(c) if isinstance(c, np.ndarray) else c for c in carried],
                         memory)
                quiet = quiet + 1 if memory == window else 0
                window = memory
                if self.waits_on_memory and quiet >= QUIET_WINDOWS:
                    raise self._waits_forever(op, frame, f"memory has not changed in "
                                                         f"{quiet * STUCK_CHECK_TRIPS} trips")
            new = self._run_on_rows(body, frame, active, carried)
            carried = _carried_update(carried, new, active, frame.size)
        for result, value in zip(op.results, carried):
            frame.set(result, value)

    def _waits_forever(self, op: Op, frame: Frame, why: str) -> DSLRuntimeError:
        """The error of a ``while`` loop that can never end (``op_while``)."""
        how = ("Programs that wait on memory run one at a time in program-id order, each "
               "to its end, so a program cannot wait for a later one" if self.waits_on_memory
               else "The programs run this loop side by side, and nothing else runs until "
               "they leave it")
        return DSLRuntimeError(
            f"{op.loc}: program {tuple(int(p) for p in frame.pid[0])} of kernel "
            f"'{self.fn.name}' waits forever in this loop: {why}. {how}\n{op.loc.excerpt()}")

    def _written_snapshot(self) -> list[bytes]:
        """The bytes of every tensor the kernel writes (a stuck loop's check)."""
        return [self.launch.tensors[name].buffer.tobytes()
                for name in sorted(self.fn.tensors_written())]

    def _stuck(self, before: tuple[list[Any], list[bytes]], carried: list[Any]) -> bool:
        """Whether one more trip left the loop where it was, its condition still true:
        the same carried values and the same memory."""
        values, memory = before
        same_values = all(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
                          if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) else a is b
                          for a, b in zip(values, carried))  # bit for bit: NaNs, signed zeros
        return same_values and (not memory or memory == self._written_snapshot())

    def _run_on_rows(self, region: Block, frame: Frame, rows: np.ndarray | None,
                     carried: list[Any], leading: tuple[Any, ...] = (),
                     key: tuple | None = None) -> list[np.ndarray]:
        """Run ``region`` on ``rows`` of ``frame`` (None: every row). Its arguments are
        ``leading`` (already for those rows), then ``carried`` (values for every row,
        restricted here); returns the values it yields. ``key``: the batch's
        (``Frame.key``), when its rows follow from the proof key alone."""
        inner = self._subframe(frame, rows, key)
        for arg, value in zip(region.args, leading):
            inner.set(arg, value)
        for arg, value in zip(region.args[len(leading):], carried):
            inner.set(arg, value if rows is None else take_rows(value, rows))
        self.run_block(region, inner)
        return [materialize(inner.get(v)) for v in region.yielded()]

    def _for_flattened(self, op: Op, frame: Frame, lo: np.ndarray, step: np.ndarray,
                       trips: np.ndarray, iv_dtype: np.dtype) -> None:
        body = op.body
        max_trip = int(trips.max()) if trips.size else 0
        if max_trip == 0:
            return
        lo64, step64 = _as_int64(lo), _as_int64(step)
        per_row = self._block_size(body, nested=True)
        pooled = self._poolable(body)
        # trips in windows: a loop of 2**40 trips allocated all its (trip, row) pairs at
        # once (a MemoryError before the body's first out-of-bounds store could say so)
        window = max(1, _FLAT_TRIP_PAIRS // max(1, trips.shape[0]))
        for first in range(0, max_trip, window):
            ks, rows = np.nonzero(np.arange(first, min(max_trip, first + window))[:, None]
                                  < trips[None, :])
            ks += first
            lo_r = lo64 if lo64.shape[0] == 1 else lo64[rows]
            st_r = step64 if step64.shape[0] == 1 else step64[rows]
            ivs = (lo_r + ks * st_r).astype(iv_dtype)
            chunk = self._chunk_rows(rows.shape[0], per_row)
            frames = []
            for start in range(0, rows.shape[0], chunk):
                sel = rows[start:start + chunk]
                inner = Frame(frame, sel, frame.pid[sel], pooled, None if frame.key is None
                              else (frame.key, id(op), first, start, start + chunk))
                inner.set(body.args[0], ivs[start:start + chunk])
                frames.append(inner)
            self._run_chunks(body, frames)

    def _for_dot_sums(self, op: Op, frame: Frame, lo: np.ndarray, step: np.ndarray,
                      steps: int, inits: list[Any], iv_dtype: np.dtype, dots: tuple[Op, ...]
                      ) -> None:
        """A loop that only accumulates dots (``dot_accumulation``), every row taking
        ``steps`` trips: the body's other ops run once for all (step, row) pairs as
        rows, then each dot runs its ``steps`` steps on those operands
        (``numerics.dot_steps``: the same dots, so the same bits). Chunks of rows
        bound the memory. A dot whose two operands are loads that rows share
        (``_shareable_loads``) reads each distinct tile once over all chunks
        (``lowering.tiles``) and, after the last chunk, multiplies those tiles for
        every row at once (``numerics.dot_steps_shared``, the same bits again)."""
        body = op.body
        size = frame.size
        if steps == 0:
            for result, value in zip(op.results, inits):
                frame.set(result, value)
            return
        lo64, step64 = lo.astype(np.int64).reshape(-1), step.astype(np.int64).reshape(-1)
        skip = {id(d) for d in dots} | {id(body.ops[-1])}
        per_row = steps * self._block_size(body, nested=True)
        chunk = max(1, self.chunk_elements // per_row)
        merged: list[np.ndarray | None] = [None] * len(dots)
        shareable = self._shareable_loads(op, dots)
        tables = {key: SharedTiles() for key in shareable}
        # (the body's index ops run once per chunk: replayed like a block's)
        replay = self.index_values if frame.key is not None and self.only is None else None
        # per dot, the chunks whose two operands are shared: (rows, tile numbers of each)
        deferred: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in dots]
        for start in range(0, size, chunk):
            sel = np.arange(start, min(size, start + chunk))
            n = sel.shape[0]
            flat = np.tile(sel, steps)  # step-major: row i of step s is s * n + i
            trip = np.repeat(np.arange(steps, dtype=np.int64), n)
            iv = (lo64 if lo64.shape[0] == 1 else lo64[flat]) + \
                trip * (step64 if step64.shape[0] == 1 else step64[flat])
            inner = Frame(frame, flat, frame.pid[flat], key=None if frame.key is None
                          else (frame.key, id(op), start, start + n))
            inner.set(body.args[0], iv.astype(iv_dtype))
            numbers: dict[int, np.ndarray] = {}
            for inner_op in body.ops:
                if id(inner_op) in skip:
                    continue
                if id(inner_op) in shareable:
                    found = self._load_distinct_tiles(inner_op, inner, tables[id(inner_op)])
                    if found is not None:
                        numbers[id(inner_op)] = found
                        continue
                if replay is not None and id(inner_op) in self.replayed_ops:
                    self._replay_op(inner_op, inner, replay)
                else:
                    HANDLERS[inner_op.kind](self, inner_op, inner)
            for j, (d, init) in enumerate(zip(dots, inits)):
                na, nb = (numbers.get(id(v.owner)) for v in (d.lhs, d.rhs))
                if na is not None and nb is not None:
                    deferred[j].append((sel, na, nb))
                    continue
                for v, got in ((d.lhs, na), (d.rhs, nb)):
                    if got is not None:  # its partner is not shared: every row's tile
                        inner.set(v, tables[id(v.owner)].tiles[got])
                a, b = self._full_pair(d.lhs, d.rhs, inner)
                a = np.broadcast_to(a, (steps * n,) + a.shape[1:])
                b = np.broadcast_to(b, (steps * n,) + b.shape[1:])
                value = dot_steps(a, b, self._rows_of(init, sel, size, d), steps)
                merged[j] = value if n == size else _merge_rows(merged[j], value, sel, size)
        for j, (d, init) in enumerate(zip(dots, inits)):
            if not deferred[j]:
                continue
            # every deferred chunk at once: the fewest, largest products
            parts = deferred[j]
            rows = parts[0][0] if len(parts) == 1 else np.concatenate([p[0] for p in parts])
            a_of, b_of = (np.concatenate([p[k].reshape(steps, -1) for p in parts], axis=1)
                          .reshape(-1) for k in (1, 2))
            value = dot_steps_shared(tables[id(d.lhs.owner)].tiles, a_of,
                                     tables[id(d.rhs.owner)].tiles, b_of,
                                     self._rows_of(init, rows, size, d), steps,
                                     self.workers, self._run_all,
                                     functools.partial(_dot_scratch, id(d)))
            merged[j] = value if rows.shape[0] == size else \
                _merge_rows(merged[j], value, rows, size)
        for result, value in zip(op.results, merged):
            frame.set(result, value)

    @staticmethod
    def _rows_of(init: Any, rows: np.ndarray, size: int, d: Op) -> np.ndarray:
        """A dot's initial accumulator on ``rows`` of the loop's ``size``."""
        acc = materialize(init)
        picked = acc if acc.shape[0] == 1 or rows.shape[0] == size else acc[rows]
        return np.broadcast_to(picked, (rows.shape[0],) + d.result.shape)

    def _shareable_loads(self, op: Op, dots: tuple[Op, ...]) -> frozenset[int]:
        """The loads of a dot loop's body that feed only one of its dots, as a 2-D
        operand: ``_for_dot_sums`` may read their distinct tiles only."""
        known = self.shareable.get(id(op))
        if known is None:
            top = {id(inner) for inner in op.body.ops}
            known = frozenset(
                id(v.owner) for d in dots for v in (d.lhs, d.rhs)
                if v.owner is not None and id(v.owner) in top and v.rank == 2 and
                HANDLERS.get(v.owner.kind) is Interpreter.op_load and
                len(v.users) == 1 and v.users[0] is d and
                sum(u is v for u in d.operands) == 1)
            self.shareable[id(op)] = known
        return known

    def _load_distinct_tiles(self, op: Op, frame: Frame, table: SharedTiles
                             ) -> np.ndarray | None:
        """A shareable load (``_shareable_loads``) read into ``table`` (only tiles no
        earlier chunk read), bounds-checked on every row first: each row's tile
        number. None to load it as usual (the pre-pass, a tensor the launch writes,
        or rows that do not repeat their tiles)."""
        if self.checking or op.tensor in self.stored:
            return None
        index = frame.get(op.index)
        mask = frame.get(op.mask) if op.mask is not None else None
        other = frame.get(op.other) if op.other is not None else None
        replay = self.index_values if frame.key is not None else None
        if replay is None:
            found = distinct_rows(index, mask, other)
        else:  # from the index values alone: the same in every launch of the proof key
            found = replay.derived((frame.key, id(op), "distinct rows"),
                                   lambda: distinct_rows(index, mask, other))
        if found is None:
            return None
        if not self.proved:
            check_bounds(self._site(op), index, mask, frame.pid)
        tensor: BoundTensor = frame.get(op.view)
        buffer = self._widened(op, tensor, frame.size) if id(op) in self.wide_loads \
            else tensor.buffer

        def read(rows: np.ndarray) -> np.ndarray:
            # The tables die with this loop, and this thread runs nothing else that
            # asks for their keys meanwhile: scratch buffers, not fresh ones (a fresh
            # megabyte of tiles costs more in page faults than reading them)
            key = ("tiles", id(op), table.reads)
            value = materialize(load(buffer, take_rows(index, rows),
                                     None if mask is None else take_rows(mask, rows), other,
                                     True, functools.partial(scratch, key + ("load",))))
            shape = (rows.shape[0],) + op.result.shape
            if value.shape == shape and value.flags.c_contiguous and \
                    not np.may_share_memory(value, buffer):
                return value  # already a tile per row, in memory of its own
            tiles = scratch(key + ("copy",), shape, value.dtype)
            tiles[...] = value
            return tiles

        return table.add(*found, read, prod(op.result.shape))

    def _for_sequential(self, op: Op, frame: Frame, lo: np.ndarray, step: np.ndarray,
                        trips: np.ndarray, inits: list[Any], iv_dtype: np.dtype) -> None:
        carried = [materialize(v) for v in inits]
        max_trip = int(trips.max()) if trips.size else 0
        lo64, step64 = lo.astype(np.int64).reshape(-1), step.astype(np.int64).reshape(-1)
        for k in range(max_trip):
            active = trips > k
            rows = None if bool(active.all()) else np.nonzero(active)[0]
            iv = lo64 + k * step64
            if rows is not None and iv.shape[0] > 1:
                iv = iv[rows]
            new = self._run_on_rows(op.body, frame, rows, carried, (iv.astype(iv_dtype),),
                                    None if frame.key is None else (frame.key, id(op), k))
            carried = _carried_update(carried, new, rows, frame.size)
        for result, value in zip(op.results, carried):
            frame.set(result, value)


@dataclass(frozen=True)
class _KernelFacts:
    """What the interpreter derives from a specialization's IR once, not per launch."""

    loaded: frozenset[str]
    stored: frozenset[str]
    index_slice: set[int] | None
    data_loads: frozenset[int]  # ids of the loads ``gather_slice`` put in the index slice
    gather_tensors: frozenset[str]  # the tensors they read
    # their elements per row are at most 1/16 of the kernel's largest block: the
    # pre-pass may take batches 16 times the run's
    small_data_loads: bool
    dying: dict[int, frozenset[int]]
    may_fail: bool  # runs checks (IO ops, ``RUNTIME_CHECKS``) that can fail mid-launch
    flat: FlatForm | None  # the kernel's flat form, when it has one (lowering.plan)
    wide_loads: frozenset[int]  # ids of the loads ``_dot_operand_loads`` names
    # the tensors ``while`` loops read (loads, atomics): when one shares memory with a
    # tensor the kernel writes (a spin lock, a flag another program sets), programs run
    # one at a time (``Interpreter.waits_on_memory``)
    waited_on: frozenset[str]
    # some op accesses memory at integer addresses (``dsl.host_memory``): it may
    # reach any tensor, and is checked as it runs, never by the pre-pass
    host_addresses: bool
    # ids of the index slice's pure ops, whose results launches of one proof key
    # replay (``lowering.index_replay``); empty when the kernel does not allow it
    replayed_ops: frozenset[int]
    # bounds proofs of earlier launches, by ``proof_key``, with the index values
    # launches of the key computed
    proofs: dict[tuple, tuple[bool, dict[str, list[tuple[int, int]]],
                              workers.ThreadingChoice, IndexValues]] = \
        dataclasses.field(default_factory=dict)
    # id of a ``for`` op -> its dots when it only accumulates dots (``dot_accumulation``)
    dot_loops: dict[int, tuple[Op, ...] | None] = dataclasses.field(default_factory=dict)
    # id of a dot loop -> the loads whose distinct tiles it may read (``_shareable_loads``)
    shareable: dict[int, frozenset[int]] = dataclasses.field(default_factory=dict)
    # launch plans by ``proof_key`` (None: the key's launches are interpreted)
    plans: dict[tuple, Plan | None] = dataclasses.field(default_factory=dict)
    # facts of the IR the interpreter derives when first needed (``Interpreter``'s
    # ``_only_addresses``, ``_stored_under_its_mask``, ``_block_size``, ``_poolable``)
    address_only: dict[int, bool] = dataclasses.field(default_factory=dict)  # value uid
    boxed_loads: dict[int, bool] = dataclasses.field(default_factory=dict)  # load id
    block_sizes: dict[tuple[int, bool], int] = dataclasses.field(default_factory=dict)
    nested_regions: dict[int, bool] = dataclasses.field(default_factory=dict)  # block id


_FACTS: weakref.WeakKeyDictionary[Function, _KernelFacts] = weakref.WeakKeyDictionary()


def _check_address_race(op: Op, kernel: str, addresses: np.ndarray, mask: np.ndarray | None,
                        pid: np.ndarray) -> None:
    """Two active lanes of one store at integer addresses writing the same address race
    (as two lanes of a store through a view do in a launch that reads what it writes)."""
    flat = addresses.reshape(-1)
    lanes = np.arange(flat.size) if mask is None else np.flatnonzero(mask.reshape(-1))
    if lanes.size < 2:
        return
    order = np.argsort(flat[lanes], kind="stable")
    ranked = flat[lanes][order]
    same = np.flatnonzero(ranked[1:] == ranked[:-1])
    if same.size == 0:
        return
    first, second = lanes[order[same[0]]], lanes[order[same[0] + 1]]
    per_row = prod(addresses.shape[1:])

    def where(lane: int) -> str:
        row, within = divmod(int(lane), per_row)
        return f"program id {tuple(int(p) for p in pid[min(row, pid.shape[0] - 1)])}, " \
               f"lane {within}"

    raise DataRaceError(
        f"{op.loc}: data race in kernel '{kernel}': two lanes store to address "
        f"{int(ranked[same[0]]):#x} through a pointer cast from an integer ({where(first)}; "
        f"{where(second)}) without an atomic\n{op.loc.excerpt()}")


def _waited_on(fn: Function) -> frozenset[str]:
    """The tensors a ``while`` loop reads (loads or atomically updates): if the launch
    writes one of them (or memory it shares), the loop's trips may wait for another
    program's write, which programs run side by side in lockstep would never make."""
    return frozenset(inner.tensor if not inner.defn.host_address else "<address>"
                     for op in fn.walk() if op.defn.conditional_loop
                     for region in op.regions for inner in walk_block(region)
                     if inner.defn.reads_memory)


def _runtime_offsets(op: Op) -> bool:
    """An extract_slice/insert_slice whose offsets are not all constants (constant
    ones are checked when the kernel compiles)."""
    return any(v.owner is None or v.owner.constant is None for v in op.offsets)


# Ops that check their operands as they run and may raise mid-launch (a slice out of
# its block, a gather index outside its axis, a value outside the histogram's bins,
# a while loop that cannot end), by kind: when the op can. A launch holding one keeps
# what it overwrites, to undo it (``may_fail``), and compiled-CPU mode, whose code
# does not check, interprets such a launch first (``lowering.cpu.run``).
RUNTIME_CHECKS: dict[str, Callable[[Op], bool]] = {
    "extract_slice": _runtime_offsets,
    "insert_slice": _runtime_offsets,
    "gather": lambda op: True,
    "histogram": lambda op: True,
    "while": lambda op: True,
    "load_address": lambda op: True,  # (each address is checked as it is used)
    "store_address": lambda op: True,
    "atomic_address": lambda op: True,
    "atomic_cas_address": lambda op: True,
}


def checks_at_run_time(fn: Function) -> bool:
    """Whether ``fn`` holds an op that ``RUNTIME_CHECKS`` says may raise as it runs."""
    return any(check(op) for op in fn.walk()
               if (check := RUNTIME_CHECKS.get(op.kind)) is not None)


def _facts(fn: Function) -> _KernelFacts:
    facts = _FACTS.get(fn)
    if facts is None:
        indices = index_slice(fn)
        data_loads: frozenset[int] = frozenset()
        if indices is None and (gathered := gather_slice(fn)) is not None:
            indices, data_loads = gathered
        may_fail = any(op.defn.effect is Effect.IO for op in fn.walk()) or \
            checks_at_run_time(fn)
        host_addresses = fn.host_addresses()
        facts = _KernelFacts(
            fn.tensors_read(), fn.tensors_written(), indices, data_loads,
            frozenset(op.tensor for op in fn.walk() if id(op) in data_loads),
            16 * sum(prod(op.result.shape) for op in fn.walk() if id(op) in data_loads)
            <= _max_block(fn.body, True),
            _last_uses(fn.body), may_fail,
            None if may_fail or data_loads else flat_form(fn, indices), _dot_operand_loads(fn),
            _waited_on(fn), host_addresses,
            replayed_ops(fn, indices, bool(data_loads), may_fail, host_addresses))
        _FACTS[fn] = facts
    return facts


def proof_key(launch: Launch, race_check: bool, full_race: bool) -> tuple:
    """What a bounds proof (and a launch plan) depends on: the grid, the race-check
    mode, every scalar and layout argument (bit for bit) and each tensor's element
    count and memory extent; not the tensors' contents or addresses."""
    parts: list[Any] = [launch.grid, race_check, full_race]
    for arg in launch.args:
        if isinstance(arg, np.generic):
            parts.append((arg.dtype.char, arg.tobytes()))
        elif isinstance(arg, (int, float, bool, np.ndarray)):
            value = np.asarray(arg)
            parts.append((value.dtype.char, value.tobytes()))
        else:  # a bound tensor
            parts.append((arg.view.numel, len(arg.buffer)))
    return tuple(parts)


def execute(launch: Launch, options: Options) -> None:
    """Run a launch: replay its plan when an earlier launch with the same proof key
    left one (``lowering.plan``), else interpret it, recording a plan on the way
    when the kernel is flat and this key has none yet."""
    facts = _facts(launch.function)
    key = None
    if facts.flat is not None and options.race_check != "full":
        race = options.race_check != "off"
        key = (race, launch.proof_hint) if launch.proof_hint is not None else \
            proof_key(launch, race, False)
        plan = facts.plans.get(key)
        if plan is not None and not _overlaps(launch.tensors, facts.loaded, facts.stored):
            plan.execute(launch)
            return
    interpreter = Interpreter(launch, options)
    record = key is not None and key not in facts.plans and interpreter.independent
    if record:
        assert facts.flat is not None
        through = launch.function.tensors_through_pointers()
        interpreter.recorder = Recorder(facts.flat, {
            name: t.buffer.shape[0] for name, t in launch.tensors.items() if name not in through})
    interpreter.run()
    if record and interpreter.recorder is not None and not interpreter.race_by_value:
        if len(facts.plans) >= PROOFS_PER_KERNEL:
            facts.plans.pop(next(iter(facts.plans)))
        facts.plans[key] = interpreter.recorder.build()


def replay_plan(launch: Launch, options: Options) -> Plan | None:
    """The plan ``execute`` would replay for a launch with ``launch``'s proof hint and
    function, whatever its buffers: None when there is none, or when ``execute``
    would interpret such a launch anyway (full race checks; a tensor both loaded
    and stored). The caller checks per launch that stored tensors share no memory
    with the others, as ``execute`` does."""
    facts = _facts(launch.function)
    if facts.flat is None or launch.proof_hint is None or options.race_check == "full" \
            or facts.loaded & facts.stored:
        return None
    return facts.plans.get((options.race_check != "off", launch.proof_hint))


def _dot_operand_loads(fn: Function) -> frozenset[int]:
    """Loads of float16/bfloat16 values read only as ``dot`` operands: ``dot``
    multiplies in float32, so these may read a float32 copy of their tensor
    (``Interpreter._widened``) instead of converting every tile they load."""
    wide = set()
    for op in fn.walk():
        if HANDLERS.get(op.kind) is not Interpreter.op_load:
            continue
        dtype = op.result.dtype
        if not dtype.is_float or dtype.np.itemsize != 2 or not op.result.has_uses:
            continue
        if all(HANDLERS[user.kind] is Interpreter.op_dot and
               op.result is not user.require("acc") for user in op.result.users):
            wide.add(id(op))
    return frozenset(wide)


def _dot_scratch(dot_id: int, role: Hashable, shape: tuple[int, ...], dtype: np.dtype
                 ) -> np.ndarray:
    """``dot_steps_shared``'s buffers for the dot ``dot_id``: this thread's scratch."""
    return scratch(("dot", dot_id, role), shape, dtype)


def dot_accumulation(op: Op) -> tuple[Op, ...] | None:
    """The dots of a ``for`` loop whose every carried value is only a dot's
    accumulator (``acc = dot(a, b, acc)``), one dot per carried value, in a body
    without nested regions or effects other than loads; None for any other loop.
    Such a loop's steps depend on each other only through the accumulators, so the
    interpreter computes every step's operands at once (``_for_dot_sums``)."""
    body = op.body
    carried, yielded = body.args[1:], body.yielded()
    if not carried or len(yielded) != len(carried):
        return None
    top = {id(inner) for inner in body.ops}
    dots = []
    for arg, out in zip(carried, yielded):
        users = arg.users
        if len(users) != 1 or HANDLERS[users[0].kind] is not Interpreter.op_dot:
            return None
        d = users[0]
        if d.result.rank != 2:  # (the batched tiles of dot_steps are 2-D dots')
            return None
        if id(d) not in top or d.require("acc") is not arg or out is not d.result \
                or sum(v is arg for v in d.operands) != 1 or len(d.result.users) != 1:
            return None
        dots.append(d)
    for inner in body.ops[:-1]:
        if inner.regions or inner.defn.effect not in (Effect.PURE, Effect.READ):
            return None
    return tuple(dots)


def _last_uses(block: Block) -> dict[int, frozenset[int]]:
    """For each elementwise op, the values defined in its block whose last use it is
    (a use inside a nested region counts at the op that owns the region), where a use
    of a value that may share a value's memory counts as a use of it: a view of it
    (``OpDef.view``), or a result of a region op that reads it (a loop of no trips
    gives back its initial values, a region may yield a value from outside). The op
    may overwrite such a value in place (``Interpreter._reusable``): that must not
    change a view still to be read (a reshaped temporary read after the op that
    overwrote it gave the op's result, found in session 28)."""
    dying: dict[int, frozenset[int]] = {}
    local = {r.uid for op in block.ops for r in op.results}
    owner: dict[int, int] = {}  # union-find over the values that may share memory

    def find(uid: int) -> int:
        while owner.get(uid, uid) != uid:
            uid = owner[uid]
        return uid

    def join(uids: set[int]) -> None:
        roots = {find(u) for u in uids}
        first = min(roots)
        for root in roots:
            owner[root] = first

    uses: list[set[int]] = []
    for op in block.ops:
        used = {v.uid for v in op.operands}
        for region in op.regions:
            used |= {v.uid for nested in walk_block(region) for v in nested.operands}
        uses.append(used)
        if op.defn.view:
            join({op.require("source").uid, *(r.uid for r in op.results)})
        elif op.regions and op.results:
            join(used | {r.uid for r in op.results})
    seen: set[int] = set()  # the memory (union-find roots) later ops read
    for op, used in zip(reversed(block.ops), reversed(uses)):
        for region in op.regions:
            dying.update(_last_uses(region))
        if op.defn.is_elementwise:
            dying[id(op)] = frozenset(u for u in used if u in local and find(u) not in seen)
        seen |= {find(u) for u in used}
    return dying


def _merge_rows(merged: np.ndarray | None, value: np.ndarray, rows: np.ndarray, size: int
                ) -> np.ndarray:
    """``value`` (for ``rows``) written into a result for all ``size`` rows."""
    if merged is None:
        merged = np.zeros((size,) + value.shape[1:], value.dtype)
    shape = (size,) + tuple(max(a, b) for a, b in zip(merged.shape[1:], value.shape[1:]))
    if merged.shape != shape:
        merged = np.array(np.broadcast_to(merged, shape))
    merged[rows] = np.broadcast_to(value, (rows.shape[0],) + shape[1:])
    return merged


def _carried_update(carried: list[np.ndarray], new: list[np.ndarray], rows: np.ndarray | None,
                    size: int) -> list[np.ndarray]:
    """Loop-carried values after a step that ran on ``rows`` (None: every row)."""
    if rows is None:
        return new
    return [_scatter_rows(old, value, rows, size) for old, value in zip(carried, new)]


def _scatter_rows(old: np.ndarray, new: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    shape = (size,) + tuple(max(a, b) for a, b in zip(old.shape[1:], new.shape[1:]))
    out = np.array(np.broadcast_to(old, shape))
    out[rows] = new
    return out


def _row_uniform(x: Any) -> np.ndarray | None:
    """The per-row values of a value that is uniform across the lanes of each row
    (shape (rows, 1, ..., 1)), else None."""
    if isinstance(x, np.ndarray) and x.ndim >= 2 and x.size == x.shape[0]:
        return x.reshape(x.shape[0])
    return None


def _overlaps(tensors: dict[str, BoundTensor], loaded: frozenset[str],
              stored: frozenset[str]) -> bool:
    """True when some stored tensor may share memory with a loaded one (or is loaded)."""
    for s in stored:
        for name in loaded:
            if name == s or np.may_share_memory(tensors[s].buffer, tensors[name].buffer):
                return True
    return False


# The interpreter's handler for every registered op kind (``dsl.opdefs.OPS``);
# tests/test_registry.py fails when one is missing.
HANDLERS: dict[str, Callable[[Interpreter, Op, Frame], None]] = {
    **{kind: Interpreter.elementwise for kind, d in OPS.items() if d.is_elementwise},
    "add": Interpreter.op_add,
    "mul": Interpreter.op_mul,
    "lt": Interpreter.op_lt,
    "and": Interpreter.op_and,
    "where": Interpreter.op_where,
    "const": Interpreter.op_const,
    "arange": Interpreter.op_arange,
    "program_id": Interpreter.op_program_id,
    "num_programs": Interpreter.op_num_programs,
    "cast": Interpreter.op_cast,
    "bitcast": Interpreter.op_bitcast,
    "broadcast": Interpreter.op_broadcast,
    "expand_dims": Interpreter.op_expand_dims,
    "reshape": Interpreter.op_reshape,
    "permute": Interpreter.op_permute,
    "cat": Interpreter.op_cat,
    "join": Interpreter.op_join,
    "split": Interpreter.op_split,
    "flip": Interpreter.op_flip,
    "extract_slice": Interpreter.op_extract_slice,
    "insert_slice": Interpreter.op_insert_slice,
    "gather": Interpreter.op_gather,
    "histogram": Interpreter.op_histogram,
    "inline_asm": Interpreter.op_inline_asm,
    "sort": Interpreter.op_sort,
    "randint": Interpreter.op_randint,
    "randint4x": Interpreter.op_randint4x,
    "rand": Interpreter.op_rand,
    "randn": Interpreter.op_randn,
    "dot": Interpreter.op_dot,
    "arg_reduce": Interpreter.op_arg_reduce,
    "scan": Interpreter.op_scan,
    "reduce": Interpreter.op_reduce,
    "load": Interpreter.op_load,
    "store": Interpreter.op_store,
    "atomic": Interpreter.op_atomic,
    "atomic_cas": Interpreter.op_atomic_cas,
    "load_address": Interpreter.op_load_address,
    "store_address": Interpreter.op_store_address,
    "atomic_address": Interpreter.op_atomic_address,
    "tensor_address": Interpreter.op_tensor_address,
    "atomic_cas_address": Interpreter.op_atomic_cas_address,
    "for": Interpreter.op_for,
    "if": Interpreter.op_if,
    "reduce_fn": Interpreter.op_reduce_fn,
    "scan_fn": Interpreter.op_scan_fn,
    "hint": Interpreter.op_hint,
    "print": Interpreter.op_print,
    "device_assert": Interpreter.op_device_assert,
    "while": Interpreter.op_while,
    "yield": Interpreter.op_yield,
}


def run(launch: Launch, options: Options | None = None) -> None:
    """Execute a prepared launch with NumPy."""
    execute(launch, options or Options.from_env())
