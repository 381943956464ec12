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
- Reductions combine in index order along the axis (``reduce_in_order``): that is
  what the lowered loops do, and the order fixes a float sum's bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dsl.dtypes import DType


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


def umulhi(a: np.ndarray, b: np.ndarray, *, dtype: DType) -> np.ndarray:
    """The high 32 bits of the 64-bit product of two 32-bit integers."""
    wide = np.uint64 if dtype.is_unsigned else np.int64
    product = a.astype(wide) * b.astype(wide)
    return np.right_shift(product, 32).astype(dtype.np)


def sigmoid(x: np.ndarray, *, dtype: DType) -> np.ndarray:
    """1 / (1 + exp(-x)) in fp32 arithmetic with the fp32 exp above (Triton's
    definition of sigmoid), rounded to the operand type."""
    if dtype.bits == 64:
        return 1.0 / (1.0 + np.exp(-x))
    x32 = x.astype(np.float32)
    e = np.exp(-x32.astype(np.float64)).astype(np.float32)
    one = np.float32(1)
    result = one / (one + e)
    return result if dtype.bits == 32 else result.astype(dtype.np)


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
    with np.errstate(all="ignore"):
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
                  values: np.ndarray, op: str, compare: np.ndarray | None = None
                  ) -> np.ndarray:
    """Apply atomic ``op`` (or compare-and-swap when ``compare`` is given) at flat
    ``addresses`` one lane at a time, in the order the lanes are listed, and return
    each lane's old value. Lanes are applied in rounds: round r holds the r-th lane
    of every address, so each round touches distinct addresses and is one vectorized
    read and write, and two lanes of one address always apply in list order."""
    count = addresses.shape[0]
    old = np.empty_like(values)
    if count == 0:
        return old
    if compare is None and op == "add" and values.dtype.kind in "iu":
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
    with np.errstate(all="ignore"):
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
    """``acc + a @ b`` over the last two axes (leading axes batch), in ``acc``'s dtype:
    ``acc = acc + round(a[i, k] * b[k, j])`` for k in index order, each product and each
    sum rounded to the accumulator type (no fused multiply-add). This is the order
    triton-ascend's lowered ``tl.dot`` adds in (measured on the CPU route); integer
    products and sums wrap."""
    out = np.array(acc, copy=True)
    dtype = out.dtype
    a, b = a.astype(dtype), b.astype(dtype)
    with np.errstate(all="ignore"):
        for k in range(a.shape[-1]):
            out += a[..., :, k, None] * b[..., k, None, :]
    return out


# ----------------------------------------------------------------------------- reductions


def sum_in_order(x: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """Sum along ``axis`` adding the elements in index order (rule 10), in ``dtype``.

    With the summed axis outermost in memory, NumPy's reduce adds whole slices one
    after another -- index order for every output element, and fast; pairwise
    summation only applies along the innermost axis, which is why a lone summed axis
    (nothing else to vectorise over) goes through ``accumulate`` instead."""
    moved = np.moveaxis(x, axis, 0)
    if moved.ndim >= 2 and moved[0].size >= 2:
        return np.add.reduce(np.ascontiguousarray(moved), axis=0, dtype=dtype)
    return np.take(np.add.accumulate(x, axis=axis, dtype=dtype), -1, axis=axis)


def xor_reduce(x: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """Bitwise xor of the elements along ``axis`` (order-free)."""
    return np.bitwise_xor.reduce(x, axis=axis).astype(dtype, copy=False)


def arg_fold(x: np.ndarray, axis: int, largest: bool, tie_break_left: bool
             ) -> tuple[np.ndarray, np.ndarray]:
    """(value, int32 index) of the largest (or smallest) element along ``axis``, as a
    left fold of Triton's argmax/argmin combine: the running pair is kept while it is
    strictly better, or equal with ``tie_break_left``; otherwise the next element
    replaces it -- so a NaN is replaced by the element after it, and a NaN in the last
    position wins (what the lowered loop computes)."""
    moved = np.moveaxis(x, axis, -1)
    if not (moved.dtype.kind == "f" and np.isnan(moved).any()):
        # Without NaN the fold keeps the first (or last) extreme: NumPy finds it at once.
        pick = np.argmax if largest else np.argmin
        if tie_break_left:
            index = pick(moved, axis=-1)
        else:
            index = moved.shape[-1] - 1 - pick(moved[..., ::-1], axis=-1)
        value = np.take_along_axis(moved, index[..., None], axis=-1)[..., 0]
        return value, index.astype(np.int32)
    value = moved[..., 0].copy()
    index = np.zeros(value.shape, np.int32)
    with np.errstate(invalid="ignore"):
        for i in range(1, moved.shape[-1]):
            nxt = moved[..., i]
            better = value > nxt if largest else value < nxt
            keep = better | ((value == nxt) & tie_break_left)
            value = np.where(keep, value, nxt)
            index = np.where(keep, index, np.int32(i))
    return value, index


def scan_in_order(x: np.ndarray, axis: int, combine: str, reverse: bool) -> np.ndarray:
    """Inclusive prefix sums (``combine="sum"``) or products along ``axis`` in index
    order (from the end when ``reverse``), in ``x``'s dtype."""
    ufunc = np.add if combine == "sum" else np.multiply
    with np.errstate(all="ignore"):
        if reverse:
            return np.flip(ufunc.accumulate(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
        return ufunc.accumulate(x, axis=axis, dtype=x.dtype)


def max_ignoring_nan(x: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """Largest element along ``axis``; a NaN is ignored unless all are NaN (maxNum)."""
    return np.fmax.reduce(x, axis=axis).astype(dtype, copy=False)


def min_ignoring_nan(x: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    """Smallest element along ``axis``; a NaN is ignored unless all are NaN (minNum)."""
    return np.fmin.reduce(x, axis=axis).astype(dtype, copy=False)
