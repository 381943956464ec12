"""Numeric semantics shared by every backend: how the DSL computes, in NumPy.

The op table (``dsl.opdefs``) points at these functions; the interpreter, the
constant folder and compiled-CPU mode's runtime shim all follow them, so a kernel
computes the same bits everywhere. Conventions, chosen to match what Triton lowers
to:

- Integer ``//`` and ``%`` truncate toward zero like C (``arith.divsi/remsi``);
  float ``%`` is C ``fmod``; ``x // 0`` and ``x % 0`` give 0.
- Transcendental functions (exp, log, log1p, sqrt, the exp in sigmoid) are fp32
  functions: evaluated in float64 and rounded to fp32, then to a 16-bit operand's
  type. One definition, not the platform's: NumPy's float32 ``exp`` and the C
  library's ``expf`` disagree in the last bit on a few percent of inputs, and
  compiled-CPU mode (``lowering.cpu``) links these same definitions.
- Casts round to nearest even between floats, truncate toward zero from float to
  integer and test ``!= 0`` to int1 (rule 9 of ``dsl.semantic``).
- A float ``sum`` adds in a halving tree (``tree_sum``), which compiled-CPU mode's
  generated code spells out, so the interpreter and compiled code agree bit for bit.
  ``dot`` is the exception: BLAS sums its products (``dot``).
  ``max``/``min``/``xor_sum`` do not depend on the order. ``tl.reduce`` with a
  combine function, and scans, fold in index order.
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
from collections.abc import Callable, Hashable
from typing import Any

import ml_dtypes
import numpy as np

from dsl.dtypes import DType

try:  # NumPy >= 2 keeps the floating-point error state in a context variable
    from numpy._core._ufunc_config import _extobj_contextvar as _FP_STATE
    from numpy._core._ufunc_config import _make_extobj

    _IGNORE_ALL = _make_extobj(all="ignore")
except ImportError:  # pragma: no cover - older NumPy: np.errstate itself
    _FP_STATE = None


class ignore_fp_errors:
    """``np.errstate(all="ignore")`` (IEEE results, never warnings) at a fifth of
    its cost: entering ``np.errstate`` rebuilds the error-state object each time,
    ~1.8 us, and the interpreter and launch plans enter it once per op or launch.
    This sets a state built once. A new instance per ``with``: the state is per
    thread, and each entry keeps its own token."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        if _FP_STATE is None:  # pragma: no cover
            self._token = np.errstate(all="ignore")
            self._token.__enter__()
        else:
            self._token = _FP_STATE.set(_IGNORE_ALL)

    def __exit__(self, *exc: object) -> None:
        if _FP_STATE is None:  # pragma: no cover
            self._token.__exit__(*exc)
        else:
            _FP_STATE.reset(self._token)


@functools.cache  # (one per NumPy type: a launch asks per scalar parameter)
def scalar_converter(np_type: type) -> Callable[[Any], Any]:
    """How a launch converts a scalar argument to its parameter's NumPy type: the type
    itself, except that a float type takes a value past its range as the cast does (an
    infinity) without NumPy's overflow warning (``1e300`` for a float32 parameter)."""
    if not issubclass(np_type, np.floating):
        return np_type
    limit = float(np.finfo(np_type).max)

    def convert(value: Any) -> Any:
        if -limit <= value <= limit:
            return np_type(value)
        with ignore_fp_errors():  # (NaN, infinities, out of range: as the cast gives)
            return np_type(value)
    return convert


# ``ignore_fp_errors`` without its method calls, for generated code (launch plans):
# (set, reset, state) of the error-state context variable, or None on older NumPy
FP_IGNORE_HOOKS = None if _FP_STATE is None else (_FP_STATE.set, _FP_STATE.reset, _IGNORE_ALL)


def c_floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C semantics); x // 0 gives 0."""
    safe_b = np.where(b == 0, 1, b)
    q = np.floor_divide(a, safe_b)
    adjust = (np.remainder(a, safe_b) != 0) & ((a < 0) != (safe_b < 0))
    q = q + adjust.astype(q.dtype)
    return np.where(b == 0, 0, q).astype(np.result_type(a, b))


def c_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer remainder with the sign of the dividend (C semantics); x % 0 gives 0."""
    safe_b = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.fmod(a, safe_b)).astype(np.result_type(a, b))


def fp32_math(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
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


def tanh64(x: np.ndarray) -> np.ndarray:
    """``np.tanh`` that passes a NaN operand through with its sign and payload, as
    compiled code's tanh does (NumPy's returns its own NaN)."""
    return np.where(np.isnan(x), x, np.tanh(x))


_erf64 = np.frompyfunc(math.erf, 1, 1)


def erf64(x: np.ndarray) -> np.ndarray:
    """The error function in float64 (the C library's, through ``math.erf``)."""
    return np.asarray(_erf64(x), dtype=np.float64)


def rsqrt(x: np.ndarray, *, dtype: DType) -> np.ndarray:
    """1 / sqrt(x) as triton-ascend lowers ``tl.rsqrt``: the correctly rounded square
    root, then a division, each rounded to fp32 (16-bit operands compute in fp32 and
    round back; fp64 in float64)."""
    if dtype.bits == 64:
        return 1.0 / np.sqrt(x)
    root = np.sqrt(x.astype(np.float32))
    result = np.float32(1) / root
    return result if dtype.bits == 32 else result.astype(dtype.np)


def fp32_math2(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """A two-operand fp32 function (pow): evaluated in float64, rounded to fp32, then
    to a 16-bit operand type."""

    def run(a: np.ndarray, b: np.ndarray, *, dtype: DType) -> np.ndarray:
        if dtype.bits == 64:
            return fn(a, b)
        result = fn(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
        return result if dtype.bits == 32 else result.astype(dtype.np)

    return run


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, *, dtype: DType) -> np.ndarray:
    """a * b + c rounded once for fp32 operands (the product of two fp32 values is
    exact in float64; the float64 sum then rounds, and rounding that to fp32 can
    differ from a single rounding in rare double-rounding cases). 16-bit operands
    compute in fp32 and round back; fp64 operands compute in float64 (two roundings)."""
    if dtype.bits == 64:
        return a * b + c
    wide = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
    result = wide.astype(np.float32)
    return result if dtype.bits == 32 else result.astype(dtype.np)


def maximum_number(a: np.ndarray, b: np.ndarray, *, dtype: DType,
                   out: np.ndarray | None = None) -> np.ndarray:
    """IEEE maxNum (a NaN operand is ignored), as compiled code computes it; ``out``
    (the result's shape and dtype, possibly an operand) may receive the result."""
    return _extreme_number(np.fmax, a, b, dtype, out)


def minimum_number(a: np.ndarray, b: np.ndarray, *, dtype: DType,
                   out: np.ndarray | None = None) -> np.ndarray:
    """IEEE minNum (a NaN operand is ignored), as compiled code computes it; ``out``
    as for ``maximum_number``."""
    return _extreme_number(np.fmin, a, b, dtype, out)


def _extreme_number(ufunc: np.ufunc, a: np.ndarray, b: np.ndarray, dtype: DType,
                    out: np.ndarray | None = None) -> np.ndarray:
    """``ufunc`` (``np.fmax``/``np.fmin``) with the choices IEEE leaves open made as
    compiled code makes them (LLVM's ``maxnum``/``minnum`` on this CPU, measured;
    NumPy's own choice differs):

    - of equal operands (+0.0 and -0.0: the sign of the result) and of two NaNs (the
      NaN's sign and payload), compiled float32, float64 and bfloat16 code returns
      the first of equal operands and the second of two NaNs;
    - compiled float16 code returns the second of equal operands and the first of
      two NaNs.

    Integers have no such choice, nor do operands whose first one holds neither a
    zero nor a NaN: that is told by its minimum (and maximum), which allocate nothing,
    instead of testing the result's every lane (those tests allocated two masks per
    call; fresh memory is mostly page faults: 16M-element BCE backward spent half its
    time in them)."""
    if dtype.kind != "float" or _neither_zero_nor_nan(a):
        return ufunc(a, b) if out is None else ufunc(a, b, out=out)
    result = ufunc(a, b)  # (not into ``out``: it may be an operand, read again below)
    tie_pick, nan_pick = (b, a) if dtype.name == "float16" else (a, b)
    # equal nonzero operands have the same bits: only a zero result can be a choice
    zero = result == 0
    if zero.any():
        result = _blend(zero & np.equal(a, b), tie_pick, result)
    both_nan = np.isnan(result)  # fmax/fmin give a NaN only when both operands are
    if both_nan.any():
        result = np.where(both_nan, nan_pick, result)
    return result


def _neither_zero_nor_nan(x: np.ndarray) -> bool:
    """Whether no element of the float array ``x`` is +-0.0 or a NaN (by one or two
    reductions: a minimum is a NaN when some element is)."""
    if np.size(x) == 0:
        return True
    low = np.min(x)
    if low > 0:
        return True
    return not np.isnan(low) and np.max(x) < 0


def _blend(mask: np.ndarray, pick: np.ndarray, result: np.ndarray) -> np.ndarray:
    """``np.where(mask, pick, result)`` by bits, without branches: ``np.where`` takes
    ~5 ns an element on a mask of random half-true lanes (a ReLU's zeros), this a
    few cheap passes. Writes into ``result`` when it is a whole array of its own."""
    if not isinstance(result, np.ndarray) or result.ndim == 0 or not result.flags.c_contiguous \
            or not result.flags.writeable:
        return np.where(mask, pick, result)
    unsigned = np.dtype(f"u{result.itemsize}")
    bits = result.view(unsigned)
    picked = np.broadcast_to(np.asarray(pick, result.dtype), result.shape).view(unsigned)
    ones = np.multiply(np.broadcast_to(mask, result.shape), np.iinfo(unsigned).max,
                       dtype=unsigned)
    bits ^= (bits ^ picked) & ones
    return result


def umulhi(a: np.ndarray, b: np.ndarray, *, dtype: DType) -> np.ndarray:
    """The high 32 bits of the 64-bit product of two 32-bit integers."""
    wide = np.uint64 if dtype.is_unsigned else np.int64
    product = a.astype(wide) * b.astype(wide)
    return np.right_shift(product, 32).astype(dtype.np)


def triton_minus(x: np.ndarray) -> np.ndarray:
    """Triton's unary minus, ``0 - x`` (``semantic.minus``), not a sign flip: the two
    differ for floats at +0.0 (``0 - 0.0`` is +0.0) and on a NaN's sign bit (a
    subtraction passes its NaN operand through). Compiled code computes the same."""
    return np.subtract(np.zeros((), x.dtype), x)


def sigmoid(x: np.ndarray, *, dtype: DType) -> np.ndarray:
    """1 / (1 + exp(-x)) in fp32 arithmetic with the fp32 exp above (Triton's
    definition of sigmoid), rounded to the operand type."""
    if dtype.bits == 64:
        return 1.0 / (1.0 + np.exp(triton_minus(x)))
    x32 = x.astype(np.float32)
    e = np.exp(triton_minus(x32).astype(np.float64)).astype(np.float32)
    one = np.float32(1)
    result = one / (one + e)
    return result if dtype.bits == 32 else result.astype(dtype.np)


_FP16_MIN_NORMAL = 2.0**-14

# NumPy converts between float16 and float32 one element at a time in scalar C code
# (3-5 ns per element, and more for subnormal results); torch uses the CPU's vector
# conversion instructions, with the same IEEE results: every float16 is exact in
# float32, and float32 -> float16 rounds to nearest even, subnormals kept
# (``tests/test_half_conversions.py`` compares the two on every exponent, the ties
# and the special values; a one-off run over all 2**32 float32 bit patterns found no
# difference). Only NaN payloads may differ: torch quiets a signalling float16 NaN.
# Large conversions go through torch when this process has already imported it;
# this module never imports torch itself. Torch is called on pieces smaller than its
# parallel grain (32768 elements), so each call runs on the calling thread: a whole
# array would wake torch's OpenMP pool, whose spinning threads then took the cores
# from the interpreter's own work (tutorial 04's largest case ran 20% slower).
_TORCH_CONVERSION_MIN = 1 << 14  # elements: below this NumPy's own cast is as quick
_TORCH_PIECE = 32_000  # elements per torch call (below at::parallel_for's grain)


class _ReadAlias:
    """A writeable NumPy view of a read-only array's memory, for ``torch.from_numpy``,
    which warns on read-only arrays because it cannot know the tensor is only read.
    The conversions here only read it, and it keeps the array alive."""

    def __init__(self, x: np.ndarray) -> None:
        interface = dict(x.__array_interface__)
        interface["data"] = (interface["data"][0], False)  # (address, read-only flag)
        self.__array_interface__ = interface
        self.base = x


def _convert_through_torch(x: np.ndarray, dtype: type, out: np.ndarray | None = None
                           ) -> np.ndarray | None:
    """``x`` converted to ``dtype`` (a C-contiguous array, ``out`` when given) by torch,
    piece by piece, when torch is loaded and ``x`` is a large plain native-order array;
    else None."""
    torch = sys.modules.get("torch")
    if torch is None or x.size < _TORCH_CONVERSION_MIN or type(x) is not np.ndarray \
            or not x.dtype.isnative:
        return None
    source = np.ascontiguousarray(x)  # a strided operand: copied in its own type first
    if not source.flags.writeable:
        source = np.asarray(_ReadAlias(source))
    if out is None:
        out = np.empty(x.shape, dtype)
    # Outside any ``__torch_function__`` handling: a mode the user (or a harness that
    # maps devices) set would see, and slow tenfold, every slice and copy here, which
    # are this module's business, not theirs.
    disabled = getattr(torch._C, "DisableTorchFunction", contextlib.nullcontext)
    with disabled():
        pieces_in = torch.from_numpy(source.reshape(-1))
        pieces_out = torch.from_numpy(out.reshape(-1))
        for start in range(0, x.size, _TORCH_PIECE):
            pieces_out[start:start + _TORCH_PIECE].copy_(pieces_in[start:start + _TORCH_PIECE])
    return out


def widen_to_float32(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``x.astype(np.float32)``, C-contiguous (written into ``out`` when given: a
    C-contiguous float32 array of ``x``'s shape); float16 goes through torch when it is
    loaded (exact either way: float32 holds every float16)."""
    if x.dtype == np.float16:
        converted = _convert_through_torch(x, np.float32, out)
        if converted is not None:
            return converted
        if x.size >= _BITWISE_WIDENING_MIN and x.dtype.isnative:
            if out is None:
                out = np.empty(x.shape, np.float32)
            return _widen_float16_bitwise(x, out)
    if out is None:
        return np.ascontiguousarray(x, dtype=np.float32)
    np.copyto(out, x, casting="unsafe")  # (float64 narrows, as ``astype`` does)
    return out


_BITWISE_WIDENING_MIN = 1 << 12  # elements: below this NumPy's own cast is as quick
_BITWISE_WIDENING_PIECE = 1 << 16  # elements per piece: its passes stay in cache
_FLOAT16_SIGN_AND_MAGNITUDE = np.int32(-0x70002000)  # 0x8FFFE000 as an int32
_FLOAT32_EXPONENT = np.int32(0x7F800000)


def _widen_float16_bitwise(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """float16 ``x`` widened into the C-contiguous float32 ``out`` by integer passes,
    about 4x quicker than NumPy's scalar cast and bit for bit equal to it (every one
    of the 65,536 float16 patterns, NaN payloads included: ``tests/
    test_half_conversions.py``). A float16's bits sign-extended to 32 and shifted
    left 13 put its sign in bit 31 and its exponent and mantissa in bits 13-27: with
    bits 28-30 cleared that is a float32 of the same mantissa whose exponent is 112
    too small, so multiplying by 2**112 gives the value exactly -- subnormals and
    zeros included, which become normal float32 or stay zero. Infinities and NaNs
    come out as magnitudes of 2**16 or more (no finite float16 reaches 65,504 < 2**16),
    and setting their exponent bits to all ones gives float32's infinity or the same
    NaN payload."""
    source = np.ascontiguousarray(x).reshape(-1).view(np.int16)
    bits = out.reshape(-1).view(np.int32)
    values = bits.view(np.float32)
    for start in range(0, source.shape[0], _BITWISE_WIDENING_PIECE):
        piece = slice(start, start + _BITWISE_WIDENING_PIECE)
        word, value = bits[piece], values[piece]
        np.copyto(word, source[piece])  # sign-extending
        np.left_shift(word, 13, out=word)
        np.bitwise_and(word, _FLOAT16_SIGN_AND_MAGNITUDE, out=word)
        np.multiply(value, np.float32(2.0**112), out=value)
        if value.max() >= 65536.0 or value.min() <= -65536.0:
            special = np.flatnonzero(np.abs(value) >= 65536.0)
            word[special] |= _FLOAT32_EXPONENT
    return out


def _to_float16(x: np.ndarray) -> np.ndarray:
    """Round float32/float64 to float16, nearest even, like ``astype``. A large float32
    array goes through torch when it is loaded (above). NumPy's own cast is ~20x slower
    for results in float16's subnormal range, so those are built from their bits: a
    subnormal float16 is m * 2**-24 with m = rint(|x| * 2**24) (m = 1024 is the
    smallest normal, 2**-14, whose bits are also 1024)."""
    if x.dtype == np.float32:  # (torch rounds float64 through float32: twice)
        converted = _convert_through_torch(x, np.float16)
        if converted is not None:
            return converted
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
    if dtype.is_fp8():
        return to_fp8(x, dtype.np)
    if dtype.np == np.float16 and x.dtype in (np.float32, np.float64):
        return _to_float16(x)
    if dtype.np == np.float32 and x.dtype == np.float16:
        return widen_to_float32(x)
    if dtype.is_int and x.dtype.kind not in "biu":  # from a float type (bf16 included)
        return float_to_int(x, np.dtype(dtype.np))
    with np.errstate(over="ignore"):
        return x.astype(dtype.np)


def as_strided(x: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...],
               writeable: bool = True) -> np.ndarray:
    """``np.lib.stride_tricks.as_strided``, for the fp8 types too: NumPy rebuilds the
    strided array from ``x``'s array interface, which spells ml_dtypes' fp8 types as
    ``<f1``, a type it cannot read back; their bytes are strided as uint8 instead."""
    if x.dtype.itemsize == 1 and x.dtype.kind not in "biu":
        raw = np.lib.stride_tricks.as_strided(x.view(np.uint8), shape=shape, strides=strides,
                                              writeable=writeable)
        return raw.view(x.dtype)
    return np.lib.stride_tricks.as_strided(x, shape=shape, strides=strides, writeable=writeable)


_FP8_SATURATING = np.dtype(ml_dtypes.float8_e4m3fn)


def to_fp8(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """``x`` (any float or integer array) rounded to the fp8 format ``target``: to
    nearest even, straight from ``x``'s own type (an integer through float64, exact
    up to 2**53, beyond every fp8 range). Out of range, float8e4nv (e4m3fn, which has
    no infinity) saturates to +-448, infinities included, as torch's conversion and
    NVIDIA's ``cvt.rn.satfinite`` do; float8e5 gives an infinity, and the two "fnuz"
    formats their NaN, as torch's conversions do. (torch rounds a float64 through
    float32 first; here a float64 is rounded once.)"""
    source = x.astype(np.float64) if x.dtype.kind in "biu" else x
    with np.errstate(over="ignore", invalid="ignore"):
        out = source.astype(target)
    if target != _FP8_SATURATING:
        return out
    # (ml_dtypes gives its NaN to every finite value beyond the largest: the overflow)
    overflow = np.isnan(out) & ~np.isnan(source)
    if overflow.any():
        out = np.where(overflow, np.where(np.signbit(source), -448.0, 448.0).astype(target), out)
    return out


# Float -> integer conversion goes through one of these (the x86-64 instruction
# compiled code uses): (the integer type, its range as floats, what an out-of-range
# value or a NaN gives there)
_CONVERSION_INT32 = (np.dtype(np.int32), -2.0**31, 2.0**31, np.int32(-2**31))
_CONVERSION_INT64 = (np.dtype(np.int64), -2.0**63, 2.0**63, np.int64(-2**63))


def float_to_int(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """Float -> integer (the ``cast`` op): truncation toward zero, the same on every
    machine. A value the target cannot hold is undefined in Triton; here it gives
    what x86-64's conversion gives, which is what compiled-CPU mode's code computes:
    8-, 16- and 32-bit targets convert through int32 (a NaN, an infinity or a value
    outside int32 gives INT32_MIN) and wrap to their width (300.0 -> int8 is 44,
    -1.0 -> uint8 is 255); int64 and uint32 convert through int64 (outside it:
    INT64_MIN, so 0 for uint32) and wrap; uint64 holds [0, 2**64) exactly, wraps
    [-2**63, 0) and gives 2**63 otherwise. NumPy's own ``astype`` leaves these to the
    C compiler and the CPU (an ARM laptop saturates instead), and for uint32 its
    vectorised loop answered 2**31 where compiled code gives the wrapped value."""
    t = np.trunc(x.astype(np.float64))  # exact: float64 holds every float16/32 value
    if target == np.uint64:
        return _float_to_uint64(t)
    through, low, high, invalid = _CONVERSION_INT64 if target.itemsize == 8 or \
        target == np.uint32 else _CONVERSION_INT32
    with np.errstate(invalid="ignore"):
        if t.size == 0 or (t.min() >= low and t.max() < high):  # (a NaN fails both)
            return t.astype(through).astype(target, copy=False)
        inside = (t >= low) & (t < high)
        converted = np.where(inside, t, 0.0).astype(through)
    converted[~inside] = invalid
    return converted.astype(target, copy=False)


def _float_to_uint64(t: np.ndarray) -> np.ndarray:
    """``float_to_int`` to uint64 of truncated float64 values ``t``."""
    with np.errstate(invalid="ignore"):
        signed = (t >= -2.0**63) & (t < 2.0**63)
        unsigned = (t >= 2.0**63) & (t < 2.0**64)
        converted = np.where(signed, t, 0.0).astype(np.int64).view(np.uint64)
    if unsigned.any():
        converted[unsigned] = t[unsigned].astype(np.uint64)
    converted[~(signed | unsigned)] = np.uint64(2**63)
    return converted


# ----------------------------------------------------------------------------- bits


def shift_left(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a << b`` wrapping in ``a``'s type; a shift outside [0, bits) gives 0 (Triton
    leaves it undefined)."""
    bits = a.dtype.itemsize * 8
    inside = (b >= 0) & (b < bits)
    return np.where(inside, np.left_shift(a, np.where(inside, b, 0)), 0).astype(a.dtype)


def shift_right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a >> b``: arithmetic for signed types, logical for unsigned; a shift outside
    [0, bits) gives the sign fill (0 or -1; Triton leaves it undefined)."""
    bits = a.dtype.itemsize * 8
    inside = (b >= 0) & (b < bits)
    fill = np.right_shift(a, bits - 1) if a.dtype.kind == "i" else np.zeros_like(a)
    return np.where(inside, np.right_shift(a, np.where(inside, b, 0)), fill).astype(a.dtype)


def bitcast_array(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The same bits read as ``dtype`` (of the same width)."""
    return np.ascontiguousarray(x).view(dtype)


# ----------------------------------------------------------------------------- atomics


def _atomic_combine(op: str, old: np.ndarray, value: np.ndarray) -> np.ndarray:
    with ignore_fp_errors():
        if op == "add":
            return old + value
        if op == "max":
            return np.fmax(old, value)
        if op == "min":
            return np.fmin(old, value)
        if op == "xchg":
            return value
        if op == "and":
            return old & value
        if op == "or":
            return old | value
        if op == "xor":
            return old ^ value
    raise ValueError(f"unknown atomic operation {op!r}")


def apply_atomics(read: Callable[[np.ndarray], np.ndarray],
                  write: Callable[[np.ndarray, np.ndarray], None], addresses: np.ndarray,
                  values: np.ndarray, op: str, compare: np.ndarray | None = None,
                  want_old: bool = True) -> np.ndarray | None:
    """Apply atomic ``op`` (or compare-and-swap when ``compare`` is given) at flat
    ``addresses`` one lane at a time, in the order the lanes are listed, and return
    each lane's old value. Lanes are applied in rounds: round r holds the r-th lane
    of every address, so each round touches distinct addresses and is one vectorized
    read and write, and two lanes of one address always apply in list order.

    Without ``want_old`` (no lane's old value is used) an integer add only needs each
    element's total, and returns None."""
    count = addresses.shape[0]
    old = np.empty_like(values)
    if count == 0:
        return old if want_old else None
    if compare is None and op == "add" and values.dtype.kind in "iu":
        if not want_old and _integer_add_totals(read, write, addresses, values):
            return None
        return _integer_add(read, write, addresses, values)
    order = np.argsort(addresses, kind="stable")
    ordered = addresses[order]
    first = np.ones(count, bool)
    first[1:] = ordered[1:] != ordered[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(count), 0))
    rank = np.empty(count, np.int64)
    rank[order] = np.arange(count) - group_start
    for level in range(int(rank.max()) + 1):
        lanes = np.nonzero(rank == level)[0]
        where = addresses[lanes]
        current = read(where)
        old[lanes] = current
        if compare is None:
            new = _atomic_combine(op, current, values[lanes])
        else:
            new = np.where(current == compare[lanes], values[lanes], current)
        write(where, new.astype(values.dtype, copy=False))
    return old


def _integer_add_totals(read: Callable[[np.ndarray], np.ndarray],
                        write: Callable[[np.ndarray, np.ndarray], None], addresses: np.ndarray,
                        values: np.ndarray) -> bool:
    """An integer atomic add whose old values nobody reads: add each element's total
    once (wrapping, so the same bits as lane by lane). Counts by bin, in time linear in
    the lanes and the span of addresses; returns False, doing nothing, when the
    addresses are too spread out for a table of their span."""
    low = int(addresses.min())
    span = int(addresses.max()) - low + 1
    if span > 4 * addresses.shape[0] + 4096:
        return False
    slots = addresses - low
    hits = np.bincount(slots, minlength=span)
    with ignore_fp_errors():
        if values.min() == values.max():  # one value for every lane (a count): no scatter
            totals = hits.astype(np.int64) * np.int64(values[0])
        else:
            totals = np.zeros(span, np.int64)
            np.add.at(totals, slots, values.astype(np.int64))
        touched = np.nonzero(hits)[0]
        targets = touched + low
        write(targets, (read(targets) + totals[touched]).astype(values.dtype))
    return True


def _integer_add(read: Callable[[np.ndarray], np.ndarray],
                 write: Callable[[np.ndarray, np.ndarray], None], addresses: np.ndarray,
                 values: np.ndarray) -> np.ndarray:
    """``apply_atomics`` for an integer add in one pass: each lane's old value is the
    element's value plus the lanes of that element before it (exact: integer sums wrap
    the same in any grouping)."""
    order = np.argsort(addresses, kind="stable")
    ordered, added = addresses[order], values[order]
    first = np.ones(ordered.shape[0], bool)
    first[1:] = ordered[1:] != ordered[:-1]
    group = np.cumsum(first) - 1
    with ignore_fp_errors():
        running = np.cumsum(added, dtype=values.dtype)
        before = running - added  # sum of the lanes before, from the first group
        starts = np.nonzero(first)[0]
        before = before - before[starts][group]  # ... within the element's group
        targets = ordered[starts]
        base = read(targets)
        totals = running[np.append(starts[1:], ordered.shape[0]) - 1] - \
            (running[starts] - added[starts])
        old = np.empty_like(values)
        old[order] = (base[group] + before).astype(values.dtype)
        write(targets, (base + totals).astype(values.dtype))
    return old


# ----------------------------------------------------------------------------- matrix product


def dot(a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """``acc + a @ b`` over the last two axes (leading axes batch), in ``acc``'s dtype.

    Float operands multiply in float32 through BLAS (``np.matmul``), and the product is
    added to ``acc`` once; a float16 accumulator is rounded once, at the end. The
    order of the k additions is BLAS's: the one float result in the language whose
    bits are not fixed (on the NPU the Cube unit accumulates in its own order, and
    compiled-CPU mode adds in k order). Every backend lands within the fp32 dot bound
    ``2 * K * eps * (|a| @ |b|)`` of the exact product; two runs on one machine give
    the same bits. Integer (int8 -> int32) products and sums wrap, which no order
    changes."""
    return _add_product(_product(a, b, acc.dtype), acc)


def _product(a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``a @ b`` as ``dot`` computes it for an accumulator of ``dtype``: in that
    integer dtype, or in float32 for floats."""
    with ignore_fp_errors():
        if dtype.kind in "iu":
            return np.matmul(a.astype(dtype), b.astype(dtype))
        # contiguous float32 operands keep NumPy on its BLAS path for every batch layout
        return np.matmul(widen_to_float32(a), widen_to_float32(b))


def _add_product(product: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """``acc`` plus a ``_product``, in ``acc``'s dtype (a float16 sum rounded once)."""
    dtype = acc.dtype
    with ignore_fp_errors():
        if dtype.kind in "iu":
            return (acc + product).astype(dtype)
        if dtype == np.float32:
            return product + acc
        total = product + widen_to_float32(acc)
        return _to_float16(total) if dtype == np.float16 else total.astype(dtype)


def dot_steps(a: np.ndarray, b: np.ndarray, acc: np.ndarray, steps: int) -> np.ndarray:
    """The accumulator after ``steps`` steps of ``acc = dot(a[s], b[s], acc)``: the dots
    of a loop whose only carried values are their accumulators, with every step's
    operands computed up front. ``a`` is ``(steps * rows, ..., M, K)`` and ``b``
    ``(steps * rows, ..., K, N)``, step-major (row ``r`` of step ``s`` at
    ``s * rows + r``); ``acc`` is ``(rows, ..., M, N)``. The same ``dot`` calls as the
    loop makes, so the same bits; float operands are converted to float32 once."""
    rows = acc.shape[0]
    if a.dtype.kind == "f" and acc.dtype.kind == "f":
        a, b = widen_to_float32(a), widen_to_float32(b)
    for s in range(steps):
        acc = dot(a[s * rows:(s + 1) * rows], b[s * rows:(s + 1) * rows], acc)
    return acc


def dot_steps_shared(a_tiles: np.ndarray, a_of: np.ndarray, b_tiles: np.ndarray,
                     b_of: np.ndarray, acc: np.ndarray, steps: int, bands: int = 1,
                     run_all: Callable[[list[Callable[[], None]]], None] | None = None,
                     allocate: Callable[[Hashable, tuple[int, ...], np.dtype], np.ndarray]
                     | None = None) -> np.ndarray:
    """``dot_steps`` for operands given as distinct tiles: step ``s`` of row ``r``
    multiplies ``a_tiles[a_of[s * rows + r]]`` by ``b_tiles[b_of[s * rows + r]]``
    (tiles ``(count, M, K)`` and ``(count, K, N)``; ``acc`` is ``(rows, M, N)``).

    A tiled matmul's programs share tiles: at every step, row ``r`` pairs the
    ``i_r``-th of ``na`` distinct ``a`` tiles with the ``j_r``-th of ``nb`` distinct
    ``b`` tiles, the same positions at every step, no two rows the same pair. Then
    the accumulators live in an ``(na, nb, M, N)`` grid, and each step is one batched
    product of its ``na`` by ``nb`` tiles added into the grid in place, with no copy
    of a tile per row. Each product is one BLAS call on one pair of tiles and each
    sum the same float32 add, as ``dot`` does: the bits of ``dot_steps``. Other
    loops (or a grid more than twice the rows) multiply row by row.

    A float32 grid is cut into up to ``bands`` bands of block rows, each stepped on
    its own, which ``run_all(tasks)`` may run at once (on threads: NumPy's ``matmul``
    releases the GIL; default: one after another). Every element still gets the
    same products and sums, so the bits do not depend on the cut.

    ``allocate(role, shape, dtype)`` gives the grid and each band's product buffer
    (contents undefined; the caller's scratch buffers, reused from call to call on
    the thread that asks: the products are asked for on the thread running the
    band). Default: new arrays."""
    rows = acc.shape[0]
    if a_tiles.dtype.kind == "f" and acc.dtype.kind == "f":
        a_tiles, b_tiles = widen_to_float32(a_tiles), widen_to_float32(b_tiles)
    a_used, a_at = _tiles_by_step(a_of, steps, rows, a_tiles.shape[0])
    b_used, b_at = _tiles_by_step(b_of, steps, rows, b_tiles.shape[0])
    na, nb = a_used[0].shape[0], b_used[0].shape[0]
    ia, ib = a_at[0], b_at[0]
    if na * nb > 2 * rows or not (np.all(a_at == ia) and np.all(b_at == ib)) or \
            np.unique(ia * nb + ib).shape[0] != rows:
        for s in range(steps):
            here = slice(s * rows, (s + 1) * rows)
            acc = dot(a_tiles[a_of[here]], b_tiles[b_of[here]], acc)
        return acc
    def new(role: Hashable, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.empty(shape, dtype) if allocate is None else allocate(role, shape, dtype)

    grid = new("grid", (na, nb) + acc.shape[1:], acc.dtype)
    if rows < na * nb:  # pairs no row takes stay zero
        grid.fill(0)
    grid[ia, ib] = acc
    if acc.dtype != np.float32 or a_tiles.dtype != np.float32:
        for s in range(steps):
            a = a_tiles[a_used[s]][:, None]  # (na, 1, M, K)
            b = b_tiles[b_used[s]][None]  # (1, nb, K, N)
            grid = dot(a, b, grid)
        return grid[ia, ib]
    b_steps = [b_tiles[used][None] for used in b_used]  # (1, nb, K, N) per step

    def band(lo: int, hi: int) -> Callable[[], None]:
        def step_band() -> None:
            part = grid[lo:hi]
            product = new(("product", lo), part.shape, np.dtype(np.float32))
            with ignore_fp_errors():  # ``dot``'s float32 product and sum, in place
                for s in range(steps):
                    np.matmul(a_tiles[a_used[s][lo:hi]][:, None], b_steps[s], out=product)
                    np.add(product, part, out=part)
        return step_band

    count = max(1, min(na, bands))
    cuts = [na * i // count for i in range(count + 1)]
    tasks = [band(lo, hi) for lo, hi in zip(cuts, cuts[1:])]
    if run_all is None or count == 1:
        for task in tasks:
            task()
    else:
        run_all(tasks)
    return grid[ia, ib]


def _tiles_by_step(of: np.ndarray, steps: int, rows: int, count: int
                   ) -> tuple[list[np.ndarray], np.ndarray]:
    """For step-major tile numbers ``of`` (``steps * rows``, each below ``count``):
    each step's distinct tiles in increasing order, and ``(steps, rows)`` positions
    of each row's tile among its step's."""
    ids = of.reshape(steps, rows)
    present = np.zeros((steps, count), bool)
    present[np.arange(steps)[:, None], ids] = True
    at = np.take_along_axis(np.cumsum(present, axis=1) - 1, ids, axis=1)
    return [np.flatnonzero(p) for p in present], at


# ----------------------------------------------------------------------------- reductions


_TREE_CHUNK_BYTES = 1 << 20  # operands above this are summed in cache-sized chunks


def tree_sum(x: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """Sum along ``axis`` in the halving-tree order of rule 10, in ``dtype``.

    With ``n`` elements and ``h`` the largest power of two below ``n``, element ``i``
    of the upper part is added to element ``i`` of the lower part (``x[i] + x[i + h]``
    for ``i < n - h``), which leaves ``h`` partial sums; that repeats until one is left.
    For a power-of-two length (every Triton block) that is a complete binary tree of
    halves: ``(x[0] + x[n/2]) + (x[n/4] + x[3n/4])``, ... Each step is one vectorised
    add over half of what is left, so the sum costs about one pass over ``x``.
    Compiled-CPU mode's generated code writes the same adds (``tl.extract_slice``
    halves), so it gives the same bits. Integer sums wrap the same in any order:
    NumPy's own reduce computes them."""
    dtype = np.dtype(dtype)
    n = x.shape[axis]
    if dtype.kind != "f" or n <= 1:
        return np.add.reduce(x, axis=axis, dtype=dtype)
    if x.ndim >= 2 and axis == x.ndim - 1 and (x.ndim == 2 or x.flags.c_contiguous):
        return _tree_sum_rows(x.reshape(-1, n), dtype).reshape(x.shape[:-1])
    outer = 0 if axis else 1  # an axis not summed, to cut a large operand along
    if x.ndim > 1 and x.nbytes > _TREE_CHUNK_BYTES and x.shape[outer] > 1:
        # chunks that stay in cache through every level: one pass over memory
        step = max(1, x.shape[outer] * _TREE_CHUNK_BYTES // x.nbytes)
        parts = [tree_sum(x[(slice(None),) * outer + (slice(i, i + step),)], axis, dtype)
                 for i in range(0, x.shape[outer], step)]
        return np.concatenate(parts, axis=outer if outer < axis else outer - 1)

    def part(a: np.ndarray, start: int, stop: int) -> np.ndarray:
        index = [slice(None)] * a.ndim
        index[axis] = slice(start, stop)
        return a[tuple(index)]

    half = 1 << ((n - 1).bit_length() - 1)
    shape = list(x.shape)
    shape[axis] = half
    acc = np.empty(shape, dtype)
    np.add(part(x, 0, n - half), part(x, half, n), out=part(acc, 0, n - half), dtype=dtype)
    if n - half < half:  # the elements without a partner carry over unchanged
        part(acc, n - half, half)[...] = part(x, n - half, half)
    n = half
    while n > 1:
        n //= 2
        np.add(part(acc, 0, n), part(acc, n, 2 * n), out=part(acc, 0, n))
    return np.take(acc, 0, axis=axis)


# Below this width the rows' halving steps are cheaper on a transposed copy: each
# NumPy call on a (rows, w) view loops over the rows (~15 ns each, whatever w).
_TREE_TAIL_WIDTH = 32
# The first level's partial sums per chunk of rows. Each chunk costs about fifteen
# NumPy calls, whose Python overhead holds the GIL (two threads summing halves of a
# 4096x1024 block gained 10% with 512 KB chunks); against 512 KB (session 28, one
# process, both orders, the interpreter's row sum): 4096x1024 0.85-0.91x the time,
# 1024x4096 0.86x, 2048x2048 0.82x, 16384x256 0.88x, 256x1024 and 1000x781 within
# noise; 2 MB was 1.1x slower than 1 MB on three of those shapes.
_TREE_LEVEL_BYTES = 1 << 20
# A power-of-two row's first level is written block-major in blocks of this width
# (see ``_tree_sum_rows``).
_TREE_BLOCK_WIDTH = 128
# Operands from this size on pair a level's halves by shifted contiguous adds (see
# ``_tree_sum_rows``)
_TREE_SHIFTED_MIN_BYTES = 1 << 22


def _tree_sum_rows(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``tree_sum`` of each row of a 2-D ``x``, in ``dtype``: the same adds as the
    general path, scheduled for speed. Rows go in chunks whose first level of partial
    sums (half a row each) stays in cache.

    NumPy adds two halves of a row-major ``(rows, w)`` buffer (strided views) at
    about a third of the speed of two contiguous arrays. So where the row length is a
    power of two, the first level writes its ``half`` partial sums block-major:
    ``blocked[b, r, j]`` is row ``r``'s sum ``b * inner + j``. Every later level
    whose width is still a multiple of ``inner`` pairs block ``b`` with block
    ``b + blocks / 2``: one add of two contiguous halves of the buffer. From width
    ``inner`` on, each level writes a contiguous buffer (two, used in turn: NumPy adds
    into a separate contiguous output about 1.4x faster than into a strided view of
    its own input); once a row has ``_TREE_TAIL_WIDTH`` partial sums or fewer, the
    chunk is transposed so that each remaining level is one long add over all its
    rows instead of a short add per row. Every element meets the same partner at the
    same level as in ``tree_sum``'s general path, so the bits are the same.

    A large operand whose rows lie back to back avoids NumPy's strided adds
    (``_add_row_halves``): a level of a C-contiguous chunk is one contiguous add of the
    whole chunk and itself shifted by half a row, which pairs every element with its
    partner (and computes as many sums that straddle two rows, never used), then a copy
    of the sums kept. Measured in one process against the strided adds, both orders
    (float32, in ``np.sum``'s time): 4096x1024 2.6x against 2.9-3.2x, 1024x4096 2.5x
    against 2.8-3.1x; from 1000x1024 to 2048x1024 the same within noise, and 64x1024
    (in cache) 3.0x against 2.8x, hence ``_TREE_SHIFTED_MIN_BYTES``."""
    rows, n = x.shape
    half = 1 << ((n - 1).bit_length() - 1)
    # rows of other lengths carry unpaired elements over: their first level stays row-major
    inner = min(half, _TREE_BLOCK_WIDTH) if n == 2 * half else half
    blocks = half // inner
    out = np.empty(rows, dtype)
    step = max(1, min(rows, _TREE_LEVEL_BYTES // (half * dtype.itemsize)))
    buffers = (np.empty(step * half, dtype), np.empty(step * max(1, inner // 2), dtype))
    shifted = n == 2 * half and x.flags.c_contiguous and x.nbytes >= _TREE_SHIFTED_MIN_BYTES
    scratch = np.empty(step * n, dtype) if shifted else None
    for r0 in range(0, rows, step):
        chunk = x[r0:r0 + step]
        count = chunk.shape[0]
        if scratch is not None or blocks > 1:
            blocked = buffers[0][:blocks * count * inner].reshape(blocks, count, inner)
            if scratch is not None:
                np.copyto(blocked, _block_major(_add_row_halves(chunk, scratch, dtype), inner))
            else:
                np.add(_block_major(chunk[:, :half], inner),
                       _block_major(chunk[:, half:], inner), out=blocked, dtype=dtype)
            width = blocks
            while width > 1:
                width //= 2
                np.add(blocked[:width], blocked[width:2 * width], out=blocked[:width])
            level = blocked[0]
        else:
            level = buffers[0][:count * half].reshape(count, half)
            np.add(chunk[:, :n - half], chunk[:, half:], out=level[:, :n - half], dtype=dtype)
            if n - half < half:  # the elements without a partner carry over unchanged
                level[:, n - half:] = chunk[:, n - half:half]
        width, spare = inner, 1
        while width > _TREE_TAIL_WIDTH:
            width //= 2
            target = buffers[spare][:count * width].reshape(count, width)
            if scratch is not None:  # (``level`` is C-contiguous: a block or a buffer)
                np.copyto(target, _add_row_halves(level, scratch, dtype))
            else:
                np.add(level[:, :width], level[:, width:], out=target)
            level, spare = target, 1 - spare
        tail = np.ascontiguousarray(level.T)  # (width, count)
        while width > 1:
            width //= 2
            np.add(tail[:width], tail[width:2 * width], out=tail[:width])
        out[r0:r0 + count] = tail[0]
    return out


def _add_row_halves(x: np.ndarray, scratch: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """For a C-contiguous ``(rows, 2h)`` ``x``: ``x[:, :h] + x[:, h:]`` in ``dtype``,
    as a ``(rows, h)`` view of ``scratch`` (at least ``x.size`` elements), by one
    contiguous add of ``x`` flattened and itself shifted by ``h`` (NumPy adds two
    contiguous arrays several times faster per element than two strided halves, so
    computing twice the sums, half of them across two rows and never read, is still
    quicker). The sums that straddle two rows may overflow: floating-point errors are
    ignored, as in every interpreted op."""
    rows, width = x.shape
    h = width // 2
    flat = x.reshape(-1)
    sums = scratch[:rows * width]
    with ignore_fp_errors():
        np.add(flat[:rows * width - h], flat[h:], out=sums[:rows * width - h], dtype=dtype)
    return sums.reshape(rows, width)[:, :h]


def _block_major(x: np.ndarray, inner: int) -> np.ndarray:
    """The ``(rows, blocks * inner)`` ``x`` as a ``(blocks, rows, inner)`` view."""
    rows, width = x.shape
    return x.reshape(rows, width // inner, inner).transpose(1, 0, 2)


def xor_reduce(x: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """Bitwise xor of the elements along ``axis`` (order-free)."""
    return np.bitwise_xor.reduce(x, axis=axis).astype(dtype, copy=False)


def arg_fold(x: np.ndarray, axis: int, largest: bool, tie_break_left: bool
             ) -> tuple[np.ndarray, np.ndarray]:
    """(value, int32 index) of ``arg_fold_and_nan``."""
    value, index, _ = arg_fold_and_nan(x, axis, largest, tie_break_left)
    return value, index


def arg_fold_and_nan(x: np.ndarray, axis: int, largest: bool, tie_break_left: bool
                     ) -> tuple[np.ndarray, np.ndarray, bool]:
    """(value, int32 index) of the largest (or smallest) element along ``axis``, as a
    left fold of Triton's argmax/argmin combine: the running pair is kept while it is
    strictly better, or equal with ``tie_break_left``; otherwise the next element
    replaces it -- so a NaN is replaced by the element after it, and a NaN in the last
    position wins (what the lowered loop computes). The third result says whether some
    row holds a NaN (then a picked value is not always the row's NaN-ignoring extreme:
    a NaN resets the fold)."""
    moved = np.moveaxis(x, axis, -1)
    if not moved.flags.writeable:
        # NumPy's argmax/argmin copy a read-only operand first (2.7x slower on a
        # loaded tile that is a read-only view of its tensor); they only read it
        # (the array interface spells a dtype NumPy does not own, bfloat16, as void)
        moved = np.asarray(_ReadAlias(moved)).view(moved.dtype)
    # Without NaN the fold keeps the first (or last) extreme: NumPy finds it at once.
    # NumPy's argmax/argmin stop at a row's first NaN, so a row holds a NaN exactly
    # when the element they pick is one: no separate pass looks for NaNs.
    pick = np.argmax if largest else np.argmin
    index = pick(moved, axis=-1) if tie_break_left else \
        moved.shape[-1] - 1 - pick(moved[..., ::-1], axis=-1)
    value = _picked(moved, index)
    # (bfloat16's kind is "V": every non-integer operand here is a float)
    if moved.dtype.kind in "iub" or not np.isnan(value).any():
        return value, index.astype(np.int32), False
    value = moved[..., 0].copy()
    index = np.zeros(value.shape, np.int32)
    with np.errstate(invalid="ignore"):
        for i in range(1, moved.shape[-1]):
            nxt = moved[..., i]
            better = value > nxt if largest else value < nxt
            keep = better | ((value == nxt) & tie_break_left)
            value = np.where(keep, value, nxt)
            index = np.where(keep, index, np.int32(i))
    return value, index, True


def _picked(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``x[..., index[...]]``: the element each index picks along the last axis (one
    flat ``take`` where ``x`` is C-contiguous: ``take_along_axis`` costs ~3x more)."""
    if not x.flags.c_contiguous:
        return np.take_along_axis(x, index[..., None], axis=-1)[..., 0]
    n = x.shape[-1]
    flat = index.reshape(-1).astype(np.int64) + np.arange(0, index.size * n, n)
    return x.reshape(-1)[flat].reshape(index.shape)


def scan_in_order(x: np.ndarray, axis: int, combine: str, reverse: bool) -> np.ndarray:
    """Inclusive prefix sums (``combine="sum"``) or products along ``axis`` in index
    order (from the end when ``reverse``), in ``x``'s dtype."""
    ufunc = np.add if combine == "sum" else np.multiply
    with ignore_fp_errors():
        if reverse:
            return np.flip(ufunc.accumulate(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
        return ufunc.accumulate(x, axis=axis, dtype=x.dtype)


def max_ignoring_nan(x: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """Largest element along ``axis``, NaNs ignored, as compiled code folds it
    (``_fold_extreme``): a row of NaNs gives -inf."""
    return _fold_extreme(np.fmax, x, axis, dtype, -np.inf)


def min_ignoring_nan(x: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """Smallest element along ``axis``, NaNs ignored (``_fold_extreme``): a row of
    NaNs gives +inf."""
    return _fold_extreme(np.fmin, x, axis, dtype, np.inf)


def _fold_extreme(ufunc: np.ufunc, x: np.ndarray, axis: int, dtype: np.dtype,
                  identity: float) -> np.ndarray:
    """``ufunc.reduce`` (``np.fmax``/``np.fmin``) with the result compiled code gives
    where the value alone does not fix it. Triton-ascend's lowering folds a row in
    index order from the identity (-inf for max, +inf for min) with maxNum/minNum,
    and an element equal to the running extreme replaces it (measured on rows of
    signed zeros, NaNs of both signs and numbers, lengths 4 to 256). So:

    - a row of NaNs gives the identity, never a NaN;
    - a zero extreme has the sign of the row's last zero (NumPy keeps another one).

    Integers need neither."""
    out = np.asarray(ufunc.reduce(x, axis=axis))
    if x.dtype.kind in "iub":
        return out.astype(dtype, copy=False)
    nan = np.isnan(out)
    zero = out == 0
    if not (nan.any() or zero.any()):
        return out.astype(dtype, copy=False)
    out = out.copy()
    out[nan] = identity
    if zero.any():
        rows = np.moveaxis(x, axis, -1)[zero]  # (rows with a zero extreme, length)
        last = rows.shape[-1] - 1 - np.argmax(rows[:, ::-1] == 0, axis=-1)
        out[zero] = rows[np.arange(rows.shape[0]), last]
    return out.astype(dtype, copy=False)
