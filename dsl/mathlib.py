"""Math functions of Triton's libdevice composed from the language's elementwise ops.

triton-ascend's libdevice (``triton.language.extra.ascend.libdevice``) builds most of
its functions from a few primitives instead of calling a math library. This module
does the same with this language's ops, written here for accuracy over the whole
range: each function is a small expression over ``exp``, ``log``, ``log1p``,
``sqrt``, ``floor``, ``ceil``, comparisons, ``where`` and bitcasts. So no new IR op
is needed, and every backend runs them as it runs those ops: the interpreter, the
Triton code generator (which emits the composed ``tl`` calls), the UB model and
compiled-CPU mode (bit for bit with the interpreter).

Data flow: the frontend's builtin table maps ``dsl.asinh`` (and, through
``dsl.triton_compat``, ``libdevice.asinh``) to ``asinh(b, x)`` here, which emits IR
through ``dsl.semantic``. 16-bit float operands compute in fp32 and round once at
the end (``nextafter`` and ``signbit`` work on the operand's own bits). Accuracy
against float64 NumPy is bounded in ``tests/test_mathlib.py``, which also compares
with torch CPU.
"""

from __future__ import annotations

from collections.abc import Callable

from dsl import dtypes as dt
from dsl import semantic as sem
from dsl.dtypes import DType
from dsl.ir import Value
from dsl.semantic import Builder, Operand

LN2 = 0.6931471805599453
INV_LN10 = 0.4342944819032518
# Above this, sqrt(1 + x*x) is x to fp32 precision (and x*x would overflow).
LARGE = 2.0**28
# fp32 values at or above 2**23 in magnitude are integers.
INTEGRAL = 2.0**23


class _Expr:
    """Short names for the ops a formula is written with."""

    def __init__(self, b: Builder) -> None:
        self.b = b

    def add(self, x: Operand, y: Operand) -> Value:
        return sem.binary(self.b, "add", x, y)

    def sub(self, x: Operand, y: Operand) -> Value:
        return sem.binary(self.b, "sub", x, y)

    def mul(self, x: Operand, y: Operand) -> Value:
        return sem.binary(self.b, "mul", x, y)

    def div(self, x: Operand, y: Operand) -> Value:
        return sem.binary(self.b, "truediv", x, y)

    def cmp(self, op: str, x: Operand, y: Operand) -> Value:
        return sem.binary(self.b, op, x, y)

    def fn(self, op: str, x: Operand) -> Value:
        return sem.unary(self.b, op, x)

    def where(self, c: Operand, x: Operand, y: Operand) -> Value:
        return sem.where(self.b, c, x, y)

    def either(self, x: Value, y: Value) -> Value:
        return sem.binary(self.b, "or", x, y)

    def both(self, x: Value, y: Value) -> Value:
        return sem.binary(self.b, "and", x, y)

    def negation(self, x: Value) -> Value:
        return sem.unary(self.b, "invert", x)  # logical not on int1

    def negate_if(self, negative: Value, x: Value) -> Value:
        # x * -1, not -x: Triton's -x is 0 - x, which leaves +0.0 positive, while an
        # odd function's result must take the sign of -0.0 too
        return self.where(negative, self.mul(-1.0, x), x)

    def negative(self, x: Value) -> Value:
        """int1: x's sign bit is set (so -0.0 keeps its sign through odd functions)."""
        return signbit(self.b, x)


# Functions whose formulas here are float32 ones (a series or polynomial fitted to
# float32): on a float64 operand they would give float32 accuracy (measured: relative
# errors of 1e-8 to 1e-7 against float64 NumPy/SciPy), so float64 is refused.
FLOAT32_ONLY = frozenset({"sinh", "atan", "asin", "acos", "atan2", "erfinv", "cyl_bessel_i0"})


def _operand(b: Builder, name: str, x: Operand) -> tuple[Value, DType]:
    """The operand in fp32 (or fp64) and its own dtype; ints are refused, and float64
    for the ``FLOAT32_ONLY`` functions."""
    v = sem.as_value(b, x)
    if not v.dtype.is_float:
        raise b.error(f"{name}() expects a floating-point operand, got {v.dtype.name}")
    if v.dtype == dt.float64 and name in FLOAT32_ONLY:
        raise b.error(f"{name}() computes to float32 accuracy here (as triton-ascend's "
                      "libdevice, which takes float32 only), so a float64 operand would "
                      "lose precision silently: cast it to float32")
    return (sem.cast(b, v, dt.float32) if v.dtype.bits == 16 else v), v.dtype


def _back(b: Builder, v: Value, dtype: DType) -> Value:
    return v if v.dtype == dtype else sem.cast(b, v, dtype)


def _unary(name: str, formula: Callable[[_Expr, Value], Value]
           ) -> Callable[[Builder, Operand], Value]:
    def build(b: Builder, x: Operand) -> Value:
        v, dtype = _operand(b, name, x)
        return _back(b, formula(_Expr(b), v), dtype)

    build.__name__ = name
    return build


def _sinh(e: _Expr, x: Value) -> Value:
    a = e.fn("abs", x)
    x2 = e.mul(x, x)
    # |x| < 0.5: the Taylor series to x**7 (the next term is below 2**-24 relative);
    # else (e**a - e**-a) / 2 without cancellation, and past 20 through e**(a/2)
    # squared so that it overflows only where sinh does
    series = e.mul(x, e.add(1.0, e.mul(x2, e.add(1.0 / 6, e.mul(x2, e.add(
        1.0 / 120, e.mul(x2, 1.0 / 5040)))))))
    ea = e.fn("exp", a)
    mid = e.mul(0.5, e.sub(ea, e.div(1.0, ea)))
    half = e.fn("exp", e.mul(0.5, a))
    big = e.mul(e.mul(0.5, half), half)
    magnitude = e.where(e.cmp("lt", a, 20.0), mid, big)
    return e.where(e.cmp("lt", a, 0.5), series, e.negate_if(e.negative(x), magnitude))


def _cosh(e: _Expr, x: Value) -> Value:
    a = e.fn("abs", x)
    ea = e.fn("exp", a)
    half = e.fn("exp", e.mul(0.5, a))
    return e.where(e.cmp("lt", a, 20.0), e.mul(0.5, e.add(ea, e.div(1.0, ea))),
                   e.mul(e.mul(0.5, half), half))


def _asinh(e: _Expr, x: Value) -> Value:
    a = e.fn("abs", x)
    # asinh(a) = log1p(a + a*a / (1 + sqrt(1 + a*a))): no cancellation near 0
    near = e.fn("log1p", e.add(a, e.div(e.mul(a, a), e.add(1.0, e.fn("sqrt", e.add(
        1.0, e.mul(a, a)))))))
    far = e.add(e.fn("log", a), LN2)
    return e.negate_if(e.negative(x), e.where(e.cmp("lt", a, LARGE), near, far))


def _acosh(e: _Expr, x: Value) -> Value:
    t = e.sub(x, 1.0)  # exact for x >= 1
    # acosh(1 + t) = log1p(t + sqrt(2t + t*t)); NaN below 1 (a negative square root)
    near = e.fn("log1p", e.add(t, e.fn("sqrt", e.add(e.mul(2.0, t), e.mul(t, t)))))
    far = e.add(e.fn("log", x), LN2)
    # below 1 a NaN (for a large negative x the square root above overflowed to inf)
    return e.where(e.cmp("lt", x, 1.0), float("nan"), e.where(e.cmp("lt", x, LARGE), near, far))


def _atanh(e: _Expr, x: Value) -> Value:
    a = e.fn("abs", x)
    # atanh(a) = log1p(2a / (1 - a)) / 2: inf at 1, NaN beyond
    magnitude = e.mul(0.5, e.fn("log1p", e.div(e.mul(2.0, a), e.sub(1.0, a))))
    return e.negate_if(e.negative(x), magnitude)


# atan on [0, tan(pi/8)]: t + t**3 * P(t**2) (the minimax coefficients of Cephes'
# atanf), after reducing |x| by pi/2 - atan(1/|x|) above tan(3pi/8) and by
# pi/4 + atan((|x| - 1)/(|x| + 1)) above tan(pi/8).
_ATAN_P = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)
_TAN_3PI_8 = 2.414213562373095
_TAN_PI_8 = 0.4142135623730950
_PI = 3.141592653589793


def _atan_magnitude(e: _Expr, a: Value) -> Value:
    """atan(a) for a >= 0 (inf gives pi/2)."""
    far = e.cmp("gt", a, _TAN_3PI_8)
    mid = e.cmp("gt", a, _TAN_PI_8)
    t = e.where(far, e.fn("neg", e.div(1.0, a)),
                e.where(mid, e.div(e.sub(a, 1.0), e.add(a, 1.0)), a))
    offset = e.where(far, _PI / 2, e.where(mid, _PI / 4, 0.0))
    z = e.mul(t, t)
    poly = _ATAN_P[0]
    for c in _ATAN_P[1:]:
        poly = e.add(e.mul(poly, z), c)
    return e.add(offset, e.add(e.mul(e.mul(poly, z), t), t))


def _atan(e: _Expr, x: Value) -> Value:
    return e.negate_if(e.negative(x), _atan_magnitude(e, e.fn("abs", x)))


def _atan2_of(e: _Expr, y: Value, x: Value) -> Value:
    """atan2(y, x) with C's results for zeros and infinities."""
    ay, ax = e.fn("abs", y), e.fn("abs", x)
    both_inf = e.both(e.cmp("eq", ay, float("inf")), e.cmp("eq", ax, float("inf")))
    # the angle from the x axis in the first quadrant: atan of the smaller ratio
    steep = e.cmp("gt", ay, ax)
    ratio = e.where(steep, e.div(ax, ay), e.div(ay, ax))
    ratio = e.where(e.cmp("ne", ratio, ratio), 0.0, ratio)  # 0/0 (and inf/inf, below)
    base = _atan_magnitude(e, ratio)
    angle = e.where(steep, e.sub(_PI / 2, base), base)
    angle = e.where(both_inf, _PI / 4, angle)
    # the left half-plane (x < 0, or x = -0.0) mirrors it
    left = e.negative(x)
    angle = e.where(left, e.sub(_PI, angle), angle)
    angle = e.negate_if(e.negative(y), angle)
    nan = e.either(e.cmp("ne", x, x), e.cmp("ne", y, y))
    return e.where(nan, e.add(x, y), angle)


# asin on [0, 1/2]: a + a * z * P(z) with z = a*a (the minimax coefficients of Cephes'
# asinf); above 1/2 through asin(a) = pi/2 - 2 asin(s), s = sqrt((1 - a) / 2) <= 1/2,
# with pi/2 and s each split in two (as fdlibm's asin and acos do) so the subtraction
# loses nothing: asin within 0.71 and acos within 0.9 fp32 ulps of float64 (measured
# over 3.9 million points of [-1, 1]).
_ASIN_P = (4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2,
           1.6666752422e-1)
_PI_2_HI = 1.5707963705062866  # pi/2 rounded to fp32, and the rest of it
_PI_2_LO = -4.371139006309477e-08
_PI_HI = 3.1415927410125732  # 2 * _PI_2_HI, exact


class _AsinParts:
    """The reduction asin and acos share, for a = |x|: ``big`` (a > 1/2), ``s`` (a,
    or sqrt(z) when big), ``q`` = z * P(z) so that asin(s) = s + s * q, and when big
    s = ``s_hi`` + ``s_lo`` with s_hi's low 12 bits clear (its square is exact)."""

    def __init__(self, e: _Expr, x: Value) -> None:
        a = e.fn("abs", x)
        self.big = e.cmp("gt", a, 0.5)
        z = e.where(self.big, e.mul(0.5, e.sub(1.0, a)), e.mul(a, a))
        self.s = e.where(self.big, e.fn("sqrt", z), a)
        poly = _ASIN_P[0]
        for c in _ASIN_P[1:]:
            poly = e.add(e.mul(poly, z), c)
        self.q = e.mul(poly, z)
        bits = sem.bitcast(e.b, self.s, dt.int32)
        self.s_hi = sem.bitcast(e.b, sem.binary(e.b, "and", bits, -4096), dt.float32)
        # z - s_hi**2 is exact; over (s + s_hi) it is s's remainder (0 at s = 0)
        positive = e.cmp("gt", self.s, 0.0)
        self.s_lo = e.where(positive, e.div(e.sub(z, e.mul(self.s_hi, self.s_hi)),
                                            e.where(positive, e.add(self.s, self.s_hi), 1.0)),
                            0.0)


def _asin(e: _Expr, x: Value) -> Value:
    r = _AsinParts(e, x)
    near = e.add(e.mul(r.s, r.q), r.s)
    # pi/2 - 2(s + s q) = (pi/2_hi - 2 s_hi) + ((pi/2_lo - 2 s_lo) - 2 s q)
    far = e.add(e.sub(_PI_2_HI, e.mul(2.0, r.s_hi)),
                e.sub(e.sub(_PI_2_LO, e.mul(2.0, r.s_lo)), e.mul(e.mul(2.0, r.s), r.q)))
    return e.negate_if(e.negative(x), e.where(r.big, far, near))


def _acos(e: _Expr, x: Value) -> Value:
    r = _AsinParts(e, x)
    # |x| <= 1/2: pi/2 - asin(x); x < -1/2: pi - 2 asin(s); x > 1/2: 2 asin(s)
    near = e.sub(_PI_2_HI, e.sub(x, e.sub(_PI_2_LO, e.mul(x, r.q))))
    left = e.sub(_PI_HI, e.mul(2.0, e.add(r.s, e.sub(e.mul(r.s, r.q), _PI_2_LO))))
    right = e.mul(2.0, e.add(r.s_hi, e.add(r.s_lo, e.mul(r.s, r.q))))
    return e.where(r.big, e.where(e.cmp("gt", x, 0.0), right, left), near)


# Lanczos' approximation of the gamma function (g = 7, nine terms), the commonly
# published coefficients.
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.9189385332046728


def _lgamma_right(e: _Expr, x: Value) -> Value:
    """log|gamma(x)| for x >= 0.5 (Lanczos)."""
    z = e.sub(x, 1.0)
    series: Value | float = _LANCZOS[0]
    for i, c in enumerate(_LANCZOS[1:], start=1):
        series = e.add(series, e.div(c, e.add(z, float(i))))
    t = e.add(z, _LANCZOS_G + 0.5)
    return e.add(e.add(_HALF_LOG_2PI, e.sub(e.mul(e.add(z, 0.5), e.fn("log", t)), t)),
                 e.fn("log", series))


def _sin_pi(e: _Expr, x: Value) -> Value:
    """|sin(pi x)| with the argument reduced exactly first (x - round(x) is exact)."""
    r = e.sub(x, e.fn("floor", e.add(x, 0.5)))
    return e.fn("abs", e.fn("sin", e.mul(_PI, r)))


def _lgamma(e: _Expr, x: Value) -> Value:
    # x < 0.5: the reflection log(pi / |sin(pi x)|) - lgamma(1 - x) (inf at the poles)
    reflected = e.sub(e.fn("log", e.div(_PI, _sin_pi(e, x))), _lgamma_right(e, e.sub(1.0, x)))
    right = _lgamma_right(e, e.where(e.cmp("lt", x, 0.5), 1.0, x))
    result = e.where(e.cmp("lt", x, 0.5), reflected, right)
    # near 0, -log|x| (the next term, -0.577 x, is below the precision): sin(pi x) of
    # a subnormal x underflowed, which gave inf
    result = e.where(e.cmp("lt", e.fn("abs", x), 2.0**-40), e.fn("neg", e.fn("log", e.fn("abs", x))),
                     result)
    return e.where(e.cmp("eq", e.fn("abs", x), float("inf")), float("inf"), result)


def _gamma(e: _Expr, x: Value) -> Value:
    magnitude = e.fn("exp", _lgamma(e, x))
    # negative between -2k-1 and -2k (floor(-x) even), positive elsewhere
    half = e.mul(0.5, e.fn("floor", e.fn("neg", x)))
    negative = e.both(e.cmp("lt", x, 0.0), e.cmp("eq", e.fn("floor", half), half))
    signed = e.negate_if(negative, magnitude)
    pole = e.both(e.cmp("lt", x, 0.0), e.cmp("eq", e.fn("floor", x), x))
    signed = e.where(pole, float("nan"), signed)
    # gamma(+-0) is +-inf (C's tgamma): the sign of the zero, which lgamma's inf lacks
    signed = e.where(e.cmp("eq", x, 0.0), e.negate_if(e.negative(x), float("inf")), signed)
    return e.where(e.cmp("eq", x, float("-inf")), float("nan"), signed)


# erfinv: M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011),
# single-precision coefficients, central region (w < 5) and tails.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(e: _Expr, coefs: tuple[float, ...], w: Value) -> Value:
    p: Value | float = coefs[0]
    for c in coefs[1:]:
        p = e.add(e.mul(p, w), c)
    assert isinstance(p, Value)
    return p


def _erfinv(e: _Expr, x: Value) -> Value:
    w = e.fn("neg", e.fn("log", e.mul(e.sub(1.0, x), e.add(1.0, x))))
    central = _horner(e, _ERFINV_CENTRAL, e.sub(e.where(e.cmp("lt", w, 5.0), w, 2.5), 2.5))
    tail = _horner(e, _ERFINV_TAIL, e.sub(e.fn("sqrt", e.where(e.cmp("lt", w, 5.0), 5.0, w)),
                                          3.0))
    result = e.mul(e.where(e.cmp("lt", w, 5.0), central, tail), x)
    edge = e.cmp("eq", e.fn("abs", x), 1.0)
    return e.where(edge, e.mul(x, float("inf")), result)


# I0: Abramowitz and Stegun 9.8.1 (|x| <= 3.75) and 9.8.2 (beyond, times e**x/sqrt(x)).
_I0_NEAR = (0.0045813, 0.0360768, 0.2659732, 1.2067492, 3.0899424, 3.5156229, 1.0)
_I0_FAR = (0.00392377, -0.01647633, 0.02635537, -0.02057706, 0.00916281, -0.00157565,
           0.00225319, 0.01328592, 0.39894228)


def _cyl_bessel_i0(e: _Expr, x: Value) -> Value:
    a = e.fn("abs", x)
    t = e.div(a, 3.75)
    near = _horner(e, _I0_NEAR, e.mul(t, t))
    far_poly = _horner(e, _I0_FAR, e.div(1.0, e.where(e.cmp("gt", t, 1.0), t, 1.0)))
    half = e.fn("exp", e.mul(0.5, a))  # e**a as a square: overflows only where I0 does
    far = e.mul(e.div(e.mul(half, far_poly), e.fn("sqrt", a)), half)
    return e.where(e.cmp("le", a, 3.75), near, far)


def _log10(e: _Expr, x: Value) -> Value:
    return e.mul(e.fn("log", x), INV_LN10)


def _trunc(e: _Expr, x: Value) -> Value:
    return e.where(e.cmp("lt", x, 0.0), e.fn("ceil", x), e.fn("floor", x))


def _nearbyint(e: _Expr, x: Value) -> Value:
    """Round half to even (the default rounding mode), keeping the sign of zero."""
    f = e.fn("floor", x)
    d = e.sub(x, f)  # exact
    even = e.cmp("eq", e.mul(2.0, e.fn("floor", e.mul(0.5, f))), f)
    up = e.either(e.cmp("gt", d, 0.5), e.both(e.cmp("eq", d, 0.5), e.negation(even)))
    r = e.where(up, e.add(f, 1.0), f)
    r = e.negate_if(e.negative(x), e.fn("abs", r))  # -0.3 rounds to -0.0
    integral = e.either(e.cmp("ge", e.fn("abs", x), INTEGRAL), e.cmp("ne", x, x))
    return e.where(integral, x, r)


def _round(e: _Expr, x: Value) -> Value:
    """Round half away from zero (C's ``round``): the truncation, one further out
    where the part cut off is at least a half (``x - t`` is exact)."""
    t = _trunc(e, x)
    further = e.cmp("ge", e.fn("abs", e.sub(x, t)), 0.5)
    r = e.where(further, e.add(t, e.where(e.negative(x), -1.0, 1.0)), t)
    return e.negate_if(e.negative(x), e.fn("abs", r))  # -0.3 rounds to -0.0


def _tan(e: _Expr, x: Value) -> Value:
    return e.div(e.fn("sin", x), e.fn("cos", x))


def _expm1(e: _Expr, x: Value) -> Value:
    """exp(x) - 1 without cancellation near 0: with u = exp(x) rounded, (u - 1) * x /
    log(u) corrects the rounding of u (Kahan); u == 1 means x is below the precision."""
    u = e.fn("exp", x)
    um1 = e.sub(u, 1.0)
    corrected = e.div(e.mul(um1, x), e.fn("log", u))
    r = e.where(e.cmp("eq", u, 1.0), x, corrected)
    # far from 0 (and at the infinities, where the ratio is a NaN) u - 1 is exact enough
    return e.where(e.cmp("gt", e.fn("abs", x), 0.5), um1, r)


def _reciprocal(e: _Expr, x: Value) -> Value:
    return e.div(1.0, x)


def _relu(e: _Expr, x: Value) -> Value:
    return e.where(e.cmp("lt", x, 0.0), 0.0, x)  # NaN stays NaN


sinh = _unary("sinh", _sinh)
cosh = _unary("cosh", _cosh)
asinh = _unary("asinh", _asinh)
acosh = _unary("acosh", _acosh)
atanh = _unary("atanh", _atanh)
log10 = _unary("log10", _log10)
trunc = _unary("trunc", _trunc)
nearbyint = _unary("nearbyint", _nearbyint)
relu = _unary("relu", _relu)
atan = _unary("atan", _atan)
asin = _unary("asin", _asin)
acos = _unary("acos", _acos)
lgamma = _unary("lgamma", _lgamma)
gamma = _unary("gamma", _gamma)
erfinv = _unary("erfinv", _erfinv)
cyl_bessel_i0 = _unary("cyl_bessel_i0", _cyl_bessel_i0)
round = _unary("round", _round)  # noqa: A001 - libdevice's name
tan = _unary("tan", _tan)
expm1 = _unary("expm1", _expm1)
reciprocal = _unary("reciprocal", _reciprocal)


def isnan(b: Builder, x: Operand) -> Value:
    """int1: x is a NaN."""
    v, _ = _operand(b, "isnan", x)
    return sem.binary(b, "ne", v, v)


def isfinite(b: Builder, x: Operand) -> Value:
    """int1: x is neither infinite nor a NaN (|x| < inf is false for both)."""
    v = sem.as_value(b, x)
    if not v.dtype.is_float:
        raise b.error(f"isfinite() expects a floating-point operand: Expected dtype "
                      f"fp16/fp32/bf16, but got {v.dtype.name}")
    return sem.binary(b, "lt", sem.unary(b, "abs", v), float("inf"))


def signbit(b: Builder, x: Operand) -> Value:
    """int1: the sign bit of x is set (-0.0 and negative NaNs included)."""
    v = sem.as_value(b, x)
    if not v.dtype.is_float:
        raise b.error(f"signbit() expects a floating-point operand, got {v.dtype.name}")
    bits = sem.bitcast(b, v, dt.signed_int(v.dtype.bits))
    return sem.binary(b, "lt", bits, 0)


def copysign(b: Builder, x: Operand, y: Operand) -> Value:
    """|x| with the sign bit of y."""
    v, dtype = _operand(b, "copysign", x)
    e = _Expr(b)
    magnitude = e.fn("abs", v)
    return _back(b, e.negate_if(signbit(b, y), magnitude), dtype)


def hypot(b: Builder, x: Operand, y: Operand) -> Value:
    """sqrt(x*x + y*y) without overflow or underflow in between; inf if either is."""
    v, dtype = _operand(b, "hypot", x)
    w, _ = _operand(b, "hypot", y)
    e = _Expr(b)
    a, c = e.fn("abs", v), e.fn("abs", w)
    big = sem.extremum(b, "maximum", a, c, None)
    small = sem.extremum(b, "minimum", a, c, None)
    # in range, the plain formula (exact squares for 16-bit operands, so one rounding
    # to fp32 and one to the operand type); far from 1, scaled by the larger magnitude
    plain = e.fn("sqrt", e.add(e.mul(a, a), e.mul(c, c)))
    ratio = e.div(small, big)
    scaled = e.mul(big, e.fn("sqrt", e.add(1.0, e.mul(ratio, ratio))))
    in_range = e.both(e.cmp("lt", big, 2.0**60), e.cmp("gt", small, 2.0**-60))
    r = e.where(in_range, plain, scaled)
    r = e.where(e.cmp("eq", big, 0.0), 0.0, r)
    r = e.where(e.either(e.cmp("ne", v, v), e.cmp("ne", w, w)), e.add(v, w), r)
    infinite = e.either(e.cmp("eq", a, float("inf")), e.cmp("eq", c, float("inf")))
    return _back(b, e.where(infinite, float("inf"), r), dtype)


def atan2(b: Builder, y: Operand, x: Operand) -> Value:
    """The angle of (x, y) in (-pi, pi], with C's results for zeros and infinities."""
    v, dtype = _operand(b, "atan2", y)
    w, _ = _operand(b, "atan2", x)
    if w.dtype != v.dtype:
        w = sem.cast(b, w, v.dtype)
    return _back(b, _atan2_of(_Expr(b), v, w), dtype)


def nextafter(b: Builder, x: Operand, y: Operand) -> Value:
    """The representable value after x in the direction of y (in x's own dtype)."""
    v = sem.as_value(b, x)
    if not v.dtype.is_float:
        raise b.error(f"nextafter() expects a floating-point operand, got {v.dtype.name}")
    w = sem.as_value(b, y, v.dtype)
    e = _Expr(b)
    ity = dt.signed_int(v.dtype.bits)
    bits = sem.bitcast(b, v, ity)
    # away from zero when x and the direction agree in sign, else toward it
    away = e.cmp("eq", e.cmp("lt", v, w), e.cmp("gt", v, 0.0))
    stepped = sem.bitcast(b, e.where(away, e.add(bits, 1), e.sub(bits, 1)), v.dtype)
    tiny = sem.bitcast(b, sem.as_value(b, 1, ity), v.dtype)  # the least subnormal
    from_zero = e.where(e.cmp("lt", w, 0.0), e.fn("neg", tiny), tiny)
    r = e.where(e.cmp("eq", v, 0.0), from_zero, stepped)
    r = e.where(e.cmp("eq", v, w), w, r)
    return e.where(e.either(e.cmp("ne", v, v), e.cmp("ne", w, w)), e.add(v, w), r)


def isinf(b: Builder, x: Operand) -> Value:
    """int1: x is +inf or -inf."""
    v, _ = _operand(b, "isinf", x)
    return sem.binary(b, "eq", sem.unary(b, "abs", v), float("inf"))


def ilogb(b: Builder, x: Operand) -> Value:
    """The unbiased binary exponent of x (``floor(log2(|x|))``) as a value of x's
    float type, as triton-ascend's libdevice returns it; C's results for the special
    values: -2**31 for 0 and NaN, 2**31 - 1 for an infinity (both as floats)."""
    v, dtype = _operand(b, "ilogb", x)
    e = _Expr(b)
    fmt = _FORMATS[v.dtype]
    a = e.fn("abs", v)
    # a subnormal is scaled into the normal range first
    subnormal = e.cmp("lt", a, fmt.smallest_normal)
    scaled = e.where(subnormal, e.mul(a, 2.0 ** fmt.mantissa_bits), a)
    bits = sem.bitcast(b, scaled, dt.signed_int(v.dtype.bits))
    biased = sem.binary(b, "rshift", bits, fmt.mantissa_bits)
    exponent = e.sub(biased, e.where(subnormal, fmt.bias + fmt.mantissa_bits, fmt.bias))
    r = sem.cast(b, exponent, v.dtype)
    r = e.where(e.either(e.cmp("eq", a, 0.0), e.cmp("ne", v, v)), -2.0**31, r)
    return _back(b, e.where(e.cmp("eq", a, float("inf")), 2.0**31 - 1, r), dtype)


def fmod(b: Builder, x: Operand, y: Operand) -> Value:
    """C's fmod (the remainder of truncated division, with x's sign): float ``%``."""
    v, dtype = _operand(b, "fmod", x)
    w, _ = _operand(b, "fmod", y)
    return _back(b, sem.binary(b, "mod", v, w), dtype)


def ldexp(b: Builder, x: Operand, n: Operand) -> Value:
    """x * 2**n for an integral n (a float, as libdevice takes it, or an integer; a
    fraction is cut off): three exact power-of-two factors built from their bits, so
    an n beyond one factor's range scales without an intermediate infinity or zero;
    the remainder factor goes first, so a result is rounded at most once."""
    v, dtype = _operand(b, "ldexp", x)
    fmt = _FORMATS[v.dtype]
    ity = dt.signed_int(v.dtype.bits)
    e = _Expr(b)
    k = sem.as_value(b, n)
    k = sem.cast_with_modes(b, _trunc(e, k) if k.dtype.is_float else k, ity,
                            overflow="saturate")
    lo, hi = 1 - fmt.bias, fmt.bias  # the exponents of normal numbers
    powers = []
    for _ in range(3):
        part = sem.extremum(b, "minimum", sem.extremum(b, "maximum", k, lo, None), hi, None)
        powers.append(sem.bitcast(b, sem.binary(b, "lshift", e.add(part, fmt.bias),
                                                fmt.mantissa_bits), v.dtype))
        k = e.sub(k, part)
    # the smallest factor last: a result that becomes subnormal rounds only once
    r = v
    for power in reversed(powers):
        r = e.mul(r, power)
    return _back(b, r, dtype)


def div_rz(b: Builder, x: Operand, y: Operand) -> Value:
    """x / y rounded toward zero: the nearest quotient q, one step toward zero where
    it rounded away, which the exact remainder ``fma(-q, y, x)`` tells (q * r * y < 0).
    float32 only (as libdevice): float64 has no exact fma in the interpreter."""
    v, dtype = _operand(b, "div_rz", x)
    w, _ = _operand(b, "div_rz", y)
    if v.dtype != dt.float32 or w.dtype != dt.float32:
        raise b.error("div_rz() takes float32 (or 16-bit) operands, as libdevice does")
    e = _Expr(b)
    q = e.div(v, w)
    r = sem.ternary(b, "fma", e.mul(-1.0, q), w, v)
    same = e.cmp("eq", e.cmp("gt", q, 0.0), e.cmp("gt", w, 0.0))  # q * y > 0
    # (a NaN remainder, of x / 0 or an infinite operand, compares neither way: q stays)
    away = e.either(e.both(e.cmp("lt", r, 0.0), same),
                    e.both(e.cmp("gt", r, 0.0), e.negation(same)))
    away = e.both(away, e.cmp("ne", q, 0.0))
    q = e.where(away, sem.step_toward_zero(b, q), q)
    return q if dtype == dt.float32 else sem.cast_with_modes(b, q, dtype, "rtz")


class _Format:
    """The bit layout of a float type."""

    def __init__(self, mantissa_bits: int, bias: int) -> None:
        self.mantissa_bits = mantissa_bits
        self.bias = bias
        self.smallest_normal = 2.0 ** (1 - bias)


_FORMATS = {dt.float32: _Format(23, 127), dt.float64: _Format(52, 1023)}



# name -> builder, for the frontend's builtin table (one operand, then two)
UNARY: dict[str, Callable[[Builder, Operand], Value]] = {
    **{f.__name__: f for f in (sinh, cosh, asinh, acosh, atanh, atan, asin, acos, log10, trunc,
                            nearbyint, relu, isnan, isfinite, signbit, lgamma, gamma, erfinv,
                            cyl_bessel_i0, round, tan, expm1, reciprocal, isinf, ilogb)},
    # libdevice's other names
    "rint": nearbyint, "isfinited": isfinite, "finitef": isfinite,
}
BINARY: dict[str, Callable[[Builder, Operand, Operand], Value]] = {
    "copysign": copysign, "hypot": hypot, "nextafter": nextafter, "atan2": atan2,
    "fmod": fmod, "ldexp": ldexp, "div_rz": div_rz}
