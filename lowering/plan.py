"""Launch plans: a repeated launch of a flat kernel without the interpreter's per-op work.

Most kernels users launch in a loop are *flat*: every load and store reads or writes
one contiguous run of memory per launch (``idx = start + arange(0, BLOCK)``, masked
with ``idx < n``, over a tile loop or over programs), and everything computed from
the loaded data is elementwise. For such a kernel, once the interpreter has proved a
launch in bounds, every later launch with the same proof key (grid, scalar and layout
arguments, tensor sizes; ``Interpreter.proof_key``) makes exactly the same NumPy
calls on different buffers: slice each input run, apply the elementwise ops, write
each output run. A ``Plan`` is that list of calls, compiled once per key.

Data flow:
1. ``flat_form(fn)`` (once per specialization, static): decides whether the IR is
   flat and lists the *data ops* (everything outside the index slice of
   ``lowering.prepass``, plus the loads and stores) in program order.
2. The first launch of a key runs in the interpreter with a ``Recorder`` attached
   (``Interpreter.recorder``): before each data op runs, it captures what the plan
   needs and cannot recompute cheaply: each access's offset and mask (lazy
   ``Lanes``/``LaneMask``), and the value of every index-side operand a data op reads
   (a mask used in a ``where``, an ``arange`` converted to float...).
3. After that launch succeeds, ``Recorder.build`` turns the capture into a ``Plan``:
   each access becomes a ``(lo, count)`` slice of its tensor's flat buffer (the
   buffer itself when the run is all of it and every launch of the plan has a
   buffer of that length: not pointer-addressed), each
   captured operand a constant array, each data op one line of a generated Python
   function (``Plan.source``; register ``k`` is the local ``r{k}``). Only the lanes
   some store writes are computed: every data op is lane-wise, so the padding lanes
   past them cannot reach memory, and a load whose run covers them is a view of its
   buffer. Any surprise (an access that is not one contiguous run, an op that ran
   more than once because the launch was split into chunks) gives no plan; the key
   is then always interpreted.
4. ``Plan.execute(launch)`` runs that function on the launch's buffers;
   ``Plan.run(scalars, buffers)`` runs it on buffers a caller picked itself (a
   launch recipe's replay, ``dsl.launch_cache.LaunchRecipe.direct``).

Exactness: the lines call the same functions the interpreter's handlers call
(``Elementwise.numpy`` in the op's compute dtype, ``numerics.cast_array``, the same
padding of masked-off load lanes with ``other``), on the same elements laid out as
one flat run (row-major over the batch's rows, which is the interpreter's
``(rows, BLOCK)`` layout flattened), so results are bit-identical; the test suite
runs every launch twice to check it. Bounds and races were proved for the key
before the plan exists; a plan runs only when no stored tensor shares memory with a
loaded one (checked per launch), so reading inputs as views is safe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dsl.ir import Function, Op, Value
from dsl.numerics import FP_IGNORE_HOOKS, cast_array, ignore_fp_errors
from dsl.opdefs import Effect
from lowering.lanes import LaneMask, materialize
from lowering.memory import _contiguous_run

if TYPE_CHECKING:
    from dsl.jit import Launch



def _is_load(op: Op) -> bool:
    return op.defn.effect is Effect.READ


def _is_store(op: Op) -> bool:
    return op.defn.effect is Effect.WRITE


def _is_access(op: Op) -> bool:
    return op.defn.reads_memory or op.defn.writes_memory


def _is_counted_loop(op: Op) -> bool:
    """A ``for`` without carried values: its iterations are independent rows."""
    d = op.defn
    return d.regions == 1 and not d.conditional_loop and not d.isolated_regions \
        and not op.inits


@dataclass(frozen=True)
class FlatForm:
    """The static part of a flat kernel: its data ops in program order, the block
    holding its accesses, and the data ops outside it (which must stay uniform)."""

    ops: tuple[Op, ...]
    produced: frozenset[int]  # uids of values data ops produce
    params: dict[int, int]  # uid of a parameter value -> its position in fn.params
    outer: frozenset[int]  # ids of data ops outside the access block


def flat_form(fn: Function, index_slice: set[int] | None) -> FlatForm | None:
    """The flat form of ``fn``, or None when it is not flat (see the module doc)."""
    if index_slice is None:
        return None
    loops = [op for op in fn.body.ops if op.regions]
    if len(loops) > 1 or (loops and not _is_counted_loop(loops[0])):
        return None
    inner = loops[0].body.ops if loops else []
    if any(op.regions for op in inner):
        return None
    accesses_outer = [op for op in fn.body.ops if _is_access(op)]
    accesses_inner = [op for op in inner if _is_access(op)]
    if accesses_outer and accesses_inner:
        return None
    ops: list[Op] = []
    outer: set[int] = set()
    for block_ops, is_access_block in ((fn.body.ops, not accesses_inner),
                                       (inner, bool(accesses_inner))):
        for op in block_ops:
            if op.regions or op.defn.terminator:
                continue
            if _is_load(op) or _is_store(op):
                if (op.value if _is_store(op) else op.result).type.rank != 1:
                    return None
            elif _is_access(op):
                return None  # atomics: programs interact
            elif id(op) in index_slice:
                continue
            elif not (op.defn.is_elementwise or op.defn.constant or op.kind in _EMITTERS) \
                    or any(r.type.rank > 1 for r in op.results):
                return None
            ops.append(op)
            if not is_access_block:
                outer.add(id(op))
    if not any(_is_store(op) for op in ops):
        return None
    produced = frozenset(r.uid for op in ops for r in op.results)
    params = {p.value.uid: i for i, p in enumerate(fn.params)}
    return FlatForm(tuple(ops), produced, params, frozenset(outer))


def _inputs(op: Op) -> list[Value]:
    """The operands of a data op whose values the plan computes or captures (a
    memory op's tensor, index, offset and mask are replaced by its run)."""
    if _is_load(op):
        other = op.other
        return [] if other is None else [other]
    if _is_store(op):
        return [op.value]
    return list(op.operands)


class Recorder:
    """Captures, during one interpreted launch, what ``build`` needs (module doc)."""

    def __init__(self, form: FlatForm, whole: dict[str, int] | None = None) -> None:
        self.form = form
        # tensor -> its buffer's length, for the tensors whose buffers have that
        # length in every launch the plan may run (not pointer-addressed): a run
        # covering all of one is the buffer itself, not a slice of it
        self.whole = whole or {}
        self.wanted = {id(op) for op in form.ops}
        self.seen: dict[int, int] = {}
        self.values: dict[int, np.ndarray] = {}  # captured operand values by uid
        self.rows: dict[int, int] = {}  # id(op) -> rows of the batch it ran on
        # id(access) -> (lo, count) of its contiguous run; count -1: every lane reads
        # element lo (a broadcast scalar operand)
        self.runs: dict[int, tuple[int, int] | None] = {}
        self.block = 0  # lanes per row of the access block
        self.lengths: set[int] = set()  # block lengths of the accesses seen

    def before(self, op: Op, frame: Any) -> None:
        """Called by the interpreter before it runs ``op`` on ``frame``."""
        if id(op) not in self.wanted:
            return
        self.seen[id(op)] = self.seen.get(id(op), 0) + 1
        self.rows[id(op)] = frame.size
        form = self.form
        for v in _inputs(op):
            if v.uid not in form.produced and v.uid not in form.params \
                    and v.uid not in self.values:
                self.values[v.uid] = np.array(materialize(frame.get(v)))  # a copy
        if _is_access(op):
            offset = frame.get(op.offset)
            mask = frame.get(op.mask) if op.mask is not None else None
            if isinstance(mask, LaneMask) and mask.all_true():
                mask = None
            length = op.value.shape[0] if _is_store(op) else op.result.shape[0]
            self.lengths.add(length)
            self.block = length
            if _is_load(op) and mask is None and isinstance(offset, np.ndarray) \
                    and offset.size == 1:  # the interpreter's scalar load
                self.runs[id(op)] = (int(offset.reshape(-1)[0]), -1)
                return
            run = _contiguous_run(offset, mask, rows=frame.size)
            self.runs[id(op)] = run if run is not None and \
                getattr(offset, "length", None) == length else None

    def build(self) -> Plan | None:
        """The plan of the recorded launch, or None when it is not one flat pass."""
        form = self.form
        if any(self.seen.get(id(op)) != 1 for op in form.ops):
            return None  # an op never ran (an empty loop) or ran per chunk
        if any(run is None for run in self.runs.values()):
            return None
        if len(self.lengths) != 1:
            return None  # blocks of different lengths: lanes do not line up by position
        access_rows = {self.rows[id(op)] for op in form.ops if _is_access(op)}
        if len(access_rows) != 1:
            return None
        rows = access_rows.pop()
        return _compile(form, self, rows, self.block)


def _flat(value: np.ndarray, rows: int, block: int) -> np.ndarray | None:
    """A captured (rows or 1, *block) value as the plan holds it: shape (1,) when it
    is the same in every lane, else (rows * block,) in row-major order; None when its
    shape is neither."""
    if value.size == 1:
        return value.reshape(1)
    per_row = value.reshape(value.shape[0], -1) if value.ndim else value.reshape(1, 1)
    if per_row.shape[0] not in (1, rows) or per_row.shape[1] not in (1, block):
        return None
    return np.ascontiguousarray(np.broadcast_to(per_row, (rows, block))).reshape(-1)


class _Source:
    """The Python function a plan compiles to, written line by line: register ``k`` is
    the local ``r{k}``, tensor ``t`` the local ``b{t}``; every object a line uses is
    bound by ``bind`` into the function's globals."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.text = ""  # the whole function, once ``function`` compiled it
        self.setup: list[str] = []  # its scalar registers' lines, likewise
        self.namespace: dict[str, Any] = {}  # its globals, likewise
        self.names: dict[str, Any] = {"ignore_fp_errors": ignore_fp_errors,
                                      "asarray": np.asarray, "empty": np.empty,
                                      "cast_array": cast_array}

    def bind(self, obj: Any, prefix: str) -> str:
        name = f"{prefix}{len(self.names)}"
        self.names[name] = obj
        return name

    def line(self, text: str) -> None:
        self.lines.append(text)

    def function(self, params: list[tuple[int, str]], tensors: int) -> Callable[..., None]:
        """The compiled function ``plan(scalars, buffers)``; ``params`` gives each
        scalar's register and the name of its bound dtype."""
        self.setup = []
        if params:
            self.setup.append(f"{''.join(f's{i}, ' for i in range(len(params)))}= scalars")
            self.setup += [f"r{reg} = asarray([s{i}], {dtype})"
                           for i, (reg, dtype) in enumerate(params)]
        self.namespace = dict(self.names)
        if FP_IGNORE_HOOKS is not None:
            self.namespace["fp_set"], self.namespace["fp_reset"], \
                self.namespace["fp_ignore"] = FP_IGNORE_HOOKS
        head = ["def plan(scalars, buffers):"]
        if tensors:
            head.append(f"    {''.join(f'b{t}, ' for t in range(tensors))}= buffers")
        self.text = "\n".join(head + plan_lines(self.setup, self.lines)) + "\n"
        namespace = dict(self.namespace)
        exec(compile(self.text, "<launch plan>", "exec"), namespace)
        return namespace["plan"]


def plan_lines(setup: list[str], body: list[str], indent: str = "    ") -> list[str]:
    """A plan's statements inside a function whose locals ``b0``, ``b1``, ... hold its
    buffers and ``scalars`` its scalars: ``setup`` (the scalar registers), then
    ``body`` (the data ops) with floating-point errors ignored, as
    ``ignore_fp_errors`` does (the same state, set without its method calls)."""
    lines = [f"{indent}{line}" for line in setup]
    inner = [f"{indent}    {line}" for line in body] or [f"{indent}    pass"]
    if FP_IGNORE_HOOKS is None:  # pragma: no cover - NumPy < 2
        return [*lines, f"{indent}with ignore_fp_errors():", *inner]
    return [*lines, f"{indent}token = fp_set(fp_ignore)", f"{indent}try:", *inner,
            f"{indent}finally:", f"{indent}    fp_reset(token)"]


@dataclass
class Plan:
    """A flat launch as one generated Python function (``source``) over registers:
    register ``k`` holds one value (shape (1,) or (total,)); ``params`` are loaded
    from the launch's scalar arguments first."""

    source: str  # the generated function, for reading and debugging
    function: Callable[[list[Any], list[np.ndarray]], None]
    # the function's pieces, for a caller that generates code around them
    # (``dsl.hot_launch``, through ``statements``): ``plan_lines(setup, body)`` in
    # ``namespace``
    setup: tuple[str, ...]
    body: tuple[str, ...]
    namespace: dict[str, Any]
    params: list[tuple[int, int]]  # (register, position in launch.args)
    tensors: list[int]  # positions in launch.args of the tensors, by plan tensor index
    ends: list[int]  # per plan tensor: one past the last element its accesses touch

    def statements(self) -> list[str]:
        """The function's statements, indented for a function body: run where the
        locals ``b0``, ``b1``, ... hold the buffers and ``scalars`` the scalars, with
        ``namespace``'s names as globals."""
        return plan_lines(list(self.setup), list(self.body))

    def execute(self, launch: Launch) -> None:
        """Replay the plan on a prepared launch."""
        args = launch.args
        self.run([args[position] for _, position in self.params],
                 [args[position].buffer for position in self.tensors])

    def run(self, scalars: list[Any], buffers: list[np.ndarray]) -> None:
        """Replay the plan on ``scalars`` (the launch arguments ``params`` names, in
        that order, converted to their NumPy types) and ``buffers`` (the flat kernel
        buffers of the tensors ``tensors`` names, in that order)."""
        self.function(scalars, buffers)


def _run(tensor: int, lo: int, count: int, whole: int | None) -> str:
    """Elements ``lo`` to ``lo + count`` of plan tensor ``tensor``'s buffer, as an
    expression: the buffer itself when that is all of it (``whole``, its length in
    every launch of the plan, or None when that varies)."""
    return f"b{tensor}" if lo == 0 and count == whole else f"b{tensor}[{lo}:{lo + count}]"


def _compile(form: FlatForm, rec: Recorder, rows: int, block: int) -> Plan | None:
    # Only the lanes some store writes are computed: every data op is lane-wise, so
    # the padding lanes past them cannot reach memory, and a load whose run covers
    # them all is a view of its buffer instead of a padded copy.
    total = max(rec.runs[id(op)][1] for op in form.ops if _is_store(op))  # type: ignore[index]
    if total > rows * block:
        return None  # not one lane per element of the (rows, block) batch
    registers: dict[int, int] = {}
    dtypes: dict[int, np.dtype] = {}  # each register's dtype, known while compiling
    params: list[tuple[int, int]] = []
    uniform: set[int] = set()  # registers known to hold shape (1,)
    tensor_positions: list[int] = []
    tensor_index: dict[str, int] = {}
    src = _Source()
    fills: dict[int, np.ndarray] = {}  # registers holding fixed values, for ``other``
    ends: dict[int, int] = {}  # plan tensor -> one past the last element accessed

    def reg_of(v: Value) -> int | None:
        reg = registers.get(v.uid)
        if reg is not None:
            return reg
        reg = registers[v.uid] = len(registers)
        if v.uid in form.params:
            params.append((reg, form.params[v.uid]))
            dtypes[reg] = np.dtype(v.dtype.np)
            uniform.add(reg)
            return reg
        captured = rec.values.get(v.uid)
        if captured is None:
            return None
        flat = _flat(captured, rows, block)
        if flat is None:
            return None
        flat = flat[:total]
        src.line(f"r{reg} = {src.bind(flat, 'k')}")
        dtypes[reg] = flat.dtype
        fills[reg] = flat
        if flat.shape[0] == 1:
            uniform.add(reg)
        return reg

    uses: dict[int, int] = {}  # uid -> how many data ops read the value
    for op in form.ops:
        for v in _inputs(op):
            uses[v.uid] = uses.get(v.uid, 0) + 1
    # (register, line index, call) of the last line when it is ``r{k} = call``, a
    # ufunc in the result dtype: a store of all of ``r{k}`` right after it, its only
    # reader, has the ufunc write into the run (``out=``) instead of a copy
    last_call: tuple[int, int, str, bool] | None = None
    for op in form.ops:
        previous, last_call = last_call, None
        ins = [reg_of(v) if v.uid not in form.produced else registers[v.uid]
               for v in _inputs(op)]
        if any(r is None for r in ins):
            return None
        if id(op) in form.outer and not all(r in uniform for r in ins):
            return None  # a per-row value outside the access block
        if _is_access(op):
            name = op.tensor
            if name not in tensor_index:
                tensor_index[name] = len(tensor_positions)
                tensor_positions.append(form.params[op.view.uid])
            run = rec.runs[id(op)]
            assert run is not None
            lo, count = run
            t = tensor_index[name]
            ends[t] = max(ends.get(t, 0), lo + max(count, 1))
            whole = rec.whole.get(name)
            if _is_store(op):
                if previous is not None and previous[0] == ins[0] and count == total \
                        and uses[op.value.uid] == 1 and ins[0] not in uniform:
                    # NumPy's ufuncs handle overlap of ``out`` with their inputs, so
                    # this equals computing the value and then copying it in
                    # (a true ufunc takes ``out`` by position: ~40 ns less per call
                    # than the keyword, a tenth of a 1K add)
                    target = _run(t, lo, count, whole)
                    src.lines[previous[1]] = f"{previous[2][:-1]}, " \
                        f"{target if previous[3] else 'out=' + target})"
                    continue
                value = f"r{ins[0]}[0]" if ins[0] in uniform else f"r{ins[0]}[:{count}]"
                src.line(f"b{t}[{lo}:{lo + count}] = {value}")
                continue
            out = registers[op.result.uid] = len(registers)
            dtypes[out] = np.dtype(op.result.dtype.np)
            if count == -1:  # every lane reads element lo
                src.line(f"r{out} = b{t}[{lo}:{lo + 1}]")
                uniform.add(out)
                continue
            if count >= total:
                src.line(f"r{out} = {_run(t, lo, total, whole)}")
                continue
            fill = None
            if ins:
                fill = fills.get(ins[0])  # (1,) or, lane by lane, (total,)
                if fill is None:
                    return None  # an ``other`` computed from data: not planned
            pad = "0" if fill is None else src.bind(
                fill[count:] if fill.shape[0] > 1 else fill, "k")
            src.line(f"r{out} = empty({total}, {src.bind(dtypes[out], 'd')})")
            src.line(f"r{out}[:{count}] = b{t}[{lo}:{lo + count}]")
            src.line(f"r{out}[{count}:] = {pad}")
            continue
        out = registers[op.result.uid] = len(registers)
        result = dtypes[out] = np.dtype(op.result.dtype.np)
        if op.defn.constant:
            value = np.full(1, op.constant, dtype=result)
            src.line(f"r{out} = {src.bind(value, 'k')}")
            fills[out] = value
            uniform.add(out)
            continue
        if all(r in uniform for r in ins):
            uniform.add(out)
        emitted = _emit_data_op(src, op, ins, out, [dtypes[r] for r in ins])
        if emitted is not None:
            last_call = (out, len(src.lines) - 1, *emitted)
    function = src.function([(reg, src.bind(dtypes[reg], "d")) for reg, _ in params],
                            len(tensor_positions))
    return Plan(src.text, function, tuple(src.setup), tuple(src.lines), src.namespace, params,
                tensor_positions,
                [ends[t] for t in range(len(tensor_positions))])


def _emit_data_op(src: _Source, op: Op, ins: list[int], out: int,
                  operand_dtypes: list[np.dtype]) -> tuple[str, bool] | None:
    """The line(s) computing a non-access data op: as the interpreter's handler does
    (``Interpreter.elementwise``, ``op_cast``; broadcasts and hints alias). Returns
    the call when it wrote the single line ``r{out} = call`` with a ufunc whose
    result has the op's dtype (a following store may direct it), and whether that
    callable takes its output by position (a NumPy ufunc of as many inputs with one
    output); else None."""
    result = np.dtype(op.result.dtype.np)
    args = ", ".join(f"r{r}" for r in ins)
    emit = _EMITTERS.get(op.kind)
    if emit is not None:
        src.line(emit(src, op, ins[0], out))
        return None
    opdef = op.defn.elementwise
    assert opdef is not None
    ufunc = opdef.ufunc if op.result.dtype == op.compute_dtype else None
    if ufunc is not None and len(ins) in (1, 2):
        # the registry's ufunc where the op is exactly one and keeps the operand
        # dtype (the interpreter's ``out=`` path); its dtype is known from the
        # operands', so the conversion is written only where it is needed
        with ignore_fp_errors():
            produced = ufunc(*[np.zeros(1, d) for d in operand_dtypes]).dtype
        call = f"{src.bind(ufunc, 'f')}({args})"
        src.line(f"r{out} = {call}")
        if produced != result:
            src.line(f"r{out} = r{out}.astype({src.bind(result, 'd')})")
            return None
        return call, isinstance(ufunc, np.ufunc) and ufunc.nin == len(ins) and ufunc.nout == 1
    # else its ``numpy`` function in the compute dtype, converted to the result dtype
    fn, dtype, want = src.bind(opdef.numpy, "f"), src.bind(op.compute_dtype, "d"), \
        src.bind(result, "d")
    src.line(f"r{out} = asarray({fn}({args}, dtype={dtype}))")
    src.line(f"if r{out}.dtype != {want}: r{out} = r{out}.astype({want})")
    return None


def _alias_line(src: _Source, op: Op, source: int, out: int) -> str:
    return f"r{out} = r{source}"  # a (1,) or (total,) register broadcasts as it is


def _cast_line(src: _Source, op: Op, source: int, out: int) -> str:
    return f"r{out} = cast_array(r{source}, {src.bind(op.result.dtype, 'd')})"


# The non-elementwise kinds a flat kernel's data ops may have, and the line each
# compiles to (elementwise kinds go through their registry record; constants become
# fixed registers).
_EMITTERS: dict[str, Callable[[_Source, Op, int, int], str]] = {
    "cast": _cast_line,
    "broadcast": _alias_line,
    "hint": _alias_line,
}
