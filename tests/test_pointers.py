"""Triton's pointers in the DSL (issue 10, parts 1 and 2): ``x_ptr + offsets``, loads,
stores and atomics through pointers, block pointers; every backend (interpreter
against NumPy, compiled-CPU bit for bit, HIVM within UB) and the bounds checks."""

from __future__ import annotations

import numpy as np
import pytest
from test_compiled_cpu import differential

import dsl


@dsl.jit
def ptr_add(x_ptr, y_ptr, out_ptr, n, BLOCK: dsl.constexpr):
    offs = dsl.program_id(0) * BLOCK + dsl.arange(0, BLOCK)
    mask = offs < n
    x = dsl.load(x_ptr + offs, mask=mask)
    y = dsl.load(y_ptr + offs, mask, 0.0)  # Triton's positional order: mask, other
    dsl.store(out_ptr + offs, x + y, mask=mask)


@dsl.jit
def ptr_scale_rows(x_ptr, out_ptr, rows, cols, sx0, sx1, so0, BLOCK_R: dsl.constexpr,
                   BLOCK_C: dsl.constexpr):
    r = dsl.program_id(0) * BLOCK_R + dsl.arange(0, BLOCK_R)
    c = dsl.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    ptrs = x_ptr + r[:, None] * sx0 + c[None, :] * sx1  # strides applied by the kernel
    x = dsl.load(ptrs, mask=mask, other=0.0)
    scale = dsl.load(x_ptr + r * sx0, mask=r < rows, other=1.0)  # column 0 of each row
    dsl.store(out_ptr + r[:, None] * so0 + c[None, :], x / scale[:, None], mask=mask)


def test_pointer_add_matches_numpy_and_writes_nothing_past_n():
    x, y = np.random.rand(1000).astype(np.float32), np.random.rand(1000).astype(np.float32)
    out = np.full(1000, -1.0, np.float32)
    ptr_add[(8,)](x, y, out, 1000, BLOCK=128)
    np.testing.assert_array_equal(out, x + y)
    ir = str(ptr_add.ir(x, y, out, 1000, BLOCK=128))
    assert "pointer=True" in ir


def test_pointer_strides_applied_by_the_kernel_on_strided_views():
    base = np.random.rand(40, 24).astype(np.float32) + 0.5
    for x in (base, base.T, base[::-1], base[:, ::2]):  # contiguous, transposed, negative, gapped
        rows, cols = x.shape
        out = np.zeros((rows, cols), np.float32)
        st = [s // x.itemsize for s in x.strides]
        ptr_scale_rows[(-(-rows // 8),)](
            x, out, rows, cols, st[0], st[1], cols, BLOCK_R=8, BLOCK_C=64)
        np.testing.assert_allclose(out, x / x[:, :1], rtol=1e-6)


def test_pointer_out_of_bounds_names_argument_program_lane_and_line_and_writes_nothing():
    x, y = np.ones(1000, np.float32), np.ones(1000, np.float32)
    out = np.full(1000, 7.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError) as info:
        ptr_add[(9,)](x, y, out, 1100, BLOCK=128)  # n larger than the tensors
    message = str(info.value)
    assert "x_ptr" in message and "pointer offset 1000" in message
    assert "program id (7, 0, 0)" in message and "lane 104" in message
    assert "dsl.load(x_ptr + offs, mask=mask)" in message
    assert (out == 7.0).all()


def test_negative_pointer_offset_is_out_of_bounds():
    @dsl.jit
    def before_start(x_ptr, out_ptr):
        offs = dsl.arange(0, 4) - 1
        dsl.store(out_ptr + dsl.arange(0, 4), dsl.load(x_ptr + offs))

    with pytest.raises(dsl.OutOfBoundsError, match="pointer offset -1 is outside tensor 'x_ptr'"):
        before_start(np.ones(4, np.float32), np.zeros(4, np.float32))


@dsl.jit
def pointer_tricks(x_ptr, out_ptr, n, BLOCK: dsl.constexpr):
    offs = dsl.arange(0, BLOCK)
    first = x_ptr + offs
    last = x_ptr + (n - 1) - offs  # reversed through pointer arithmetic
    pick = dsl.where(offs % 2 == 0, first, last)
    distance = last - first  # pointer difference: an integer
    ahead = first < last  # pointer comparison
    v = dsl.load(pick, mask=offs < n) + distance.to(dsl.float32) * 0.0
    dsl.store(out_ptr + offs, dsl.where(ahead, v, -v), mask=offs < n)


def test_pointer_where_difference_and_comparison():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    pointer_tricks(x, out, 16, BLOCK=16)
    i = np.arange(16)
    pick = np.where(i % 2 == 0, x[i], x[15 - i])
    np.testing.assert_array_equal(out, np.where(i < 15 - i, pick, -pick))


@dsl.jit
def ptr_histogram(x_ptr, hist_ptr, n, BINS: dsl.constexpr, BLOCK: dsl.constexpr):
    offs = dsl.program_id(0) * BLOCK + dsl.arange(0, BLOCK)
    mask = offs < n
    v = dsl.load(x_ptr + offs, mask=mask, other=0)
    dsl.atomic_add(hist_ptr + v % BINS, 1, mask=mask)


def test_atomics_through_pointers():
    x = np.random.randint(0, 1000, 5000).astype(np.int32)
    hist = np.zeros(16, np.int32)
    ptr_histogram[(-(-5000 // 256),)](x, hist, 5000, BINS=16, BLOCK=256)
    np.testing.assert_array_equal(hist, np.bincount(x % 16, minlength=16))


@dsl.jit
def mixed_forms(x, y_ptr, out, n, BLOCK: dsl.constexpr):
    idx = dsl.program_id(0) * BLOCK + dsl.arange(0, BLOCK)
    m = idx < n
    a = dsl.load(x, idx, m)  # logical index
    b = dsl.load(y_ptr + idx, mask=m)  # pointer
    c = dsl.load(out + idx, mask=m)  # both forms on one (contiguous) tensor
    dsl.store(out, idx, a + b + c, m)


def test_logical_and_pointer_forms_mix():
    x, y = np.random.rand(300).astype(np.float32), np.random.rand(300).astype(np.float32)
    out = np.ones(300, np.float32)
    mixed_forms[(3,)](x, y, out, 300, BLOCK=128)
    np.testing.assert_allclose(out, x + y + 1, rtol=1e-6)


def test_both_forms_on_a_strided_tensor_are_refused():
    x, y = np.random.rand(300).astype(np.float32), np.random.rand(300).astype(np.float32)
    out = np.ones(600, np.float32)[::2]
    with pytest.raises(dsl.DSLCompileError, match="both through pointers and by logical index"):
        mixed_forms[(3,)](x, y, out, 300, BLOCK=128)


@pytest.mark.parametrize("source, message", [
    ("v = dsl.load(x_ptr * 2)", "not defined on pointers"),
    ("v = dsl.load(x_ptr + 0.5)", "integer offset"),
    ("v = dsl.load(x_ptr + dsl.arange(0, 4)) + (x_ptr < out_ptr)", "different arguments"),
    ("v = dsl.load(x_ptr + dsl.arange(0, 4), boundary_check=(0,))", "needs a block pointer"),
])
def test_pointer_misuse_is_a_compile_error_at_the_line(kernel_from_source, source, message):
    bad, path = kernel_from_source("bad", "import dsl\n\n@dsl.jit\ndef bad(x_ptr, out_ptr):\n"
                                   "    " + source +
                                   "\n    dsl.store(out_ptr + dsl.arange(0, 4), v)\n")
    with pytest.raises(dsl.DSLCompileError, match=message) as info:
        bad(np.zeros(4, np.float32), np.zeros(4, np.float32))
    assert f"{path}:5" in str(info.value)


# ----------------------------------------------------------------------------- block pointers


@dsl.jit
def block_copy(x_ptr, out_ptr, M, N, sxm, sxn, som, son, BM: dsl.constexpr, BN: dsl.constexpr,
               PAD: dsl.constexpr):
    pm, pn = dsl.program_id(0), dsl.program_id(1)
    src = dsl.make_block_ptr(x_ptr, shape=(M, N), strides=(sxm, sxn), offsets=(pm * BM, pn * BN),
                             block_shape=(BM, BN), order=(1, 0))
    dst = dsl.make_block_ptr(out_ptr, (M + 2, N), (som, son), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tile = dsl.load(src, boundary_check=(0, 1), padding_option=PAD)
    dsl.store(dst, tile, boundary_check=(0, 1))


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_block_pointer_load_pads_outside_and_store_clips(pad):
    x = np.random.rand(37, 50).astype(np.float32)
    out = np.full((39, 50), 5.0, np.float32)  # two rows more than x: padded rows land there
    block_copy[(3, 4)](x, out, 37, 50, 50, 1, 50, 1, BM=16, BN=16, PAD=pad)
    np.testing.assert_array_equal(out[:37], x)
    fill = 0.0 if pad == "zero" else np.nan
    np.testing.assert_array_equal(out[37:], np.full((2, 50), fill, np.float32))


@dsl.jit
def block_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: dsl.constexpr, BN: dsl.constexpr,
                 BK: dsl.constexpr):
    pm, pn = dsl.program_id(0), dsl.program_id(1)
    a_blk = dsl.make_block_ptr(a_ptr, (M, K), (K, 1), (pm * BM, 0), (BM, BK), (1, 0))
    b_blk = dsl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, pn * BN), (BK, BN), (1, 0))
    acc = dsl.zeros((BM, BN), dsl.float32)
    for _ in range(0, dsl.cdiv(K, BK)):
        a = dsl.load(a_blk, boundary_check=(0, 1))
        b = dsl.load(b_blk, boundary_check=(0, 1))
        acc = dsl.dot(a, b, acc)
        a_blk = dsl.advance(a_blk, (0, BK))
        b_blk = dsl.advance(b_blk, (BK, 0))
    c_blk = dsl.make_block_ptr(c_ptr, (M, N), (N, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    dsl.store(c_blk, acc, boundary_check=(0, 1))


def test_block_pointer_matmul_with_advance():
    a = np.random.rand(40, 70).astype(np.float32)
    b = np.random.rand(70, 24).astype(np.float32)
    c = np.zeros((40, 24), np.float32)
    block_matmul[(3, 2)](a, b, c, 40, 24, 70, BM=16, BN=16, BK=16)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_block_pointer_without_boundary_check_is_bounds_checked():
    x = np.random.rand(20, 20).astype(np.float32)
    out = np.zeros((20, 20), np.float32)

    @dsl.jit
    def unchecked(x_ptr, out_ptr, M, N):
        src = dsl.make_block_ptr(x_ptr, (M, N), (N, 1), (16, 0), (16, 16), (1, 0))
        dst = dsl.make_block_ptr(out_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))
        dsl.store(dst, dsl.load(src))

    with pytest.raises(dsl.OutOfBoundsError, match="x_ptr"):
        unchecked(x, out, 20, 20)
    assert not out.any()


# ----------------------------------------------------------------------------- tensor descriptors


@dsl.jit
def descriptor_copy(x_ptr, out_ptr, M, N, BM: dsl.constexpr, BN: dsl.constexpr):
    src = dsl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = dsl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BM, BN])
    offsets = [dsl.program_id(0) * BM, dsl.program_id(1) * BN]
    tile = src.load(offsets)
    dst.store(offsets, tile * 2.0)
    dsl.store_tensor_descriptor(dst, offsets, dsl.load_tensor_descriptor(src, offsets) + tile)


def test_tensor_descriptor_blocks_read_zero_outside_and_write_only_inside():
    x = np.random.rand(37, 50).astype(np.float32)
    out = np.full((37, 50), 5.0, np.float32)
    descriptor_copy[(3, 4)](x, out, 37, 50, BM=16, BN=16)  # edge blocks hang over
    np.testing.assert_array_equal(out, x + x)

    @dsl.jit
    def shifted_sum(x_ptr, out_ptr, M, N, BM: dsl.constexpr, BN: dsl.constexpr):
        # a block at (-1, -1) hangs over the top-left corner: its outside reads 0
        src = dsl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
        dst = dsl.make_tensor_descriptor(out_ptr, [BM, BN], [BN, 1], [BM, BN])
        dst.store([0, 0], src.load([-1, -1]))

    out = np.full((4, 4), 7.0, np.float32)
    shifted_sum[(1,)](x, out, 37, 50, BM=4, BN=4)
    want = np.zeros((4, 4), np.float32)
    want[1:, 1:] = x[:3, :3]
    np.testing.assert_array_equal(out, want)


def test_tensor_descriptor_misuse_is_a_compile_error():
    @dsl.jit
    def not_a_descriptor(x_ptr):
        dsl.load_tensor_descriptor(x_ptr, [0])

    with pytest.raises(dsl.DSLCompileError, match="expected a tensor descriptor"):
        not_a_descriptor(np.zeros(4, np.float32))

    @dsl.jit
    def wrong_rank(x_ptr):
        desc = dsl.make_tensor_descriptor(x_ptr, [2, 2], [2, 1], [2, 2])
        desc.store([0], dsl.zeros((2, 2), dsl.float32))

    with pytest.raises(dsl.DSLCompileError,
                       match=r"tensor descriptor access\(\) offsets has 1 entries for a 2-d block"):
        wrong_rank(np.zeros(4, np.float32))


# ----------------------------------------------------------------------------- index_select_simd


@dsl.jit
def select_rows(src, idx, out, R, C, L: dsl.constexpr, BC: dsl.constexpr):
    rows = dsl.load(idx, dsl.arange(0, L))
    tile = dsl.index_select_simd(src, 0, rows, (R, C), (-1, 0), (-1, BC))
    dsl.store(out, dsl.arange(0, L)[:, None] * BC + dsl.arange(0, BC)[None, :], tile)


def test_index_select_simd_picks_rows_and_reads_zero_past_the_columns():
    src = np.random.rand(50, 37).astype(np.float32)
    idx = np.array([3, 49, 0, 3], np.int32)
    out = np.full((4, 64), 9.0, np.float32)
    select_rows[(1,)](src, idx, out, 50, 37, L=4, BC=64)
    want = np.zeros((4, 64), np.float32)
    want[:, :37] = src[idx]
    np.testing.assert_array_equal(out, want)


def test_index_select_simd_along_a_middle_dimension():
    @dsl.jit
    def select_mid(src, idx, out, A, B, C, L: dsl.constexpr):
        tile = dsl.index_select_simd(src, 1, dsl.load(idx, dsl.arange(0, L)), (A, B, C),
                                     (1, -1, 2), (2, -1, 4))
        dsl.store(out, dsl.arange(0, 2)[:, None, None] * (L * 4)
                  + dsl.arange(0, L)[None, :, None] * 4 + dsl.arange(0, 4)[None, None, :], tile)

    src = np.random.rand(3, 10, 5).astype(np.float32)
    idx = np.array([9, 0, 4, 4], np.int32)
    out = np.full((2, 4, 4), 9.0, np.float32)
    select_mid[(1,)](src, idx, out, 3, 10, 5, L=4)
    want = np.zeros((2, 4, 4), np.float32)
    want[:, :, :3] = src[1:3][:, idx][:, :, 2:5]  # columns 2..5 of 5: the last one cut
    np.testing.assert_array_equal(out, want)


def test_index_select_simd_checks_the_indices_the_device_does_not():
    src = np.random.rand(50, 37).astype(np.float32)
    out = np.full((4, 64), 9.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="'src'"):
        select_rows[(1,)](src, np.array([3, 50, 0, 1], np.int32), out, 50, 37, L=4, BC=64)
    assert np.all(out == 9.0)


@pytest.mark.parametrize("call, message", [
    ("dsl.index_select_simd(src, 1, i, (4, 4), (0, -1), (4, -1))", "not the trailing"),
    ("dsl.index_select_simd(src, 0, i, (4, 4), (-1, 0), (4, 4))", "-1 at dim 0"),
    ("dsl.index_select_simd(src, 0, i, (4, 4), (-1,), (-1, 4))", "src_offset has 1 entries"),
])
def test_index_select_simd_arguments_are_checked(kernel_from_source, call, message):
    bad, _ = kernel_from_source("bad", "import dsl\n\n@dsl.jit\ndef bad(src, out):\n"
                                "    i = dsl.arange(0, 4)\n"
                                "    at = dsl.arange(0, 4)[:, None] * 4 + dsl.arange(0, 4)[None, :]\n"
                                f"    dsl.store(out, at, {call})\n")
    with pytest.raises(dsl.DSLCompileError, match=message):
        bad[(1,)](np.zeros(16, np.float32), np.zeros(16, np.float32))


# ----------------------------------------------------------------------------- index_select


def embedding_gather_reference(table, idx, bound, width, offsets, numels):
    """``tl.index_select`` as triton-ascend's A5 library computes it, element by element
    (0 where the device writes nothing)."""
    flat, row_length = table.reshape(-1), numels[-1]
    out = np.zeros(idx.shape + (width,), table.dtype)
    for p in np.ndindex(*idx.shape):
        if any(offsets[d] + p[d] >= numels[d] for d in range(idx.ndim)):
            continue
        row = int(idx[p]) + (bound if idx[p] < 0 else 0)
        if 0 <= row < bound:
            for k in range(width):
                if offsets[-1] + k < row_length:
                    out[p + (k,)] = flat[row * row_length + offsets[-1] + k]
    return out


@dsl.jit
def embedding_rows(table, ids, out, n_ids, start, C, ROWS: dsl.constexpr, L: dsl.constexpr,
                   W: dsl.constexpr, VOCAB: dsl.constexpr):
    r = dsl.arange(0, ROWS)[:, None]
    i = dsl.arange(0, L)[None, :]
    idx = dsl.load(ids, r * L + i)
    rows = dsl.index_select(table, idx, VOCAB, W, (0, start, 0), (ROWS, n_ids, C))
    dsl.store(out, (r * L + i)[:, :, None] * W + dsl.arange(0, W)[None, None, :], rows)


@pytest.mark.parametrize("width, columns", [(16, 16), (8, 5)])
def test_index_select_gathers_rows_as_the_device_library(width, columns):
    """triton-ascend 3.2's ``tl.index_select`` (an embedding gather) was refused; indices
    count from ``bound`` when negative, and what the device leaves unwritten (indices
    outside [0, bound), positions past ``numels``, columns past the row) reads 0."""
    vocab, rows, per_row = 40, 2, 8
    table = np.random.default_rng(1).standard_normal((vocab, columns)).astype(np.float32)
    ids = np.random.default_rng(2).integers(-vocab - 3, vocab + 3, (rows, per_row)).astype(
        np.int32)
    out = np.full((rows, per_row, width), 9.0, np.float32)
    embedding_rows[(1,)](table, ids, out, 6, 1, columns, ROWS=rows, L=per_row, W=width,
                         VOCAB=vocab)
    want = embedding_gather_reference(table, ids, vocab, width, (0, 1, 0), (rows, 6, columns))
    np.testing.assert_array_equal(out, want)
    assert (want != 0).any() and (ids < 0).any() and (np.abs(ids) >= vocab).any()


def test_index_select_compiled_cpu_and_lowered(cpu_toolchain):
    table = np.random.default_rng(3).standard_normal((40, 16)).astype(np.float32)
    ids = np.random.default_rng(4).integers(-40, 45, (2, 8)).astype(np.int32)
    args = (table, ids, np.zeros((2, 8, 16), np.float32), 8, 0, 16)
    kwargs = {"ROWS": 2, "L": 8, "W": 16, "VOCAB": 40}
    differential(embedding_rows, args, kwargs, grid=(1,))
    lowered = embedding_rows.lower(*args, target="Ascend910B4", **kwargs)
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


@pytest.mark.parametrize("call, message", [
    ("dsl.index_select(table, i, 4, 4, (0, 0), (4, 4))", "idx must be a 1-D or 2-D integer"),
    ("dsl.index_select(table, j, 0, 4, (0, 0), (4, 4))", "bound must be a positive constexpr"),
    ("dsl.index_select(table, j, 4, 4, (0,), (4, 4))", "offsets has 1 entries"),
    ("dsl.index_select(ints, j, 4, 4, (0, 0), (4, 4))", "floating-point elements"),
])
def test_index_select_arguments_are_checked(kernel_from_source, call, message):
    bad, _ = kernel_from_source("bad", "import dsl\n\n@dsl.jit\ndef bad(table, ints, out):\n"
                                "    i = dsl.arange(0, 4) * 1.0\n"
                                "    j = dsl.arange(0, 4)\n"
                                "    at = dsl.arange(0, 4)[:, None] * 4 + dsl.arange(0, 4)[None, :]\n"
                                f"    dsl.store(out, at, {call})\n")
    with pytest.raises(dsl.DSLCompileError, match=message):
        bad[(1,)](np.zeros(16, np.float32), np.zeros(16, np.int32), np.zeros(16, np.float32))


# ----------------------------------------------------------------------------- other backends


def test_pointer_kernels_compiled_cpu_bit_exact(cpu_toolchain):
    x, y = np.random.rand(1000).astype(np.float32), np.random.rand(1000).astype(np.float32)
    differential(ptr_add, (x, y, np.zeros(1000, np.float32), 1000), {"BLOCK": 128}, grid=(8,))
    base = np.random.rand(40, 24).astype(np.float32) + 0.5
    xt = base.T
    differential(ptr_scale_rows, (xt, np.zeros((24, 40), np.float32), 24, 40, 1, 24, 40),
                 {"BLOCK_R": 8, "BLOCK_C": 64}, grid=(3,))
    differential(block_copy, (np.random.rand(37, 50).astype(np.float32),
                              np.zeros((39, 50), np.float32), 37, 50, 50, 1, 50, 1),
                 {"BM": 16, "BN": 16, "PAD": "zero"}, grid=(3, 4))
    differential(descriptor_copy, (np.random.rand(37, 50).astype(np.float32),
                                   np.zeros((37, 50), np.float32), 37, 50),
                 {"BM": 16, "BN": 16}, grid=(3, 4))
    differential(select_rows, (np.random.rand(50, 37).astype(np.float32),
                               np.array([3, 49, 0, 3], np.int32), np.zeros((4, 64), np.float32),
                               50, 37), {"L": 4, "BC": 64}, grid=(1,))
    # (atomics: triton-ascend 3.2.0's CPU route refuses them, tests/test_language.py)


@pytest.mark.parametrize("kernel, args, kwargs", [
    (ptr_add, ("float32", "float32", "float32", 1 << 20), {"BLOCK": 1024}),
    (ptr_scale_rows, ("float32", "float32", 512, 512, 512, 1, 512), {"BLOCK_R": 8,
                                                                     "BLOCK_C": 512}),
    (block_copy, ("float16", "float16", 512, 512, 512, 1, 512, 1), {"BM": 64, "BN": 64,
                                                                    "PAD": "zero"}),
    (block_matmul, ("float16", "float16", "float32", 512, 512, 512), {"BM": 64, "BN": 64,
                                                                      "BK": 32}),
    (descriptor_copy, ("float32", "float32", 512, 512), {"BM": 64, "BN": 64}),
    (select_rows, ("float32", "int32", "float32", 4096, 240), {"L": 64, "BC": 256}),
], ids=["add", "strided-rows", "block-copy", "block-matmul", "descriptor-copy",
        "index-select"])
def test_pointer_kernels_lower_to_hivm_within_ub(toolchain, kernel, args, kwargs):
    specs = [dsl.tensor_spec(a) if isinstance(a, str) else a for a in args]
    lowered = kernel.lower(*specs, target="Ascend910B4", **kwargs)
    assert lowered.hivm
    assert lowered.ub_measured_bytes <= lowered.ub_capacity_bytes
    if "tl.dot(" not in lowered.triton:  # (a dot's tiles live in the Cube unit's L1/L0)
        assert lowered.ub_measured_bytes > 0
    assert "_ptr +" in lowered.triton  # plain pointer arithmetic in the generated Triton


@dsl.jit
def row_sums(x_ptr, out_ptr, ncols, BLOCK: dsl.constexpr):
    r = dsl.program_id(0)
    c = dsl.arange(0, BLOCK)
    v = dsl.load(x_ptr + r * ncols + c, mask=c < ncols, other=0.0)
    dsl.store(out_ptr + r, dsl.sum(v, axis=0))


def test_a_pointer_reaches_the_rest_of_its_allocation_and_no_further(torch):
    m = torch.rand(6, 10)
    out = torch.zeros(6)
    row_sums[(6,)](m[0], out, 10, BLOCK=16)  # a row view: later rows through its pointer
    torch.testing.assert_close(out, m.sum(1))
    a = np.random.rand(6, 10).astype(np.float32)
    o = np.zeros(6, np.float32)
    row_sums[(6,)](a[0], o, 10, BLOCK=16)
    np.testing.assert_allclose(o, a.sum(1), rtol=1e-6)
    with pytest.raises(dsl.OutOfBoundsError, match="pointer offset 60 is outside tensor 'x_ptr'"):
        row_sums[(7,)](a[0], np.zeros(7, np.float32), 10, BLOCK=16)


@dsl.jit
def shared_row_store(x_ptr, out_ptr, n, BLOCK: dsl.constexpr):
    xindex = dsl.program_id(0) * BLOCK + dsl.arange(0, BLOCK)
    yindex = dsl.arange(0, BLOCK)  # the same elements in every program
    xmask = xindex < n
    dsl.store(out_ptr + yindex, dsl.load(x_ptr + xindex, xmask), xmask)


def test_programs_storing_one_row_is_a_data_race_not_a_crash():
    # (a per-program mask over an index shared by all programs once crashed the checker)
    # (the programs store different values: identical ones would not race)
    x, out = np.arange(64, dtype=np.float32), np.zeros(32, np.float32)
    with pytest.raises(dsl.DataRaceError, match="program id \\(0, 0, 0\\) lane 0 and program "
                                                "id \\(1, 0, 0\\) lane 0"):
        shared_row_store[(2,)](x, out, 64, BLOCK=32)
    assert not out.any()


# ----------------------------------------------------------------------------- pointers under a runtime if


@dsl.jit
def advance_after_the_first(x_ptr, y_ptr, out_ptr, n, BLOCK: dsl.constexpr):
    """Block and plain pointers moved under a runtime ``if`` inside a loop (found by
    triton-ascend's test_if_advance: the moves were dropped, a silent wrong answer)."""
    block = dsl.make_block_ptr(x_ptr, shape=(n,), strides=(1,), offsets=(0,),
                               block_shape=(BLOCK,), order=(0,))
    plain = y_ptr + dsl.arange(0, BLOCK)
    acc = dsl.zeros((BLOCK,), dsl.float32)
    for i in range(0, n // BLOCK):
        if i > 0:
            block = dsl.advance(block, (BLOCK,))
            plain = plain + BLOCK
        acc += dsl.load(block) * 1000.0 + dsl.load(plain)
    dsl.store(out_ptr + dsl.arange(0, BLOCK), acc)


def test_pointers_moved_under_a_runtime_if_keep_their_moves():
    x = np.arange(32, dtype=np.float32)
    y = np.arange(32, dtype=np.float32) * 0.5
    out = np.zeros(8, np.float32)
    advance_after_the_first(x, y, out, 32, BLOCK=8)
    np.testing.assert_array_equal(out, x.reshape(4, 8).sum(0) * 1000 + y.reshape(4, 8).sum(0))


@pytest.mark.parametrize("body, message", [
    ("    if n > 2:\n        p = out_ptr\n", "'p' is a pointer of shape \\[\\] in one branch "
     "and of shape \\[4\\] in the other"),
    ("    if n > 2:\n        p = (p, p)\n", "'p' is a tuple of 2 and a pointer in the two "
     "branches of this 'if'"),
    ("    for i in range(n):\n        p = out_ptr\n", "loop-carried variable 'p' is a pointer "
     "into 'x_ptr' and a pointer into 'out_ptr' before and after an iteration"),
])
def test_a_pointer_that_cannot_flow_out_of_an_if_or_a_loop_is_an_error(kernel_from_source, body,
                                                                       message):
    flow, _ = kernel_from_source("flow", "import dsl\n\n@dsl.jit\ndef flow(x_ptr, out_ptr, n):\n"
                                 "    p = x_ptr + dsl.arange(0, 4)\n" + body +
                                 "    dsl.store(out_ptr + dsl.arange(0, 4), dsl.load(p))\n")
    with pytest.raises(dsl.DSLCompileError, match=message):
        flow(np.zeros(4, np.float32), np.zeros(4, np.float32), 4)


@dsl.jit
def tuple_inside_an_if(x_ptr, out_ptr, n):
    i = dsl.arange(0, 4)
    v = dsl.load(x_ptr + i)
    if n > 2:
        pair = (v, v)  # a branch-local tuple nobody uses afterwards
        v = pair[0] + pair[1]
    dsl.store(out_ptr + i, v)


def test_a_branch_local_tuple_nobody_reads_afterwards_is_fine():
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    tuple_inside_an_if(x, out, 4)
    np.testing.assert_array_equal(out, x * 2)


@dsl.jit
def move_in_one_branch(x_ptr, out_ptr, flag, step):
    """``x_ptr`` moves by an int64 amount in one branch only: still one pointer."""
    if flag > 0:
        x_ptr += step.to(dsl.int64)
    dsl.store(out_ptr + dsl.arange(0, 4), dsl.load(x_ptr + dsl.arange(0, 4)))


@pytest.mark.parametrize("flag", [0, 1])
def test_a_pointer_moved_by_a_wider_offset_in_one_branch_merges(flag):
    x, out = np.arange(16, dtype=np.float32), np.zeros(4, np.float32)
    move_in_one_branch(x, out, flag, 8)
    np.testing.assert_array_equal(out, x[8 * flag:8 * flag + 4])


@dsl.jit
def remade_each_iteration(x_ptr, out_ptr, n, BLOCK: dsl.constexpr):
    """A block pointer made again in every iteration, from runtime values computed
    anew each time, is still one loop-carried pointer."""
    bp = dsl.make_block_ptr(x_ptr, shape=(n * 1,), strides=(1,), offsets=(0,),
                            block_shape=(BLOCK,), order=(0,))
    acc = dsl.zeros((BLOCK,), dsl.float32)
    for i in range(0, n // BLOCK):
        acc += dsl.load(bp)
        bp = dsl.make_block_ptr(x_ptr, shape=(n * 1,), strides=(1,), offsets=((i + 1) * BLOCK,),
                                block_shape=(BLOCK,), order=(0,))
    dsl.store(out_ptr + dsl.arange(0, BLOCK), acc)


def test_a_block_pointer_remade_in_each_iteration_carries():
    x, out = np.arange(32, dtype=np.float32), np.zeros(8, np.float32)
    remade_each_iteration(x, out, 32, BLOCK=8)
    np.testing.assert_array_equal(out, x.reshape(4, 8).sum(0))


@dsl.jit
def cat_three(out_ptr, a_ptr, b_ptr, c_ptr, n, BLOCK: dsl.constexpr):
    """FlagGems' cat: one pointer name bound to the program's input in an if/elif."""
    pid, part = dsl.program_id(0), dsl.program_id(1)
    if part == 0:
        src = a_ptr
    elif part == 1:
        src = b_ptr + 0  # a pointer, not the bare argument, in one branch
    else:
        src = c_ptr
    src += pid * BLOCK  # moved after the if: one offset for every argument
    offs = dsl.arange(0, BLOCK)
    mask = pid * BLOCK + offs < n
    x = dsl.load(src + offs, mask=mask, other=-1.0)
    dsl.store(out_ptr + part * n + pid * BLOCK + offs, x * 2.0, mask=mask)


@dsl.jit
def add_into_own_output(a_ptr, b_ptr, x_ptr, n, BLOCK: dsl.constexpr):
    """Stores, atomics and a loop through a pointer chosen per program."""
    pid = dsl.program_id(0)
    dst = a_ptr
    if pid == 1:
        dst = b_ptr
    offs = dsl.arange(0, BLOCK)
    for chunk in range(0, dsl.cdiv(n, BLOCK)):
        mask = chunk * BLOCK + offs < n
        x = dsl.load(x_ptr + pid * n + chunk * BLOCK + offs, mask=mask)
        dsl.store(dst + offs, x, mask=mask)
        old = dsl.atomic_add(dst + offs, 1.0, mask=mask)  # old: the stored x
        dsl.store(x_ptr + pid * n + chunk * BLOCK + offs, old * 10.0, mask=mask)
        dst += BLOCK


def test_one_pointer_name_bound_to_different_arguments_in_an_if_reads_the_chosen_one():
    n = 37
    a, b, c = (np.random.rand(n).astype(np.float32) + k for k in (0, 10, 100))
    out = np.zeros(3 * n, np.float32)
    cat_three[(3, 3)](out, a, b, c, n, BLOCK=16)
    np.testing.assert_array_equal(out, np.concatenate([a, b, c]) * 2)


def test_stores_and_atomics_through_a_chosen_pointer_write_only_the_chosen_argument():
    n = 20
    x = np.random.rand(2 * n).astype(np.float32)
    a, b, xs = np.zeros(n, np.float32), np.zeros(n, np.float32), x.copy()
    add_into_own_output[(2,)](a, b, xs, n, BLOCK=8)
    np.testing.assert_array_equal(a, x[:n] + 1)
    np.testing.assert_array_equal(b, x[n:] + 1)
    np.testing.assert_array_equal(xs, x * 10)


def test_a_chosen_pointer_past_its_argument_names_that_argument_and_writes_nothing():
    a, b, c = np.ones(40, np.float32), np.ones(20, np.float32), np.ones(40, np.float32)
    out = np.full(120, 7.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError) as info:
        cat_three[(3, 3)](out, a, b, c, 40, BLOCK=16)  # b holds 20 elements, not 40
    message = str(info.value)
    assert "'b_ptr'" in message and "pointer offset 20" in message, message
    assert "program id (1, 1, 0)" in message and "lane 4" in message, message
    assert (out == 7.0).all()


@dsl.jit
def pick_rows(a_ptr, b_ptr, out_ptr, na, nb, BLOCK: dsl.constexpr):
    """A pointer chosen by a scalar where() (FlagGems' cat and vstack), read as a 1-D
    run and as a 2-D gather."""
    pid = dsl.program_id(0)
    src = dsl.where(pid == 0, a_ptr, b_ptr)
    n = dsl.where(pid == 0, na, nb)
    offs = dsl.arange(0, BLOCK)
    x = dsl.load(src + offs, mask=offs < n, other=-1.0)
    square = offs[:, None] * 2 + offs[None, :]
    rows = dsl.load(src + square, mask=square < n, other=-2.0)
    dsl.store(out_ptr + pid * BLOCK + offs, x + dsl.sum(rows, 1))


def _pick_rows_reference(x: np.ndarray) -> np.ndarray:
    lanes, square = np.arange(8), np.arange(8)[:, None] * 2 + np.arange(8)[None, :]
    padded = np.concatenate([x, np.zeros(32, np.float32)])
    return (np.where(lanes < x.size, padded[lanes], -1.0)
            + np.where(square < x.size, padded[square], -2.0).sum(1)).astype(np.float32)


def test_an_empty_argument_that_no_lane_reads_is_not_an_error():
    # b is empty and every lane of the program that chose it is masked off: they are
    # other=, as in Triton (was a NumPy IndexError from the gather)
    a, empty = np.arange(5, dtype=np.float32) + 1, np.empty(0, np.float32)
    out = np.zeros(16, np.float32)
    pick_rows[(2,)](a, empty, out, 5, 0, BLOCK=8)
    np.testing.assert_array_equal(out, np.concatenate([_pick_rows_reference(a),
                                                       _pick_rows_reference(empty)]))
    pick_rows[(2,)](empty, a, out, 0, 5, BLOCK=8)
    np.testing.assert_array_equal(out, np.concatenate([_pick_rows_reference(empty),
                                                       _pick_rows_reference(a)]))


def test_an_empty_argument_compiled_cpu_bit_exact(cpu_toolchain):
    differential(pick_rows, (np.arange(5, dtype=np.float32), np.empty(0, np.float32),
                             np.zeros(16, np.float32), 5, 0), {"BLOCK": 8}, grid=(2,))


@dsl.jit
def block_others(x_ptr, out_ptr, n, s, BLOCK: dsl.constexpr):
    """Masked loads whose ``other`` is a block: per lane, per row, the mask itself,
    and (for comparison) a scalar; TritonBench's sum kernels pass ``other=mask``."""
    offs = dsl.arange(0, BLOCK)
    m = offs < n
    square = offs[:, None] * 3 + offs[None, :]
    inside = square < n
    per_lane = dsl.load(x_ptr + offs, mask=m, other=m)
    per_row = dsl.load(x_ptr + square, mask=inside, other=offs[:, None] * 0.5)
    both = dsl.load(x_ptr + square, mask=inside, other=square * 1.0 + s)
    scalar = dsl.load(x_ptr + square, mask=inside, other=s)
    dsl.store(out_ptr + offs, per_lane + dsl.sum(per_row + both * 2.0 + scalar * 4.0, 1))


def test_a_block_other_fills_each_masked_off_lane_with_its_own_value():
    x = np.random.rand(20).astype(np.float32)
    out = np.zeros(8, np.float32)
    block_others[(1,)](x, out, 13, 0.25, BLOCK=8)
    lanes = np.arange(8)
    square = lanes[:, None] * 3 + lanes[None, :]
    inside = square < 13
    at = np.where(inside, x[np.minimum(square, 12)], 0)
    per_row = np.where(inside, at, np.float32(0.5) * lanes[:, None]).astype(np.float32)
    both = np.where(inside, at, square.astype(np.float32) + np.float32(0.25))
    scalar = np.where(inside, at, np.float32(0.25))
    rows = (per_row + both * np.float32(2) + scalar * np.float32(4)).astype(np.float32)
    expected = np.where(lanes < 13, x[np.minimum(lanes, 12)], 1.0).astype(np.float32)
    np.testing.assert_allclose(out, expected + rows.sum(1), rtol=1e-6)


def test_a_block_other_compiled_cpu_and_lowered(cpu_toolchain, toolchain):
    # triton-adapter-opt 3.2.0 takes only a splat as a load's other: a block other is
    # selected after the load (it crashed the tool: "other value used in masked load
    # produced by unsupported instruction")
    differential(block_others, (np.random.rand(20).astype(np.float32),
                                np.zeros(8, np.float32), 13, 0.25), {"BLOCK": 8}, grid=(1,))
    f32 = dsl.tensor_spec("float32")
    lowered = block_others.lower(f32, f32, 1000, 0.5, BLOCK=32, target="Ascend910B4")
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


@dsl.jit
def rows_of_one_row(x, out, n, rows, R: dsl.constexpr, C: dsl.constexpr, MASK: dsl.constexpr):
    """Every row of the block reads the same row of x: offsets with a zero stride
    (``x + r * 0 + c``), unmasked, masked along the columns, and masked along both."""
    r = dsl.arange(0, R)[:, None]
    c = dsl.arange(0, C)[None, :]
    if MASK == 0:
        v = dsl.load(x + r * 0 + c)
    elif MASK == 1:
        v = dsl.load(x + r * 0 + c, mask=c < n, other=-1.0)
    else:
        v = dsl.load(x + r * 0 + c, mask=(c < n) & (r < rows), other=-2.0)
    dsl.store(out + r * C + c, v)


@pytest.mark.parametrize("mask", [0, 1, 2])
def test_offsets_with_a_zero_stride_in_every_backend(cpu_toolchain, toolchain, mask):
    # triton-ascend 3.2.0's pointer analysis asserted "strides must not be zero" on them
    # (compiled-CPU and HIVM alike): the code generator loads one row and broadcasts it,
    # or, under a mask that varies along the rows, guards the offsets
    x = np.arange(8, dtype=np.float32) + 1
    out = np.zeros(64, np.float32)
    rows_of_one_row[(1,)](x, out, 5, 3, R=8, C=8, MASK=mask)
    r, c = np.arange(8)[:, None], np.arange(8)[None, :]
    inside = [np.ones((8, 8), bool), c < 5, (c < 5) & (r < 3)][mask]
    expected = np.where(inside, np.broadcast_to(x, (8, 8)), [0.0, -1.0, -2.0][mask])
    np.testing.assert_array_equal(out.reshape(8, 8), expected)
    differential(rows_of_one_row, (x, np.zeros(64, np.float32), 5, 3),
                 {"R": 8, "C": 8, "MASK": mask}, grid=(1,))
    f32 = dsl.tensor_spec("float32")
    lowered = rows_of_one_row.lower(f32, f32, 100, 50, R=16, C=64, MASK=mask,
                                    target="Ascend910B4")
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


@dsl.jit
def tail_columns_of_gathered_rows(table, rows, out, WIDTH: dsl.constexpr,
                                  FIRST: dsl.constexpr, N: dsl.constexpr):
    """Columns FIRST..WIDTH-1 of the table rows ``rows`` names: an arange that does not
    start at 0, in the offsets of a gathered load."""
    cols = dsl.arange(FIRST, WIDTH)
    picked = dsl.load(rows + dsl.arange(0, N))
    tile = dsl.load(table + picked[None, :] * WIDTH + cols[:, None])
    dsl.store(out + dsl.arange(0, N)[:, None] * (WIDTH - FIRST) +
              dsl.arange(0, WIDTH - FIRST)[None, :], dsl.trans(tile))


def test_an_arange_from_a_nonzero_start_in_gathered_offsets(cpu_toolchain):
    # triton-adapter-opt 3.2.0 dropped the start of tl.arange(24, 32) there: compiled
    # code read columns 0..7 (the generated Triton now writes tl.arange(0, 8) + 24)
    table = np.arange(4 * 32, dtype=np.float32).reshape(4, 32)
    rows = np.array([2, 0, 3, 1], np.int32)
    out = np.zeros((4, 8), np.float32)
    tail_columns_of_gathered_rows[(1,)](table, rows, out, WIDTH=32, FIRST=24, N=4)
    np.testing.assert_array_equal(out, table[rows, 24:])
    differential(tail_columns_of_gathered_rows, (table, rows, np.zeros((4, 8), np.float32)),
                 {"WIDTH": 32, "FIRST": 24, "N": 4}, grid=(1,))


def test_chosen_pointers_compiled_cpu_bit_exact(cpu_toolchain):
    n = 37
    a, b, c = (np.random.rand(n).astype(np.float32) + k for k in (0, 10, 100))
    differential(cat_three, (np.zeros(3 * n, np.float32), a, b, c, n), {"BLOCK": 16},
                 grid=(3, 3))


def test_chosen_pointers_lower_to_hivm_within_ub(toolchain):
    f32 = dsl.tensor_spec("float32")
    lowered = cat_three.lower(f32, f32, f32, f32, 1 << 20, target="Ascend910B4", BLOCK=1024)
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


@pytest.mark.parametrize("use, message", [
    ("p < x_ptr", "a pointer that a runtime 'if' bound to different arguments \\('y_ptr', "
     "'x_ptr'\\) supports \\+ and - of offsets"),
    ("dsl.where(dsl.arange(0, 4) > 1, p, x_ptr)", "bound to different arguments"),
])
def test_a_chosen_pointer_compared_or_selected_is_a_clear_error(kernel_from_source, use,
                                                                 message):
    kernel, _ = kernel_from_source("chosen", "import dsl\n\n@dsl.jit\n"
                                   "def chosen(x_ptr, y_ptr, out_ptr, n):\n"
                                   "    p = x_ptr\n    if n > 2:\n        p = y_ptr\n"
                                   f"    q = {use}\n"
                                   "    dsl.store(out_ptr, n)\n")
    with pytest.raises(dsl.DSLCompileError, match=message):
        kernel(np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32), 4)


def test_pointers_into_arguments_of_different_types_in_an_if_are_an_error(kernel_from_source):
    kernel, _ = kernel_from_source("mixed", "import dsl\n\n@dsl.jit\n"
                                   "def mixed(x_ptr, y_ptr, out_ptr, n):\n"
                                   "    p = x_ptr\n    if n > 2:\n        p = y_ptr\n"
                                   "    dsl.store(out_ptr, dsl.load(p))\n")
    with pytest.raises(dsl.DSLCompileError, match="6:5: error: a pointer into 'y_ptr' "
                                                  "\\(int32\\) and 'x_ptr' \\(float32\\) in "
                                                  "the branches of one 'if'"):
        kernel(np.zeros(4, np.float32), np.zeros(4, np.int32), np.zeros(4, np.float32), 4)


@dsl.jit
def gather_row_loop(emb_ptr, idx_ptr, out_ptr, n_idx, cols, PER: dsl.constexpr,
                    BLOCK: dsl.constexpr):
    """Tutorial 09's form: each program walks its rows one by one; a row whose index is
    negative gets -1.0 (a data-dependent branch, so the stores are journaled)."""
    pid = dsl.program_id(0)
    c = dsl.arange(0, BLOCK)
    cmask = c < cols
    for r in range(pid * PER, dsl.minimum(pid * PER + PER, n_idx)):
        i = dsl.load(idx_ptr + r)
        if i >= 0:
            row = dsl.load(emb_ptr + i * cols + c, mask=cmask)
            dsl.store(out_ptr + r * cols + c, row, cmask)
        else:
            dsl.store(out_ptr + r * cols + c, dsl.full((BLOCK,), -1.0, dsl.float32), cmask)


@dsl.jit
def scatter_row_loop(src_ptr, dest_ptr, out_ptr, n_idx, cols, BLOCK: dsl.constexpr):
    """out[dest[r], :] = src[r, :], one row per program."""
    r = dsl.program_id(0)
    c = dsl.arange(0, BLOCK)
    d = dsl.load(dest_ptr + r)
    dsl.store(out_ptr + d * cols + c, dsl.load(src_ptr + r * cols + c, mask=c < cols),
              mask=c < cols)


@pytest.fixture
def no_lane_index_arrays(monkeypatch):
    """Fails a test that builds a per-lane index array for a 1-D pointer block."""
    from lowering import lanes

    def refuse(self):
        raise AssertionError("a Lanes block was materialised")

    monkeypatch.setattr(lanes.Lanes, "materialize", refuse)


@pytest.mark.parametrize("cols, block", [(13, 16), (16, 16), (300, 512)])
def test_rows_gathered_by_loaded_indices_read_their_runs_without_index_arrays(
        cols, block, no_lane_index_arrays):
    rng = np.random.default_rng(cols)
    emb = rng.standard_normal((40, cols)).astype(np.float32)
    idx = rng.integers(-3, 40, 203).astype(np.int32)  # unsorted, repeated, some negative
    out = np.full((203, cols), 5.0, np.float32)
    gather_row_loop[(8,)](emb, idx, out, 203, cols, PER=26, BLOCK=block)
    expected = np.where(idx[:, None] >= 0, emb[np.maximum(idx, 0)], -1.0)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("size, bad_row, offset, lane", [(520, 40, 520, 0), (515, 39, 515, 8)])
def test_a_row_run_past_the_end_names_its_first_bad_lane_and_writes_nothing(
        size, bad_row, offset, lane):
    # the mask (c < cols) has another base than the index (i * cols + c): its valid
    # lanes are still a prefix of the row, so the first bad lane is found from the
    # row's start and count alone
    emb = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    idx = np.arange(50, dtype=np.int32) % 39
    idx[17] = bad_row
    out = np.zeros((50, 13), np.float32)
    with pytest.raises(dsl.OutOfBoundsError,
                       match=f"pointer offset {offset} is outside tensor 'emb_ptr'") as info:
        gather_row_loop[(5,)](emb, idx, out, 50, 13, PER=10, BLOCK=16)
    assert f"program id (1, 0, 0), lane {lane}" in str(info.value)
    assert not out.any()


def test_rows_scattered_to_distinct_places_store_as_runs_and_a_shared_row_is_a_race(
        no_lane_index_arrays, monkeypatch):
    rng = np.random.default_rng(3)
    src = rng.standard_normal((30, 21)).astype(np.float32)
    dest = rng.permutation(40)[:30].astype(np.int32)
    out = np.zeros((40, 21), np.float32)
    scatter_row_loop[(30,)](src, dest, out, 30, 21, BLOCK=32)
    expected = np.zeros((40, 21), np.float32)
    expected[dest] = src
    np.testing.assert_array_equal(out, expected)
    dest[7] = dest[20]
    monkeypatch.undo()  # the race check lists the lanes of a race it found
    with pytest.raises(dsl.DataRaceError, match="out_ptr"):
        scatter_row_loop[(30,)](src, dest, np.zeros((40, 21), np.float32), 30, 21, BLOCK=32)


@dsl.jit
def stack_tiles(out_ptr, a_ptr, b_ptr, rows, cols, BR: dsl.constexpr, BC: dsl.constexpr):
    """Program 0 copies a's tiles, program 1 b's, through one block pointer a runtime
    ``if`` bound to either argument (walked by ``advance``, ragged under
    ``boundary_check``)."""
    which = dsl.program_id(0)
    if which == 0:
        src = dsl.make_block_ptr(a_ptr, (rows, cols), (cols, 1), (0, 0), (BR, BC), (1, 0))
    else:
        src = dsl.make_block_ptr(b_ptr, (rows, cols), (cols, 1), (0, 0), (BR, BC), (1, 0))
    dst = dsl.make_block_ptr(out_ptr + which * rows * cols, (rows, cols), (cols, 1), (0, 0),
                             (BR, BC), (1, 0))
    for _ in range(0, dsl.cdiv(rows, BR)):
        dsl.store(dst, dsl.load(src, boundary_check=(0, 1)), boundary_check=(0, 1))
        src = dsl.advance(src, (BR, 0))
        dst = dsl.advance(dst, (BR, 0))


def test_block_pointers_a_runtime_if_bound_to_different_arguments():
    """Refused before ("a block pointer into 'a_ptr' and a block pointer into 'b_ptr'"):
    the origins become a choice, each load and store one masked access per argument."""
    a = np.random.rand(7, 5).astype(np.float32)
    b = np.random.rand(7, 5).astype(np.float32) + 10
    out = np.zeros((14, 5), np.float32)
    stack_tiles[(2,)](out, a, b, 7, 5, BR=4, BC=8)
    np.testing.assert_array_equal(out, np.concatenate([a, b]))
    differential(stack_tiles, (np.zeros((14, 5), np.float32), a, b, 7, 5), {"BR": 4, "BC": 8},
                 grid=(2,))
    with pytest.raises(dsl.OutOfBoundsError, match="'b_ptr'"):
        stack_tiles[(2,)](out, a, b[:6].copy(), 7, 5, BR=4, BC=8)  # a row past b's end


@dsl.jit
def tile_of_either_layout(out_ptr, a_ptr, b_ptr, flag, ma, na, sa, mb, nb, sb,
                          SAME_ARGUMENT: dsl.constexpr):
    """A block pointer a runtime ``if`` made with another shape and strides in each
    branch (over two arguments, or one), then read after the ``if``."""
    if flag > 0:
        bp = dsl.make_block_ptr(a_ptr, (ma, na), (sa, 1), (0, 0), (4, 4), (1, 0))
    elif SAME_ARGUMENT:
        bp = dsl.make_block_ptr(a_ptr, (mb, nb), (sb, 1), (0, 0), (4, 4), (1, 0))
    else:
        bp = dsl.make_block_ptr(b_ptr, (mb, nb), (sb, 1), (0, 0), (4, 4), (1, 0))
    r = dsl.arange(0, 4)[:, None]
    c = dsl.arange(0, 4)[None, :]
    dsl.store(out_ptr + r * 4 + c, dsl.load(bp, boundary_check=(0, 1), padding_option="zero"))


@pytest.mark.parametrize("same_argument", [False, True])
def test_block_pointers_an_if_made_with_different_shapes_and_strides(same_argument):
    """Session 23's fuzzing found the else branch's block pointer taking the then
    branch's shape and strides (a silent wrong answer, compiled-CPU too): the entries
    the branches set differently are carried out of the 'if' now."""
    a = np.arange(100, 104, dtype=np.float32)  # 1 x 4
    b = np.arange(24, dtype=np.float32)  # 4 x 6
    first = b if same_argument else a  # what the then branch reads, as 1 x 4
    for flag, expected in ((0, b.reshape(4, 6)[:, :4]),
                           (1, np.pad(first[:4].reshape(1, 4), ((0, 3), (0, 0))))):
        out = np.full(16, -1.0, np.float32)
        tile_of_either_layout[(1,)](out, first, b, flag, 1, 4, 4, 4, 6, 6,
                                    SAME_ARGUMENT=same_argument)
        np.testing.assert_array_equal(out.reshape(4, 4), expected)
        differential(tile_of_either_layout, (np.zeros(16, np.float32), first, b, flag, 1, 4,
                                             4, 4, 6, 6), {"SAME_ARGUMENT": same_argument},
                     grid=(1,))


@dsl.jit
def block_pointer_reshaped_by_data(x_ptr, n_ptr, out_ptr, rows, cols, STEPS: dsl.constexpr):
    acc = dsl.zeros((4, 4), dsl.float32)
    bp = dsl.make_block_ptr(x_ptr, (rows, cols), (cols, 1), (0, 0), (4, 4), (1, 0))
    for i in range(STEPS):
        acc += dsl.load(bp, boundary_check=(0, 1))
        bp = dsl.make_block_ptr(x_ptr, (dsl.load(n_ptr, i), cols), (cols, 1), (4 * (i + 1), 0),
                                (4, 4), (1, 0))
    dsl.store(out_ptr, dsl.arange(0, 4)[:, None] * 4 + dsl.arange(0, 4)[None, :], acc)


@dsl.jit
def block_pointer_remade_from_the_same_values(x_ptr, out_ptr, rows, cols, STEPS: dsl.constexpr):
    acc = dsl.zeros((4, 4), dsl.float32)
    bp = dsl.make_block_ptr(x_ptr, (rows * 1, cols), (cols, 1), (0, 0), (4, 4), (1, 0))
    for i in range(STEPS):
        acc += dsl.load(bp, boundary_check=(0, 1))
        bp = dsl.make_block_ptr(x_ptr, (rows * 1, cols), (cols, 1), (4 * (i + 1), 0), (4, 4),
                                (1, 0))
    dsl.store(out_ptr, dsl.arange(0, 4)[:, None] * 4 + dsl.arange(0, 4)[None, :], acc)


def test_a_loop_carried_block_pointer_keeps_its_shape_or_is_refused():
    """Remade in each iteration from the same values, a block pointer is carried (its
    shape recomputed is the same expression); remade with a shape that may change (a
    loaded bound), it is refused at compile time instead of keeping the first one."""
    x = np.arange(96, dtype=np.float32).reshape(16, 6)
    out = np.zeros(16, np.float32)
    block_pointer_remade_from_the_same_values[(1,)](x, out, 16, 6, STEPS=3)
    np.testing.assert_array_equal(out.reshape(4, 4), sum(x[4 * i:4 * i + 4, :4] for i in range(3)))
    with pytest.raises(dsl.DSLCompileError, match="loop-carried variable 'bp' is two block "
                       "pointers of different shapes"):
        block_pointer_reshaped_by_data[(1,)](x, np.full(3, 16, np.int32), out, 16, 6, STEPS=3)


def test_chosen_block_pointers_lower_to_hivm_within_ub(toolchain):
    f32 = dsl.tensor_spec("float32")
    lowered = stack_tiles.lower(f32, f32, f32, 1024, 1024, target="Ascend910B4", BR=16,
                                BC=128)
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


@dsl.jit
def tile_of_either(out_ptr, a_ptr, b_ptr, flag, rows, cols, BR: dsl.constexpr,
                   BC: dsl.constexpr):
    """A block pointer made on a pointer a scalar where() chose."""
    bp = dsl.make_block_ptr(dsl.where(flag > 0, a_ptr, b_ptr), (rows, cols), (cols, 1),
                            (0, 0), (BR, BC), (1, 0))
    r = dsl.arange(0, BR)[:, None]
    c = dsl.arange(0, BC)[None, :]
    dsl.store(out_ptr + r * BC + c, dsl.load(bp, boundary_check=(0, 1)))


def test_a_block_pointer_on_a_chosen_pointer():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for flag, source in ((1, a), (0, a + 10)):
        out = np.full((4, 4), -1.0, np.float32)
        tile_of_either[(1,)](out, a, a + 10, flag, 2, 3, BR=4, BC=4)
        expected = np.zeros((4, 4), np.float32)
        expected[:2, :3] = source
        np.testing.assert_array_equal(out, expected)
