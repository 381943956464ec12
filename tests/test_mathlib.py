"""libdevice math composed from the language's ops (``dsl.mathlib``): accuracy against
float64 NumPy and torch CPU, exact special values, and every backend (compiled-CPU
bit for bit, HIVM within UB). The ``libdevice`` spelling of Triton kernels is tested
in ``test_triton_compat.py``."""

from __future__ import annotations

import numpy as np
import pytest
from test_compiled_cpu import differential
from test_language import _unary_kernel  # the one-builtin kernel of the math tests

import dsl

N = 3000
BLOCK = 4096

# builtin -> (float64 NumPy reference, torch name, largest error in fp32 ulps)
UNARY = {
    "sinh": (np.sinh, "sinh", 2), "cosh": (np.cosh, "cosh", 2),
    "asinh": (np.arcsinh, "asinh", 2), "acosh": (np.arccosh, "acosh", 2),
    "atanh": (np.arctanh, "atanh", 2), "log10": (np.log10, "log10", 2),
    "trunc": (np.trunc, "trunc", 0), "nearbyint": (np.rint, "round", 0),
    "relu": (lambda x: np.where(x < 0, 0.0, x), "relu", 0),
    "atan": (np.arctan, "atan", 2), "asin": (np.arcsin, "asin", 1),
    "acos": (np.arccos, "acos", 1),
    "tan": (np.tan, "tan", 4), "expm1": (np.expm1, "expm1", 2),
    "reciprocal": (np.reciprocal, "reciprocal", 1),
}


def _kernel2(name):
    fn = getattr(dsl, name)

    @dsl.jit
    def binary(x, y, out, n, BLOCK: dsl.constexpr):
        i = dsl.arange(0, BLOCK)
        m = i < n
        dsl.store(out, i, fn(dsl.load(x, i, m), dsl.load(y, i, m)), m)

    return binary


# special functions: builtin -> (float64 reference, torch float32 counterpart, inputs,
# rtol, atol): approximations (Lanczos, Giles, Abramowitz-Stegun), so a tolerance
SPECIAL = {
    "lgamma": (None, "gammaln", "wide", 1e-5, 1e-5),
    "gamma": (np.vectorize(__import__("math").gamma), None, "positive", 3e-5, 1e-30),
    "erfinv": (None, "erfinv", "unit", 1e-6, 1e-6),
    "cyl_bessel_i0": (np.i0, "i0", "wide", 2e-6, 1e-30),
}
KERNELS1 = {name: _unary_kernel(name)
            for name in [*UNARY, *SPECIAL, "isnan", "signbit", "isfinite", "rint", "fast_expf",
                                      "exp", "round", "isinf", "ilogb"]}
KERNELS2 = {name: _kernel2(name) for name in ("copysign", "hypot", "nextafter", "atan2", "fmod",
                                              "ldexp", "div_rz")}
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0,
            1e-30, -1e-30, 3e38, -3e38, 1e-45, 2.0**23 + 1, 0.99999994]


def _inputs(dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(N) * np.exp(rng.uniform(-12, 6, N))
    x[:len(SPECIALS)] = SPECIALS
    with np.errstate(over="ignore"):  # beyond fp16's range: inf, one more special value
        return x.astype(dtype)


def _run1(name, x):
    out = np.zeros_like(x)
    KERNELS1[name][(1,)](x, out, x.size, BLOCK=BLOCK)
    return out


def _ulps(got, want):
    """Error in units of the last place of the (float32) reference."""
    finite = np.isfinite(want) & np.isfinite(got)
    spacing = np.spacing(np.abs(want[finite]).astype(np.float32)).astype(np.float64)
    return np.abs(got[finite].astype(np.float64) - want[finite]) / spacing


def _same_specials(got, want):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    special = ~np.isfinite(want) & ~np.isnan(want)
    np.testing.assert_array_equal(got[special], want[special])
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_fp32_within_bound_of_float64(name):
    reference, _, bound = UNARY[name]
    x = _inputs(np.float32)
    got = _run1(name, x)
    with np.errstate(all="ignore"):
        want = reference(x.astype(np.float64)).astype(np.float32)
    _same_specials(got, want)
    assert _ulps(got, want).max() <= bound


@pytest.mark.parametrize("name", sorted(UNARY))
def test_fp16_computes_in_fp32_and_rounds_once(name):
    reference, _, _ = UNARY[name]
    x = _inputs(np.float16)
    got = _run1(name, x)
    with np.errstate(all="ignore"):
        want = reference(x.astype(np.float64)).astype(np.float16)
    _same_specials(got, want)
    finite = np.isfinite(want) & np.isfinite(got)
    # one fp16 rounding of a value within 2 fp32 ulps: at most one fp16 ulp away
    spacing = np.spacing(np.abs(want[finite])).astype(np.float64)
    assert (np.abs(got[finite].astype(np.float64) - want[finite]) <= spacing).all()


@pytest.mark.parametrize("name", sorted(UNARY))
def test_fp32_agrees_with_torch(torch, name):
    _, torch_name, bound = UNARY[name]
    x = _inputs(np.float32, seed=1)
    x = x[~(np.abs(x) > 80)]  # torch's float32 sinh/cosh overflow before the true value does
    got = _run1(name, x)
    want = getattr(torch, torch_name)(torch.from_numpy(x.copy())).numpy()
    _same_specials(got, want)
    assert _ulps(got, want).max() <= bound + 1  # torch's own float32 result may be 1 ulp off


def _special_inputs(kind):
    rng = np.random.default_rng(8)
    if kind == "unit":
        x = rng.uniform(-1, 1, N)
        x[:6] = [0.0, -0.0, 1.0, -1.0, 0.999, -0.5]
    else:
        x = rng.standard_normal(N) * np.exp(rng.uniform(-4, 3, N))
        x[:6] = [0.0, 1.0, 2.0, 0.5, -1.5, -2.5]
        if kind == "positive":
            x = np.abs(x) + 1e-3
            x = x[x < 30]  # gamma overflows fp32 past ~35
    return x.astype(np.float32)


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_functions_against_float64_and_torch(torch, name):
    reference, torch_name, kind, rtol, atol = SPECIAL[name]
    x = _special_inputs(kind)
    got = _run1(name, x)
    x64 = torch.from_numpy(x.astype(np.float64))
    if reference is None:  # torch's float64 function
        want = getattr(torch.special, torch_name)(x64).numpy()
    else:
        with np.errstate(all="ignore"):
            want = reference(x.astype(np.float64)).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    if torch_name is not None:  # the second oracle: torch's own float32 function
        mine = getattr(torch.special, torch_name, None) or getattr(torch, torch_name)
        np.testing.assert_allclose(got, mine(torch.from_numpy(x)).numpy(), rtol=10 * rtol,
                                   atol=10 * atol)


def test_isnan_and_signbit_are_exact():
    for dtype in (np.float32, np.float16):
        x = _inputs(dtype)
        x[:3] = [-np.nan, np.nan, -0.0]
        np.testing.assert_array_equal(_run1("isnan", x).astype(bool), np.isnan(x))
        np.testing.assert_array_equal(_run1("signbit", x).astype(bool), np.signbit(x))


def test_isfinite_rint_and_fast_expf_as_libdevice_defines_them():
    for dtype in (np.float32, np.float16):
        x = _inputs(dtype)
        x[:8] = [-np.nan, np.inf, -np.inf, -0.0, 2.5, -2.5, 0.5, 1.5]
        np.testing.assert_array_equal(_run1("isfinite", x).astype(bool), np.isfinite(x))
        np.testing.assert_array_equal(_run1("rint", x), np.rint(x))  # ties to even
        np.testing.assert_array_equal(_run1("fast_expf", x), _run1("exp", x))
    with pytest.raises(dsl.DSLCompileError, match="Expected dtype fp16/fp32/bf16, but got int32"):
        _run1("isfinite", np.arange(8, dtype=np.int32))


def test_copysign_hypot_and_nextafter():
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float16):
        x, y = _inputs(dtype), _inputs(dtype, seed=4)
        with np.errstate(over="ignore"):
            y[:len(SPECIALS)] = rng.permutation(np.asarray(SPECIALS, dtype))
        results = {}
        for name in KERNELS2:
            out = np.zeros_like(x)
            KERNELS2[name][(1,)](x, y, out, x.size, BLOCK=BLOCK)
            results[name] = out
        np.testing.assert_array_equal(results["copysign"], np.copysign(x, y))
        with np.errstate(all="ignore"):
            angle = np.arctan2(x.astype(np.float64), y.astype(np.float64)).astype(dtype)
        _same_specials(results["atan2"], angle)
        finite = np.isfinite(angle)
        spacing = np.spacing(np.abs(angle[finite])).astype(np.float64)
        assert (np.abs(results["atan2"][finite].astype(np.float64) - angle[finite])
                <= 3 * spacing).all()
        np.testing.assert_array_equal(results["nextafter"], np.nextafter(x, y))
        with np.errstate(all="ignore"):
            want = np.hypot(x.astype(np.float64), y.astype(np.float64)).astype(dtype)
        _same_specials(results["hypot"], want)
        finite = np.isfinite(want)
        spacing = np.spacing(np.abs(want[finite])).astype(np.float64)
        err = np.abs(results["hypot"][finite].astype(np.float64) - want[finite])
        assert (err <= 2 * spacing).all()


def _run2(name, x, y):
    out = np.zeros_like(x)
    KERNELS2[name][(1,)](x, y, out, x.size, BLOCK=BLOCK)
    return out


def test_round_isinf_and_ilogb_are_exact():
    """Since session 18: libdevice's round (halves away from zero, C's round; NumPy's
    own rounds halves to even), isinf and ilogb (as a float, C's special values)."""
    for dtype in (np.float32, np.float16):
        x = _inputs(dtype)
        x[:10] = [-np.nan, np.inf, -np.inf, -0.0, 2.5, -2.5, 0.5, -0.49999997, 1.5, -0.3]
        t = np.trunc(x)
        with np.errstate(invalid="ignore"):
            want = np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)
        want = np.copysign(np.abs(want), x)
        np.testing.assert_array_equal(_run1("round", x), want.astype(dtype))
        np.testing.assert_array_equal(_run1("isinf", x).astype(bool), np.isinf(x))
        with np.errstate(all="ignore"):
            exponent = (np.frexp(x.astype(np.float64))[1] - 1).astype(np.float64)
        exponent[(x == 0) | np.isnan(x)] = -2.0**31
        exponent[np.isinf(x)] = 2.0**31 - 1
        np.testing.assert_array_equal(_run1("ilogb", x), exponent.astype(dtype))


def _toward_zero32(q: np.ndarray) -> np.ndarray:
    """A float64 quotient of float32 operands rounded toward zero to float32 (it is
    never close enough to a float32 value for its own rounding to matter)."""
    nearest = q.astype(np.float32)
    with np.errstate(invalid="ignore"):
        away = np.abs(nearest.astype(np.float64)) > np.abs(q)
    return np.where(away, np.nextafter(nearest, np.float32(0)), nearest)


def test_fmod_ldexp_and_div_rz():
    """Since session 18: fmod (C's, float ``%``), ldexp (over exponents that need
    more than one power-of-two factor, into subnormals) and div_rz against NumPy."""
    rng = np.random.default_rng(9)
    x, y = _inputs(np.float32), _inputs(np.float32, seed=10)
    with np.errstate(over="ignore"):
        y[:len(SPECIALS)] = rng.permutation(np.asarray(SPECIALS, np.float32))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_run2("fmod", x, y), np.fmod(x, y))
        q = _toward_zero32(x.astype(np.float64) / y.astype(np.float64))
    np.testing.assert_array_equal(_run2("div_rz", x, y), q)
    n = rng.integers(-400, 400, x.size).astype(np.float32)
    n[:4] = [-130, -300, 254, 300]
    x[:4] = [0.99999994, 3e38, 1e-45, 1e-45]
    with np.errstate(all="ignore"):
        want = np.ldexp(x, n.astype(np.int32))
    np.testing.assert_array_equal(_run2("ldexp", x, n), want)
    with pytest.raises(dsl.DSLCompileError, match=r"div_rz\(\) takes float32"):
        _run2("div_rz", x.astype(np.float64), y.astype(np.float64))


def test_integer_operands_are_refused_at_the_call():
    with pytest.raises(dsl.DSLCompileError, match=r"asinh\(\) expects a floating-point"):
        _run1("asinh", np.arange(8, dtype=np.int32))


@dsl.jit
def all_math(x, y, out, n, BLOCK: dsl.constexpr):
    i = dsl.arange(0, BLOCK)
    m = i < n
    a, b = dsl.load(x, i, m), dsl.load(y, i, m)
    r = dsl.sinh(a) + dsl.cosh(b) + dsl.asinh(a) + dsl.acosh(dsl.abs(b) + 1.0)
    r += dsl.atanh(a * 0.01) + dsl.log10(dsl.abs(b)) + dsl.trunc(a) + dsl.nearbyint(b)
    r += dsl.relu(a) + dsl.copysign(a, b) + dsl.hypot(a, b) + dsl.nextafter(a, b)
    r += dsl.atan(a) + dsl.asin(a * 0.1) + dsl.acos(b * 0.1) + dsl.atan2(a, b)
    r += dsl.lgamma(a) + dsl.gamma(dsl.abs(b) + 0.5) + dsl.erfinv(a * 0.1)
    r += dsl.cyl_bessel_i0(b)
    r += dsl.where(dsl.isnan(a) | dsl.signbit(b), 1.0, 0.0)
    r += dsl.where(dsl.isfinite(a / b), 2.0, 0.0) + dsl.rint(a) + dsl.fast_expf(a * 0.1)
    r += dsl.fast_dividef(a, b)
    r += dsl.round(a) + dsl.tan(a) + dsl.expm1(b * 0.1) + dsl.reciprocal(b)
    r += dsl.where(dsl.isinf(a / b), 3.0, 0.0) + dsl.ilogb(a) + dsl.fmod(a, b)
    r += dsl.ldexp(a, dsl.floor(b * 10.0)) + dsl.div_rz(a, b)
    dsl.store(out, i, r, m)


def _all_math_args():
    rng = np.random.default_rng(7)
    x, y = (rng.standard_normal(200).astype(np.float32) * 3 for _ in range(2))
    x[:4] = [0.0, -0.0, np.nan, 2.5]
    return (x, y, np.zeros(200, np.float32), 200), {"BLOCK": 256}


def test_compiled_cpu_is_bit_exact_with_the_interpreter(cpu_toolchain):
    args, kwargs = _all_math_args()
    differential(all_math, args, kwargs, grid=(1,))


def test_lowers_to_hivm_within_ub(toolchain):
    args, kwargs = _all_math_args()
    lowered = all_math.lower(*args, target="Ascend910B4", **kwargs)
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


def test_gamma_of_signed_zeros_is_signed_infinity():
    """C's tgamma(+-0) is +-inf (found in session 18: -0.0 gave +inf)."""
    for dtype in (np.float32, np.float64):
        x = np.array([0.0, -0.0, 1.0, -1e-30], dtype)
        got = _run1("gamma", x)
        assert got[0] == np.inf and got[1] == -np.inf and got[3] < -1e29
        assert abs(got[2] - 1.0) < 1e-6  # (Lanczos: gamma(1) within 3e-5 relative, the bound)


def test_acosh_below_one_and_lgamma_of_tiny_values_as_c():
    """Found in session 18: acosh of a large negative value gave inf (C: NaN), lgamma of
    a subnormal gave inf (C: -log|x|)."""
    import math

    for dtype in (np.float32, np.float64):
        x = np.array([-1e30, -2.0, 0.5, 1.0, 1e-40, -1e-40, 1e-45, 1e-30, 0.0], dtype)
        got = _run1("acosh", x)
        assert np.isnan(got[:3]).all() and got[3] == 0.0
        got = _run1("lgamma", x[4:])
        want = np.array([math.lgamma(float(v)) if v else math.inf for v in x[4:]])
        np.testing.assert_allclose(got, want.astype(dtype), rtol=1e-6)


@pytest.mark.parametrize("name", ["asin", "acos"])
def test_asin_and_acos_within_one_ulp_over_the_whole_domain(name):
    """Found in session 24: asin through atan2 was 3.45 fp32 ulps from float64 at
    x = -0.41963303 (acos through atan2: 4), beyond the README's bound; random inputs
    over the whole float range rarely fall inside [-1, 1]."""
    grid = np.linspace(-1, 1, 400_001)
    x = np.concatenate([grid, [-0.41963303, 0.5, -0.5, np.nextafter(0.5, 1)]]).astype(np.float32)
    got = _run1(name, x) if x.size <= BLOCK else np.concatenate(
        [_run1(name, part) for part in np.array_split(x, -(-x.size // BLOCK))])
    want = UNARY[name][0](x.astype(np.float64))  # unrounded: the error itself
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert (np.abs(got.astype(np.float64) - want) / spacing).max() < 1
    ends = _run1(name, np.array([1.0, -1.0, -0.0, 1.0000001, np.nan], np.float32))
    half_pi = np.float32(np.pi / 2)
    assert list(ends[:2]) == ([half_pi, -half_pi] if name == "asin" else [0.0, np.float32(np.pi)])
    assert np.signbit(ends[2]) == (name == "asin") and np.isnan(ends[3:]).all()
