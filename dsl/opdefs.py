"""The op table: what every elementwise IR op means in NumPy and how Triton spells it.

This is the single source of truth for elementwise semantics. The interpreter
evaluates ops with ``OpDef.evaluate``, the constant folder folds constants with the
same function, and the Triton code generator emits ``OpDef.triton``. Operands
arrive already promoted to a common dtype by ``dsl.semantic`` (see its numbered
rules), so each function here sees operands of one dtype.

Numeric conventions, chosen to match what Triton lowers to:
- Integer ``//`` and ``%`` truncate toward zero like C (``arith.divsi/remsi``);
  float ``%`` is C ``fmod``.
- Transcendental functions (exp, log, log1p, sqrt, the exp in sigmoid) are fp32
  functions: evaluated in float64 and rounded to fp32, then to a 16-bit operand's
  type. One definition, not the platform's: NumPy's float32 ``exp`` and the C
  library's ``expf`` disagree in the last bit on a few percent of inputs, and
  compiled-CPU mode (``lowering.cpu``) links these same definitions.
- ``maximum``/``minimum`` on floats follow IEEE maxNum/minNum (a NaN operand is
  ignored), Triton's default ``propagate_nan=NONE``.
- Integer arithmetic wraps; float arithmetic follows IEEE (inf/NaN, no exceptions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dsl.dtypes import DType


def _c_floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C semantics); x // 0 gives 0."""
    safe_b = np.where(b == 0, 1, b)
    q = np.floor_divide(a, safe_b)
    adjust = (np.remainder(a, safe_b) != 0) & ((a < 0) != (safe_b < 0))
    q = q + adjust.astype(q.dtype)
    return np.where(b == 0, 0, q).astype(np.result_type(a, b))


def _c_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer remainder with the sign of the dividend (C semantics); x % 0 gives 0."""
    safe_b = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.fmod(a, safe_b)).astype(np.result_type(a, b))


def _fp32_math(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """A transcendental function at fp32 precision: evaluated in float64 and rounded
    to fp32 (correctly rounded but for ties that float64 cannot resolve), then, for a
    16-bit operand, rounded to that type, as the lowered code computes it. fp64
    operands are computed in float64."""

    def run(x: np.ndarray, *, dtype: DType) -> np.ndarray:
        if dtype.bits == 64:
            return fn(x)
        result = fn(x.astype(np.float64)).astype(np.float32)
        return result if dtype.bits == 32 else result.astype(dtype.np)

    return run


def _sigmoid(x: np.ndarray, *, dtype: DType) -> np.ndarray:
    """1 / (1 + exp(-x)) in fp32 arithmetic with the fp32 exp above (Triton's
    definition of sigmoid), rounded to the operand type."""
    if dtype.bits == 64:
        return 1.0 / (1.0 + np.exp(-x))
    x32 = x.astype(np.float32)
    e = np.exp(-x32.astype(np.float64)).astype(np.float32)
    one = np.float32(1)
    result = one / (one + e)
    return result if dtype.bits == 32 else result.astype(dtype.np)


@dataclass(frozen=True)
class OpDef:
    """Semantics of one elementwise op."""

    name: str
    arity: int
    symbol: str  # Python spelling in the DSL (for messages)
    triton: str  # format string over operand expressions {0}, {1}, {2}
    kinds: tuple[str, ...]  # operand kinds accepted after promotion: "float", "int", "bool"
    result: str  # "same" (operand dtype) or "bool"
    numpy: Callable[..., np.ndarray]
    ufunc: np.ufunc | None = None  # when ``numpy`` is exactly this ufunc: lets callers pass out=

    def evaluate(self, *operands: np.ndarray, dtype: DType) -> np.ndarray:
        """Apply the op to NumPy operands that all have dtype ``dtype``."""
        with np.errstate(all="ignore"):
            out = self.numpy(*operands, dtype=dtype)
        if self.result == "bool":
            return np.asarray(out, dtype=np.bool_)
        return np.asarray(out, dtype=dtype.np)


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda a, b, *, dtype: fn(a, b)


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda a, *, dtype: fn(a)


def _mod(a: np.ndarray, b: np.ndarray, *, dtype: DType) -> np.ndarray:
    return np.fmod(a, b) if dtype.is_float else _c_mod(a, b)


def _invert(a: np.ndarray, *, dtype: DType) -> np.ndarray:
    return np.logical_not(a) if dtype.is_bool else np.invert(a)


_NUM = ("float", "int", "bool")
_INT = ("int", "bool")
_FLOAT = ("float",)

OPS: dict[str, OpDef] = {
    d.name: d
    for d in [
        OpDef("add", 2, "+", "{0} + {1}", _NUM, "same", _binary(np.add), np.add),
        OpDef("sub", 2, "-", "{0} - {1}", _NUM, "same", _binary(np.subtract), np.subtract),
        OpDef("mul", 2, "*", "{0} * {1}", _NUM, "same", _binary(np.multiply), np.multiply),
        OpDef("truediv", 2, "/", "{0} / {1}", _FLOAT, "same", _binary(np.divide), np.divide),
        OpDef("floordiv", 2, "//", "{0} // {1}", _INT, "same", _binary(_c_floordiv)),
        OpDef("mod", 2, "%", "{0} % {1}", _NUM, "same", _mod),
        OpDef("and", 2, "&", "{0} & {1}", _INT, "same", _binary(np.bitwise_and)),
        OpDef("or", 2, "|", "{0} | {1}", _INT, "same", _binary(np.bitwise_or)),
        OpDef("xor", 2, "^", "{0} ^ {1}", _INT, "same", _binary(np.bitwise_xor)),
        OpDef("lt", 2, "<", "{0} < {1}", _NUM, "bool", _binary(np.less)),
        OpDef("le", 2, "<=", "{0} <= {1}", _NUM, "bool", _binary(np.less_equal)),
        OpDef("gt", 2, ">", "{0} > {1}", _NUM, "bool", _binary(np.greater)),
        OpDef("ge", 2, ">=", "{0} >= {1}", _NUM, "bool", _binary(np.greater_equal)),
        OpDef("eq", 2, "==", "{0} == {1}", _NUM, "bool", _binary(np.equal)),
        OpDef("ne", 2, "!=", "{0} != {1}", _NUM, "bool", _binary(np.not_equal)),
        OpDef("maximum", 2, "maximum", "tl.maximum({0}, {1})", _NUM, "same", _binary(np.fmax), np.fmax),
        OpDef("minimum", 2, "minimum", "tl.minimum({0}, {1})", _NUM, "same", _binary(np.fmin), np.fmin),
        OpDef("neg", 1, "-", "-{0}", ("float", "int"), "same", _unary(np.negative), np.negative),
        OpDef("invert", 1, "~", "~{0}", _INT, "same", _invert),
        OpDef("abs", 1, "abs", "tl.abs({0})", ("float", "int"), "same", _unary(np.abs)),
        OpDef("exp", 1, "exp", "tl.exp({0})", _FLOAT, "same", _fp32_math(np.exp)),
        OpDef("log", 1, "log", "tl.log({0})", _FLOAT, "same", _fp32_math(np.log)),
        OpDef("log1p", 1, "log1p", "libdevice.log1p({0})", _FLOAT, "same", _fp32_math(np.log1p)),
        OpDef("sqrt", 1, "sqrt", "tl.sqrt({0})", _FLOAT, "same", _fp32_math(np.sqrt)),
        OpDef("sigmoid", 1, "sigmoid", "tl.sigmoid({0})", _FLOAT, "same", _sigmoid),
        OpDef("where", 3, "where", "tl.where({0}, {1}, {2})", _NUM, "same",
              lambda c, a, b, *, dtype: np.where(c, a, b)),
    ]
}

# Ops whose fp16/bf16 operands are computed in fp32 (Triton has no native 16-bit
# division or remainder); see rule 4 in dsl.semantic.
COMPUTE_IN_FP32_WHEN_16BIT = frozenset({"truediv", "mod"})


_FP16_MIN_NORMAL = 2.0**-14


def _to_float16(x: np.ndarray) -> np.ndarray:
    """Round float32/float64 to float16, nearest even, like ``astype``. NumPy's own
    cast is ~20x slower for results in float16's subnormal range, so those are built
    from their bits: a subnormal float16 is m * 2**-24 with m = rint(|x| * 2**24)
    (m = 1024 is the smallest normal, 2**-14, whose bits are also 1024)."""
    magnitude = np.abs(x)
    tiny = magnitude < _FP16_MIN_NORMAL
    if not tiny.any():
        return x.astype(np.float16)
    normal = np.where(tiny, 0, x).astype(np.float16).view(np.uint16)
    mantissa = np.rint(np.minimum(magnitude, _FP16_MIN_NORMAL) * 2.0**24).astype(np.uint16)
    subnormal = mantissa | (np.signbit(x).astype(np.uint16) << np.uint16(15))
    return np.where(tiny, subnormal, normal).view(np.float16)


def cast_array(x: np.ndarray, dtype: DType) -> np.ndarray:
    """The ``cast`` op (rule 9 of dsl.semantic): round to nearest even between floats,
    truncation toward zero from float to int, ``!= 0`` to int1."""
    if dtype.is_bool:
        return x != 0
    if dtype.np == np.float16 and x.dtype in (np.float32, np.float64):
        return _to_float16(x)
    if dtype.is_int and x.dtype.kind not in "biu":  # from a float type (bf16 included)
        with np.errstate(invalid="ignore"):
            return np.trunc(x.astype(np.float64)).astype(dtype.np)
    with np.errstate(over="ignore"):
        return x.astype(dtype.np)
