"""The semantic layer: every type, promotion and broadcast rule of the DSL, in one place.

The frontend evaluates a kernel's expressions into calls of this module. Each call
checks its operands, applies the rules below, and appends explicit IR ops through a
``Builder``: implicit conversions become ``cast`` ops and implicit broadcasts become
``broadcast`` ops, so the IR that backends see has no implicit behaviour left.

Promotion rules (Triton's, numbered; messages refer to them):

1. Kind: int1 < integer < floating. The operand of lower kind converts to the other
   operand's dtype: ``int32 + float16 -> float16``; except that ``bfloat16`` is kept
   only when both operands are ``bfloat16``, so ``int32 + bfloat16 -> float32``
   (Triton's ``computation_type_impl``).
2. Width: within one kind the wider dtype wins: ``float16 + float32 -> float32``,
   ``int32 + int64 -> int64``. Integers of different signedness follow C's usual
   arithmetic conversions: the unsigned one wins when it is at least as wide
   (``int32 + uint32 -> uint32``, ``uint16 + int32 -> int32``); ``//`` and ``%``
   refuse operands of different signedness.
3. Prefer float16: ``float16`` with ``bfloat16`` gives ``float16``.
4. Division: ``/`` always computes in floating point (integer operands become
   float32), and ``/`` and ``%`` on 16-bit floats compute and return float32 (Triton
   has no native 16-bit division or remainder).
5. Python scalars (literals and constexprs) do not take part in promotion when their
   kind is lower than or equal to the other operand's: ``x_fp16 * 2.0`` stays
   float16 and ``i32 + 1`` stays int32 (an int literal that does not fit the other
   operand's dtype is an error, a negative one against an unsigned operand too). A
   scalar of higher kind first takes a dtype of its kind, as Triton types literals
   (int32, else uint32, else int64, else uint64 -- so ``2654435769`` is uint32;
   float32, but float64 for a finite non-zero value beyond float32's normal range,
   ``1e39`` or ``1e-40``), then rules 1-3 apply: ``i32 * 0.5 -> float32``. In a
   Triton kernel ``maximum``/``minimum``/``clamp`` type their scalars that way first
   and then promote them like tensors, as Triton does: ``maximum(x_int8, 0)`` is int32.
   A scalar zero is +0.0 whatever its sign, as in Triton: ``x * -0.0`` is ``x * 0.0``.
6. Two Python scalars are combined in Python at compile time (constexpr folding).
7. Comparisons promote by rules 1-5 and give int1. ``//``, ``&``, ``|``, ``^`` and
   ``~`` need integer or int1 operands.
8. Shapes broadcast like NumPy (aligned on the right; a dimension of 1 stretches),
   scalars splat to blocks.
9. ``x.to(dtype)`` and every implicit float conversion round to nearest even;
   float to integer truncates toward zero; anything to int1 tests ``!= 0``.
10. ``sum`` accumulates int1 and signed integers narrower than 64 bits in int32,
    unsigned ones in uint32, 64-bit integers in their own type and every float type
    of at most 32 bits in float32 (16-bit floats are never accumulated in 16 bits;
    in a Triton kernel a float16 sum is then rounded to float16, Triton's type),
    adding a float sum's elements in a halving tree along the axis
    (``numerics.tree_sum``: ``x[i] + x[i + n/2]``, then again on the halves; with no
    axis, the last axis first). Compiled-CPU mode's generated code spells the tree
    out, so it gets the interpreter's bits; on the NPU, ``tl.sum`` adds in the vector
    unit's order. ``max``/``min`` of 16-bit floats give float32 (Triton widens them before
    reducing: exact; with ``return_indices`` only bfloat16 is widened), of other dtypes
    keep the operand's (integers narrower than 32 bits stay narrow, as triton-ascend
    keeps them; the PyPI 3.2 wheel's ``tl.max`` widens them to int32).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from dsl import dtypes as dt
from dsl import inline_asm as asm_eval
from dsl import philox as philox_constants
from dsl.dtypes import DType
from dsl.errors import UNKNOWN_LOC, DSLCompileError, SourceLoc
from dsl.ir import Block, Op, Type, Value
from dsl.numerics import to_fp8
from dsl.opdefs import COMBINES, elementwise

PyScalar = bool | int | float
Operand = Value | PyScalar

_KIND_RANK = {"bool": 0, "int": 1, "float": 2}


class Builder:
    """Appends ops to the innermost open block; ``loc`` is the current source position."""

    def __init__(self, kernel_name: str) -> None:
        self.kernel_name = kernel_name
        self.blocks: list[Block] = [Block()]
        self.loc: SourceLoc = UNKNOWN_LOC
        # how the kernel uses the grid: "none" (never asks), "tiled" (only through
        # tile_range) or "direct" (reads program_id/num_programs itself)
        self.grid_use = "none"
        # Kernels written against triton-ascend (dsl.from_triton) follow its rules where
        # the DSL is stricter: any positive block size (the DSL wants powers of two, as
        # upstream Triton does) and a where() condition of any type (tested != 0).
        self.triton_rules = False
        # dsl.ir_cache.Reads when the build is to be cached on disk: the front end
        # records there each value it reads from outside the kernel
        self.reads: Any = None
        # the hidden int32 parameter sub_vec_id() reads, made on its first call: the
        # launcher runs such a kernel's grid once per vector sub-block (dsl.jit)
        self.sub_block: Value | None = None
        # the jit functions being inlined now, outermost first (a call of one of them
        # again is recursion, which inlining cannot end)
        self.inlining: list[tuple[Any, str]] = []  # (KernelSource, name)

    @property
    def block(self) -> Block:
        return self.blocks[-1]

    def emit(self, kind: str, operands: list[Value], types: list[Type], *,
             attrs: dict[str, Any] | None = None, regions: list[Block] | None = None) -> Op:
        op = Op.create(kind, operands, types, attrs, self.loc, regions or ())
        self.block.ops.append(op)
        return op

    def error(self, message: str) -> DSLCompileError:
        return DSLCompileError(message, self.loc, self.kernel_name)


# ----------------------------------------------------------------------------- dtypes


def promote(a: DType, b: DType) -> DType:
    """Common dtype of two typed operands (rules 1-3)."""
    if a == b:
        return a
    if a.kind != b.kind:  # rule 1
        higher = a if _KIND_RANK[a.kind] > _KIND_RANK[b.kind] else b
        return dt.float32 if higher == dt.bfloat16 else higher
    if a.kind == "int" and a.signed != b.signed:  # rule 2, mixed signedness
        unsigned, signed = (a, b) if a.is_unsigned else (b, a)
        return unsigned if unsigned.bits >= signed.bits else signed
    if dt.bfloat16 in (a, b) and (a.is_fp8() or b.is_fp8()):
        return dt.float32  # rule 1's bfloat16 exception: kept only against bfloat16
    if a.bits != b.bits:  # rule 2
        return a if a.bits > b.bits else b
    return dt.float16  # rule 3: float16 with bfloat16, or two different fp8 formats


def scalar_dtype(value: PyScalar) -> DType:
    """The dtype of a Python scalar, as Triton types literals (rule 5)."""
    if isinstance(value, bool):
        return dt.int1
    if isinstance(value, int):
        for dtype in (dt.int32, dt.uint32, dt.int64, dt.uint64):
            if _fits(value, dtype):
                return dtype
        raise OverflowError(f"integer {value} does not fit 64 bits")
    if isinstance(value, float):
        # Triton's to_tensor: a finite non-zero value outside float32's normal range
        # (above its largest value or below 2**-126 in magnitude) is float64
        magnitude = math.fabs(value)
        if magnitude == 0.0 or not math.isfinite(magnitude) or \
                _FLOAT32_NORMAL_MIN <= magnitude <= _FLOAT32_MAX:
            return dt.float32
        return dt.float64
    raise TypeError(f"not a numeric scalar: {value!r}")


_FLOAT32_NORMAL_MIN = 2.0 ** -126
_FLOAT32_MAX = (2 - 2.0 ** -23) * 2.0 ** 127


def _fits(value: int, dtype: DType) -> bool:
    return dtype.min <= value <= dtype.max


def _wrapped(value: int, dtype: DType) -> int:
    """``value`` converted to the integer ``dtype`` as a cast wraps it (two's complement)."""
    value %= 1 << dtype.bits
    return value - (1 << dtype.bits) if dtype.signed and value > dtype.max else value


def is_pyscalar(x: object) -> bool:
    return isinstance(x, (bool, int, float))


def _operand_dtype(b: Builder, x: Operand, other: Operand) -> DType:
    """Dtype ``x`` takes part with in a binary op against ``other`` (rule 5)."""
    if isinstance(x, Value):
        return x.dtype
    sdt = scalar_dtype(x)
    if isinstance(other, Value) and _KIND_RANK[sdt.kind] <= _KIND_RANK[other.dtype.kind]:
        target = other.dtype
        if isinstance(x, int) and not isinstance(x, bool) and target.kind == "int" \
                and not _fits(x, target):
            raise b.error(f"integer literal {x} does not fit {target.name} (rule 5)")
        return target
    return sdt


def binary_dtypes(b: Builder, op: str, lhs: Operand, rhs: Operand) -> tuple[DType, DType]:
    """(operand dtype, result dtype) of a binary op (rules 1-5, 7)."""
    left, right = _operand_dtype(b, lhs, rhs), _operand_dtype(b, rhs, lhs)
    common = promote(left, right)
    opdef = elementwise(op)
    if common.is_fp8() and left.kind != right.kind:
        # Triton's computation_type_impl refuses it too (an fp8 block with a Python
        # scalar is typed fp8 by rule 5 and does not come here)
        raise b.error(f"'{opdef.symbol}' of {left.name} and {right.name}: an fp8 block "
                      "does not mix with integers; convert it with .to() first")
    divides = opdef.fp32_when_16bit or op == "floordiv"
    if divides and left.kind == right.kind == "int" and left.signed != right.signed:
        raise b.error(f"'{opdef.symbol}' of {left.name} and {right.name}: operands of "
                      "different signedness; cast one of them (rule 2)")
    if opdef.kinds == ("float",) and common.is_int:  # rule 4: '/' computes in floating point
        common = dt.float32
    if opdef.fp32_when_16bit and common.is_float and common.bits < 32:
        common = dt.float32
    if common.kind not in opdef.kinds:
        raise b.error(f"operator '{opdef.symbol}' does not accept {common.name} operands "
                      f"(rule 7)" if op in ("floordiv", "and", "or", "xor", "lshift", "rshift")
                      else
                      f"'{opdef.symbol}' does not accept {common.name} operands")
    return common, (dt.int1 if opdef.result == "bool" else common)


# ----------------------------------------------------------------------------- shapes


def broadcast_shapes(b: Builder, a: tuple[int, ...], c: tuple[int, ...], what: str) -> tuple[int, ...]:
    """NumPy broadcasting of two block shapes (rule 8)."""
    rank = max(len(a), len(c))
    pa = (1,) * (rank - len(a)) + a
    pc = (1,) * (rank - len(c)) + c
    out = []
    for x, y in zip(pa, pc):
        if x != y and 1 not in (x, y):
            raise b.error(f"incompatible shapes {list(a)} and {list(c)} for {what}")
        out.append(max(x, y))
    return tuple(out)


def broadcast_to(b: Builder, v: Value, shape: tuple[int, ...]) -> Value:
    """Explicit broadcast of ``v`` to ``shape`` (no-op when the shape already matches)."""
    if v.shape == shape:
        return v
    if broadcast_shapes(b, v.shape, shape, "broadcast") != shape:
        raise b.error(f"cannot broadcast shape {list(v.shape)} to {list(shape)}")
    return b.emit("broadcast", [v], [Type(v.dtype, shape)]).result


def expand_dims(b: Builder, v: Value, axis: int) -> Value:
    shape = v.shape[:axis] + (1,) + v.shape[axis:]
    return b.emit("expand_dims", [v], [Type(v.dtype, shape)], attrs={"axis": axis}).result


# ----------------------------------------------------------------------------- values


def constant(b: Builder, value: PyScalar, dtype: DType, shape: tuple[int, ...] = ()) -> Value:
    """A constant of ``dtype`` (converted from the Python value as a cast would)."""
    if dtype.is_bool:
        value = bool(value)
    elif dtype.is_int:
        if isinstance(value, float) and not math.isfinite(value):
            if not b.triton_rules:
                raise b.error(f"constant {value} has no {dtype.name} value")
            # Triton kernels pass other=float("-inf") for integer tensors too: the
            # conversion saturates (NaN gives 0)
            value = 0 if math.isnan(value) else dtype.max if value > 0 else dtype.min
        if isinstance(value, float):
            value = int(value)  # rule 9: truncation toward zero
        if not _fits(int(value), dtype):
            raise b.error(f"constant {value} does not fit {dtype.name}")
        value = int(value)
    else:
        # a Python zero is +0.0 whatever its sign, as in Triton (semantic.full makes every
        # scalar equal to 0 the type's null value), so -0.0 written in a kernel is +0.0
        value = float(value) or 0.0
        if dtype.is_fp8():  # the fp8 value, rounded (and saturated) as a cast would
            value = float(to_fp8(np.float64(value), dtype.np).astype(np.float64))
    return b.emit("const", [], [Type(dtype, shape)], attrs={"value": value}).result


def as_value(b: Builder, x: Operand, dtype: DType | None = None) -> Value:
    """``x`` as an IR value, converted to ``dtype`` if given."""
    if isinstance(x, Value):
        return cast(b, x, dtype) if dtype is not None else x
    if not is_pyscalar(x):
        raise b.error(f"expected a tensor or a number, got {type(x).__name__}")
    return constant(b, x, dtype or scalar_dtype(x))


def cast(b: Builder, v: Value, dtype: DType) -> Value:
    """Convert ``v`` to ``dtype`` (rule 9); no op when the dtype already matches."""
    if v.dtype == dtype:
        return v
    return b.emit("cast", [v], [Type(dtype, v.shape)], attrs={"dtype": dtype}).result


def cast_with_modes(b: Builder, v: Value, dtype: DType, rounding: Any = None,
                    overflow: Any = None) -> Value:
    """``cast`` with Triton's ``fp_downcast_rounding`` ("rtne", the default, or "rtz"
    for a narrowing float conversion) and triton-ascend's ``overflow_mode`` ("trunc",
    the default, or "saturate": out-of-range values become the nearest value of
    ``dtype``, a NaN converted to an integer 0). Both are spelled with existing ops,
    so every backend computes them alike. A cast to ``v``'s own dtype is ``v``,
    whatever the modes (Triton returns before it reads them: fla's kernels pass
    ``fp_downcast_rounding`` with an output type that may be the input's)."""
    if v.dtype == dtype:
        return v
    if rounding not in (None, "rtne", "rtz"):
        raise b.error(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
    if overflow not in (None, "trunc", "saturate"):
        raise b.error(f"overflow_mode must be 'trunc' or 'saturate', got {overflow!r}")
    narrowing = v.dtype.is_float and dtype.is_float and dtype.bits < v.dtype.bits
    if rounding is not None and not narrowing:
        raise b.error(f"fp_downcast_rounding is only for a narrowing float conversion, not "
                      f"{v.dtype.name} to {dtype.name} (as in Triton)")
    if rounding == "rtz":
        result = _cast_toward_zero(b, v, dtype)
    elif overflow == "saturate" and v.dtype.is_int and dtype.is_int and not dtype.is_bool:
        result = cast(b, _clamp_to(b, v, dtype), dtype)
    else:
        result = cast(b, v, dtype)
    if overflow != "saturate" or dtype.is_bool:
        return result
    if dtype.is_int and v.dtype.is_float:
        # (a bound that rounds up in v's type is out of range itself: >= still holds)
        result = where(b, binary(b, "ge", v, as_value(b, float(dtype.max), v.dtype)),
                       as_value(b, dtype.max, dtype), result)
        result = where(b, binary(b, "le", v, as_value(b, float(dtype.min), v.dtype)),
                       as_value(b, dtype.min, dtype), result)
        return where(b, binary(b, "ne", v, v), as_value(b, 0, dtype), result)
    if dtype.is_float:  # a finite value that became an infinity takes the largest finite
        largest = float(ml_dtypes.finfo(dtype.np).max)
        for sign in (1.0, -1.0):
            inf = as_value(b, sign * math.inf, dtype)
            became = binary(b, "eq", result, inf)
            if v.dtype.is_float:
                became = binary(b, "and", became, binary(b, "ne", v, as_value(b, sign * math.inf,
                                                                               v.dtype)))
            result = where(b, became, as_value(b, sign * largest, dtype), result)
    return result


def _clamp_to(b: Builder, v: Value, dtype: DType) -> Value:
    """An integer ``v`` clamped, in its own type, to the values ``dtype`` holds."""
    lo, hi = max(v.dtype.min, dtype.min), min(v.dtype.max, dtype.max)
    if hi < v.dtype.max:
        bound = as_value(b, hi, v.dtype)
        v = where(b, binary(b, "gt", v, bound), bound, v)
    if lo > v.dtype.min:
        bound = as_value(b, lo, v.dtype)
        v = where(b, binary(b, "lt", v, bound), bound, v)
    return v


def _cast_toward_zero(b: Builder, v: Value, dtype: DType) -> Value:
    """A narrowing float conversion rounded toward zero: the nearest-even result,
    stepped one unit in the last place toward zero where it rounded away (its
    magnitude grew). Stepping is a decrement of the bit pattern, so an overflow to an
    infinity becomes the largest finite value and a tiny value becomes zero; a NaN
    never compares greater and stays."""
    nearest = cast(b, v, dtype)
    away = binary(b, "gt", unary(b, "abs", cast(b, nearest, v.dtype)), unary(b, "abs", v))
    stepped = step_toward_zero(b, nearest)
    result = where(b, away, stepped, nearest)
    if dtype not in (dt.float8e4b8, dt.float8e5b16):
        return result
    # The "fnuz" fp8 formats have no negative zero and no infinity: their NaN is the
    # bit pattern of -0.0, where the smallest negative value steps to (zero instead),
    # and a finite value beyond their range rounds to it (their largest value instead).
    result = where(b, binary(b, "and", away, binary(b, "ne", stepped, stepped)),
                   as_value(b, 0.0, dtype), result)
    largest = float(ml_dtypes.finfo(dtype.np).max)
    overflow = binary(b, "and", binary(b, "ne", nearest, nearest),
                      binary(b, "lt", unary(b, "abs", v), as_value(b, math.inf, v.dtype)))
    signed = where(b, binary(b, "lt", v, as_value(b, 0.0, v.dtype)),
                   as_value(b, -largest, dtype), as_value(b, largest, dtype))
    return where(b, overflow, signed, result)


def step_toward_zero(b: Builder, v: Value) -> Value:
    """A nonzero float one unit in the last place nearer zero: its bit pattern less
    one (an infinity becomes the largest finite value)."""
    bits = dt.signed_int(v.dtype.bits)
    return bitcast(b, binary(b, "sub", bitcast(b, v, bits), 1), v.dtype)


def bitcast(b: Builder, v: Value, dtype: DType) -> Value:
    """Reinterpret the bits of ``v`` as ``dtype`` (``x.to(dtype, bitcast=True)``)."""
    if v.dtype == dtype:
        return v
    if v.dtype.is_bool or dtype.is_bool or v.dtype.bits != dtype.bits:
        raise b.error(f"cannot bitcast {v.dtype.name} to {dtype.name}: bitcasts need two "
                      "types of the same width (int1 has none)")
    return b.emit("bitcast", [v], [Type(dtype, v.shape)], attrs={"dtype": dtype}).result


def binary(b: Builder, op: str, lhs: Operand, rhs: Operand) -> Value:
    """An elementwise binary op with promotion and broadcasting made explicit."""
    if op == "floordiv" and b.triton_rules and (_operand_dtype(b, lhs, rhs).is_float or
                                                _operand_dtype(b, rhs, lhs).is_float):
        # Triton's own front end refuses '//' of floats; this project takes it as
        # floor(a / b) (torch's floor division but at the edges: -1.0 // inf is -0.0),
        # and its lowering writes the same two ops, so the kernel still compiles
        return unary(b, "floor", binary(b, "truediv", lhs, rhs))
    operand_dt, result_dt = binary_dtypes(b, op, lhs, rhs)
    if operand_dt.is_fp8():
        # fp8 arithmetic is float32 arithmetic rounded once to the format, by rule 9's
        # conversion (so float8e4nv saturates, as its casts do; ml_dtypes' own fp8
        # arithmetic gives NaN past +-448); comparisons compare the exact float32 values
        wide = [cast(b, as_value(b, x, operand_dt), dt.float32) for x in (lhs, rhs)]
        computed = binary(b, op, *wide)
        return cast(b, computed, result_dt) if result_dt.is_fp8() else computed
    if op == "rshift" and b.triton_rules and operand_dt.is_unsigned and \
            _operand_dtype(b, lhs, rhs).kind == "int" and _operand_dtype(b, lhs, rhs).signed:
        # Triton picks an arithmetic shift from the signed left operand, then promotes
        # both to the unsigned type: the promoted bits shifted arithmetically
        signed = dt.signed_int(operand_dt.bits)
        shifted = binary(b, "rshift", bitcast(b, as_value(b, lhs, operand_dt), signed),
                         bitcast(b, as_value(b, rhs, operand_dt), signed))
        return bitcast(b, shifted, operand_dt)
    lv = as_value(b, lhs, operand_dt)
    rv = as_value(b, rhs, operand_dt)
    shape = broadcast_shapes(b, lv.shape, rv.shape, f"'{elementwise(op).symbol}'")
    lv, rv = broadcast_to(b, lv, shape), broadcast_to(b, rv, shape)
    return b.emit(op, [lv, rv], [Type(result_dt, shape)]).result


def unary(b: Builder, op: str, x: Operand) -> Value:
    """An elementwise unary op; float math on a Python scalar computes in float32."""
    opdef = elementwise(op)
    v = as_value(b, x)
    if v.dtype.is_fp8() and opdef.kinds == ("float",):
        raise b.error(f"{opdef.symbol} of {v.dtype.name}: math functions take float16, "
                      "bfloat16, float32 and float64 (as Triton's do); convert the fp8 block "
                      "with .to() first")
    if v.dtype.kind not in opdef.kinds:
        raise b.error(f"{opdef.symbol} expects a floating-point operand, got {v.dtype.name}"
                      if opdef.kinds == ("float",) else
                      f"'{opdef.symbol}' does not accept {v.dtype.name} operands")
    return b.emit(op, [v], [v.type]).result


def ternary(b: Builder, op: str, x: Operand, y: Operand, z: Operand) -> Value:
    """An elementwise op of three operands that promote together (``fma``)."""
    opdef = elementwise(op)
    common = promote(promote(_operand_dtype(b, x, y), _operand_dtype(b, y, x)),
                     _operand_dtype(b, z, x if isinstance(x, Value) else y))
    if opdef.kinds == ("float",) and common.is_int:
        common = dt.float32
    if common.kind not in opdef.kinds or common.is_fp8():
        raise b.error(f"{opdef.symbol}() does not accept {common.name} operands")
    values = [as_value(b, v, common) for v in (x, y, z)]
    shape = broadcast_shapes(b, values[0].shape, values[1].shape, opdef.symbol)
    shape = broadcast_shapes(b, shape, values[2].shape, opdef.symbol)
    values = [broadcast_to(b, v, shape) for v in values]
    return b.emit(op, values, [Type(common, shape)]).result


def umulhi(b: Builder, x: Operand, y: Operand) -> Value:
    """High 32 bits of the 64-bit product of two 32-bit integers (Triton's ``umulhi``)."""
    operand_dt, _ = binary_dtypes(b, "umulhi", x, y)
    if operand_dt.bits != 32:
        raise b.error(f"umulhi() needs int32 or uint32 operands, got {operand_dt.name}")
    return binary(b, "umulhi", x, y)


def clamp(b: Builder, x: Operand, lo: Operand, hi: Operand, propagate_nan: Any = None
          ) -> Value:
    """``maximum(minimum(x, hi), lo)`` on floats, as triton-ascend lowers ``clamp``
    (maxNum/minNum: a NaN ``x`` gives ``hi``; ``lo > hi`` gives ``lo``). With
    ``propagate_nan`` ALL both steps propagate a NaN (triton-ascend's
    minimumf/maximumf): a NaN in ``x``, ``lo`` or ``hi`` gives NaN."""
    if b.triton_rules:  # every operand typed and promoted, as Triton's clamp does
        x, lo, hi = (_triton_tensor(b, o) for o in (x, lo, hi))
        common = promote(promote(x.dtype, lo.dtype), hi.dtype)
        x, lo, hi = (cast(b, o, common) for o in (x, lo, hi))
    v = as_value(b, x)
    if not v.dtype.is_float:
        raise b.error(f"clamp() needs a floating-point operand, got {v.dtype.name}")
    return extremum(b, "maximum", extremum(b, "minimum", v, hi, propagate_nan), lo,
                    propagate_nan)


def _triton_tensor(b: Builder, x: Operand) -> Value:
    """``x`` as Triton's ``maximum``/``minimum``/``clamp`` take it: a Python scalar
    becomes a tensor of its own dtype (int32, float32, ...: rule 5's literal types)
    that takes part in promotion, so ``maximum(x_int8, 0)`` is int32 and
    ``maximum(x_fp16, 0.0)`` float32; a bfloat16 operand becomes float32."""
    v = as_value(b, x)
    return cast(b, v, dt.float32) if v.dtype == dt.bfloat16 else v


def cdiv(b: Builder, x: Operand, div: Operand) -> Operand:
    """Ceiling division ``(x + div - 1) // div`` of integers (constexprs fold). In
    Triton kernels a float operand gives ``ceil(x / div)`` in ``x``'s type, as
    triton-ascend computes it."""
    floats = [o for o in (x, div) if isinstance(o, float) or
              (isinstance(o, Value) and o.dtype.is_float)]
    if b.triton_rules and floats:
        if is_pyscalar(x) and is_pyscalar(div):
            if div == 0:
                raise b.error(f"cdiv() by zero: {x!r}, {div!r}")
            return math.ceil(x / div)
        dtype = as_value(b, x).dtype
        return cast(b, unary(b, "ceil", binary(b, "truediv", x, div)), dtype)
    if is_pyscalar(x) and is_pyscalar(div):
        if not isinstance(x, int) or not isinstance(div, int) or div == 0:
            raise b.error(f"cdiv() needs integers and a non-zero divisor, got {x!r}, {div!r}")
        return -(-x // div)
    top = binary(b, "sub", binary(b, "add", x, div), 1)
    return binary(b, "floordiv", top, div)


def extremum(b: Builder, op: str, x: Operand, y: Operand, propagate_nan: Any) -> Value:
    """``maximum``/``minimum``; with ``propagate_nan`` ALL (any non-zero policy) a NaN
    operand gives NaN: ``where(x != x | y != y, x + y, maxNum(x, y))``. In a Triton
    kernel the operands are taken as Triton's ``maximum``/``minimum``/``clamp`` take
    them (``_triton_tensor``: a Python scalar is typed on its own, a bfloat16 operand
    becomes float32)."""
    if b.triton_rules:
        x, y = _triton_tensor(b, x), _triton_tensor(b, y)
    result = binary(b, op, x, y)
    if not propagate_nan or not result.dtype.is_float:
        return result
    nan = binary(b, "or", binary(b, "ne", x, x), binary(b, "ne", y, y))
    return where(b, nan, binary(b, "add", x, y), result)


def where(b: Builder, cond: Operand, x: Operand, y: Operand) -> Value:
    """``where(cond, x, y)``: cond is int1; x and y promote like a binary op."""
    c = as_value(b, cond)
    if not c.dtype.is_bool and b.triton_rules:
        c = binary(b, "ne", c, 0)
    if not c.dtype.is_bool:
        raise b.error(f"where() condition must be int1 (a comparison), got {c.dtype.name}")
    operand_dt = promote(_operand_dtype(b, x, y), _operand_dtype(b, y, x))
    xv, yv = as_value(b, x, operand_dt), as_value(b, y, operand_dt)
    shape = broadcast_shapes(b, xv.shape, yv.shape, "where")
    shape = broadcast_shapes(b, c.shape, shape, "where")
    c, xv, yv = (broadcast_to(b, v, shape) for v in (c, xv, yv))
    return b.emit("where", [c, xv, yv], [Type(operand_dt, shape)]).result


# Triton's bound on a block's elements (triton.language.TRITON_MAX_TENSOR_NUMEL), enforced
# for kernels written against Triton.
TRITON_MAX_TENSOR_NUMEL = 1 << 20


def arange(b: Builder, start: int, end: int) -> Value:
    """int32 block ``[start, end)``; the length must be a power of two (as in Triton;
    any positive length in a kernel written against triton-ascend)."""
    if not (isinstance(start, int) and isinstance(end, int)):
        raise b.error("arange() bounds must be constexpr integers")
    n = end - start
    if n <= 0 or (not b.triton_rules and n & (n - 1)):
        raise b.error(f"arange() length must be a positive power of two, got {n}")
    if b.triton_rules and n > TRITON_MAX_TENSOR_NUMEL:
        raise b.error(f"arange() length {n} exceeds Triton's limit of "
                      f"{TRITON_MAX_TENSOR_NUMEL} elements per block")
    return b.emit("arange", [], [Type(dt.int32, (n,))], attrs={"start": start, "end": end}).result


def check_block_shape(b: Builder, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(isinstance(s, int) for s in shape):
        raise b.error("a block shape must be a tuple of constexpr integers")
    for s in shape:
        if s <= 0 or (not b.triton_rules and s & (s - 1)):
            raise b.error(f"block dimensions must be positive powers of two, got {list(shape)}")
    if b.triton_rules and _numel(tuple(shape)) > TRITON_MAX_TENSOR_NUMEL:
        raise b.error(f"a block of shape {list(shape)} exceeds Triton's limit of "
                      f"{TRITON_MAX_TENSOR_NUMEL} elements")
    return tuple(shape)


def full(b: Builder, shape: Any, value: Operand, dtype: DType) -> Value:
    """A block of constexpr ``shape`` filled with ``value`` (a constexpr, or a runtime
    scalar splat as in Triton), converted to ``dtype``."""
    dims = check_block_shape(b, shape)
    if isinstance(value, Value):
        if value.shape:
            raise b.error(f"full() value must be a scalar, got a block of shape "
                          f"{list(value.shape)}")
        return broadcast_to(b, cast(b, value, dtype), dims)
    return constant(b, value, dtype, dims)


def program_index(b: Builder, kind: str, axis: int) -> Value:
    """``program_id(axis)`` or ``num_programs(axis)``: an int32 scalar."""
    if axis not in (0, 1, 2):
        raise b.error(f"{kind}() axis must be 0, 1 or 2, got {axis!r}")
    return b.emit(kind, [], [Type(dt.int32)], attrs={"axis": axis}).result


def reduce_propagating_nan(b: Builder, combine: str, x: Operand, axis: int | None,
                           keep_dims: bool) -> Value:
    """``max``/``min`` with ``propagate_nan=ALL``: NaN where the reduced slice has one."""
    v = as_value(b, x)
    result = reduce(b, combine, v, axis, keep_dims)
    if not v.dtype.is_float:
        return result
    has_nan = reduce(b, "max", cast(b, binary(b, "ne", v, v), dt.int32), axis, keep_dims)
    return where(b, binary(b, "ne", has_nan, 0), float("nan"), result)


def reduce(b: Builder, combine: str, x: Operand, axis: int | None, keep_dims: bool) -> Value:
    """``sum``/``max``/``min``/``xor_sum`` of a block along ``axis`` (all axes when
    None; rule 10)."""
    v = as_value(b, x)
    if not v.shape:
        raise b.error(f"{combine}() needs a block operand, got a scalar")
    if combine == "xor_sum" and not (v.dtype.is_int or v.dtype.is_bool):
        # (int1 too: Triton's xor_sum asks is_int(), which int1 is; its parity)
        raise b.error(f"xor_sum() needs integer operands, got {v.dtype.name}")
    source = v.dtype
    v = cast(b, v, COMBINES[combine].accumulator(v.dtype))
    if axis is None:
        axes = list(range(v.rank))
    else:
        if not isinstance(axis, int) or not -v.rank <= axis < v.rank:
            raise b.error(f"{combine}() axis {axis!r} out of range for shape {list(v.shape)}")
        axes = [axis % v.rank]
    for ax in sorted(axes, reverse=True):
        shape = v.shape[:ax] + v.shape[ax + 1:]
        v = b.emit("reduce", [v], [Type(v.dtype, shape)],
                   attrs={"combine": combine, "axis": ax}).result
    if b.triton_rules and combine == "sum" and source == dt.float16:
        # Triton's tl.sum of float16 is float16 (it widens only bfloat16): the float32
        # tree sum, rounded, so the types downstream are Triton's
        v = cast(b, v, dt.float16)
    if keep_dims:
        for ax in sorted(axes):
            v = expand_dims(b, v, ax)
    return v


# ----------------------------------------------------------------------------- memory


@dataclass(frozen=True)
class ViewArg:
    """A tensor argument inside the kernel: its IR value and its hidden layout params."""

    name: str
    value: Value
    sizes: tuple[Value, ...]
    strides: tuple[Value | int, ...]
    base: Value | None
    dims: tuple[Value, ...] = ()  # the caller's shape, as hidden scalars
    dim_strides: tuple[Value, ...] = ()  # the caller's strides, as hidden scalars
    rank: int | None = None

    @property
    def dtype(self) -> DType:
        return self.value.type.dtype


def derive_offset(b: Builder, view: ViewArg, index: Value) -> Value:
    """Physical element offset of a logical row-major ``index`` into ``view``.

    contiguous -> index; scalar -> 0; strided -> sum over coalesced dims of
    ``coord_d * stride_d`` with ``coord_d = (index // inner_d) % size_d``, dropping
    the terms of broadcast dims, ``// 1`` on the innermost dim, ``% size`` on dim 0
    (an in-bounds index is below the product of all sizes) and ``* 1``.
    """
    layout = view.value.type.layout
    idx_dt = dt.int64 if layout.index_bits == 64 else index.dtype
    index = cast(b, index, idx_dt)
    if layout.kind == "contiguous":
        return index
    if layout.kind == "scalar":
        return constant(b, 0, idx_dt, index.shape)
    terms: list[Value] = []
    inner: Value | None = None  # product of the sizes inside dim d; None means 1
    rank = layout.rank
    outermost_used = min((d for d in range(rank) if layout.strides[d] != 0), default=rank)
    for d in reversed(range(rank)):
        if layout.strides[d] != 0:
            coord = index if inner is None else binary(b, "floordiv", index, inner)
            if d != 0:
                coord = binary(b, "mod", coord, view.sizes[d])
            stride = view.strides[d]
            terms.append(coord if layout.strides[d] == 1 else binary(b, "mul", coord, stride))
        if d > outermost_used:
            inner = view.sizes[d] if inner is None else binary(b, "mul", inner, view.sizes[d])
    offset = terms[0]
    for term in terms[1:]:
        offset = binary(b, "add", offset, term)
    if view.base is not None:
        offset = binary(b, "add", offset, view.base)
    return offset


def _index_value(b: Builder, index: Operand) -> Value:
    v = as_value(b, index)
    if not v.dtype.is_int or v.dtype.is_bool:
        raise b.error(f"a load/store index must be int32 or int64, got {v.dtype.name}")
    return v


def _same_rank(b: Builder, what: str, v: Value, shape: tuple[int, ...]) -> None:
    """Triton broadcasts a memory op's value, mask and ``other`` to the pointer block
    only from a scalar or a block of its rank ("Cannot broadcast, rank mismatch")."""
    if b.triton_rules and v.shape and len(v.shape) != len(shape):
        raise b.error(f"{what} of shape {list(v.shape)} for a pointer block of shape "
                      f"{list(shape)}: Triton broadcasts only a scalar or a block of the "
                      "same rank (cannot broadcast, rank mismatch)")


def _mask_value(b: Builder, mask: Operand | None, shape: tuple[int, ...]) -> Value | None:
    if mask is None or mask is True:
        return None
    m = as_value(b, mask)
    if not m.dtype.is_bool:
        raise b.error(f"a mask must be int1 (a comparison), got {m.dtype.name}")
    _same_rank(b, "a mask", m, shape)
    if broadcast_shapes(b, m.shape, shape, "mask") != shape:
        raise b.error(f"mask shape {list(m.shape)} does not broadcast to index shape {list(shape)}")
    return broadcast_to(b, m, shape)


@dataclass(frozen=True)
class Address:
    """Where a memory op goes: the tensor, the index its bounds are checked on, and
    the physical element offset into the tensor's buffer. A logical address checks
    a row-major ``index`` against the view's elements; a pointer address (Triton's
    ``x_ptr + offsets``, ``dsl.pointers``) checks the offset itself against the
    memory the argument spans, so ``index`` and ``offset`` are the same value."""

    view: ViewArg
    index: Value
    offset: Value
    pointer: bool = False

    @property
    def attrs(self) -> dict[str, Any]:
        return {"pointer": True} if self.pointer else {}

    def broadcast(self, b: Builder, shape: tuple[int, ...]) -> Address:
        index = broadcast_to(b, self.index, shape)
        offset = index if self.offset is self.index else broadcast_to(b, self.offset, shape)
        return Address(self.view, index, offset, self.pointer)


Target = ViewArg | Address


def address(b: Builder, target: Target, index: Operand | None) -> Address:
    """The address of a memory op: ``target`` itself when it is one already (a
    pointer), else the logical ``index`` into the view."""
    if isinstance(target, Address):
        return target
    if index is None:
        raise b.error(f"an index into tensor '{target.name}' is missing")
    idx = _index_value(b, index)
    return Address(target, idx, derive_offset(b, target, idx))


def _mask_and_fill(b: Builder, mask: Operand | None, other: Operand | None, dtype: DType,
                   shape: tuple[int, ...]) -> list[Value]:
    """A load's optional ``[mask, other]`` operands for an access of ``shape`` reading
    ``dtype``: none without a mask (``other`` then is an error), else the mask and the
    fill of masked-off lanes (default 0), both broadcast to ``shape``."""
    m = _mask_value(b, mask, shape)
    if m is None:
        if other is not None and mask is not True:  # (an all-true mask leaves no lane)
            raise b.error("load() got other= without mask=")
        return []
    if b.triton_rules and isinstance(other, int) and not isinstance(other, bool) and \
            dtype.is_int and not dtype.is_bool and not _fits(other, dtype):
        # Triton types the literal (int32, ...) and casts it to the element type,
        # which wraps: other=-1 fills uint8 lanes with 255
        other = _wrapped(other, dtype)
    fill = as_value(b, 0 if other is None else other, dtype)
    _same_rank(b, "other=", fill, shape)
    return [m, broadcast_to(b, fill, shape)]


def _stored_value(b: Builder, value: Operand, dtype: DType, shape: tuple[int, ...],
                  what: str) -> Value:
    """A store's ``value`` converted to ``dtype`` (rule 9) and broadcast to the access
    ``shape`` (``what``: the index's or the pointer's, for the error)."""
    val = as_value(b, value, dtype)
    _same_rank(b, "a stored value", val, shape)
    if broadcast_shapes(b, val.shape, shape, "store") != shape:
        raise b.error(f"stored value of shape {list(val.shape)} does not fit {what} shape "
                      f"{list(shape)}")
    return broadcast_to(b, val, shape)


def load(b: Builder, target: Target, index: Operand | None, mask: Operand | None,
         other: Operand | None) -> Value:
    """Load at an address (a view and a logical ``index``, or a pointer);
    masked-off lanes give ``other`` (default 0)."""
    addr = address(b, target, index)
    view, shape = addr.view, addr.index.shape
    operands = [view.value, addr.index, addr.offset] + \
        _mask_and_fill(b, mask, other, view.dtype, shape)
    return b.emit("load", operands, [Type(view.dtype, shape)], attrs=addr.attrs).result


def store(b: Builder, target: Target, index: Operand | None, value: Operand,
          mask: Operand | None) -> None:
    """Store ``value`` (converted to the view's dtype, rule 9) at an address."""
    addr = address(b, target, index)
    view, shape = addr.view, addr.index.shape
    val = _stored_value(b, value, view.dtype, shape, "index")
    m = _mask_value(b, mask, shape)
    operands = [view.value, addr.index, addr.offset, val] + ([m] if m is not None else [])
    b.emit("store", operands, [], attrs=addr.attrs)


def _address_operands(b: Builder, address: Value, offset: Value, shape: tuple[int, ...]
                      ) -> list[Value]:
    """(address, offset) of an access of ``shape``: the offset broadcast to it, the
    address too unless it is one scalar (kept so, as the kernel cast it)."""
    if address.shape:
        address = broadcast_to(b, address, shape)
    return [address, broadcast_to(b, offset, shape)]


def load_address(b: Builder, address: Value, offset: Value, element: DType,
                 mask: Operand | None, other: Operand | None) -> Value:
    """Load ``element`` values ``offset`` elements past int64 byte addresses (a pointer
    cast from an integer, ``dsl.pointers.AddressPointer``); masked-off lanes give
    ``other`` (default 0)."""
    shape = broadcast_shapes(b, address.shape, offset.shape, "load")
    operands = _address_operands(b, address, offset, shape) + \
        _mask_and_fill(b, mask, other, element, shape)
    return b.emit("load_address", operands, [Type(element, shape)]).result


def store_address(b: Builder, address: Value, offset: Value, element: DType, value: Operand,
                  mask: Operand | None) -> None:
    """Store ``value`` (converted to ``element``) ``offset`` elements past int64 byte
    addresses."""
    shape = broadcast_shapes(b, address.shape, offset.shape, "store")
    val = _stored_value(b, value, element, shape, "pointer")
    m = _mask_value(b, mask, shape)
    b.emit("store_address", _address_operands(b, address, offset, shape) + [val] +
           ([m] if m is not None else []), [])


# ----------------------------------------------------------------------------- shape ops


def _block(b: Builder, x: Operand, what: str) -> Value:
    v = as_value(b, x)
    if not v.shape:
        raise b.error(f"{what}() needs a block operand, got a scalar")
    return v


def reshape(b: Builder, x: Operand, shape: Any) -> Value:
    """The same elements, row-major, in ``shape`` (Triton's ``reshape``/``view``)."""
    v = _block(b, x, "reshape")
    new = check_block_shape(b, shape)
    if _numel(new) != _numel(v.shape):
        raise b.error(f"cannot reshape {list(v.shape)} ({_numel(v.shape)} elements) to "
                      f"{list(new)} ({_numel(new)} elements)")
    if new == v.shape:
        return v
    return b.emit("reshape", [v], [Type(v.dtype, new)], attrs={"shape": new}).result


def permute(b: Builder, x: Operand, dims: Any) -> Value:
    """Axes reordered (Triton's ``permute``; ``trans`` defaults to swapping two axes)."""
    v = _block(b, x, "permute")
    dims = tuple(dims)
    if sorted(dims) != list(range(v.rank)) or not all(isinstance(d, int) for d in dims):
        raise b.error(f"permute() dims {list(dims)} are not a permutation of the "
                      f"{v.rank} axes of {list(v.shape)}")
    if dims == tuple(range(v.rank)):
        return v
    shape = tuple(v.shape[d] for d in dims)
    return b.emit("permute", [v], [Type(v.dtype, shape)], attrs={"dims": dims}).result


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _pair(b: Builder, x: Operand, y: Operand, what: str) -> tuple[Value, Value]:
    """Two operands promoted to one dtype (rules 1-5) and broadcast to one shape."""
    common = promote(_operand_dtype(b, x, y), _operand_dtype(b, y, x))
    xv, yv = as_value(b, x, common), as_value(b, y, common)
    shape = broadcast_shapes(b, xv.shape, yv.shape, what)
    return broadcast_to(b, xv, shape), broadcast_to(b, yv, shape)


def cat(b: Builder, x: Operand, y: Operand) -> Value:
    """Two 1-D blocks concatenated in order (``x`` then ``y``)."""
    xv, yv = _block(b, x, "cat"), _block(b, y, "cat")
    common = promote(xv.dtype, yv.dtype)
    xv, yv = cast(b, xv, common), cast(b, yv, common)
    if xv.rank != 1 or yv.rank != 1:
        raise b.error(f"cat() joins 1-D blocks, got {list(xv.shape)} and {list(yv.shape)}")
    n = xv.shape[0] + yv.shape[0]
    if not b.triton_rules and n & (n - 1):
        raise b.error(f"cat() result length {n} is not a power of two")
    return b.emit("cat", [xv, yv], [Type(common, (n,))]).result


def join(b: Builder, x: Operand, y: Operand) -> Value:
    """A new minor axis of 2 holding ``x`` and ``y`` (scalars give a block of 2)."""
    xv, yv = _pair(b, x, y, "join")
    if not xv.shape:
        xv, yv = expand_dims(b, xv, 0), expand_dims(b, yv, 0)
        joined = b.emit("join", [xv, yv], [Type(xv.dtype, (1, 2))]).result
        return reshape(b, joined, (2,))
    return b.emit("join", [xv, yv], [Type(xv.dtype, xv.shape + (2,))]).result


def split(b: Builder, x: Operand) -> tuple[Value, Value]:
    """The two halves of a minor axis of size 2 (``join``'s inverse)."""
    v = _block(b, x, "split")
    if v.shape[-1] != 2:
        raise b.error(f"split() needs a minor axis of 2, got shape {list(v.shape)}")
    if v.rank == 1:  # two scalars: split a (1, 2) block, then take the single element
        v = expand_dims(b, v, 0)
    op = b.emit("split", [v], [Type(v.dtype, v.shape[:-1])] * 2)
    halves = op.results
    if halves[0].shape == (1,):
        return tuple(reduce(b, "max", h, 0, False) for h in halves)  # type: ignore[return-value]
    return halves[0], halves[1]


def interleave(b: Builder, x: Operand, y: Operand) -> Value:
    """``x`` and ``y`` interleaved along their last axis: ``join`` then ``reshape``."""
    joined = join(b, x, y)
    if joined.rank == 1:
        return joined
    return reshape(b, joined, joined.shape[:-2] + (joined.shape[-2] * 2,))


def flip(b: Builder, x: Operand, dim: int | None) -> Value:
    """The elements of ``x`` reversed along ``dim`` (the last axis by default)."""
    v = _block(b, x, "flip")
    axis = v.rank - 1 if dim is None else dim
    if not isinstance(axis, int) or not -v.rank <= axis < v.rank:
        raise b.error(f"flip() dim {dim!r} out of range for shape {list(v.shape)}")
    return b.emit("flip", [v], [v.type], attrs={"axis": axis % v.rank}).result


def as_tuple(x: Any) -> tuple[Any, ...]:
    """A builtin's per-dimension argument as a tuple: a tuple or list as given, a
    single value as a 1-tuple (Triton accepts both)."""
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _slice_args(b: Builder, what: str, rank: int, offsets: Any, sizes: Any, strides: Any
                ) -> tuple[list[Value], tuple[int, ...], tuple[int, ...]]:
    offs, sz, st = as_tuple(offsets), as_tuple(sizes), as_tuple(strides)
    if not len(offs) == len(sz) == len(st) == rank:
        raise b.error(f"{what}() needs one offset, size and stride per dimension of a "
                      f"{rank}-d block, got {len(offs)}, {len(sz)} and {len(st)}")
    if any(isinstance(n, bool) or not isinstance(n, int) or n <= 0 for n in sz + st):
        raise b.error(f"{what}() sizes and strides must be positive constexpr integers, got "
                      f"{list(sz)} and {list(st)}")
    values = []
    for o in offs:
        v = as_value(b, o)
        if v.shape or not v.dtype.is_int or v.dtype.is_bool:
            raise b.error(f"{what}() offsets must be integer scalars, got {v.type}")
        values.append(cast(b, v, dt.int32) if v.dtype.bits < 32 else v)
    return values, sz, st


def extract_slice(b: Builder, x: Operand, offsets: Any, sizes: Any, strides: Any,
                  spelled: str = "extract_slice") -> Value:
    """triton-ascend's ``extract_slice``: the ``sizes`` block of ``x`` at ``offsets``
    (constexpr or runtime), taking every ``strides``-th element. ``spelled``: the
    builtin the kernel called (errors name it)."""
    v = _block(b, x, spelled)
    offs, sz, st = _slice_args(b, spelled, v.rank, offsets, sizes, strides)
    for d, (n, step, full) in enumerate(zip(sz, st, v.shape)):
        if (n - 1) * step + 1 > full:
            raise b.error(f"extract_slice() size {n} with stride {step} does not fit dimension "
                          f"{d} of {list(v.shape)}")
    attrs: dict[str, Any] = {"sizes": sz, "strides": st}
    if spelled != "extract_slice":
        attrs["spelled"] = spelled
    return b.emit("extract_slice", [v, *offs], [Type(v.dtype, sz)], attrs=attrs).result


def insert_slice(b: Builder, full: Operand, sub: Operand, offsets: Any, sizes: Any,
                 strides: Any) -> Value:
    """triton-ascend's ``insert_slice``: ``full`` with ``sub`` (converted to its dtype)
    written at ``offsets``, every ``strides``-th element."""
    f = _block(b, full, "insert_slice")
    offs, sz, st = _slice_args(b, "insert_slice", f.rank, offsets, sizes, strides)
    s = as_value(b, sub, f.dtype)
    if s.shape != sz:
        raise b.error(f"insert_slice() sub has shape {list(s.shape)}, sizes say {list(sz)}")
    return b.emit("insert_slice", [f, s, *offs], [f.type],
                  attrs={"sizes": sz, "strides": st}).result


def get_element(b: Builder, x: Operand, indices: Any) -> Value:
    """triton-ascend's ``get_element``: the one element of ``x`` at ``indices``."""
    v = _block(b, x, "get_element")
    one = extract_slice(b, v, as_tuple(indices), (1,) * v.rank, (1,) * v.rank, "get_element")
    return reduce(b, "max", one, None, False)  # the max of one element is that element


def gather(b: Builder, src: Operand, index: Operand, axis: Any) -> Value:
    """``tl.gather``: ``src`` read along ``axis`` at ``index`` (same rank; the other
    dimensions equal)."""
    v = _block(b, src, "gather")
    i = as_value(b, index)
    if not i.dtype.is_int or i.dtype.is_bool or i.rank != v.rank:
        raise b.error(f"gather() index must be an integer block of rank {v.rank}, got {i.type}")
    ax = _one_axis(b, "gather", v, axis)
    if any(n != m for d, (n, m) in enumerate(zip(i.shape, v.shape)) if d != ax):
        raise b.error(f"gather() index shape {list(i.shape)} must equal the source's "
                      f"{list(v.shape)} outside axis {ax}")
    return b.emit("gather", [v, i], [Type(v.dtype, i.shape)], attrs={"axis": ax}).result


_asm_sites = itertools.count()


def inline_asm(b: Builder, asm: Any, constraints: Any, args: Any, dtype: Any, is_pure: Any,
               pack: Any) -> Value:
    """``tl.inline_asm_elementwise``: the assembly applied to every lane of ``args``
    (broadcast together; a scalar result when there are none). The interpreter
    evaluates the subset of Ascend scalar assembly ``dsl.inline_asm`` knows; anything
    else is refused here, naming the instruction."""
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise b.error("inline_asm_elementwise() asm and constraints must be strings")
    if isinstance(dtype, (tuple, list)):
        raise b.error("inline_asm_elementwise() with several result dtypes is not supported")
    if not isinstance(dtype, DType):
        raise b.error(f"inline_asm_elementwise() dtype must be a dtype, got {dtype!r}")
    if pack != 1:
        raise b.error(f"inline_asm_elementwise() pack={pack!r} is not supported: the "
                      "interpreter evaluates one element per instruction (pack=1)")
    values = [as_value(b, a) for a in as_tuple(args)]
    try:
        program = asm_eval.parse(asm, constraints, len(values))
    except asm_eval.AsmError as err:
        raise b.error(f"inline_asm_elementwise(): {err}") from None
    shape: tuple[int, ...] = ()
    for v in values:
        shape = broadcast_shapes(b, shape, v.shape, "inline_asm_elementwise")
    values = [broadcast_to(b, v, shape) for v in values]
    attrs = {"asm": asm, "constraints": constraints, "pack": 1, "is_pure": bool(is_pure),
             "program": program}
    if not is_pure:  # never merged with an identical call (SYS_CNT reads differ)
        attrs["site"] = next(_asm_sites)
    return b.emit("inline_asm", values, [Type(dtype, shape)], attrs=attrs).result


def histogram(b: Builder, x: Operand, num_bins: Any, mask: Operand | None) -> Value:
    """``tl.histogram``: int32 counts of the 1-D integer block's values in the unit-wide
    bins ``[0, num_bins)``; lanes where ``mask`` is false are not counted, and a value
    outside the bins is an error at run time (the device leaves it undefined)."""
    v = _block(b, x, "histogram")
    if v.rank != 1 or not v.dtype.is_int or v.dtype.is_bool:
        raise b.error(f"histogram() counts a 1-D integer block, got {v.type}")
    if not isinstance(num_bins, int) or isinstance(num_bins, bool) or num_bins < 1:
        raise b.error(f"histogram() num_bins must be a positive int constexpr, got {num_bins!r}")
    check_block_shape(b, (num_bins,))
    operands = [v]
    if mask is not None:
        m = broadcast_to(b, as_value(b, mask), v.shape)
        if not m.dtype.is_bool:
            raise b.error(f"histogram() mask must be a boolean block, got {m.type}")
        operands.append(m)
    return b.emit("histogram", operands, [Type(dt.int32, (num_bins,))],
                  attrs={"num_bins": num_bins}).result


def sort(b: Builder, x: Operand, dim: Any, descending: Any) -> Value:
    """``tl.sort``: ``x`` sorted along ``dim`` (the last by default)."""
    v = _block(b, x, "sort")
    ax = _one_axis(b, "sort", v, -1 if dim is None else dim)
    return b.emit("sort", [v], [v.type], attrs={"axis": ax,
                                                "descending": bool(descending)}).result


def topk(b: Builder, x: Operand, k: Any, dim: Any) -> Value:
    """``tl.topk``: the ``k`` largest elements along the last axis, largest first (a
    descending ``sort`` and the leading ``k`` of it)."""
    v = _block(b, x, "topk")
    ax = _one_axis(b, "topk", v, -1 if dim is None else dim)
    if ax != v.rank - 1:
        raise b.error("topk() works along the last axis")
    if not isinstance(k, int) or not 0 < k <= v.shape[-1]:
        raise b.error(f"topk() needs a constexpr k in [1, {v.shape[-1]}], got {k!r}")
    ordered = sort(b, v, ax, True)
    return extract_slice(b, ordered, (0,) * v.rank, v.shape[:-1] + (k,), (1,) * v.rank)


def broadcast_block(b: Builder, x: Operand, shape: Any) -> Value:
    """``broadcast_to`` of a block inside a kernel (NumPy rules, rule 8)."""
    v = as_value(b, x)
    return broadcast_to(b, v, check_block_shape(b, shape))


def broadcast_pair(b: Builder, x: Operand, y: Operand) -> tuple[Value, Value]:
    """``tl.broadcast``: both operands broadcast to their common shape (NumPy rules)."""
    xv, yv = as_value(b, x), as_value(b, y)
    shape = broadcast_shapes(b, xv.shape, yv.shape, "broadcast()")
    return broadcast_to(b, xv, shape), broadcast_to(b, yv, shape)


# ----------------------------------------------------------------------------- random


_RANDOM_RESULTS = {"randint": (dt.uint32, 1), "randint4x": (dt.uint32, 4),
                   "rand": (dt.float32, 1), "randn": (dt.float32, 1)}


def random(b: Builder, kind: str, seed: Operand, offset: Operand, n_rounds: Any
           ) -> Value | tuple[Value, ...]:
    """Philox random numbers (``dsl.philox``) from an integer ``seed`` (a scalar, or a
    block of per-lane seeds broadcast with the offsets, as Triton's elementwise Philox
    takes them) and int32/uint32 ``offsets``: ``randint`` (uint32), ``randint4x``
    (four uint32 blocks), ``rand`` (float32 in [0, 1)), ``randn`` (float32 standard
    normal)."""
    s = _random_seed(b, kind, seed, n_rounds)
    o = as_value(b, offset)
    if not o.dtype.is_int or o.dtype.is_bool or o.dtype.bits > 32:
        raise b.error(f"{kind}() offsets must be int32 or uint32, got {o.dtype.name} "
                      "(triton-ascend 3.2.0 builds Philox for 32-bit offsets only)")
    if o.dtype.bits < 32:
        o = cast(b, o, dt.int32)
    if s.shape:  # one seed per lane (lmdeploy's sampling: a seed loaded per row)
        shape = broadcast_shapes(b, s.shape, o.shape, f"{kind}()")
        s, o = broadcast_to(b, s, shape), broadcast_to(b, o, shape)
    dtype, count = _RANDOM_RESULTS[kind]
    op = b.emit(kind, [s, o], [Type(dtype, o.shape)] * count, attrs={"n_rounds": n_rounds})
    return tuple(op.results) if count > 1 else op.result


def _random_seed(b: Builder, kind: str, seed: Operand, n_rounds: Any) -> Value:
    """The seed of a random-number builtin, an integer scalar or block, after
    checking it and the constexpr ``n_rounds``."""
    if not isinstance(n_rounds, int) or isinstance(n_rounds, bool) or n_rounds < 0:
        raise b.error(f"{kind}() n_rounds must be a non-negative constexpr integer, "
                      f"got {n_rounds!r}")
    s = as_value(b, seed)
    if not s.dtype.is_int or s.dtype.is_bool:
        raise b.error(f"{kind}() seed must be an integer (a scalar or a block of per-lane "
                      f"seeds), got {s.type}")
    return s


def philox(b: Builder, seed: Operand, counters: tuple[Operand, ...], n_rounds: Any
           ) -> tuple[Value, ...]:
    """Triton's ``philox`` for 32-bit counters: the seed's low and high words are the
    key; each round multiplies, takes ``umulhi`` and xors as ``philox_impl`` does, in
    uint32 arithmetic (so every backend computes it with ops it has)."""
    s = _random_seed(b, "philox", seed, n_rounds)
    words = []
    for i, c in enumerate(counters):
        v = as_value(b, c)
        if not v.dtype.is_int or v.dtype.is_bool or v.dtype.bits != 32:
            raise b.error(f"philox() counter c{i} must be a 32-bit integer, got "
                          f"{v.dtype.name} (triton-ascend 3.2.0 builds Philox for 32-bit "
                          "counters only)")
        words.append(bitcast(b, v, dt.uint32))
    wide = cast(b, s, dt.uint64)
    k0 = cast(b, binary(b, "and", wide, 0xFFFFFFFF), dt.uint32)
    k1 = cast(b, binary(b, "and", binary(b, "rshift", wide, 32), 0xFFFFFFFF), dt.uint32)
    round_a, round_b = (as_value(b, m, dt.uint32) for m in philox_constants.M32)
    c0, c1, c2, c3 = words
    for _ in range(n_rounds):
        hi_b, hi_a = umulhi(b, round_b, c2), umulhi(b, round_a, c0)
        c0, c1, c2, c3 = (binary(b, "xor", binary(b, "xor", hi_b, c1), k0),
                          binary(b, "mul", round_b, c2),
                          binary(b, "xor", binary(b, "xor", hi_a, c3), k1),
                          binary(b, "mul", round_a, c0))
        k0, k1 = (binary(b, "add", k, w) for k, w in zip((k0, k1), philox_constants.W32))
    shape = broadcast_shapes(b, broadcast_shapes(b, c0.shape, c1.shape, "philox"),
                             broadcast_shapes(b, c2.shape, c3.shape, "philox"), "philox")
    shape = broadcast_shapes(b, shape, s.shape, "philox")  # (per-lane seeds, 0 rounds)
    return tuple(broadcast_to(b, c, shape) for c in (c0, c1, c2, c3))


# ----------------------------------------------------------------------------- dot

_DOT_INPUTS = (dt.int8, dt.float16, dt.bfloat16, dt.float32)
MIN_DOT_SIZE = 16  # Triton's lower bound on M, N and K


def dot(b: Builder, x: Operand, y: Operand, acc: Operand | None, input_precision: Any,
        out_dtype: Any) -> Value:
    """``acc + x @ y`` of 2-D blocks, or of 3-D blocks batched along their first axis
    (Triton's ``dot``): fp16/bf16/fp32 operands accumulate in float32 (or float16 when
    asked), int8 in int32, and two fp8 operands (of any two fp8 formats, as Triton
    takes them) in float32: their products are exact in float32."""
    xv, yv = as_value(b, x), as_value(b, y)
    if xv.rank not in (2, 3) or yv.rank != xv.rank:
        raise b.error(f"dot() multiplies two 2-D blocks or two 3-D blocks (a batch), got "
                      f"{list(xv.shape)} and {list(yv.shape)}")
    if xv.shape[-1] != yv.shape[-2]:
        raise b.error(f"dot() inner dimensions differ: {list(xv.shape)} @ {list(yv.shape)}")
    if xv.rank == 3 and xv.shape[0] != yv.shape[0]:
        raise b.error(f"dot() batch dimensions differ: {list(xv.shape)} @ {list(yv.shape)}")
    if min(xv.shape[-2:] + yv.shape[-2:]) < MIN_DOT_SIZE and not b.triton_rules:  # any there
        raise b.error(f"dot() needs M, N and K of at least {MIN_DOT_SIZE} (Triton's bound), "
                      f"got {list(xv.shape)} @ {list(yv.shape)}")
    fp8 = xv.dtype.is_fp8() and yv.dtype.is_fp8()
    for v in (xv, yv):
        if v.dtype not in _DOT_INPUTS and not fp8:
            raise b.error(f"dot() accepts int8, float16, bfloat16 and float32 operands, or "
                          f"two fp8 ones, got {v.dtype.name}")
    if xv.dtype != yv.dtype and not fp8:
        raise b.error(f"dot() operands must have one dtype, got {xv.dtype.name} and "
                      f"{yv.dtype.name}")
    if input_precision not in (None, "ieee", "tf32", "hf32", "tf32x3"):
        raise b.error(f"dot() input_precision {input_precision!r} is not one of ieee, tf32, "
                      "hf32, tf32x3")
    if xv.dtype == dt.int8:
        out = dt.int32
    elif out_dtype is None or out_dtype == dt.float32:
        out = dt.float32
    elif out_dtype == dt.float16 and xv.dtype == dt.float16:
        out = dt.float16
    elif out_dtype == dt.float16 and xv.dtype in (dt.float32, dt.bfloat16) and b.triton_rules:
        out = dt.float32  # Triton's semantic.dot ignores out_dtype for these operands
    else:
        raise b.error(f"dot() out_dtype {out_dtype} is not supported for {xv.dtype.name} "
                      "operands (float32, or float16 for float16 operands)")
    shape = xv.shape[:-1] + yv.shape[-1:]
    if acc is None:
        accv = constant(b, 0, out, shape)
    else:
        accv = as_value(b, acc)
        if accv.type != Type(out, shape):
            raise b.error(f"dot() acc is {accv.type}, expected {Type(out, shape)}")
    return b.emit("dot", [xv, yv, accv], [Type(out, shape)],
                  attrs={"input_precision": input_precision or "ieee"}).result


_SCALED_FORMATS = {"bf16": dt.bfloat16, "fp16": dt.float16}


def _power_of_two_scale(b: Builder, scale: Operand, dtype: DType, rows: int, k: int,
                        what: str) -> Value:
    """``2 ** scale`` in ``dtype``, each of the ``G`` scales of a row repeated over its
    ``k / G`` consecutive elements of K: a ``[rows, k]`` block.

    The int8 exponent is widened to int16, biased by 127 and shifted into bf16's
    exponent field, then bitcast (fp16 operands get that bf16 value rounded to fp16,
    through fp32): triton-ascend's own lowering, so exponents past a format's range
    give its infinities and zeros exactly as the device does."""
    s = as_value(b, scale)
    if s.dtype != dt.int8 or s.rank != 2 or s.shape[0] != rows or not s.shape[1] or \
            k % s.shape[1]:
        raise b.error(f"dot_scaled() {what} must be an int8 block of shape [{rows}, G] with G "
                      f"dividing K={k}, got {s.type}")
    biased = binary(b, "add", cast(b, s, dt.int16), constant(b, 127, dt.int16))
    power = bitcast(b, binary(b, "lshift", biased, constant(b, 7, dt.int16)), dt.bfloat16)
    if dtype == dt.float16:
        power = cast(b, cast(b, power, dt.float32), dt.float16)
    groups = s.shape[1]
    spread = broadcast_to(b, expand_dims(b, power, 2), (rows, groups, k // groups))
    return reshape(b, spread, (rows, k))


def dot_scaled(b: Builder, lhs: Operand, lhs_scale: Operand, lhs_format: Any, rhs: Operand,
               rhs_scale: Operand | None, rhs_format: Any, acc: Operand | None,
               out_dtype: Any, lhs_k_pack: Any, rhs_k_pack: Any) -> Value:
    """triton-ascend's ``dot_scaled`` for bf16 and fp16 operands:
    ``acc + (lhs * 2**lhs_scale) @ (rhs * 2**rhs_scale)``.

    ``lhs_scale`` is an int8 ``[M, G]`` block of exponents, one per ``K/G``
    consecutive elements of a row of ``lhs``; ``rhs_scale`` (optional) is ``[N, G]``,
    one per ``K/G`` consecutive elements of a column of ``rhs``. The scaled operands
    are rounded to their own dtype, then multiplied as ``dot`` does (float32
    accumulation). Expanded here into existing ops, as triton-ascend's Linalg
    lowering expands it, so every backend runs it. Left out, as in triton-ascend
    3.2: the fp8/fp4 formats, 3-D operands and unpacked K (``*_k_pack=False``)."""
    xv, yv = as_value(b, lhs), as_value(b, rhs)
    for name, fmt, v in (("lhs", lhs_format, xv), ("rhs", rhs_format, yv)):
        if fmt not in _SCALED_FORMATS:
            raise b.error(f"dot_scaled() {name}_format {fmt!r} is not supported: triton-ascend "
                          "3.2 takes 'bf16' and 'fp16' (no fp8/fp4 formats)")
        if v.dtype != _SCALED_FORMATS[fmt]:
            raise b.error(f"dot_scaled() {name} is {v.dtype.name}, but {name}_format is {fmt!r}")
    if lhs_k_pack is not True or rhs_k_pack is not True:
        raise b.error("dot_scaled() with lhs_k_pack/rhs_k_pack False is not supported")
    if xv.rank != 2 or yv.rank != 2:
        raise b.error(f"dot_scaled() multiplies 2-D blocks, got {list(xv.shape)} and "
                      f"{list(yv.shape)}")
    if xv.shape[1] != yv.shape[0]:
        raise b.error(f"dot_scaled() inner dimensions differ: {list(xv.shape)} @ "
                      f"{list(yv.shape)}")
    if lhs_scale is None:
        raise b.error("dot_scaled() needs lhs_scale for bf16 and fp16 operands")
    (m, k), n = xv.shape, yv.shape[1]
    xv = binary(b, "mul", xv, _power_of_two_scale(b, lhs_scale, xv.dtype, m, k, "lhs_scale"))
    if rhs_scale is not None:
        scale = permute(b, _power_of_two_scale(b, rhs_scale, yv.dtype, n, k, "rhs_scale"), (1, 0))
        yv = binary(b, "mul", yv, scale)
    return dot(b, xv, yv, acc, None, out_dtype)


# ----------------------------------------------------------------------------- reductions and scans


def _one_axis(b: Builder, what: str, v: Value, axis: Any) -> int:
    if not v.shape:
        raise b.error(f"{what}() needs a block operand, got a scalar")
    if not isinstance(axis, int) or isinstance(axis, bool) or not -v.rank <= axis < v.rank:
        raise b.error(f"{what}() axis {axis!r} out of range for shape {list(v.shape)}")
    return axis % v.rank


def arg_reduce(b: Builder, combine: str, x: Operand, axis: Any, tie_break_left: bool,
               keep_dims: bool) -> tuple[Value, Value]:
    """(value, int32 index) of the largest (``argmax``) or smallest (``argmin``)
    element along ``axis``, a left fold of Triton's combine (``numerics.arg_fold``)."""
    v = as_value(b, x)
    if v.dtype == dt.bfloat16:  # Triton's max/min reduce bfloat16 as float32 (exact)
        v = cast(b, v, dt.float32)
    if axis is None:  # Triton flattens first
        v = reshape(b, v, (_numel(v.shape),)) if v.rank > 1 else v
        axis = 0
    ax = _one_axis(b, combine, v, axis)
    shape = v.shape[:ax] + v.shape[ax + 1:]
    op = b.emit("arg_reduce", [v], [Type(v.dtype, shape), Type(dt.int32, shape)],
                attrs={"combine": combine, "axis": ax, "tie_break_left": bool(tie_break_left)})
    value, index = op.results
    if keep_dims:
        value, index = expand_dims(b, value, ax), expand_dims(b, index, ax)
    return value, index


def scan(b: Builder, combine: str, x: Operand, axis: Any, reverse: bool) -> Value:
    """Inclusive prefix sums (``cumsum``) or products (``cumprod``) along ``axis``, in
    index order (bfloat16 computes in float32, as Triton promotes it)."""
    v = as_value(b, x)
    ax = _one_axis(b, "cumsum" if combine == "sum" else "cumprod", v, axis)
    if v.dtype.is_bool:
        v = cast(b, v, dt.int32)
    if v.dtype == dt.bfloat16:
        v = cast(b, v, dt.float32)
    return b.emit("scan", [v], [v.type],
                  attrs={"combine": combine, "axis": ax, "reverse": bool(reverse)}).result


# ----------------------------------------------------------------------------- atomics

_SEMS = (None, "acquire", "release", "acq_rel", "relaxed")
_SCOPES = (None, "gpu", "cta", "sys")


def _memory_semantics(b: Builder, what: str, sem: Any, scope: Any) -> dict[str, Any]:
    if sem not in _SEMS:
        raise b.error(f"{what}() sem {sem!r} is not one of acquire, release, acq_rel, relaxed")
    if scope not in _SCOPES:
        raise b.error(f"{what}() scope {scope!r} is not one of gpu, cta, sys")
    return {"sem": sem, "scope": scope}


def _atomic_operands(b: Builder, what: str, target: Target, index: Operand | None,
                     value: Operand, mask: Operand | None
                     ) -> tuple[Address, Value, Value | None]:
    addr = address(b, target, index)
    val = as_value(b, value, addr.view.dtype)
    if addr.index.shape:
        _same_rank(b, f"{what}'s value", val, addr.index.shape)
    shape = broadcast_shapes(b, addr.index.shape, val.shape, what)
    return addr.broadcast(b, shape), broadcast_to(b, val, shape), _mask_value(b, mask, shape)


def _check_atomic_element(b: Builder, what: str, op: str, element: DType, kind: str) -> None:
    """Refuse an atomic on elements it has no meaning for (``kind``: "tensor" or
    "pointer", as the message names the target)."""
    if op in ("and", "or", "xor") and not (element.is_int and not element.is_bool):
        raise b.error(f"{what}() needs an integer tensor, got {element.name}")
    if element.is_bool and op not in ("xchg", "cas"):
        raise b.error(f"{what}() does not accept an int1 {kind}")
    if element.is_fp8():
        raise b.error(f"{what}() does not accept a {element.name} {kind}: atomics take "
                      "integers and 16-, 32- and 64-bit floats (no fp8 atomics)")


def atomic(b: Builder, op: str, target: Target, index: Operand | None, value: Operand,
           mask: Operand | None, sem: Any, scope: Any) -> Value:
    """``atomic_<op>`` at an address: returns the old values (0 where masked off);
    colliding lanes apply one at a time, in program then lane order."""
    what = f"atomic_{op}"
    view = target.view if isinstance(target, Address) else target
    _check_atomic_element(b, what, op, view.dtype, "tensor")
    attrs = {"op": op, **_memory_semantics(b, what, sem, scope)}
    addr, val, m = _atomic_operands(b, what, target, index, value, mask)
    operands = [view.value, addr.index, addr.offset, val] + ([m] if m is not None else [])
    return b.emit("atomic", operands, [Type(view.dtype, addr.index.shape)],
                  attrs={**attrs, **addr.attrs}).result


def atomic_cas(b: Builder, target: Target, index: Operand | None, compare: Operand,
               value: Operand, sem: Any, scope: Any) -> Value:
    """Compare-and-swap at an address: write ``value`` where the old value equals
    ``compare``; returns the old values."""
    attrs = _memory_semantics(b, "atomic_cas", sem, scope)
    addr, val, _ = _atomic_operands(b, "atomic_cas", target, index, value, None)
    view, shape = addr.view, addr.index.shape
    _check_atomic_element(b, "atomic_cas", "cas", view.dtype, "tensor")
    cmp = broadcast_to(b, as_value(b, compare, view.dtype), shape)
    return b.emit("atomic_cas", [view.value, addr.index, addr.offset, cmp, val],
                  [Type(view.dtype, shape)], attrs={**attrs, **addr.attrs}).result


def atomic_address(b: Builder, op: str, address: Value, offset: Value, element: DType,
                   value: Operand, mask: Operand | None, sem: Any, scope: Any) -> Value:
    """``atomic_<op>`` ``offset`` elements past int64 byte addresses (a pointer cast from
    an integer); checked as ``atomic`` checks its tensor's type."""
    what = f"atomic_{op}"
    _check_atomic_element(b, what, op, element, "pointer")
    if element.is_bool:  # (an xchg too: a pointer cast from an integer)
        raise b.error(f"{what}() does not accept an int1 pointer")
    attrs = {"op": op, **_memory_semantics(b, what, sem, scope)}
    val = as_value(b, value, element)
    shape = broadcast_shapes(b, broadcast_shapes(b, address.shape, offset.shape, what),
                             val.shape, what)
    m = _mask_value(b, mask, shape)
    operands = _address_operands(b, address, offset, shape) + [broadcast_to(b, val, shape)]
    return b.emit("atomic_address", operands + ([m] if m is not None else []),
                  [Type(element, shape)], attrs=attrs).result


def atomic_cas_address(b: Builder, address: Value, offset: Value, element: DType,
                       compare: Operand, value: Operand, sem: Any, scope: Any) -> Value:
    """Compare-and-swap ``offset`` elements past int64 byte addresses."""
    _check_atomic_element(b, "atomic_cas", "cas", element, "pointer")
    if element.is_bool:
        raise b.error("atomic_cas() does not accept an int1 pointer")
    attrs = _memory_semantics(b, "atomic_cas", sem, scope)
    val = as_value(b, value, element)
    shape = broadcast_shapes(b, broadcast_shapes(b, address.shape, offset.shape, "atomic_cas"),
                             val.shape, "atomic_cas")
    cmp = broadcast_to(b, as_value(b, compare, element), shape)
    return b.emit("atomic_cas_address", _address_operands(b, address, offset, shape) +
                  [cmp, broadcast_to(b, val, shape)], [Type(element, shape)],
                  attrs=attrs).result


# ----------------------------------------------------------------------------- debugging, hints


def _hint_values(b: Builder, what: str, values: Any) -> tuple[int, ...]:
    values = (values,) if isinstance(values, int) else tuple(values)
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                             for v in values):
        raise b.error(f"{what}() values must be positive constexpr integers, got {values!r}")
    return values


def hint(b: Builder, kind: str, x: Operand, values: Any) -> Value:
    """``x`` unchanged, carrying Triton's ``multiple_of``/``max_contiguous``/
    ``max_constancy`` hint to the generated code (one value per axis, or one for all)."""
    v = as_value(b, x)
    vals = _hint_values(b, kind, values)
    if len(vals) not in (1, max(v.rank, 1)):
        raise b.error(f"{kind}() takes one value or one per axis of {list(v.shape)}, "
                      f"got {list(vals)}")
    return b.emit("hint", [v], [v.type], attrs={"hint": kind, "values": vals}).result


def device_print(b: Builder, prefix: Any, args: tuple[Any, ...], hex: Any) -> None:  # noqa: A002
    """Print ``prefix`` and the values from every program (the interpreter prefixes
    each line with the program id)."""
    if not isinstance(prefix, str):
        raise b.error(f"device_print() prefix must be a string, got {type(prefix).__name__}")
    values = [as_value(b, a) for a in args]
    b.emit("print", values, [], attrs={"prefix": prefix, "hex": bool(hex)})


def device_assert(b: Builder, cond: Operand, message: Any) -> None:
    """Fail the launch, naming the program, lane and line, where ``cond`` is false."""
    c = as_value(b, cond)
    if not c.dtype.is_bool:
        c = binary(b, "ne", c, 0)
    b.emit("device_assert", [c], [], attrs={"message": str(message or "")})
