"""fp8 (Triton's float8e4nv, float8e5, float8e4b8, float8e5b16): storage, conversions,
``dot`` and reductions in the interpreter, checked bit for bit against torch's CPU
conversions and against float64; the typing rules Triton applies; and the backends that
cannot take fp8 (triton-ascend 3.2.0's front end refuses it, measured here on the
generated source) saying so by name."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import dsl
from dsl import numerics
from dsl.targets import get_target
from lowering import cpu, ub
from lowering.compiler import cache_dir, compile_triton, import_kernel, write_source
from lowering.toolrun import LoweringError
from lowering.triton_codegen import generate

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# the DSL dtype, torch's, and the Triton spelling of each fp8 format
FORMATS = [(dsl.float8e4nv, torch.float8_e4m3fn, tl.float8e4nv),
           (dsl.float8e5, torch.float8_e5m2, tl.float8e5),
           (dsl.float8e4b8, torch.float8_e4m3fnuz, tl.float8e4b8),
           (dsl.float8e5b16, torch.float8_e5m2fnuz, tl.float8e5b16)]
FORMAT_IDS = [f[0].name for f in FORMATS]


@triton.jit
def convert(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """``y = x.to(y's dtype)``, whatever the two dtypes."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def convert_toward_zero(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x.to(y_ptr.dtype.element_ty, fp_downcast_rounding="rtz"), mask=mask)


def _bits_or_both_nan(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    """Elementwise: the same byte, or both NaN (torch's NaN payloads are its own)."""
    same = got.view(torch.uint8) == want.view(torch.uint8)
    return same | (got.float().isnan() & want.float().isnan())


def _conversion_inputs() -> list[torch.Tensor]:
    """Every float16 and bfloat16 bit pattern, and float32 patterns: random ones,
    the float16 values, and the edges (infinities, NaN, signed zeros, fp8 ties)."""
    rng = np.random.default_rng(0)
    every16 = torch.arange(-(2 ** 15), 2 ** 15, dtype=torch.int32).to(torch.int16)
    edges = torch.tensor([float("inf"), -float("inf"), float("nan"), 0.0, -0.0, 448.0, 464.0,
                          480.0, 1e10, -1e10, 57344.0, 61440.0, 2.0 ** -10, 2.0 ** -17,
                          1.0625, 1.1875, -1.0625, 2.0 ** -9 * 1.5])
    random32 = torch.from_numpy(rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64)
                                .astype(np.uint32).view(np.int32)).view(torch.float32)
    return [every16.view(torch.float16), every16.view(torch.bfloat16),
            torch.cat([random32, every16.view(torch.float16).float(), edges])]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_conversions_to_fp8_are_torch_s_bit_for_bit(fmt):
    """Round to nearest even; out of range float8e4nv saturates to +-448 (infinities
    too), float8e5 gives an infinity, the fnuz formats their NaN: torch's CPU rules."""
    _, torch_dtype, _ = fmt
    kernel = dsl.from_triton(convert)
    for x in _conversion_inputs():
        y = torch.empty(x.shape, dtype=torch_dtype)
        kernel[(triton.cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096)
        ok = _bits_or_both_nan(y, x.to(torch_dtype))
        assert bool(ok.all()), (x.dtype, x[~ok][:5], y[~ok][:5], x.to(torch_dtype)[~ok][:5])


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@pytest.mark.parametrize("wide", [torch.float32, torch.float16, torch.bfloat16])
def test_conversions_from_fp8_are_exact(fmt, wide):
    _, torch_dtype, _ = fmt
    every = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch_dtype)
    y = torch.empty(256, dtype=wide)
    dsl.from_triton(convert)[(1,)](every, y, 256, BLOCK=256)
    assert bool(_bits_or_both_nan_wide(y, every.to(wide)).all())


def _bits_or_both_nan_wide(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    both_nan = got.float().isnan() & want.float().isnan()
    bits = torch.int16 if got.element_size() == 2 else torch.int32
    return (got.view(bits) == want.view(bits)) | both_nan


def _nearest_even_reference(x: np.ndarray, fp8: np.dtype, saturates: bool) -> np.ndarray:
    """The fp8 value nearest each element of ``x`` (float64 arithmetic over all 256
    values), a tie going to the even bit pattern; beyond the largest finite value
    (past the midpoint to the next power step) an infinity where the format has one,
    else the largest value (``saturates``) or NaN."""
    values = np.arange(256, dtype=np.uint8).view(fp8).astype(np.float64)
    codes = np.arange(256)
    keep = np.isfinite(values) & ~((values == 0) & (codes >= 128))  # one zero, finite
    order = np.argsort(values[keep], kind="stable")
    grid, grid_codes = values[keep][order], codes[keep][order]
    wide = np.where(np.isnan(x), 0.0, x.astype(np.float64))  # (NaNs are put back below)
    hi = np.clip(np.searchsorted(grid, wide), 1, grid.size - 1)
    lo = hi - 1
    below, above = wide - grid[lo], grid[hi] - wide
    pick_hi = (above < below) | ((above == below) & (grid_codes[hi] % 2 == 0))
    out = np.where(pick_hi, grid[hi], grid[lo])
    largest = grid[-1]
    step = largest - grid[-2]
    beyond = np.abs(wide) >= largest + step / 2  # rounds past the largest value
    if saturates:
        overflow = np.copysign(largest, wide)
    elif np.isinf(values).any():
        overflow = np.copysign(np.inf, wide)
    else:
        overflow = np.full_like(wide, np.nan)
    out = np.where(beyond | np.isinf(wide), overflow, out)
    out = np.where(out == 0, np.copysign(0.0, wide) if np.isinf(values).any() or saturates
                   else 0.0, out)
    return np.where(np.isnan(x), np.nan, out)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_conversions_to_fp8_match_a_float64_reference(fmt):
    """The second oracle: every float16 value rounded in float64 by hand."""
    dsl_dtype, torch_dtype, _ = fmt
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    y = torch.empty(x.size, dtype=torch_dtype)
    dsl.from_triton(convert)[(16,)](torch.from_numpy(x), y, x.size, BLOCK=4096)
    got = y.double().numpy()
    want = _nearest_even_reference(x, dsl_dtype.np, saturates=dsl_dtype == dsl.float8e4nv)
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)  # (and the zeros' signs)
    assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def _toward_zero_reference(x: np.ndarray, fp8: np.dtype) -> np.ndarray:
    """The fp8 value of largest magnitude not above |x| (sign kept), found among all
    256 values in float64: a NaN stays NaN, an overflow gives the largest finite
    value, and float8e5's infinities stay infinite."""
    values = np.arange(256, dtype=np.uint8).view(fp8).astype(np.float64)
    finite = np.unique(np.abs(values[np.isfinite(values)]))
    magnitude = np.abs(x.astype(np.float64))
    picked = finite[np.searchsorted(finite, magnitude, side="right") - 1]
    out = np.copysign(picked, x.astype(np.float64))
    out = np.where(np.isinf(x) & np.isinf(values).any(), x, out)
    return np.where(np.isnan(x), np.nan, out)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_rounding_toward_zero(fmt):
    dsl_dtype, torch_dtype, _ = fmt
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(5000) * 50, rng.standard_normal(500) * 1e5,
                        rng.standard_normal(500) * 1e-3, [np.inf, -np.inf, 0.5, -0.75]]
                       ).astype(np.float32)
    y = torch.empty(x.size, dtype=torch_dtype)
    dsl.from_triton(convert_toward_zero)[(2,)](torch.from_numpy(x), y, x.size, BLOCK=4096)
    got = y.double().numpy()
    want = _toward_zero_reference(x, dsl_dtype.np)
    if dsl_dtype == dsl.float8e4nv:  # no infinities: +-inf rounds toward zero to +-448
        want = np.where(np.isinf(x), np.copysign(448.0, x), want)
    elif dsl_dtype in (dsl.float8e4b8, dsl.float8e5b16):  # an infinity has no fnuz value
        want = np.where(np.isinf(x), np.nan, want)
    np.testing.assert_array_equal(got, want)


@triton.jit
def quantize_groups(x_ptr, q_ptr, scale_ptr, n_cols, GROUP: tl.constexpr,
                    FP8_MAX: tl.constexpr):
    """Per-token-group quantization (the fp8 GEMM input of serving engines): each
    GROUP-wide slice of a row scaled into the fp8 range by its largest magnitude."""
    row = tl.program_id(0)
    group = tl.program_id(1)
    cols = group * GROUP + tl.arange(0, GROUP)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x)), 1e-10) / FP8_MAX
    q = tl.clamp(x / scale, -FP8_MAX, FP8_MAX).to(q_ptr.dtype.element_ty)
    tl.store(q_ptr + row * n_cols + cols, q, mask=mask)
    tl.store(scale_ptr + row * tl.cdiv(n_cols, GROUP) + group, scale)


@pytest.mark.parametrize("fmt,fp8_max", [(FORMATS[0], 448.0), (FORMATS[1], 57344.0)],
                         ids=["float8e4nv", "float8e5"])
@pytest.mark.parametrize("source", [torch.float32, torch.bfloat16])
def test_group_quantization_kernel_against_torch(fmt, fp8_max, source):
    _, torch_dtype, _ = fmt
    x = (torch.randn(7, 300, generator=torch.Generator().manual_seed(3)) * 4).to(source)
    q = torch.empty(7, 300, dtype=torch_dtype)
    scales = torch.empty(7, 3)
    dsl.from_triton(quantize_groups)[(7, 3)](x, q, scales, 300, GROUP=128, FP8_MAX=fp8_max)
    wide = torch.nn.functional.pad(x.float(), (0, 84)).reshape(7, 3, 128)
    want_scales = wide.abs().amax(-1).clamp(min=1e-10) / fp8_max
    assert torch.equal(scales, want_scales)
    want = (wide / want_scales[..., None]).clamp(-fp8_max, fp8_max).reshape(7, 384)[:, :300]
    assert torch.equal(q.view(torch.uint8), want.to(torch_dtype).view(torch.uint8))


@triton.jit
def fp8_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("a_dtype,b_dtype", [(torch.float8_e4m3fn, torch.float8_e4m3fn),
                                             (torch.float8_e5m2, torch.float8_e4m3fn)])
def test_dot_of_fp8_blocks_accumulates_in_float32(a_dtype, b_dtype):
    """Triton takes any two fp8 formats; each product is exact in float32 and each
    step's sum a float32 one: within the fp32 dot bound of the float64 product."""
    g = torch.Generator().manual_seed(4)
    a = torch.randn(70, 90, generator=g).to(a_dtype)
    b = torch.randn(90, 40, generator=g).to(b_dtype)
    c = torch.empty(70, 40)
    dsl.from_triton(fp8_matmul)[(3, 2)](a, b, c, 70, 40, 90, BM=32, BN=32, BK=32)
    exact = a.double() @ b.double()
    bound = 2 * 90 * 2.0 ** -24 * (a.double().abs() @ b.double().abs())
    assert bool(((c.double() - exact).abs() <= bound).all())


@dsl.jit
def fp8_statistics(x, bits, out, n, BLOCK: dsl.constexpr):
    """The DSL's own spelling on a NumPy (ml_dtypes) fp8 array: sum, max, bit view."""
    offs = dsl.arange(0, BLOCK)
    mask = offs < n
    v = dsl.load(x, offs, mask, 0.0)
    dsl.store(bits, offs, v.to(dsl.uint8, bitcast=True), mask)
    dsl.store(out, 0, dsl.sum(v))
    dsl.store(out, 1, dsl.max(dsl.where(mask, v, -1000.0)))
    dsl.store(out, 2, dsl.sum(v * 2.0).to(dsl.float32))


def test_reductions_and_bitcasts_of_fp8_numpy_arrays():
    x = (np.random.default_rng(5).standard_normal(100) * 8).astype(ml_dtypes.float8_e5m2)
    bits, out = np.zeros(100, np.uint8), np.zeros(3, np.float32)
    fp8_statistics(x, bits, out, 100, BLOCK=128)
    np.testing.assert_array_equal(bits, x.view(np.uint8))
    wide = x.astype(np.float32)
    # sums accumulate in float32 (rule 10's halving tree) and give float32
    assert out[0] == numerics.tree_sum(np.pad(wide, (0, 28)), 0, np.float32)
    assert out[1] == wide.max()
    # x * 2.0 stays float8e5 (a Python scalar does not promote, rule 5): exact doubling
    assert out[2] == numerics.tree_sum(np.pad(wide * 2, (0, 28)), 0, np.float32)


@triton.jit
def fp8_plus_int(x_ptr, i_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, (tl.load(x_ptr + offs) + tl.load(i_ptr + offs)).to(tl.float32))


@triton.jit
def fp8_exp(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs)).to(tl.float32))


@triton.jit
def fp8_fma(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.fma(x, x, x).to(tl.float32))


@triton.jit
def to_fp8e4b15(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e4b15).to(tl.float32))


@triton.jit
def mixed_fp8_add(x_ptr, z_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    s = tl.load(x_ptr + offs) + tl.load(z_ptr + offs)
    tl.static_assert(s.dtype == tl.float16)
    tl.store(y_ptr + offs, s)


def test_fp8_typing_follows_triton_and_refusals_name_the_problem():
    x = torch.randn(16).to(torch.float8_e4m3fn)
    out = torch.zeros(16)
    with pytest.raises(dsl.DSLCompileError, match="an fp8 block does not mix with integers"):
        dsl.from_triton(fp8_plus_int)[(1,)](x, torch.arange(16, dtype=torch.int32), out,
                                            BLOCK=16)
    with pytest.raises(dsl.DSLCompileError, match="exp"):
        dsl.from_triton(fp8_exp)[(1,)](x, out, BLOCK=16)
    with pytest.raises(dsl.DSLCompileError, match="fma.. does not accept float8e4nv"):
        dsl.from_triton(fp8_fma)[(1,)](x, out, BLOCK=16)
    with pytest.raises(dsl.DSLCompileError, match="float8e4b15 .*no torch or NumPy type"):
        dsl.from_triton(to_fp8e4b15)[(1,)](torch.randn(16), out, BLOCK=16)
    assert not out.any()
    # two different fp8 formats add in float16 (Triton's computation_type_impl)
    z = torch.randn(16).to(torch.float8_e5m2)
    y = torch.empty(16, dtype=torch.float16)
    dsl.from_triton(mixed_fp8_add)[(1,)](x, z, y, BLOCK=16)
    assert torch.equal(y, x.half() + z.half())


def test_torch_and_numpy_fp8_types_bind():
    for dsl_dtype, torch_dtype, _ in FORMATS:
        assert dsl.dtypes.from_torch(torch_dtype) == dsl_dtype
        assert dsl.dtypes.from_numpy(dsl_dtype.np) == dsl_dtype
        assert dsl_dtype.is_fp8() and not dsl_dtype.is_standard_floating()
    assert not dsl.float16.is_fp8()


def _fp8_copy() -> tuple[dsl.JITFunction, tuple]:
    x = torch.randn(300).to(torch.float8_e4m3fn)
    return dsl.from_triton(convert), (x, torch.empty(300, dtype=torch.float8_e5m2), 300)


def test_lowering_and_compiled_cpu_refuse_fp8_by_name(cpu_toolchain):
    kernel, args = _fp8_copy()
    with pytest.raises(LoweringError, match="parameter 'x_ptr' is float8e4nv.*triton-ascend "
                       "3.2.0 refuses fp8 types"):
        kernel.lower(*args, BLOCK=128)
    before = args[1].clone()
    with pytest.raises(cpu.CompiledCPUError, match="float8e4nv.*refuses fp8 types.*interpreter"):
        kernel.launch(*args, BLOCK=128, grid=(3,), backend="compiled-cpu")
    assert torch.equal(args[1].view(torch.uint8), before.view(torch.uint8))


def test_the_toolchain_itself_refuses_the_generated_fp8_source(toolchain):
    """The refusal above is triton-ascend's: its front end, given the generated source
    (which spells the fp8 types), stops at 'unexpected type fp8.' (when a later
    toolchain takes fp8, this fails and the refusal can go)."""
    kernel, args = _fp8_copy()
    generated = generate(kernel.ir(*args, BLOCK=128))
    assert "tl.float8e5" in generated.source
    jit_fn = import_kernel(write_source(generated, cache_dir()), generated.name)
    with pytest.raises(LoweringError, match="unexpected type fp8"):
        compile_triton(jit_fn, generated.signature, {}, get_target("Ascend910B4"), [])


def test_unified_buffer_model_counts_one_byte_per_fp8_element():
    kernel, (x, y, n) = _fp8_copy()
    fp8 = ub.static_estimate(kernel.ir(x, y, n, BLOCK=1024)).bytes
    wide = ub.static_estimate(kernel.ir(x.half(), y.half(), n, BLOCK=1024)).bytes
    assert 0 < fp8 < wide


@triton.jit
def fp8_fills_and_stores(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    """fp8 ``other=``, ``tl.full``/``tl.zeros`` of fp8, ``where`` of two fp8 formats'
    values, and a float32 value stored through an fp8 pointer (converted on store)."""
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.5)
    three = tl.full((BLOCK,), 3.0, tl.float8e5)
    w = tl.where(x > 0, x, three.to(tl.float8e4nv))
    tl.store(y_ptr + offs, w.to(tl.float32) * 2.0)
    tl.store(z_ptr + offs, tl.zeros((BLOCK,), tl.float8e5).to(tl.float32) + x.to(tl.float32))


def test_fp8_fills_and_stores_converted_on_store_in_repeated_launches():
    x = torch.randn(50, generator=torch.Generator().manual_seed(6)).to(torch.float8_e4m3fn)
    padded = torch.cat([x.float(), torch.full((14,), 1.5)])
    want = (torch.where(padded > 0, padded, torch.tensor(3.0)) * 2).to(torch.float8_e4m3fn)
    for _ in range(3):  # the later launches replay the cached launch
        y, z = torch.empty(64, dtype=torch.float8_e4m3fn), torch.empty(64)
        dsl.from_triton(fp8_fills_and_stores)[(1,)](x, y, z, 50, BLOCK=64)
        assert torch.equal(y.view(torch.uint8), want.view(torch.uint8))
        assert torch.equal(z, padded)


@triton.jit
def fp8_block_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    tile = tl.load(src, boundary_check=(0, 1), padding_option="zero")
    tl.store(dst, tile.to(tl.float32).to(tl.float8e5), boundary_check=(0, 1))


@triton.jit
def fp8_atomic_add(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(x_ptr + offs, tl.load(x_ptr + offs))


def test_fp8_block_pointers_and_atomics_refused():
    a = torch.randn(5, 7).to(torch.float8_e4m3fn)
    b = torch.zeros(5, 7, dtype=torch.float8_e5m2)
    dsl.from_triton(fp8_block_copy)[(1,)](a, b, 5, 7, BM=8, BN=8)
    assert torch.equal(b.view(torch.uint8), a.float().to(torch.float8_e5m2).view(torch.uint8))
    before = a.clone()
    with pytest.raises(dsl.DSLCompileError, match="atomic_add.. does not accept a float8e4nv "
                       "tensor"):
        dsl.from_triton(fp8_atomic_add)[(1,)](a, BLOCK=16)
    assert torch.equal(a.view(torch.uint8), before.view(torch.uint8))


@triton.jit
def fp8_arithmetic(x_ptr, y_ptr, out_ptr, less_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x + y * 2.0)
    tl.store(less_ptr + offs, (x < y).to(tl.int8))


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_fp8_arithmetic_is_float32_rounded_once_as_a_cast(fmt):
    """Two values of one format compute in it (Triton's typing): float32 arithmetic
    rounded by the conversion rule, so float8e4nv's overflow saturates there too
    (ml_dtypes' own fp8 arithmetic gave NaN past 448)."""
    _, torch_dtype, _ = fmt
    g = torch.Generator().manual_seed(7)
    x = (torch.randn(256, generator=g) * 200).to(torch_dtype)
    y = (torch.randn(256, generator=g) * 200).to(torch_dtype)
    out, less = torch.empty(256, dtype=torch_dtype), torch.empty(256, dtype=torch.int8)
    dsl.from_triton(fp8_arithmetic)[(1,)](x, y, out, less, BLOCK=256)
    want = (x.float() + (y.float() * 2).to(torch_dtype).float()).to(torch_dtype)
    assert bool(_bits_or_both_nan(out, want).all())
    assert torch.equal(less, (x.float() < y.float()).to(torch.int8))
    if torch_dtype == torch.float8_e4m3fn:
        assert out.float().abs().max() == 448.0  # some sums overflow and saturate
