"""Counter-based random numbers (Philox), in NumPy: the bits behind ``dsl.rand``,
``dsl.randn``, ``dsl.randint`` and ``dsl.randint4x``.

This module owns what those ops compute, not how they are spelled in a kernel: the
Philox block functions of Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"
(SC11, 2011), and Triton's recipe built on them, defined as in triton-ascend 3.2.0's
``triton.language.random`` (same as upstream Triton 3.2):

- ``philox4x32_block`` / ``philox4x64_block``: the bare Random123 block function,
  counter (c0, c1, c2, c3) and key (k0, k1) in, four words out. ``tests/test_philox.py``
  checks them against the published Random123 known-answer vectors.
- ``philox``, ``philox4x32``, ``philox4x64``: Triton's keying. A seed (any integer up to
  64 bits; negative ones are taken modulo 2**64, as Triton's sign-extending cast to
  uint64 does) becomes the key: with 32-bit counters ``k0`` is its low and ``k1`` its high
  word; with 64-bit counters ``k0`` is the whole seed and ``k1`` is 0. Counters are
  reinterpreted (bitcast) as unsigned, so an int32 offset of -1 is the counter
  0xFFFFFFFF. ``philox`` picks the width from the counter's dtype, as Triton does.
- ``randint4x``, ``randint``: counter (offset, 0, 0, 0). An int32/uint32 offset runs
  Philox4x32 and gives **uint32** words; an int64/uint64 offset runs *Philox4x64* (other
  constants, key (seed, 0)) and gives uint64 words. Triton's docstrings say "int32"; the
  values Triton computes are these unsigned ones. 10 rounds by default. A Python int
  offset is typed as a Triton literal is (int32, else uint32, int64, uint64 by value).
  **triton-ascend 3.2.0 refuses 64-bit offsets** (its ``umulhi`` accepts only 32-bit
  operands, so ``philox_impl`` fails to build): the 64-bit path here is upstream
  Triton's definition, for the interpreter only; a kernel meant to lower to Ascend needs
  32-bit offsets.
- ``uint_to_uniform_float``, ``rand``, ``rand4x``: a word becomes a float32 in [0, 1):
  reinterpret as signed, fold negatives onto non-negatives with ``~x`` (Triton writes
  ``-x - 1``, the same in two's complement), convert to float32 (round to nearest even),
  multiply by a float32 scale just below 2**-31 (2**-63 for 64-bit words). The scale is
  Triton's decimal constant rounded to float32: 2**-31 * (1 - 2**-24) and
  2**-63 * (1 - 2**-23). So 0 is a possible result (words 0 and all-ones) and 1 is not:
  the largest is 1 - 2**-24 (1 - 2**-23 from 64-bit words).
- ``pair_uniform_to_normal``, ``randn``, ``randn4x``: Box-Muller in float32, with u1
  clamped below at float32(1e-7): r = sqrt(-2 log u1), theta = float32(2 pi) * u2, results
  r cos(theta) and r sin(theta). ``randn`` uses words 0 and 1 and returns only the cosine
  branch; ``randn4x`` pairs (0, 1) and (2, 3).

Everything is vectorized over arrays of any shape (seed and offsets broadcast against
each other) with wrap-around unsigned arithmetic; the 32x32->64 products use uint64
intermediates and the 64x64->128 products are assembled from 32-bit halves.

Bit-exactness, as measured by ``tests/test_philox.py`` against triton-ascend 3.2.0 run
by Triton's CPU interpreter: the integer results (``randint4x``, ``randint``) and the
uniforms (``rand``, ``rand4x``) are bit-exact, for 32-bit offsets and (with the
interpreter's 32-bit-only ``umulhi`` check lifted) for 64-bit ones. Box-Muller's
log, cos and sin follow this project's convention for fp32 transcendentals
(``dsl.numerics.fp32_math``: evaluated in float64, rounded to float32; sqrt is then
correctly rounded as in Triton), so the interpreter and compiled code agree. Triton's
interpreter instead calls NumPy's float32 ``log``/``cos``/``sin``, which are off by up
to a few ulps on some inputs (NumPy 2.4.6 on AVX-512: log up to 4 ulps, on 22% of
inputs), so ``randn``/``randn4x`` match it within a few float32 ulps (4 measured, 8
asserted) and bit for bit once the interpreter is given the project's definitions; on an
NPU the bits of these three functions are the device library's.
"""

from __future__ import annotations

import numpy as np

from dsl import numerics
from dsl.dtypes import float32 as _FLOAT32

__all__ = [
    "M32",
    "M64",
    "N_ROUNDS_DEFAULT",
    "W32",
    "W64",
    "pair_uniform_to_normal",
    "philox",
    "philox4x32",
    "philox4x32_block",
    "philox4x64",
    "philox4x64_block",
    "rand",
    "rand4x",
    "randint",
    "randint4x",
    "randn",
    "randn4x",
    "uint_to_uniform_float",
]

N_ROUNDS_DEFAULT = 10
"""Triton's default round count (Philox4x32-10 / Philox4x64-10)."""

# The constants of the Philox algorithm (Salmon et al. 2011, Random123's philox.h):
# round multipliers M0, M1 and the Weyl key increments W0, W1.
M32 = (0xD2511F53, 0xCD9E8D57)
W32 = (0x9E3779B9, 0xBB67AE85)
M64 = (0xD2E7470EE14C6C93, 0xCA5A826395121157)
W64 = (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)

_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)

# Triton's decimal scales, as float32 (the dtype its multiplication runs in).
_SCALE_FROM_32 = np.float32(4.6566127342e-10)  # == 2**-31 * (1 - 2**-24)
_SCALE_FROM_64 = np.float32(1.0842020432385337e-19)  # == 2**-63 * (1 - 2**-23)
_MIN_U1 = np.float32(1.0e-7)
_TWO_PI = np.float32(6.283185307179586)
_MINUS_TWO = np.float32(-2.0)

IntLike = int | np.integer | np.ndarray

_UNSIGNED = {32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}


# ----------------------------------------------------------------------------- inputs


def _python_int_dtype(value: int) -> np.dtype:
    """The dtype Triton gives a Python int (``semantic.to_tensor``)."""
    if -(2**31) <= value < 2**31:
        return np.dtype(np.int32)
    if 2**31 <= value < 2**32:
        return np.dtype(np.uint32)
    if -(2**63) <= value < 2**63:
        return np.dtype(np.int64)
    if 2**63 <= value < 2**64:
        return np.dtype(np.uint64)
    raise ValueError(f"integer {value} does not fit in 64 bits")


def _as_integer_array(value: IntLike, what: str) -> np.ndarray:
    """An integer array; Python ints get Triton's dtype for them."""
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{what} must be an integer, not a bool")
    if isinstance(value, int):
        return np.asarray(value, dtype=_python_int_dtype(value))
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{what} must have an integer dtype, got {array.dtype}")
    return array


def _as_words(value: IntLike, bits: int, what: str) -> np.ndarray:
    """Reinterpret an integer of exactly ``bits`` bits as unsigned (Triton's bitcast).
    A Python int may be anything from -2**(bits-1) to 2**bits - 1."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not -(2 ** (bits - 1)) <= value < 2**bits:
            raise ValueError(f"{what} = {value} does not fit in {bits} bits")
        return np.asarray(value % 2**bits, dtype=_UNSIGNED[bits])
    array = _as_integer_array(value, what)
    if array.dtype.itemsize * 8 != bits:
        raise TypeError(f"{what} must be a {bits}-bit integer, got {array.dtype}")
    return array.view(_UNSIGNED[bits])


def _seed_bits(seed: IntLike) -> np.ndarray:
    """The seed as uint64, as Triton's ``seed.to(tl.uint64)``: signed seeds are
    sign-extended (so -1 is 2**64 - 1), unsigned ones zero-extended."""
    if isinstance(seed, int) and not isinstance(seed, bool):
        _python_int_dtype(seed)  # range check: -2**63 .. 2**64 - 1
        return np.asarray(seed % 2**64, dtype=np.uint64)
    array = _as_integer_array(seed, "seed")
    return array.astype(np.int64).view(np.uint64) if array.dtype.kind == "i" else \
        array.astype(np.uint64)


def _offset_array(offset: IntLike) -> np.ndarray:
    array = _as_integer_array(offset, "offset")
    if array.dtype.itemsize * 8 not in (32, 64):
        raise TypeError(f"offsets must be 32- or 64-bit integers, got {array.dtype}")
    return array


def _flat_broadcast(*arrays: np.ndarray) -> tuple[tuple[int, ...], list[np.ndarray]]:
    """Broadcast to one shape and flatten to fresh 1-D arrays (the rounds then work on
    arrays, never on NumPy scalars, whose overflow would warn)."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return shape, [np.broadcast_to(a, shape).reshape(-1).copy() for a in arrays]


# ----------------------------------------------------------------------------- products


def _mulhilo32(m: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """High and low words of the 64-bit product m * x (uint32 x)."""
    product = x.astype(np.uint64) * np.uint64(m)
    return (product >> _SHIFT32).astype(np.uint32), (product & _LOW32).astype(np.uint32)


def _mulhilo64(m: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """High and low words of the 128-bit product m * x (uint64 x), from 32-bit halves:
    each partial product and the middle sum fit in 64 bits."""
    m_lo, m_hi = np.uint64(m & 0xFFFFFFFF), np.uint64(m >> 32)
    x_lo, x_hi = x & _LOW32, x >> _SHIFT32
    lo_lo = x_lo * m_lo
    hi_lo = x_hi * m_lo
    lo_hi = x_lo * m_hi
    middle = (lo_lo >> _SHIFT32) + (hi_lo & _LOW32) + lo_hi  # <= 2**64 - 1
    high = x_hi * m_hi + (hi_lo >> _SHIFT32) + (middle >> _SHIFT32)
    low = (middle << _SHIFT32) | (lo_lo & _LOW32)
    return high, low


# ----------------------------------------------------------------------------- Philox


def _rounds(words: list[np.ndarray], k0: np.ndarray, k1: np.ndarray, n_rounds: int, bits: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if isinstance(n_rounds, bool) or not isinstance(n_rounds, int | np.integer) or n_rounds < 0:
        raise ValueError(f"n_rounds must be a non-negative integer, got {n_rounds!r}")
    mulhilo = _mulhilo32 if bits == 32 else _mulhilo64
    (m0, m1), (w0, w1) = (M32, W32) if bits == 32 else (M64, W64)
    kind = _UNSIGNED[bits].type
    c0, c1, c2, c3 = words
    with np.errstate(over="ignore"):
        for done in range(int(n_rounds)):
            if done:  # the key advances between rounds
                k0 = k0 + kind(w0)
                k1 = k1 + kind(w1)
            hi0, lo0 = mulhilo(m0, c0)
            hi1, lo1 = mulhilo(m1, c2)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def _block(bits: int, counter: tuple[IntLike, ...], key: tuple[IntLike, IntLike], n_rounds: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    names = ("c0", "c1", "c2", "c3", "k0", "k1")
    arrays = [_as_words(v, bits, name) for v, name in zip((*counter, *key), names)]
    shape, flat = _flat_broadcast(*arrays)
    w0, w1, w2, w3 = _rounds(flat[:4], flat[4], flat[5], n_rounds, bits)
    return w0.reshape(shape), w1.reshape(shape), w2.reshape(shape), w3.reshape(shape)


def philox4x32_block(c0: IntLike, c1: IntLike, c2: IntLike, c3: IntLike, k0: IntLike, k1: IntLike,
                     n_rounds: int = N_ROUNDS_DEFAULT
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Random123's Philox4x32-R block function: counter words ``c0..c3`` and key words
    ``k0, k1`` (32-bit integers, reinterpreted as unsigned; Python ints from -2**31 to
    2**32 - 1), broadcast together. Returns four uint32 arrays of the broadcast shape."""
    return _block(32, (c0, c1, c2, c3), (k0, k1), n_rounds)


def philox4x64_block(c0: IntLike, c1: IntLike, c2: IntLike, c3: IntLike, k0: IntLike, k1: IntLike,
                     n_rounds: int = N_ROUNDS_DEFAULT
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Random123's Philox4x64-R block function on 64-bit words; returns four uint64
    arrays."""
    return _block(64, (c0, c1, c2, c3), (k0, k1), n_rounds)


def philox4x32(seed: IntLike, c0: IntLike, c1: IntLike, c2: IntLike, c3: IntLike,
               n_rounds: int = N_ROUNDS_DEFAULT
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Triton's ``philox`` for 32-bit counters: the key is (low word, high word) of the
    seed taken as uint64 (a Python int up to 2**64 - 1, or an integer array; negative
    seeds are sign-extended first). Counters are 32-bit integers, reinterpreted as
    uint32. Returns four uint32 arrays."""
    bits = _seed_bits(seed)
    k0 = (bits & _LOW32).astype(np.uint32)
    k1 = (bits >> _SHIFT32).astype(np.uint32)
    return _block(32, (c0, c1, c2, c3), (k0, k1), n_rounds)


def philox4x64(seed: IntLike, c0: IntLike, c1: IntLike, c2: IntLike, c3: IntLike,
               n_rounds: int = N_ROUNDS_DEFAULT
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Triton's ``philox`` for 64-bit counters: key (seed as uint64, 0). Counters are
    64-bit integers, reinterpreted as uint64. Returns four uint64 arrays."""
    return _block(64, (c0, c1, c2, c3), (_seed_bits(seed), np.uint64(0)), n_rounds)


def philox(seed: IntLike, c0: IntLike, c1: IntLike, c2: IntLike, c3: IntLike,
           n_rounds: int = N_ROUNDS_DEFAULT
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Triton's ``philox``: ``philox4x32`` when ``c0`` is a 32-bit integer (a Python
    int counts as int32/uint32/int64/uint64 by its value, as in Triton),
    ``philox4x64`` when it is a 64-bit one."""
    bits = _offset_array(c0).dtype.itemsize * 8
    return (philox4x32 if bits == 32 else philox4x64)(seed, c0, c1, c2, c3, n_rounds)


# ----------------------------------------------------------------------------- randint


def randint4x(seed: IntLike, offset: IntLike, n_rounds: int = N_ROUNDS_DEFAULT
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Four blocks of random words for ``seed`` and an ``offset`` block: Philox on the
    counter (offset, 0, 0, 0). int32/uint32 offsets give uint32 words (Philox4x32),
    int64/uint64 offsets give uint64 words (Philox4x64), as in Triton."""
    offset = _offset_array(offset)
    zero = np.zeros((), offset.dtype)
    return philox(seed, offset, zero, zero, zero, n_rounds)


def randint(seed: IntLike, offset: IntLike, n_rounds: int = N_ROUNDS_DEFAULT) -> np.ndarray:
    """The first block of ``randint4x``: uint32 words (uint64 for 64-bit offsets)."""
    return randint4x(seed, offset, n_rounds)[0]


# ----------------------------------------------------------------------------- uniform


def uint_to_uniform_float(x: np.ndarray) -> np.ndarray:
    """Random words to float32 in [0, 1), as Triton: reinterpret as signed, map a
    negative x to ~x (= -x - 1), convert to float32 (nearest even) and multiply in
    float32 by 2**-31 * (1 - 2**-24) (32-bit words) or 2**-63 * (1 - 2**-23) (64-bit
    words). Words 0 and all-ones give exactly 0; no word gives 1."""
    x = np.asarray(x)
    if x.dtype.kind not in "iu" or x.dtype.itemsize not in (4, 8):
        raise TypeError(f"expected 32- or 64-bit integer words, got {x.dtype}")
    signed = x.view(np.int32 if x.dtype.itemsize == 4 else np.int64)
    folded = np.where(signed < 0, ~signed, signed)
    scale = _SCALE_FROM_32 if x.dtype.itemsize == 4 else _SCALE_FROM_64
    return np.multiply(folded.astype(np.float32), scale, dtype=np.float32)


def rand(seed: IntLike, offset: IntLike, n_rounds: int = N_ROUNDS_DEFAULT) -> np.ndarray:
    """A block of float32 uniforms in [0, 1): ``uint_to_uniform_float(randint(...))``."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


def rand4x(seed: IntLike, offset: IntLike, n_rounds: int = N_ROUNDS_DEFAULT
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Four blocks of float32 uniforms in [0, 1), one per word of ``randint4x``."""
    w0, w1, w2, w3 = randint4x(seed, offset, n_rounds)
    return (uint_to_uniform_float(w0), uint_to_uniform_float(w1), uint_to_uniform_float(w2),
            uint_to_uniform_float(w3))


# ----------------------------------------------------------------------------- normal

# The project's fp32 transcendentals (dsl.numerics): evaluated in float64, rounded.
_LOG, _COS, _SIN, _SQRT = (numerics.fp32_math(fn) for fn in (np.log, np.cos, np.sin, np.sqrt))


def pair_uniform_to_normal(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Box-Muller in float32: u1 is clamped below at float32(1e-7) (a maxNum, as
    ``tl.maximum``: a NaN gives the bound); r = sqrt(-2 log u1), theta = float32(2 pi) * u2;
    returns (r cos theta, r sin theta). Each operation rounds to float32; log, cos, sin
    (and sqrt) are the project's fp32 functions (float64, rounded), which can differ by a
    few ulps from the NumPy float32 ones that Triton's interpreter uses."""
    u1 = np.fmax(_MIN_U1, np.asarray(u1, np.float32))
    theta = np.multiply(_TWO_PI, np.asarray(u2, np.float32), dtype=np.float32)
    r = _SQRT(np.multiply(_MINUS_TWO, _LOG(u1, dtype=_FLOAT32), dtype=np.float32), dtype=_FLOAT32)
    return (np.multiply(r, _COS(theta, dtype=_FLOAT32), dtype=np.float32),
            np.multiply(r, _SIN(theta, dtype=_FLOAT32), dtype=np.float32))


def randn(seed: IntLike, offset: IntLike, n_rounds: int = N_ROUNDS_DEFAULT) -> np.ndarray:
    """A block of float32 standard normals: Box-Muller's cosine branch on the uniforms
    of words 0 and 1 of ``randint4x`` (words 2 and 3 are unused)."""
    w0, w1, _, _ = randint4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(uint_to_uniform_float(w0), uint_to_uniform_float(w1))[0]


def randn4x(seed: IntLike, offset: IntLike, n_rounds: int = N_ROUNDS_DEFAULT
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Four blocks of float32 standard normals: Box-Muller on the uniform pairs (0, 1)
    and (2, 3) of ``rand4x``, both branches of each."""
    u0, u1, u2, u3 = rand4x(seed, offset, n_rounds)
    n0, n1 = pair_uniform_to_normal(u0, u1)
    n2, n3 = pair_uniform_to_normal(u2, u3)
    return n0, n1, n2, n3
