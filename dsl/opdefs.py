"""The op registry: one record per IR op kind, structural and elementwise alike.

Every kind the IR can hold is an ``OpDef`` in ``OPS``; ``dsl.ir.Op`` refuses any
other. A record says everything the compiler knows about its kind:

- ``signature``: the operands by role name (``view index offset [mask other]``:
  required roles, an optional group present together or not at all, a variadic
  tail). ``Op`` derives its named accessors (``op.mask``, ``op.value``, ...) and
  ``op.masked``-style facts from it, so no pass reads an operand by position.
- ``effect``: ``PURE`` (may be folded, deduplicated, deleted when unused), ``READ``
  (reads tensor memory: deletable when unused, never merged), ``WRITE`` (stores),
  ``UPDATE`` (atomics: read and write), ``IO`` (device_print, device_assert),
  ``CONTROL`` (loops and terminators).
- ``check``: the typing rule, as the invariant the verifier enforces on every op
  of the kind (result dtype and shape from the operands and attributes).
- ``index_roles``: the operands that decide *where* the op touches memory, or how
  often a loop runs; the interpreter's bounds pre-pass follows only these.
- ``lanewise``: lane i of the result is computed from lane i of every operand
  (used to prove that masked-off lanes of a load are never observed). ``where`` is
  conservatively not: it passes lanes through without computing on them.
- ``elementwise``: for elementwise kinds, the NumPy meaning (``dsl.numerics``) and
  the Triton spelling, shared by the interpreter, the constant folder and the code
  generator.

Backends own the rest: each keeps a handler table keyed by kind (the interpreter's
``lowering.interpreter.HANDLERS``, the code generator's
``lowering.triton_codegen.EMITTERS``, the UB model's ``lowering.ub.UB_RULES``), and
``tests/test_registry.py`` fails when a table lacks a registered kind. Adding an op
is one record here plus one handler per table (README, "How to add an op").

This module imports nothing from ``dsl.ir`` at run time: ``check`` hooks receive
ops and read them through their public attributes.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dsl import dtypes as dt
from dsl import numerics as nm
from dsl.dtypes import DType

if TYPE_CHECKING:
    from dsl.ir import Op


class Effect(enum.Enum):
    """What executing an op does besides producing its results."""

    PURE = "pure"
    READ = "read"
    WRITE = "write"
    UPDATE = "update"  # read-modify-write (atomics): reads and writes tensor memory
    IO = "io"  # prints or checks: kept and run in order, never merged or removed
    CONTROL = "control"


@dataclass(frozen=True)
class Signature:
    """Operand roles of a kind: ``required`` roles, then an ``optional`` group (all
    present or all absent), then any number of ``variadic`` operands."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    variadic: str | None = None

    @staticmethod
    def parse(text: str) -> Signature:
        """``"view index offset [mask other]"`` or ``"start end step *inits"``."""
        required: list[str] = []
        optional: list[str] = []
        variadic = None
        in_group = False
        for word in text.split():
            opens, closes = word.startswith("["), word.endswith("]")
            name = word.strip("[]")
            in_group = in_group or opens
            if name.startswith("*"):
                variadic = name[1:]
            elif in_group:
                optional.append(name)
            else:
                required.append(name)
            in_group = in_group and not closes
        return Signature(tuple(required), tuple(optional), variadic)

    @property
    def roles(self) -> tuple[str, ...]:
        return self.required + self.optional

    def accepts(self, count: int) -> bool:
        """True when ``count`` operands fit the signature."""
        fixed = len(self.required)
        if self.variadic is not None:
            return count >= fixed
        return count in (fixed, fixed + len(self.optional))

    @functools.cached_property
    def _positions(self) -> dict[str, tuple[int, bool]]:
        """role -> (index, optional); computed once per kind (operand reads are hot)."""
        places = {role: (i, False) for i, role in enumerate(self.required)}
        places.update((role, (len(self.required) + i, True))
                      for i, role in enumerate(self.optional))
        return places

    def position(self, role: str, count: int) -> int | None:
        """Operand index of ``role`` in an op with ``count`` operands (None when the
        role is an optional one that is absent). KeyError for unknown roles."""
        index, optional = self._positions[role]
        if optional and count < len(self.required) + len(self.optional):
            return None
        return index

    def label(self, index: int) -> str:
        """Role of the operand at ``index`` (the variadic name past the fixed ones)."""
        roles = self.roles
        return roles[index] if index < len(roles) else (self.variadic or f"#{index}")


@dataclass(frozen=True)
class Elementwise:
    """The meaning of an elementwise kind: operands arrive promoted to one dtype
    (``dsl.semantic``); ``numpy(*arrays, dtype=...)`` computes in that dtype."""

    symbol: str  # spelling in the DSL, for messages
    triton: str  # format string over operand expressions {0}, {1}, {2}
    kinds: tuple[str, ...]  # operand kinds accepted after promotion: "float", "int", "bool"
    result: str  # "same" (the operand dtype) or "bool"
    numpy: Callable[..., np.ndarray]
    ufunc: np.ufunc | None = None  # when ``numpy`` is exactly this ufunc: callers may pass out=
    # ``numpy`` also takes ``out=``: a buffer of the result's shape and dtype (possibly
    # an operand) that it may write the result into
    numpy_out: bool = False
    fp32_math: bool = False  # a 16-bit operand computes in fp32 and rounds back
    fp32_when_16bit: bool = False  # 16-bit operands promote to fp32 (semantic rule 4)
    neutral: int | None = None  # integer identity element (``x op neutral == x``)
    neutral_left: bool = False  # also ``neutral op x == x``
    absorbing: int | None = None  # integer absorbing element (``x op a == a op x == a``)

    @property
    def arity(self) -> int:
        return self.triton.count("{")

    def evaluate(self, *operands: np.ndarray, dtype: DType) -> np.ndarray:
        """Apply the op to NumPy operands that all have dtype ``dtype``."""
        with nm.ignore_fp_errors():
            out = self.numpy(*operands, dtype=dtype)
        if self.result == "bool":
            return np.asarray(out, dtype=np.bool_)
        return np.asarray(out, dtype=dtype.np)


@dataclass(frozen=True)
class Combine:
    """A reduction's combining function: its order-fixed NumPy meaning, Triton
    spelling and accumulator dtype (rule 10 of ``dsl.semantic``)."""

    name: str
    numpy: Callable[[np.ndarray, int, np.dtype], np.ndarray]
    triton: str
    accumulates: bool  # sum widens to its accumulator; max/min widen only 16-bit floats

    def accumulator(self, dtype: DType) -> DType:
        if not self.accumulates:
            # max/min of 16-bit floats reduce float32 copies (exact), as Triton's do
            widen = self.name in ("max", "min") and dtype.is_float and dtype.bits < 32
            return dt.float32 if widen else dtype
        if dtype.is_int:
            if dtype.bits == 64:
                return dtype
            return dt.uint32 if dtype.is_unsigned else dt.int32
        return dt.float64 if dtype == dt.float64 else dt.float32


COMBINES: dict[str, Combine] = {c.name: c for c in [
    Combine("sum", nm.tree_sum, "tl.sum", accumulates=True),
    Combine("max", nm.max_ignoring_nan, "tl.max", accumulates=False),
    Combine("min", nm.min_ignoring_nan, "tl.min", accumulates=False),
    Combine("xor_sum", nm.xor_reduce, "tl.xor_sum", accumulates=False),
]}


Check = Callable[["Op"], "str | None"]


@dataclass(frozen=True)
class OpDef:
    """Everything the compiler knows about one op kind (see the module doc)."""

    name: str
    signature: Signature
    effect: Effect
    check: Check
    doc: str
    attrs: tuple[str, ...] = ()
    results: int = 1
    regions: int = 0
    terminator: bool = False
    conditional_loop: bool = False  # runs until a region's condition fails (while)
    isolated_regions: bool = False  # regions use only their own values (combine functions)
    # triton-ascend 3.2.0 lowers it to a loop of loads from its operands' buffers, which
    # bufferization does not see: the generated Triton gives it loads of its own
    reads_operand_buffers: bool = False
    constant: bool = False  # the result is attrs["value"]
    labelled: bool = False  # the IR printer names operands by role
    lanewise: bool = False
    index_roles: tuple[str, ...] | None = None  # None: every operand
    elementwise: Elementwise | None = None
    # the result may be its "source" operand's memory seen another way (the
    # interpreter gives a NumPy view): overwriting the source in place changes it
    view: bool = False

    @property
    def is_elementwise(self) -> bool:
        return self.elementwise is not None

    @property
    def is_pure(self) -> bool:
        return self.effect is Effect.PURE

    @property
    def reads_memory(self) -> bool:
        return self.effect in (Effect.READ, Effect.UPDATE)

    @property
    def writes_memory(self) -> bool:
        return self.effect in (Effect.WRITE, Effect.UPDATE)

    @property
    def host_address(self) -> bool:
        """It reads or writes memory at integer byte addresses (a Triton pointer cast
        from an integer) instead of through a tensor argument's view."""
        return "address" in self.signature.roles

    @property
    def removable(self) -> bool:
        """An op of this kind whose results are unused may be deleted."""
        return self.effect in (Effect.PURE, Effect.READ)


# ----------------------------------------------------------------------------- typing rules


def _shape_of_operands(op: Op) -> str | None:
    shapes = {o.shape for o in op.operands}
    if shapes != {op.result.shape}:
        return f"operand shapes {sorted(shapes)} differ from the result's {op.result.shape}"
    return None


def _check_elementwise(op: Op) -> str | None:
    ew = op.defn.elementwise
    assert ew is not None
    problem = _shape_of_operands(op)
    if problem:
        return problem
    values = op.operands[1:] if op.defn.name == "where" else op.operands
    dtypes = {o.dtype for o in values}
    if len(dtypes) != 1:
        return f"operands of different dtypes {sorted(d.name for d in dtypes)}"
    (dtype,) = dtypes
    if dtype.kind not in ew.kinds:
        return f"operand dtype {dtype.name} is not one of {ew.kinds}"
    if op.defn.name == "where" and not op.operands[0].dtype.is_bool:
        return "condition is not int1"
    expected = dt.int1 if ew.result == "bool" else dtype
    if op.result.dtype != expected:
        return f"result dtype {op.result.dtype.name}, expected {expected.name}"
    return None


def _check_const(op: Op) -> str | None:
    value = op.attrs["value"]
    if not isinstance(value, (bool, int, float)):
        return f"constant {value!r} is not a number"
    return None


def _check_arange(op: Op) -> str | None:
    start, end = op.attrs["start"], op.attrs["end"]
    if op.result.type.shape != (end - start,) or op.result.dtype != dt.int32:
        return f"result {op.result.type} is not int32[{end - start}]"
    return None


def _check_program_index(op: Op) -> str | None:
    if op.attrs["axis"] not in (0, 1, 2):
        return f"axis {op.attrs['axis']} is not 0, 1 or 2"
    if op.result.type.shape or op.result.dtype != dt.int32:
        return f"result {op.result.type} is not an int32 scalar"
    return None


def _check_cast(op: Op) -> str | None:
    if op.result.dtype != op.attrs["dtype"] or op.result.shape != op.source.shape:
        return f"result {op.result.type} is not {op.source.shape} of {op.attrs['dtype']}"
    return None


def _check_bitcast(op: Op) -> str | None:
    problem = _check_cast(op)
    if problem is None and op.source.dtype.bits != op.result.dtype.bits:
        return f"bitcast between {op.source.dtype.bits}- and {op.result.dtype.bits}-bit types"
    return problem


def _check_broadcast(op: Op) -> str | None:
    src, dst = op.source.shape, op.result.shape
    if op.result.dtype != op.source.dtype or len(src) > len(dst) or any(
            s not in (1, d) for s, d in zip(src[::-1], dst[::-1])):
        return f"cannot broadcast {op.source.type} to {op.result.type}"
    return None


def _check_expand_dims(op: Op) -> str | None:
    axis, src = op.attrs["axis"], op.source.shape
    if op.result.type.shape != src[:axis] + (1,) + src[axis:] or \
            op.result.dtype != op.source.dtype:
        return f"result {op.result.type} is not {op.source.type} with a unit axis {axis}"
    return None


def _same_dtype(op: Op) -> str | None:
    dtypes = {o.dtype for o in op.operands} | {r.dtype for r in op.results}
    return None if len(dtypes) == 1 else f"dtypes differ: {sorted(d.name for d in dtypes)}"


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _check_reshape(op: Op) -> str | None:
    if tuple(op.attrs["shape"]) != op.result.shape or \
            _numel(op.result.shape) != _numel(op.source.shape):
        return f"cannot reshape {op.source.type} to {op.result.type}"
    return _same_dtype(op)


def _check_permute(op: Op) -> str | None:
    dims, src = tuple(op.attrs["dims"]), op.source.shape
    if sorted(dims) != list(range(len(src))) or \
            op.result.shape != tuple(src[d] for d in dims):
        return f"{op.result.type} is not {op.source.type} permuted by {dims}"
    return _same_dtype(op)


def _check_cat(op: Op) -> str | None:
    a, b = op.lhs.shape, op.rhs.shape
    if len(a) != 1 or len(b) != 1 or op.result.shape != (a[0] + b[0],):
        return f"cat of {op.lhs.type} and {op.rhs.type} is not {op.result.type}"
    return _same_dtype(op)


def _check_join(op: Op) -> str | None:
    if op.lhs.shape != op.rhs.shape or op.result.shape != op.lhs.shape + (2,):
        return f"join of {op.lhs.type} and {op.rhs.type} is not {op.result.type}"
    return _same_dtype(op)


def _check_split(op: Op) -> str | None:
    src = op.source.shape
    if not src or src[-1] != 2 or any(r.shape != src[:-1] for r in op.results):
        return f"split of {op.source.type} into {[str(r.type) for r in op.results]}"
    return _same_dtype(op)


def _check_flip(op: Op) -> str | None:
    if not 0 <= op.attrs["axis"] < op.source.rank or op.result.type != op.source.type:
        return f"flip of {op.source.type} along axis {op.attrs['axis']}"
    return None


def _check_extract_slice(op: Op) -> str | None:
    src, sizes, strides = op.source.shape, op.attrs["sizes"], op.attrs["strides"]
    offsets = op.offsets
    if len(offsets) != len(src) or len(sizes) != len(src) or len(strides) != len(src) or \
            any(o.shape or not o.dtype.is_int for o in offsets) or op.result.shape != sizes:
        return f"extract_slice of {op.source.type} by sizes {sizes} is not {op.result.type}"
    return None if op.result.dtype == op.source.dtype else "extract_slice changes the dtype"


def _check_insert_slice(op: Op) -> str | None:
    full, sub = op.operand("dest"), op.operand("sub")
    offsets = op.offsets
    if len(offsets) != full.rank or sub.rank != full.rank or \
            any(o.shape or not o.dtype.is_int for o in offsets) or \
            op.result.type != full.type or sub.dtype != full.dtype or \
            tuple(op.attrs["sizes"]) != sub.shape:
        return f"insert_slice of {sub.type} into {full.type} is not {op.result.type}"
    return None


def _check_gather(op: Op) -> str | None:
    src, index = op.source, op.operand("index")
    axis = op.attrs["axis"]
    if not 0 <= axis < src.rank or index.rank != src.rank or not index.dtype.is_int or \
            op.result.dtype != src.dtype or op.result.shape != index.shape or any(
                i != s for d, (i, s) in enumerate(zip(index.shape, src.shape)) if d != axis):
        return f"gather of {src.type} by {index.type} along {axis} is not {op.result.type}"
    return None


def _check_histogram(op: Op) -> str | None:
    src, mask = op.source, op.mask
    if src.rank != 1 or not src.dtype.is_int or src.dtype.is_bool or \
            op.result.type.shape != (op.attrs["num_bins"],) or op.result.dtype != dt.int32 or \
            (mask is not None and (mask.shape != src.shape or not mask.dtype.is_bool)):
        return f"histogram of {src.type} into {op.attrs['num_bins']} bins is not {op.result.type}"
    return None


def _check_inline_asm(op: Op) -> str | None:
    if any(v.shape != op.result.shape for v in op.operands) or op.attrs["pack"] != 1:
        return f"inline_asm of {[str(v.type) for v in op.operands]} is not {op.result.type}"
    return None


def _check_sort(op: Op) -> str | None:
    if not 0 <= op.attrs["axis"] < op.source.rank or op.result.type != op.source.type:
        return f"sort of {op.source.type} along axis {op.attrs['axis']}"
    return None


def _check_random(op: Op) -> str | None:
    seed, offset = op.operand("seed"), op.operand("offset")
    assert seed is not None and offset is not None
    if seed.shape not in ((), offset.shape) or not seed.dtype.is_int or seed.dtype.is_bool:
        return "the seed must be an integer scalar or a block of the offsets' shape"
    if not offset.dtype.is_int or offset.dtype.bits != 32:
        return "offsets must be int32 or uint32"
    if any(r.shape != offset.shape for r in op.results):
        return "results must have the offsets' shape"
    rounds = op.attrs["n_rounds"]
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
        return f"n_rounds {rounds!r} is not a non-negative integer"
    return None


def _check_dot(op: Op) -> str | None:
    a, b, acc = op.lhs.shape, op.rhs.shape, op.require("acc")
    if len(a) not in (2, 3) or len(b) != len(a) or a[-1] != b[-2] or a[:-2] != b[:-2] or \
            op.result.shape != a[:-1] + b[-1:]:
        return f"dot of {op.lhs.type} and {op.rhs.type} is not {op.result.type}"
    mixed_fp8 = op.lhs.dtype.is_fp8() and op.rhs.dtype.is_fp8()  # (Triton mixes them)
    if acc.type != op.result.type or (op.lhs.dtype != op.rhs.dtype and not mixed_fp8):
        return f"operand types {op.lhs.type}, {op.rhs.type}, acc {acc.type}"
    return None


def _check_arg_reduce(op: Op) -> str | None:
    axis, src = op.attrs["axis"], op.source.shape
    value, index = op.results
    if op.attrs["combine"] not in ("argmax", "argmin"):
        return f"unknown combine {op.attrs['combine']!r}"
    if not 0 <= axis < len(src) or value.shape != src[:axis] + src[axis + 1:] or \
            index.shape != value.shape or index.dtype != dt.int32 or \
            value.dtype != op.source.dtype:
        return f"({value.type}, {index.type}) is not the arg-reduction of {op.source.type}"
    return None


def _check_scan(op: Op) -> str | None:
    if op.attrs["combine"] not in ("sum", "prod") or op.result.type != op.source.type or \
            not 0 <= op.attrs["axis"] < op.source.rank:
        return f"scan {op.attrs['combine']!r} of {op.source.type} to {op.result.type}"
    return None


def _check_reduce(op: Op) -> str | None:
    combine, axis, src = op.attrs["combine"], op.attrs["axis"], op.source.shape
    if combine not in COMBINES:
        return f"unknown combine {combine!r}"
    if not 0 <= axis < len(src) or op.result.shape != src[:axis] + src[axis + 1:]:
        return f"result {op.result.type} is not {op.source.type} without axis {axis}"
    if op.result.dtype != op.source.dtype:
        return "result dtype differs from the operand's (accumulate with an explicit cast)"
    return None


def _check_access(op: Op, data: Any) -> str | None:
    from dsl.ir import ViewType  # the registry stays importable from dsl.ir

    if not isinstance(op.view.type, ViewType):
        return "the accessed operand is not a tensor argument"
    index, offset, mask = op.index, op.offset, op.mask
    if not index.dtype.is_int or index.dtype.is_bool or not offset.dtype.is_int:
        return "index and offset must be integers"
    shapes = {index.shape, offset.shape, data.shape} | ({mask.shape} if mask else set())
    if len(shapes) != 1:
        return f"index, offset, mask and data shapes differ: {sorted(shapes)}"
    if mask is not None and not mask.dtype.is_bool:
        return "mask is not int1"
    if data.dtype != op.view.dtype:
        return f"data dtype {data.dtype.name} differs from the tensor's {op.view.dtype.name}"
    return None


def _check_load(op: Op) -> str | None:
    problem = _check_access(op, op.result)
    if problem is None and op.other is not None and (
            op.other.type != op.result.type):
        return f"other is {op.other.type}, expected {op.result.type}"
    return problem


def _check_store(op: Op) -> str | None:
    return _check_access(op, op.value)


def _check_address_access(op: Op, data: Any) -> str | None:
    address, offset, mask = op.require("address"), op.offset, op.mask
    if address.dtype != dt.int64:
        return f"the address is {address.dtype.name}, expected int64"
    if not offset.dtype.is_int or offset.dtype.is_bool:
        return "the offset must be an integer"
    if address.shape and address.shape != data.shape:
        return f"the address is {address.type}: a scalar or one per lane of {data.type}"
    shapes = {offset.shape, data.shape} | ({mask.shape} if mask else set())
    if len(shapes) != 1:
        return f"offset, mask and data shapes differ: {sorted(shapes)}"
    if mask is not None and not mask.dtype.is_bool:
        return "mask is not int1"
    return None


def _check_load_address(op: Op) -> str | None:
    problem = _check_address_access(op, op.result)
    if problem is None and op.other is not None and op.other.type != op.result.type:
        return f"other is {op.other.type}, expected {op.result.type}"
    return problem


def _check_store_address(op: Op) -> str | None:
    return _check_address_access(op, op.value)


def _check_tensor_address(op: Op) -> str | None:
    from dsl.ir import ViewType

    if not isinstance(op.view.type, ViewType):
        return "the operand is not a tensor argument"
    if op.result.dtype != dt.int64 or op.result.shape:
        return f"the result is {op.result.type}, expected an int64 scalar"
    return None


def _check_atomic_address(op: Op) -> str | None:
    problem = _check_address_access(op, op.value)
    if problem is None and op.result.type != op.value.type:
        return f"result {op.result.type} differs from the value's {op.value.type}"
    if problem is None and op.attrs["op"] not in ATOMIC_OPS:
        return f"unknown atomic operation {op.attrs['op']!r}"
    return problem


def _check_atomic_cas_address(op: Op) -> str | None:
    problem = _check_address_access(op, op.value)
    if problem is None and not (op.result.type == op.value.type ==
                                op.require("compare").type):
        return "compare, value and result types differ"
    return problem


ATOMIC_OPS = ("add", "max", "min", "xchg", "and", "or", "xor")


def _check_atomic(op: Op) -> str | None:
    problem = _check_access(op, op.value) or _check_access(op, op.result)
    if problem is None and op.attrs["op"] not in ATOMIC_OPS:
        return f"unknown atomic operation {op.attrs['op']!r}"
    return problem


def _check_atomic_cas(op: Op) -> str | None:
    problem = _check_access(op, op.value) or _check_access(op, op.result)
    if problem is None and op.require("compare").type != op.value.type:
        return "compare and value types differ"
    return problem


def _check_for(op: Op) -> str | None:
    body = op.regions[0]
    bounds = {o.dtype for o in (op.start, op.end, op.step)} | {body.args[0].dtype}
    if len(bounds) != 1 or not next(iter(bounds)).is_int:
        return "loop bounds and induction variable must share one integer dtype"
    carried = [a.type for a in body.args[1:]]
    if [r.type for r in op.results] != carried or [o.type for o in op.inits] != carried:
        return "carried types differ"
    last = body.ops[-1] if body.ops else None
    if last is None or not last.defn.terminator or \
            [o.type for o in last.operands] != carried:
        return "the body does not end in a yield of the carried types"
    return None


def _yielded(block: Any) -> list[Any] | None:
    last = block.ops[-1] if block.ops else None
    return [o.type for o in last.operands] if last is not None and last.defn.terminator \
        else None


def _check_if(op: Op) -> str | None:
    cond = op.require("condition")
    if cond.shape or not cond.dtype.is_bool:
        return "the condition must be an int1 scalar"
    types = [r.type for r in op.results]
    if any(_yielded(region) != types for region in op.regions):
        return "both branches must end in a yield of the result types"
    return None


def _check_while(op: Op) -> str | None:
    condition, body = op.regions
    carried = [o.type for o in op.inits]
    if [a.type for a in condition.args] != carried or [a.type for a in body.args] != carried \
            or [r.type for r in op.results] != carried:
        return "carried types differ"
    yielded = _yielded(condition)
    if yielded is None or len(yielded) != 1 or yielded[0].shape or \
            not yielded[0].dtype.is_bool:
        return "the condition region must yield one int1 scalar"
    if _yielded(body) != carried:
        return "the body must yield the carried types"
    return None


HINTS = ("multiple_of", "max_contiguous", "max_constancy")


def _check_hint(op: Op) -> str | None:
    if op.attrs["hint"] not in HINTS or op.result.type != op.source.type:
        return f"hint {op.attrs['hint']!r} of {op.source.type} to {op.result.type}"
    return None


def _check_assert(op: Op) -> str | None:
    cond = op.require("condition")
    return None if cond.dtype.is_bool else "the condition must be int1"


def _check_combine(op: Op, reduced: bool) -> str | None:
    (region,) = op.regions
    axis, n = op.attrs["axis"], len(op.operands)
    element = [type(o.type)(o.dtype) for o in op.operands]
    if [a.type for a in region.args] != element * 2 or _yielded(region) != element:
        return "the combine region must take (accumulators, elements) and yield accumulators"
    for source, result in zip(op.operands, op.results):
        shape = source.shape[:axis] + source.shape[axis + 1:] if reduced else source.shape
        if not 0 <= axis < source.rank or result.type != type(source.type)(source.dtype, shape):
            return f"result {result.type} does not fit {source.type} along axis {axis}"
    return None if len(op.results) == n else "one result per operand"


def _no_check(op: Op) -> str | None:
    return None


# ----------------------------------------------------------------------------- records


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda a, b, *, dtype: fn(a, b)


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda a, *, dtype: fn(a)


def _mod(a: np.ndarray, b: np.ndarray, *, dtype: DType) -> np.ndarray:
    return np.fmod(a, b) if dtype.is_float else nm.c_mod(a, b)


def _invert(a: np.ndarray, *, dtype: DType) -> np.ndarray:
    return np.logical_not(a) if dtype.is_bool else np.invert(a)


_NUM = ("float", "int", "bool")
_INT = ("int", "bool")
_FLOAT = ("float",)
_BINARY, _UNARY = Signature(("lhs", "rhs")), Signature(("x",))


def _ew(name: str, ew: Elementwise, doc: str, lanewise: bool = True) -> OpDef:
    ternary = Signature(("condition", "x", "y")) if name == "where" else \
        Signature(("x", "y", "z"))
    signature = {1: _UNARY, 2: _BINARY, 3: ternary}[ew.arity]
    return OpDef(name, signature, Effect.PURE, _check_elementwise, doc, lanewise=lanewise,
                 elementwise=ew)


_ELEMENTWISE = [
    _ew("add", Elementwise("+", "{0} + {1}", _NUM, "same", _binary(np.add), np.add,
                           neutral=0, neutral_left=True), "a + b (integers wrap)"),
    _ew("sub", Elementwise("-", "{0} - {1}", _NUM, "same", _binary(np.subtract), np.subtract),
        "a - b"),
    _ew("mul", Elementwise("*", "{0} * {1}", _NUM, "same", _binary(np.multiply), np.multiply,
                           neutral=1, neutral_left=True, absorbing=0), "a * b"),
    _ew("truediv", Elementwise("/", "{0} / {1}", _FLOAT, "same", _binary(np.divide), np.divide,
                               fp32_when_16bit=True), "a / b in floating point"),
    _ew("floordiv", Elementwise("//", "{0} // {1}", _INT, "same", _binary(nm.c_floordiv),
                                neutral=1), "integer a // b, truncating like C"),
    _ew("mod", Elementwise("%", "{0} % {1}", _NUM, "same", _mod, fp32_when_16bit=True),
        "a % b with the dividend's sign (C)"),
    _ew("and", Elementwise("&", "{0} & {1}", _INT, "same", _binary(np.bitwise_and)),
        "bitwise and"),
    _ew("or", Elementwise("|", "{0} | {1}", _INT, "same", _binary(np.bitwise_or)),
        "bitwise or"),
    _ew("xor", Elementwise("^", "{0} ^ {1}", _INT, "same", _binary(np.bitwise_xor)),
        "bitwise xor"),
    _ew("lshift", Elementwise("<<", "{0} << {1}", ("int",), "same", _binary(nm.shift_left)),
        "a << b; a shift by b outside [0, bits) gives 0 here (undefined in Triton)"),
    _ew("rshift", Elementwise(">>", "{0} >> {1}", ("int",), "same", _binary(nm.shift_right)),
        "a >> b: arithmetic for signed, logical for unsigned types; a shift outside "
        "[0, bits) gives 0 or -1 here (undefined in Triton)"),
    _ew("lt", Elementwise("<", "{0} < {1}", _NUM, "bool", _binary(np.less)), "a < b"),
    _ew("le", Elementwise("<=", "{0} <= {1}", _NUM, "bool", _binary(np.less_equal)), "a <= b"),
    _ew("gt", Elementwise(">", "{0} > {1}", _NUM, "bool", _binary(np.greater)), "a > b"),
    _ew("ge", Elementwise(">=", "{0} >= {1}", _NUM, "bool", _binary(np.greater_equal)),
        "a >= b"),
    _ew("eq", Elementwise("==", "{0} == {1}", _NUM, "bool", _binary(np.equal)), "a == b"),
    _ew("ne", Elementwise("!=", "{0} != {1}", _NUM, "bool", _binary(np.not_equal)), "a != b"),
    _ew("maximum", Elementwise("maximum", "tl.maximum({0}, {1})", _NUM, "same",
                               nm.maximum_number, numpy_out=True),
        "IEEE maxNum: a NaN operand is ignored (Triton's propagate_nan=NONE); between "
        "+0.0 and -0.0, and between two NaNs, compiled code's choice"),
    _ew("minimum", Elementwise("minimum", "tl.minimum({0}, {1})", _NUM, "same",
                               nm.minimum_number, numpy_out=True),
        "IEEE minNum; the same choices as maximum"),
    _ew("neg", Elementwise("-", "-{0}", ("float", "int"), "same", _unary(nm.triton_minus)),
        "-x, computed as 0 - x (Triton's unary minus): -(+0.0) is +0.0, a NaN keeps its sign"),
    _ew("invert", Elementwise("~", "~{0}", _INT, "same", _invert),
        "bitwise not; logical not on int1"),
    _ew("abs", Elementwise("abs", "tl.abs({0})", ("float", "int"), "same", _unary(np.abs)),
        "|x|"),
    _ew("exp", Elementwise("exp", "tl.exp({0})", _FLOAT, "same", nm.fp32_math(np.exp),
                           fp32_math=True), "e**x at fp32 precision"),
    _ew("log", Elementwise("log", "tl.log({0})", _FLOAT, "same", nm.fp32_math(np.log),
                           fp32_math=True), "natural log at fp32 precision"),
    _ew("log1p", Elementwise("log1p", "libdevice.log1p({0})", _FLOAT, "same",
                             nm.fp32_math(np.log1p), fp32_math=True),
        "log(1 + x) at fp32 precision"),
    _ew("sqrt", Elementwise("sqrt", "tl.sqrt({0})", _FLOAT, "same", nm.fp32_math(np.sqrt),
                            fp32_math=True), "square root at fp32 precision"),
    _ew("sigmoid", Elementwise("sigmoid", "tl.sigmoid({0})", _FLOAT, "same", nm.sigmoid,
                               fp32_math=True), "1 / (1 + exp(-x)) in fp32"),
    _ew("tanh", Elementwise("tanh", "libdevice.tanh({0})", _FLOAT, "same",
                            nm.fp32_math(nm.tanh64), fp32_math=True), "tanh at fp32 precision"),
    _ew("exp2", Elementwise("exp2", "tl.exp2({0})", _FLOAT, "same", nm.fp32_math(np.exp2),
                            fp32_math=True), "2**x at fp32 precision"),
    _ew("log2", Elementwise("log2", "tl.log2({0})", _FLOAT, "same", nm.fp32_math(np.log2),
                            fp32_math=True), "base-2 log at fp32 precision"),
    _ew("rsqrt", Elementwise("rsqrt", "tl.rsqrt({0})", _FLOAT, "same", nm.rsqrt,
                             fp32_math=True), "1 / sqrt(x): fp32 sqrt, then an fp32 division"),
    _ew("sin", Elementwise("sin", "tl.sin({0})", _FLOAT, "same", nm.fp32_math(np.sin),
                           fp32_math=True), "sine at fp32 precision"),
    _ew("cos", Elementwise("cos", "tl.cos({0})", _FLOAT, "same", nm.fp32_math(np.cos),
                           fp32_math=True), "cosine at fp32 precision"),
    _ew("erf", Elementwise("erf", "tl.erf({0})", _FLOAT, "same", nm.fp32_math(nm.erf64),
                           fp32_math=True), "the error function at fp32 precision"),
    _ew("floor", Elementwise("floor", "tl.floor({0})", _FLOAT, "same", _unary(np.floor),
                             np.floor, fp32_math=True), "round toward -inf (exact)"),
    _ew("ceil", Elementwise("ceil", "tl.ceil({0})", _FLOAT, "same", _unary(np.ceil), np.ceil,
                            fp32_math=True), "round toward +inf (exact)"),
    _ew("pow", Elementwise("pow", "libdevice.pow({0}, {1})", _FLOAT, "same",
                           nm.fp32_math2(np.power), fp32_math=True),
        "x**y at fp32 precision (also the ** operator)"),
    _ew("fma", Elementwise("fma", "tl.fma({0}, {1}, {2})", _FLOAT, "same", nm.fma,
                           fp32_math=True), "x * y + z rounded once (see numerics.fma)"),
    _ew("umulhi", Elementwise("umulhi", "tl.umulhi({0}, {1})", ("int",), "same", nm.umulhi),
        "high 32 bits of the 64-bit product of 32-bit integers"),
    _ew("where", Elementwise("where", "tl.where({0}, {1}, {2})", _NUM, "same",
                             lambda c, a, b, *, dtype: np.where(c, a, b)),
        "x where condition else y", lanewise=False),
]

_STRUCTURAL = [
    OpDef("const", Signature(()), Effect.PURE, _check_const,
          "a constant scalar, or a block filled with one value", attrs=("value",),
          constant=True),
    OpDef("arange", Signature(()), Effect.PURE, _check_arange,
          "int32 block [start, end)", attrs=("start", "end")),
    OpDef("program_id", Signature(()), Effect.PURE, _check_program_index,
          "this program's index along a grid axis", attrs=("axis",)),
    OpDef("num_programs", Signature(()), Effect.PURE, _check_program_index,
          "the grid's size along an axis", attrs=("axis",)),
    OpDef("cast", Signature(("source",)), Effect.PURE, _check_cast,
          "conversion to attrs['dtype'] (semantic rule 9; dsl.numerics.cast_array)",
          attrs=("dtype",), lanewise=True),
    OpDef("bitcast", Signature(("source",)), Effect.PURE, _check_bitcast,
          "reinterpret the bits as attrs['dtype'] (same width; .to(dtype, bitcast=True))",
          attrs=("dtype",), lanewise=True, view=True),
    OpDef("broadcast", Signature(("source",)), Effect.PURE, _check_broadcast,
          "NumPy broadcast to the result's shape (leading unit axes added)", lanewise=True,
          view=True),
    OpDef("expand_dims", Signature(("source",)), Effect.PURE, _check_expand_dims,
          "a unit axis inserted at attrs['axis']", attrs=("axis",), view=True),
    OpDef("reshape", Signature(("source",)), Effect.PURE, _check_reshape,
          "the same elements in row-major order, in attrs['shape']", attrs=("shape",),
          view=True),
    OpDef("permute", Signature(("source",)), Effect.PURE, _check_permute,
          "axes reordered: result axis i is source axis attrs['dims'][i]", attrs=("dims",),
          view=True),
    OpDef("cat", _BINARY, Effect.PURE, _check_cat,
          "1-D blocks concatenated: lhs, then rhs"),
    OpDef("join", _BINARY, Effect.PURE, _check_join,
          "a new minor axis of 2: result[..., 0] = lhs, result[..., 1] = rhs"),
    OpDef("split", Signature(("source",)), Effect.PURE, _check_split,
          "the two halves of a minor axis of 2 (join's inverse): two results", results=2,
          view=True),
    OpDef("flip", Signature(("source",)), Effect.PURE, _check_flip,
          "the elements reversed along attrs['axis']", attrs=("axis",), view=True),
    OpDef("extract_slice", Signature(("source",), variadic="offsets"), Effect.PURE,
          _check_extract_slice, "the attrs['sizes'] block of source starting at the offsets "
          "(runtime scalars), every attrs['strides']-th element (triton-ascend's "
          "extract_slice)", attrs=("sizes", "strides"), view=True),
    OpDef("insert_slice", Signature(("dest", "sub"), variadic="offsets"), Effect.PURE,
          _check_insert_slice, "dest with sub written at the offsets, every "
          "attrs['strides']-th element (triton-ascend's insert_slice)",
          attrs=("sizes", "strides")),
    OpDef("gather", Signature(("source", "index")), Effect.PURE, _check_gather,
          "result[..i..] = source[..index[..i..]..] along attrs['axis'] (tl.gather)",
          attrs=("axis",)),
    OpDef("histogram", Signature(("source",), optional=("mask",)), Effect.PURE,
          _check_histogram, "int32 counts of the source's values in bins [0, 1), [1, 2), ... "
          "[num_bins - 1, num_bins), masked-off lanes not counted; a value outside the bins "
          "is an error (tl.histogram)", attrs=("num_bins",)),
    OpDef("inline_asm", Signature((), variadic="args"), Effect.PURE, _check_inline_asm,
          "attrs['asm'] applied to each lane of the args (tl.inline_asm_elementwise); the "
          "interpreter evaluates attrs['program'], its parse by dsl.inline_asm",
          attrs=("asm", "constraints", "pack", "is_pure", "program")),
    OpDef("sort", Signature(("source",)), Effect.PURE, _check_sort,
          "the elements sorted along attrs['axis'], ascending or attrs['descending'] "
          "(NaN last ascending, first descending)", attrs=("axis", "descending")),
    OpDef("randint", Signature(("seed", "offset")), Effect.PURE, _check_random,
          "uint32 word 0 of Philox4x32(seed, (offset, 0, 0, 0)) (dsl.philox)",
          attrs=("n_rounds",)),
    OpDef("randint4x", Signature(("seed", "offset")), Effect.PURE, _check_random,
          "the four uint32 words of Philox4x32(seed, (offset, 0, 0, 0))",
          attrs=("n_rounds",), results=4),
    OpDef("rand", Signature(("seed", "offset")), Effect.PURE, _check_random,
          "a float32 in [0, 1) from randint (dsl.philox.uint_to_uniform_float)",
          attrs=("n_rounds",)),
    OpDef("randn", Signature(("seed", "offset")), Effect.PURE, _check_random,
          "a float32 standard normal from words 0 and 1 (Box-Muller, fp32 math)",
          attrs=("n_rounds",)),
    OpDef("dot", Signature(("lhs", "rhs", "acc")), Effect.PURE, _check_dot,
          "acc + lhs @ rhs, the products summed by BLAS in float32 (numerics.dot)",
          attrs=("input_precision",)),
    OpDef("arg_reduce", Signature(("source",)), Effect.PURE, _check_arg_reduce,
          "(value, int32 index) of the max or min along attrs['axis'] (numerics.arg_fold)",
          attrs=("combine", "axis", "tie_break_left"), results=2),
    OpDef("scan", Signature(("source",)), Effect.PURE, _check_scan,
          "inclusive prefix sum or product along attrs['axis'] (numerics.scan_in_order)",
          attrs=("combine", "axis", "reverse")),
    OpDef("reduce", Signature(("source",)), Effect.PURE, _check_reduce,
          "combine along attrs['axis'] with COMBINES[attrs['combine']] (a float sum in "
          "numerics.tree_sum's order)",
          attrs=("combine", "axis")),
    OpDef("load", Signature.parse("view index offset [mask other]"), Effect.READ, _check_load,
          "read the tensor at the physical offset; masked-off lanes give other; the "
          "logical index is what bounds checks test", labelled=True,
          index_roles=("index", "mask")),
    OpDef("store", Signature.parse("view index offset value [mask]"), Effect.WRITE,
          _check_store, "write value at the physical offset where mask holds",
          results=0, labelled=True, index_roles=("index", "mask")),
    OpDef("atomic", Signature.parse("view index offset value [mask]"), Effect.UPDATE,
          _check_atomic, "read-modify-write attrs['op'] at the offset where mask holds; the "
          "result is the old value (0 where masked off); lanes apply one at a time in "
          "program, then lane order (numerics.apply_atomic)", attrs=("op", "sem", "scope"),
          labelled=True, index_roles=("index", "mask")),
    OpDef("atomic_cas", Signature.parse("view index offset compare value"), Effect.UPDATE,
          _check_atomic_cas, "compare-and-swap: write value where the old value equals "
          "compare; the result is the old value", attrs=("sem", "scope"), labelled=True,
          index_roles=("index",)),
    OpDef("load_address", Signature.parse("address offset [mask other]"), Effect.READ,
          _check_load_address, "read elements of the result's dtype offset elements past "
          "int64 byte addresses (a Triton pointer cast from an integer: "
          "dsl.pointers.AddressPointer), each checked against the host memory the launch "
          "can see (dsl.host_memory); masked-off lanes give other", labelled=True,
          index_roles=("address", "offset", "mask")),
    OpDef("store_address", Signature.parse("address offset value [mask]"), Effect.WRITE,
          _check_store_address, "write value offset elements past int64 byte addresses "
          "where mask holds (see load_address)", results=0, labelled=True,
          index_roles=("address", "offset", "mask")),
    OpDef("tensor_address", Signature(("view",)), Effect.PURE, _check_tensor_address,
          "the int64 byte address of the tensor argument's buffer, its lowest element (a "
          "pointer argument cast to an integer: dsl.pointers.pointer_as_integer)"),
    OpDef("atomic_address", Signature.parse("address offset value [mask]"), Effect.UPDATE,
          _check_atomic_address, "atomic attrs['op'] offset elements past int64 byte "
          "addresses where mask holds (see load_address and atomic): the old values",
          attrs=("op", "sem", "scope"), labelled=True, index_roles=("address", "offset", "mask")),
    OpDef("atomic_cas_address", Signature.parse("address offset compare value"),
          Effect.UPDATE, _check_atomic_cas_address, "compare-and-swap offset elements past "
          "int64 byte addresses (see load_address and atomic_cas): the old values",
          attrs=("sem", "scope"), labelled=True, index_roles=("address", "offset")),
    OpDef("for", Signature.parse("start end step *inits"), Effect.CONTROL, _check_for,
          "loop over range(start, end, step) carrying values (body arguments: the "
          "induction variable, then the carried values)", results=-1, regions=1,
          labelled=True, index_roles=("start", "end", "step")),
    OpDef("if", Signature(("condition",)), Effect.CONTROL, _check_if,
          "run the first region where the int1 scalar condition holds, else the second; "
          "each yields the results", results=-1, regions=2),
    OpDef("while", Signature.parse("*inits"), Effect.CONTROL, _check_while,
          "repeat: the first region yields the condition from the carried values; while "
          "it holds the second (the body) yields the next carried values", results=-1,
          regions=2, conditional_loop=True, index_roles=None),
    OpDef("reduce_fn", Signature.parse("*sources"), Effect.PURE,
          lambda op: _check_combine(op, True),
          "reduce the sources along attrs['axis'] with the combine region, a left fold in "
          "index order (tl.reduce with a jit combine function)", attrs=("axis",),
          results=-1, regions=1, isolated_regions=True),
    OpDef("scan_fn", Signature.parse("*sources"), Effect.PURE,
          lambda op: _check_combine(op, False),
          "inclusive scan of the sources along attrs['axis'] with the combine region, in "
          "index order (from the end with attrs['reverse'])", attrs=("axis", "reverse"),
          results=-1, regions=1, isolated_regions=True, reads_operand_buffers=True),
    OpDef("hint", Signature(("source",)), Effect.PURE, _check_hint,
          "the source unchanged, with a compiler hint (attrs['hint'], attrs['values']) for "
          "the generated Triton", attrs=("hint", "values"), lanewise=True, view=True),
    OpDef("print", Signature.parse("*values"), Effect.IO, _no_check,
          "print attrs['prefix'] and the values, one line per program", results=0,
          attrs=("prefix", "hex")),
    OpDef("device_assert", Signature(("condition",)), Effect.IO, _check_assert,
          "fail the launch where the condition is false (attrs['message'])", results=0,
          attrs=("message",)),
    OpDef("yield", Signature.parse("*values"), Effect.CONTROL, _no_check,
          "end of a loop body: the carried values for the next iteration", results=0,
          terminator=True),
]

OPS: dict[str, OpDef] = {d.name: d for d in _STRUCTURAL + _ELEMENTWISE}


def lookup(kind: str) -> OpDef:
    """The record of ``kind``; ValueError names the registered kinds otherwise."""
    try:
        return OPS[kind]
    except KeyError:
        raise ValueError(f"unknown op kind {kind!r}; registered: {', '.join(OPS)}") from None


def elementwise(kind: str) -> Elementwise:
    """The elementwise meaning of ``kind`` (ValueError when it has none)."""
    ew = lookup(kind).elementwise
    if ew is None:
        raise ValueError(f"op kind {kind!r} is not elementwise")
    return ew
