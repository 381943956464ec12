"""``tl.histogram`` (an op of its own) and triton-ascend's ``tl.dot_scaled`` (expanded
into existing ops), in every backend: interpreter against NumPy/float64 and torch,
compiled-CPU differential, HIVM within UB, and the errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from test_compiled_cpu import differential
from test_language import dot_bound

import dsl


@triton.jit
def histogram_rows(x_ptr, z_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    # the masked-off lanes hold BINS, which has no bin: only the mask keeps them out
    x = tl.load(x_ptr + offs, mask=inside, other=BINS)
    tl.store(z_ptr + tl.program_id(0) * BINS + tl.arange(0, BINS), tl.histogram(x, BINS, inside))


@triton.jit
def histogram_whole(x_ptr, z_ptr, M: tl.constexpr, BINS: tl.constexpr):
    tl.store(z_ptr + tl.arange(0, BINS), tl.histogram(tl.load(x_ptr + tl.arange(0, M)), BINS))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint32])
def test_histogram_counts_each_programs_values(dtype):
    rng = np.random.default_rng(1)
    n, block, bins = 1000, 128, 16
    x = rng.integers(0, bins, n).astype(dtype)
    programs = -(-n // block)
    z = np.full(programs * bins, -7, np.int32)
    hist = dsl.from_triton(histogram_rows)
    hist[(programs,)](x, z, n, BLOCK=block, BINS=bins)
    expected = [np.bincount(x[p * block:(p + 1) * block].astype(np.int64), minlength=bins)
                for p in range(programs)]
    np.testing.assert_array_equal(z.reshape(programs, bins), expected)
    assert z.dtype == np.int32 and z.sum() == n


def test_histogram_matches_torch_histc(torch):
    # the oracle triton-ascend's own test uses
    x = torch.randint(0, 8, (2048,), dtype=torch.int32, generator=torch.Generator().manual_seed(5))
    z = torch.empty(8, dtype=torch.int32)
    dsl.from_triton(histogram_whole)[(1,)](x, z, M=2048, BINS=8)
    assert torch.equal(z, torch.histc(x.float(), bins=8, min=0, max=7).to(torch.int32))


def test_histogram_value_outside_the_bins_is_an_error_and_nothing_is_written():
    x = np.arange(64, dtype=np.int32) % 8
    x[37] = 8  # one past the last bin: the device has no bin for it
    z = np.full(8, 3, np.int32)
    with pytest.raises(dsl.DSLRuntimeError, match=r"histogram .* value 8 is outside the bins "
                                                  r"\[0, 8\)"):
        dsl.from_triton(histogram_whole)[(1,)](x, z, M=64, BINS=8)
    np.testing.assert_array_equal(z, 3)


def test_histogram_refuses_a_float_or_2d_block():
    @triton.jit
    def floats(x_ptr, z_ptr):
        tl.store(z_ptr + tl.arange(0, 4), tl.histogram(tl.load(x_ptr + tl.arange(0, 8)), 4))

    with pytest.raises(dsl.DSLCompileError, match="histogram.* 1-D integer block"):
        dsl.from_triton(floats)[(1,)](np.zeros(8, np.float32), np.zeros(4, np.int32))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
def test_histogram_of_narrow_integers_compiled_cpu_and_lowered(cpu_toolchain, toolchain, dtype):
    # triton-ascend's hfusion.histogram takes i32 or i64 values only ("input element type
    # must be i32 or i64"): the generated Triton widens narrower ones first
    x = np.random.default_rng(3).integers(0, 16, 1000).astype(dtype)
    differential(dsl.from_triton(histogram_rows), (x, np.zeros(8 * 16, np.int32), 1000),
                 {"BLOCK": 128, "BINS": 16}, grid=(8,))
    lowered = dsl.from_triton(histogram_rows).lower(
        dsl.tensor_spec(np.dtype(dtype).name), dsl.tensor_spec("int32"), 1000,
        target="Ascend910B4", BLOCK=1024, BINS=64)
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


def test_histogram_compiled_cpu_bit_exact(cpu_toolchain):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 16, 1000).astype(np.int64)
    differential(dsl.from_triton(histogram_rows), (x, np.zeros(8 * 16, np.int32), 1000),
                 {"BLOCK": 128, "BINS": 16}, grid=(8,))
    x32 = rng.integers(0, 32, 256).astype(np.int32)
    differential(dsl.from_triton(histogram_whole), (x32, np.zeros(32, np.int32)),
                 {"M": 256, "BINS": 32}, grid=(1,))


def test_histogram_lowers_to_hivm_within_ub(toolchain):
    lowered = dsl.from_triton(histogram_rows).lower(
        dsl.tensor_spec("int32"), dsl.tensor_spec("int32"), 1000, target="Ascend910B4",
        BLOCK=1024, BINS=256)
    assert "tl.histogram(" in lowered.triton
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


# ----------------------------------------------------------------------------- dot_scaled


@triton.jit
def scaled_matmul(a_ptr, a_scale, b_ptr, b_scale, out_ptr, M: tl.constexpr, N: tl.constexpr,
                  K: tl.constexpr, G: tl.constexpr, FMT: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
    sa = tl.load(a_scale + tl.arange(0, M)[:, None] * G + tl.arange(0, G)[None, :])
    if b_scale is not None:
        b_scale = tl.load(b_scale + tl.arange(0, N)[:, None] * G + tl.arange(0, G)[None, :])
    acc = tl.dot_scaled(a, sa, FMT, b, b_scale, FMT)
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], acc)


_FORMATS = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16}


def _scaled_inputs(fmt: str, m: int = 32, n: int = 48, k: int = 64, groups: int = 2):
    rng = np.random.default_rng(4)
    dtype = _FORMATS[fmt]
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    sa = rng.integers(-4, 5, (m, groups)).astype(np.int8)
    sb = rng.integers(-4, 5, (n, groups)).astype(np.int8)
    return a, sa, b, sb


def _scaled_reference(a, sa, b, sb):
    """float64 product of the operands scaled by 2**scale, each scaled operand first
    rounded to its dtype (as the kernel multiplies in that dtype)."""
    k = a.shape[1]
    ua = (a.astype(np.float64) * np.repeat(2.0 ** sa, k // sa.shape[1], axis=1)).astype(a.dtype)
    ub = b if sb is None else (b.astype(np.float64) * np.repeat(
        2.0 ** sb.T, k // sb.shape[1], axis=0)).astype(b.dtype)
    return ua.astype(np.float64) @ ub.astype(np.float64), ua, ub


@pytest.mark.parametrize("fmt", ["bf16", "fp16"])
@pytest.mark.parametrize("rhs_scaled", [True, False])
def test_dot_scaled_against_float64(fmt, rhs_scaled):
    a, sa, b, sb = _scaled_inputs(fmt)
    sb = sb if rhs_scaled else None
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    dsl.from_triton(scaled_matmul)[(1,)](a, sa, b, sb, out, M=32, N=48, K=64, G=2, FMT=fmt)
    want, ua, ub = _scaled_reference(a, sa, b, sb)
    bound = dot_bound(ua, ub, np.float32)
    assert (np.abs(out - want) <= bound).all()
    # the scales matter: the unscaled product is far off
    assert not np.allclose(out, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2)


def test_dot_scaled_matches_torch(torch):
    # triton-ascend's golden: the exponents become bf16 bit patterns (s + 127) << 7
    a, sa, b, sb = _scaled_inputs("bf16")
    ta, tb = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16), \
        torch.from_numpy(b.view(np.int16)).view(torch.bfloat16)
    tsa, tsb = torch.from_numpy(sa), torch.from_numpy(sb)
    out = torch.zeros((32, 48), dtype=torch.float32)
    dsl.from_triton(scaled_matmul)[(1,)](ta, tsa, tb, tsb, out, M=32, N=48, K=64, G=2,
                                         FMT="bf16")
    up_a = ((tsa.repeat_interleave(32, 1).to(torch.int16) + 127) << 7).view(torch.bfloat16)
    up_b = ((tsb.T.repeat_interleave(32, 0).to(torch.int16) + 127) << 7).view(torch.bfloat16)
    golden = torch.matmul((ta * up_a).float(), (tb * up_b).float())
    torch.testing.assert_close(out, golden, rtol=1e-5, atol=1e-4)


def test_dot_scaled_compiled_cpu(cpu_toolchain):
    a, sa, b, sb = _scaled_inputs("fp16")
    _, ua, ub = _scaled_reference(a, sa, b, sb)
    differential(dsl.from_triton(scaled_matmul),
                 (a, sa, b, sb, np.zeros((32, 48), np.float32)),
                 {"M": 32, "N": 48, "K": 64, "G": 2, "FMT": "fp16"}, grid=(1,),
                 within={"out_ptr": dot_bound(ua, ub, np.float32).reshape(-1)})


def test_dot_scaled_lowers_to_hivm_within_ub(toolchain):
    lowered = dsl.from_triton(scaled_matmul).lower(
        dsl.tensor_spec("float16"), dsl.tensor_spec("int8"), dsl.tensor_spec("float16"),
        dsl.tensor_spec("int8"), dsl.tensor_spec("float32"), target="Ascend910B4",
        M=32, N=48, K=64, G=2, FMT="fp16")
    assert "tl.dot(" in lowered.triton
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


@pytest.mark.parametrize("fmt, groups, match", [
    ("e4m3", 2, "lhs_format 'e4m3' is not supported"),
    ("fp16", 3, r"lhs_scale must be an int8 block of shape \[32, G\] with G dividing K=64"),
])
def test_dot_scaled_errors_name_the_problem(fmt, groups, match):
    a, _, b, sb = _scaled_inputs("fp16")
    sa = np.zeros((32, groups), np.int8)
    with pytest.raises(dsl.DSLCompileError, match=match):
        dsl.from_triton(scaled_matmul)[(1,)](a, sa, b, sb, np.zeros((32, 48), np.float32),
                                             M=32, N=48, K=64, G=groups, FMT=fmt)


def test_histogram_rewrite_and_leftover_hfusion_ops(cpu_toolchain):
    """The text rewrite: a histogram becomes a loop; an hfusion op it does not know is
    refused by name instead of failing in MLIR's parser."""
    linalg = ("    %3 = hfusion.histogram %2, 8 : tensor<64xi32> -> tensor<8xi32>\n"
              "    %4 = hfusion.mystery %3 : tensor<8xi32>\n")
    lowered = cpu_toolchain.lower_hfusion_histograms(linalg)
    assert "hfusion.histogram" not in lowered and "%3 = scf.for" in lowered
    with pytest.raises(cpu_toolchain.CompiledCPUError, match="hfusion.mystery"):
        cpu_toolchain.refuse_ascend_only_ops(lowered, "k")
    only_histogram = cpu_toolchain.lower_hfusion_histograms(linalg.splitlines()[0])
    cpu_toolchain.refuse_ascend_only_ops(only_histogram, "k")  # nothing left: no error
