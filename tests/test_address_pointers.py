"""Pointers cast from 64-bit integers (``tl.load(table + g).to(tl.pointer_type(T))``):
pointer tables as in grouped GEMMs and SGLang's per-layer KV-cache copies. Every
backend: the interpreter against NumPy, compiled-CPU against the interpreter bit for
bit, the generated Triton and HIVM within UB; and the checks, which name the address,
program, lane and line and leave memory untouched."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import dsl
from lowering import cpu

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@triton.jit
def gather_through_table(table, out, n, BLOCK: tl.constexpr):
    """``out[g] = 2 * x_g[:n]`` (-2 past n) for the tensor ``x_g`` at ``table[g]``."""
    g = tl.program_id(0)
    src = tl.load(table + g).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    v = tl.load(src + offs, mask=offs < n, other=-1.0)
    tl.store(out + g * BLOCK + offs, v * 2)


@triton.jit
def scatter_through_table(table, src, n, BLOCK: tl.constexpr):
    """``x_g[:n] = src[g] + 1`` for the tensor ``x_g`` at ``table[g]``."""
    g = tl.program_id(0)
    dst = tl.load(table + g).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + g * BLOCK + offs) + 1, mask=offs < n)


@triton.jit
def copy_kv_layers(data_ptrs, strides, tgt, src, num_locs, LOCS: tl.constexpr):
    """SGLang's per-layer KV-cache copy: each layer a byte buffer at an address, rows
    ``src`` copied onto rows ``tgt`` in chunks, the pointer's offsets 2-D."""
    BLOCK: tl.constexpr = 32
    layer = tl.program_id(0)
    stride = tl.load(strides + layer)
    base = tl.load(data_ptrs + layer).to(tl.pointer_type(tl.uint8))
    locs = tl.arange(0, LOCS)
    t = tl.load(tgt + locs, mask=locs < num_locs, other=0)
    s = tl.load(src + locs, mask=locs < num_locs, other=0)
    for i in range(tl.cdiv(stride, BLOCK)):
        cols = tl.arange(0, BLOCK) + i * BLOCK
        mask = (locs < num_locs)[:, None] & (cols < stride)[None, :]
        v = tl.load(base + s[:, None] * stride + cols[None, :], mask=mask)
        tl.store(base + t[:, None] * stride + cols[None, :], v, mask=mask)


@triton.jit
def scatter_rows(table, rows, src, L: tl.constexpr, S: tl.constexpr):
    """``x_g[rows] = src`` for the ``(n, S)`` tensor ``x_g`` at ``table[g]``: 2-D
    offsets that depend on loaded data."""
    g = tl.program_id(0)
    dst = tl.load(table + g).to(tl.pointer_type(tl.float32))
    r = tl.load(rows + tl.arange(0, L))
    c = tl.arange(0, S)
    tl.store(dst + r[:, None] * S + c[None, :],
             tl.load(src + tl.arange(0, L)[:, None] * S + c[None, :]) * (g + 1))


@triton.jit
def grouped_matmul(a_table, b_table, c_table, sizes, lds, n_groups, n_programs,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``C_g = A_g @ B_g`` for groups of different sizes, the matrices found through
    three pointer tables, by ``n_programs`` persistent programs that walk the tiles of
    every group (the pattern of Triton's grouped GEMM)."""
    pid = tl.program_id(0)
    first = 0
    for g in range(n_groups):
        m, n, k = tl.load(sizes + 3 * g), tl.load(sizes + 3 * g + 1), tl.load(sizes + 3 * g + 2)
        tiles_n = tl.cdiv(n, BN)
        tiles = tl.cdiv(m, BM) * tiles_n
        while pid >= first and pid < first + tiles:
            a = tl.load(a_table + g).to(tl.pointer_type(tl.float16))
            b = tl.load(b_table + g).to(tl.pointer_type(tl.float16))
            c = tl.load(c_table + g).to(tl.pointer_type(tl.float16))
            lda, ldb, ldc = tl.load(lds + 3 * g), tl.load(lds + 3 * g + 1), tl.load(lds + 3 * g + 2)
            rm = (pid - first) // tiles_n * BM + tl.arange(0, BM)
            rn = (pid - first) % tiles_n * BN + tl.arange(0, BN)
            rk = tl.arange(0, BK)
            a_ptrs = a + rm[:, None] * lda + rk[None, :]
            b_ptrs = b + rk[:, None] * ldb + rn[None, :]
            acc = tl.zeros((BM, BN), tl.float32)
            for kk in range(0, tl.cdiv(k, BK)):
                tl.multiple_of(a_ptrs, [16, 16])
                x = tl.load(a_ptrs, mask=(rm[:, None] < m) & (rk[None, :] + kk * BK < k),
                            other=0.0)
                y = tl.load(b_ptrs, mask=(rk[:, None] + kk * BK < k) & (rn[None, :] < n),
                            other=0.0)
                acc += tl.dot(x, y)
                a_ptrs += BK
                b_ptrs += BK * ldb
            tl.store(c + rm[:, None] * ldc + rn[None, :], acc.to(tl.float16),
                     mask=(rm[:, None] < m) & (rn[None, :] < n))
            pid += n_programs
        first = first + tiles


@triton.jit
def rows_through_table(table, out, n, R: tl.constexpr, C: tl.constexpr):
    """A block of addresses, one per row, each the start of a row of ``n`` (0 past)."""
    r = tl.arange(0, R)
    p = tl.load(table + r).to(tl.pointer_type(tl.float32))
    c = tl.arange(0, C)
    v = tl.load(p[:, None] + c[None, :], mask=c[None, :] < n, other=0.0)
    tl.store(out + r[:, None] * C + c[None, :], v)


@triton.jit
def scale_tiles(table, n_rows, n_cols, BR: tl.constexpr, BC: tl.constexpr):
    """``x_g *= 2`` tile by tile through a block pointer whose base came from a table,
    the column tiles walked by ``advance``, ragged edges under ``boundary_check``."""
    g = tl.program_id(0)
    base = tl.load(table + g).to(tl.pointer_type(tl.float32))
    tile = tl.make_block_ptr(base, (n_rows, n_cols), (n_cols, 1), (tl.program_id(1) * BR, 0),
                             (BR, BC), (1, 0))
    for _ in range(tl.cdiv(n_cols, BC)):
        v = tl.load(tile, boundary_check=(0, 1), padding_option="zero")
        tl.store(tile, v * 2, boundary_check=(0, 1))
        tile = tl.advance(tile, (0, BC))


@triton.jit
def histogram_through_table(table, counts, data, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    """Each program adds the histogram of its block of ``data`` into the counts table
    ``table[g]`` points to, atomically; program 0 also swaps a flag in with CAS."""
    pid = tl.program_id(0)
    g = tl.load(counts + pid)
    hist = tl.load(table + g).to(tl.pointer_type(tl.int32))
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    bins = tl.load(data + offs, mask=offs < n, other=0)
    tl.atomic_add(hist + bins, 1, mask=offs < n)
    if pid == 0:
        flag = tl.load(table + 2).to(tl.pointer_type(tl.int32))
        tl.atomic_cas(flag, 0, 7)


@triton.jit
def copy_rows_as_bytes(src_ptr, dst_ptr, rows, ROW_BYTES: tl.constexpr):
    """SGLang's KV-cache writer copies bf16 rows byte by byte: a pointer argument cast
    to a pointer of another element size."""
    src = tl.cast(src_ptr, tl.pointer_type(tl.uint8))
    dst = dst_ptr.to(tl.pointer_type(tl.uint8))
    r = tl.program_id(0)
    offs = tl.arange(0, ROW_BYTES)
    row = tl.load(rows + r)
    tl.store(dst + r * ROW_BYTES + offs, tl.load(src + row * ROW_BYTES + offs))


@triton.jit
def scale_by_either(x_ptr, q_w, k_w, out_ptr, N: tl.constexpr):
    """SGLang's table_qk_norm_rope picks a weight tensor per program by its address:
    pointer arguments cast to int64, selected, cast back to a pointer."""
    pid = tl.program_id(0)
    is_q = pid == 0
    w = tl.where(is_q, q_w.to(tl.int64), k_w.to(tl.int64)).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, N)
    tl.store(out_ptr + pid * N + offs, tl.load(x_ptr + pid * N + offs) * tl.load(w + offs))


@triton.jit
def from_scalar_address(addr, out, N: tl.constexpr):
    """An address passed as a scalar argument (``x.data_ptr()``)."""
    p = tl.cast(addr, tl.pointer_type(tl.float32))
    offs = tl.arange(0, N)
    tl.store(out + offs, tl.load(p + offs) + 1)


@triton.jit
def copy_every_third(src_addr, dst_addr, n, row_stride, BLOCK: tl.constexpr):
    """vLLM's mamba state copy: a block of byte addresses computed as integers, each
    cast to a pointer with no offset after it."""
    rows = tl.arange(0, BLOCK)
    mask = rows < n
    src = (src_addr + rows * row_stride).to(tl.pointer_type(tl.uint16))
    dst = (dst_addr + rows * row_stride).to(tl.pointer_type(tl.uint16))
    tl.store(dst, tl.load(src, mask=mask), mask=mask)


@triton.jit
def sum_chunks(table, out, n_chunks, BLOCK: tl.constexpr):
    """A pointer cast from an integer, moved through a loop."""
    g = tl.program_id(0)
    p = tl.load(table + g).to(tl.pointer_type(tl.float32))
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(n_chunks):
        acc += tl.load(p + tl.arange(0, BLOCK))
        p += BLOCK
    tl.store(out + g * BLOCK + tl.arange(0, BLOCK), acc)


@triton.jit
def pointer_ops(table, out):
    """Difference, comparison, where(), a cast to another pointer type and back to int64."""
    a = tl.load(table).to(tl.pointer_type(tl.float32))
    b = tl.load(table + 1).to(tl.pointer_type(tl.float32))
    tl.store(out, (b - a).to(tl.float32))
    later = tl.where(b > a, b, a)
    tl.store(out + 1, tl.load(later + 1))
    bits = a.to(tl.pointer_type(tl.int32))
    tl.store(out + 2, tl.load(bits + 2).to(tl.float32))
    tl.store(out + 3, (a.to(tl.int64) == tl.load(table)).to(tl.float32))


@triton.jit
def store_twice(table, BLOCK: tl.constexpr):
    p = tl.load(table).to(tl.pointer_type(tl.float32))
    tl.store(p + tl.arange(0, BLOCK) // 2, 1.0)


def addresses(*tensors) -> torch.Tensor:
    return torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64)


def test_loads_through_a_pointer_table_read_tensors_that_are_not_arguments():
    xs = [torch.randn(37), torch.randn(50), torch.randn(64)]
    out = torch.zeros(3 * 64)
    dsl.from_triton(gather_through_table)[(3,)](addresses(*xs), out, 37, BLOCK=64)
    expected = torch.full((3, 64), -2.0)
    for g, x in enumerate(xs):
        expected[g, :37] = 2 * x[:37]
    torch.testing.assert_close(out.view(3, 64), expected, rtol=0, atol=0)


def test_stores_through_a_pointer_table_write_the_tensors_themselves():
    xs = [torch.zeros(40), torch.zeros(40)]
    src = torch.randn(2 * 64)
    dsl.from_triton(scatter_through_table)[(2,)](addresses(*xs), src, 40, BLOCK=64)
    for g, x in enumerate(xs):
        torch.testing.assert_close(x, src[g * 64:g * 64 + 40] + 1, rtol=0, atol=0)


def test_an_address_passed_as_a_scalar_argument():
    x, out = torch.arange(8, dtype=torch.float32), torch.zeros(8)
    dsl.from_triton(from_scalar_address)[(1,)](x.data_ptr(), out, N=8)
    assert out.tolist() == (x + 1).tolist()
    held = {"a": np.arange(8, dtype=np.float32)}  # a NumPy array in a dict of a local
    result = np.zeros(8, np.float32)
    dsl.from_triton(from_scalar_address)[(1,)](held["a"].ctypes.data, result, N=8)
    np.testing.assert_array_equal(result, held["a"] + 1)


def test_numpy_arrays_held_by_the_caller_are_reachable_too():
    arrays = [np.arange(16, dtype=np.float32), np.arange(100, 116, dtype=np.float32)]
    table = np.array([a.ctypes.data for a in arrays], np.int64)
    out = np.zeros(32, np.float32)
    dsl.from_triton(gather_through_table)[(2,)](table, out, 16, BLOCK=16)
    np.testing.assert_array_equal(out, 2 * np.concatenate(arrays))


def kv_case():
    rng = np.random.default_rng(3)
    layers = [torch.from_numpy(rng.integers(0, 255, (12, stride), dtype=np.uint8))
              for stride in (40, 96, 7)]
    strides = torch.tensor([t.shape[1] for t in layers], dtype=torch.int64)
    tgt = torch.tensor([0, 5, 9], dtype=torch.int32)
    src = torch.tensor([2, 3, 11], dtype=torch.int32)
    return layers, strides, tgt, src


def test_a_kv_cache_copy_through_per_layer_addresses_matches_numpy():
    layers, strides, tgt, src = kv_case()
    expected = [t.numpy().copy() for t in layers]
    for e in expected:
        e[tgt.numpy()] = e[src.numpy()]
    dsl.from_triton(copy_kv_layers)[(3,)](addresses(*layers), strides, tgt, src, 3, LOCS=4)
    for got, want in zip(layers, expected):
        np.testing.assert_array_equal(got.numpy(), want)


def test_a_grouped_matmul_through_pointer_tables_matches_float64_and_torch():
    gen = torch.Generator().manual_seed(0)
    shapes = [(64, 48, 40), (100, 30, 64), (17, 80, 33)]  # (m, n, k)
    a = [torch.randn(m, k, generator=gen).half() for m, n, k in shapes]
    b = [torch.randn(k, n, generator=gen).half()[:, :n] for m, n, k in shapes]
    c = [torch.zeros(m, n + 3, dtype=torch.float16)[:, :n] for m, n, k in shapes]  # strided
    sizes = torch.tensor(shapes, dtype=torch.int32).reshape(-1)
    lds = torch.tensor([[x.stride(0), y.stride(0), z.stride(0)] for x, y, z in zip(a, b, c)],
                       dtype=torch.int32).reshape(-1)
    dsl.from_triton(grouped_matmul)[(4,)](addresses(*a), addresses(*b), addresses(*c), sizes,
                                         lds, 3, 4, BM=16, BN=16, BK=16)
    for x, y, z in zip(a, b, c):
        exact = x.double().numpy() @ y.double().numpy()
        # fp32 accumulation then one rounding to fp16: within one fp16 ulp of the exact
        ulp = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64)
        assert (np.abs(z.double().numpy() - exact) <= ulp).all()
        torch.testing.assert_close(z, (x.float() @ y.float()).half(), rtol=1e-3, atol=1e-2)


def test_a_block_of_addresses_one_per_row():
    xs = [torch.randn(6) for _ in range(4)]
    out = torch.ones(4, 8)
    dsl.from_triton(rows_through_table)[(1,)](addresses(*xs), out, 6, R=4, C=8)
    assert torch.equal(out[:, :6], torch.stack(xs)) and not out[:, 6:].any()


def test_a_block_pointer_over_a_tensor_cast_from_an_integer():
    xs = [torch.randn(10, 13), torch.randn(10, 13)]
    before = [x.clone() for x in xs]
    dsl.from_triton(scale_tiles)[(2, 3)](addresses(*xs), 10, 13, BR=4, BC=8)
    for x, old in zip(xs, before):
        torch.testing.assert_close(x, 2 * old, rtol=0, atol=0)
    with pytest.raises(dsl.OutOfBoundsError, match="bytes from the start of"):
        dsl.from_triton(scale_tiles)[(2, 3)](addresses(*xs), 11, 13, BR=4, BC=8)  # 11 rows
    for x, old in zip(xs, before):
        torch.testing.assert_close(x, 2 * old, rtol=0, atol=0)  # nothing written


def test_atomics_through_a_pointer_table_count_every_lane():
    rng = np.random.default_rng(5)
    data = torch.from_numpy(rng.integers(0, 6, 1000).astype(np.int32))
    hists, flag = [torch.zeros(6, dtype=torch.int32), torch.zeros(6, dtype=torch.int32)], \
        torch.zeros(1, dtype=torch.int32)
    which = torch.from_numpy((np.arange(8) % 2).astype(np.int32))  # program -> histogram
    kernel = dsl.from_triton(histogram_through_table)
    kernel[(8,)](addresses(*hists, flag), which, data, 1000, BINS=6, BLOCK=128)
    for g in range(2):
        part = np.concatenate([data.numpy()[p * 128:(p + 1) * 128] for p in range(8) if p % 2 == g])
        np.testing.assert_array_equal(hists[g].numpy(), np.bincount(part, minlength=6))
    assert flag.item() == 7
    assert "tl.atomic_add(" in kernel.lower(dsl.tensor_spec("int64"), dsl.tensor_spec("int32"),
                                            dsl.tensor_spec("int32"), 1000, BINS=6, BLOCK=128,
                                            target="Ascend910B4").triton


def test_pointer_arguments_cast_to_integers_and_to_other_sizes():
    src = torch.randn(6, 8).to(torch.bfloat16)
    dst = torch.zeros(3, 8, dtype=torch.bfloat16)
    rows = torch.tensor([4, 0, 5], dtype=torch.int32)
    dsl.from_triton(copy_rows_as_bytes)[(3,)](src, dst, rows, ROW_BYTES=16)
    assert torch.equal(dst, src[[4, 0, 5]])
    with pytest.raises(dsl.OutOfBoundsError, match="bytes from the start of tensor 'src_ptr'"):
        dsl.from_triton(copy_rows_as_bytes)[(3,)](src, dst, rows + 1, ROW_BYTES=16)
    assert torch.equal(dst, src[[4, 0, 5]])  # nothing written
    x, q, k = torch.randn(2 * 8), torch.randn(8), torch.randn(8)
    out = torch.zeros(16)
    dsl.from_triton(scale_by_either)[(2,)](x, q, k, out, N=8)
    torch.testing.assert_close(out, x * torch.cat([q, k]), rtol=0, atol=0)


def test_a_pointer_moved_through_a_loop_and_pointer_arithmetic():
    xs = [torch.randn(4 * 16), torch.randn(4 * 16)]
    out = torch.zeros(32)
    dsl.from_triton(sum_chunks)[(2,)](addresses(*xs), out, 4, BLOCK=16)
    for g, x in enumerate(xs):
        want = x.view(4, 16)[0] + x.view(4, 16)[1] + x.view(4, 16)[2] + x.view(4, 16)[3]
        torch.testing.assert_close(out[g * 16:(g + 1) * 16], want, rtol=0, atol=0)
    whole = torch.arange(8, dtype=torch.float32)
    result = torch.zeros(4)
    dsl.from_triton(pointer_ops)[(1,)](addresses(whole, whole[3:]), result)
    bits = whole[2:3].view(torch.int32).item()
    assert result.tolist() == [3.0, 4.0, float(bits), 1.0]


def test_every_backend_agrees(cpu_toolchain, toolchain):
    """Compiled-CPU mode runs the real lowered kernel on the same memory (bit for bit
    against the interpreter); the kernels lower to HIVM within UB. (triton-ascend
    3.2.0's CPU target fails on the KV copy's masked 2-D store in a loop, through any
    pointer, an argument's too: "failed to legalize unresolved materialization"; its
    NPU target lowers it. Its triton-adapter-opt crashes on a pointer argument cast to
    an integer that is not cast straight back, as in ``scale_by_either``, hand-written
    Triton too.)"""
    gather = dsl.from_triton(gather_through_table)
    scatter = dsl.from_triton(scatter_rows)
    xs = [torch.randn(37), torch.randn(50)]
    rows, src_rows = torch.tensor([5, 0, 3, 1], dtype=torch.int32), torch.randn(32)
    runs = []
    for backend in ("interpreter", "compiled-cpu"):
        out = torch.zeros(2 * 64)
        gather.launch(addresses(*xs), out, 37, BLOCK=64, grid=(2,), backend=backend)
        targets = [torch.zeros(6, 8), torch.zeros(6, 8)]
        scatter.launch(addresses(*targets), rows, src_rows, L=4, S=8, grid=(2,),
                       backend=backend)
        tiles = [torch.arange(130, dtype=torch.float32).reshape(10, 13) / 7 for _ in range(2)]
        dsl.from_triton(scale_tiles).launch(addresses(*tiles), 10, 13, BR=4, BC=8, grid=(2, 3),
                                            backend=backend)
        src = torch.arange(48, dtype=torch.float32).reshape(6, 8).to(torch.bfloat16)
        dst = torch.zeros(3, 8, dtype=torch.bfloat16)
        dsl.from_triton(copy_rows_as_bytes).launch(src, dst, rows[:3], ROW_BYTES=16, grid=(3,),
                                                   backend=backend)
        shorts, strided = torch.arange(64, dtype=torch.int16), torch.zeros(64, dtype=torch.int16)
        dsl.from_triton(copy_every_third).launch(shorts.data_ptr(), strided.data_ptr(), 5, 6,
                                                 BLOCK=8, grid=(1,), backend=backend)
        assert strided[0:15:3].tolist() == list(range(0, 15, 3)) and strided.sum() == 30
        per_row = torch.zeros(4, 8)  # a block of addresses, rebased on its smallest
        dsl.from_triton(rows_through_table).launch(addresses(*tiles, *targets), per_row, 6, R=4,
                                                   C=8, grid=(1,), backend=backend)
        runs.append([out.numpy().view(np.uint32).copy(), dst.view(torch.int16).numpy().copy(),
                     per_row.numpy().view(np.uint32).copy()]
                    + [t.numpy().view(np.uint32).copy() for t in targets + tiles])
    assert runs[0][4][5].view(np.float32).tolist() == (2 * src_rows[:8]).tolist()
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    lowered = gather.lower(dsl.tensor_spec("int64"), dsl.tensor_spec("float32"), 4096,
                           BLOCK=1024, target="Ascend910B4")
    assert ".to(tl.pointer_type(tl.float32)) + " in lowered.triton
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes
    spec = dsl.tensor_spec
    lowered = dsl.from_triton(copy_kv_layers).lower(spec("int64"), spec("int64"), spec("int32"),
                                                    spec("int32"), 3, LOCS=4,
                                                    target="Ascend910B4")
    assert ".to(tl.pointer_type(tl.uint8)) + " in lowered.triton
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes
    lowered = dsl.from_triton(scale_tiles).lower(spec("int64"), 1000, 1000, BR=16, BC=64,
                                                 target="Ascend910B4")
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes
    lowered = dsl.from_triton(rows_through_table).lower(spec("int64"), spec("float32"), 60, R=16,
                                                        C=64, target="Ascend910B4")
    assert "tl.min(" in lowered.triton  # (the rebase)
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes
    lowered = dsl.from_triton(copy_rows_as_bytes).lower(spec("bfloat16"), spec("bfloat16"),
                                                        spec("int32"), ROW_BYTES=256,
                                                        target="Ascend910B4")
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


@triton.jit
def gather_with_lane_other(table, out, n, BLOCK: tl.constexpr):
    """``gather_through_table`` whose masked-off lanes are ``-lane`` (a block other)."""
    g = tl.program_id(0)
    src = tl.load(table + g).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(out + g * BLOCK + offs, tl.load(src + offs, mask=offs < n, other=offs * -1.0))


def test_a_block_other_through_an_address_in_every_backend(cpu_toolchain):
    xs = [torch.randn(37), torch.randn(50)]
    expected = -torch.arange(64, dtype=torch.float32).repeat(2, 1)
    expected[0, :37], expected[1, :37] = xs[0][:37], xs[1][:37]
    for backend in ("interpreter", "compiled-cpu"):
        out = torch.zeros(2 * 64)
        dsl.from_triton(gather_with_lane_other).launch(addresses(*xs), out, 37, BLOCK=64,
                                                       grid=(2,), backend=backend)
        torch.testing.assert_close(out.view(2, 64), expected, rtol=0, atol=0)


def test_compiled_cpu_checks_the_addresses_before_its_code_runs(cpu_toolchain):
    xs = [torch.zeros(40), torch.zeros(40)]
    table = addresses(*xs)
    table[1] += 4 * 40  # the second tensor's end
    with pytest.raises(dsl.OutOfBoundsError, match="bytes from the start of"):
        dsl.from_triton(scatter_through_table).launch(table, torch.randn(128), 40, BLOCK=64,
                                                      grid=(2,), backend="compiled-cpu")
    assert not xs[0].any() and not xs[1].any()


def test_an_unknown_address_is_an_error_naming_it_and_nothing_is_written():
    x = torch.zeros(40)
    table = torch.tensor([x.data_ptr(), 0x1000], dtype=torch.int64)
    with pytest.raises(dsl.OutOfBoundsError) as info:
        dsl.from_triton(scatter_through_table)[(2,)](table, torch.randn(128), 40, BLOCK=64)
    message = str(info.value)
    assert "address 0x1000, cast from an integer, is in no tensor this launch can see" in message
    assert "program id (1, 0, 0), lane 0" in message and "tl.store(dst + offs" in message
    assert not x.any()  # program 0's valid store was not kept


def test_a_pointer_moved_past_its_tensor_is_an_error_even_next_to_another_tensor():
    """The integer the kernel cast names the tensor, as an argument names a pointer's:
    reading on past its end is caught even where the allocator put another tensor."""
    storage = torch.arange(64, dtype=torch.float32)
    first = storage[:32]  # one allocation: its second half lies right after `first`
    out = torch.zeros(64)
    # within one allocation the whole storage is the region: reading on is allowed
    dsl.from_triton(gather_through_table)[(1,)](addresses(first), out, 64, BLOCK=64)
    torch.testing.assert_close(out, 2 * storage, rtol=0, atol=0)
    alone = torch.zeros(8)
    with pytest.raises(dsl.OutOfBoundsError, match=r"is 32 bytes from the start of a torch "
                       r"tensor of 32 bytes"):
        dsl.from_triton(gather_through_table)[(1,)](addresses(alone), out, 9, BLOCK=16)


def test_misaligned_and_read_only_targets_are_refused():
    x = torch.zeros(16)
    table = torch.tensor([x.data_ptr() + 2], dtype=torch.int64)
    with pytest.raises(dsl.OutOfBoundsError, match="not a multiple of the element size "
                       r"\(4 bytes\)"):
        dsl.from_triton(gather_through_table)[(1,)](table, torch.zeros(16), 4, BLOCK=16)
    frozen = np.zeros(16, np.float32)
    frozen.flags.writeable = False
    table = np.array([frozen.ctypes.data], np.int64)
    with pytest.raises(dsl.OutOfBoundsError, match="read-only"):
        dsl.from_triton(scatter_through_table)[(1,)](table, np.ones(16, np.float32), 16,
                                                     BLOCK=16)
    assert not frozen.any()


def test_two_lanes_storing_one_address_race():
    x = torch.zeros(8)
    with pytest.raises(dsl.DataRaceError, match="two lanes store to address"):
        dsl.from_triton(store_twice)[(1,)](addresses(x), BLOCK=8)
    assert not x.any()


@pytest.mark.parametrize("body, message", [
    ("    tl.store(tl.load(A).to(tl.int32).to(tl.pointer_type(tl.float32)), 1.0)\n",
     "an integer cast to a pointer must be 64 bits wide"),
    ("    tl.atomic_and(tl.load(A).to(tl.pointer_type(tl.float32)), 1.0)\n",
     r"atomic_and\(\) needs an integer tensor, got float32"),
    ("    p = tl.load(A).to(tl.pointer_type(tl.float32))\n    tl.store(p + (p < X), 1.0)\n",
     "comparison of a pointer cast from an integer and a pointer into an argument"),
])
def test_what_a_pointer_cast_from_an_integer_cannot_do_is_refused(kernel_from_source, body,
                                                                  message):
    kernel, _ = kernel_from_source("casts", "import triton\nimport triton.language as tl\n\n"
                                   "@triton.jit\ndef casts(X, A):\n" + body)
    with pytest.raises(dsl.DSLCompileError, match=message):
        dsl.from_triton(kernel)[(1,)](np.zeros(4, np.float32), np.zeros(1, np.int64))


def test_the_hivm_pointer_cast_becomes_an_llvm_memref_descriptor():
    linalg = ("    %6 = hivm.hir.pointer_cast(%5) [%c16] : memref<?xf32>\n"
              "    %7 = memref.load %6[%c0] : memref<?xf32>\n")
    lowered = cpu.lower_hivm_pointer_casts(linalg)
    assert "hivm" not in lowered
    assert "llvm.inttoptr %5 : i64 to !llvm.ptr" in lowered
    assert "%6 = builtin.unrealized_conversion_cast" in lowered and "to memref<?xf32>" in lowered
    assert lowered.endswith("    %7 = memref.load %6[%c0] : memref<?xf32>\n")


def test_later_launches_find_the_tensors_without_scanning_the_heap(monkeypatch):
    """The garbage-collector scan (~50-100 ms) runs once; later launches reaching the
    same tensors find them among the remembered ones."""
    import dsl.host_memory as host_memory

    xs = [torch.randn(16), torch.randn(16)]
    out = torch.zeros(32)
    kernel = dsl.from_triton(gather_through_table)
    kernel[(2,)](addresses(*xs), out, 16, BLOCK=16)

    def no_scan():
        raise AssertionError("the heap was scanned again")

    monkeypatch.setattr(host_memory.gc, "get_objects", no_scan)
    out.zero_()
    kernel[(2,)](addresses(*xs), out, 16, BLOCK=16)
    torch.testing.assert_close(out, 2 * torch.cat(xs), rtol=0, atol=0)


class TypedPtr:
    """An argument that is only an address and a dtype, as FlagGems' ``TypedPtr``."""

    def __init__(self, tensor: torch.Tensor, offset: int = 0) -> None:
        self.address = tensor.data_ptr() + tensor.element_size() * offset
        self.dtype = tensor.dtype

    def data_ptr(self) -> int:
        return self.address


@triton.jit
def add_one(x, y, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + o, tl.load(x + o, mask=o < n) + 1, mask=o < n)


def test_an_argument_that_is_only_an_address_is_the_rest_of_its_tensor():
    a, b = torch.arange(20, dtype=torch.float32), torch.zeros(20)
    kernel = dsl.from_triton(add_one)
    kernel[(2,)](TypedPtr(a, 4), TypedPtr(b, 2), 16, BLOCK=8)
    assert b.tolist() == [0, 0] + list(range(5, 21)) + [0, 0]
    with pytest.raises(dsl.OutOfBoundsError, match="outside tensor 'x', whose memory holds "
                       "16 elements"):
        kernel[(3,)](TypedPtr(a, 4), TypedPtr(b, 2), 17, BLOCK=8)  # past a's end
    loose = TypedPtr(a)
    loose.address = 0x1000
    with pytest.raises(dsl.DSLLaunchError, match="address 0x1000 is in no tensor"):
        kernel[(1,)](loose, TypedPtr(b), 4, BLOCK=8)


def test_compiled_cpu_refuses_atomics_through_addresses_naming_why(cpu_toolchain):
    """triton-ascend 3.2.0's CPU route compiles atomics to plain loads and stores (as
    for atomics through arguments): refused, nothing written."""
    hists = [torch.zeros(6, dtype=torch.int32), torch.zeros(6, dtype=torch.int32),
             torch.zeros(1, dtype=torch.int32)]
    with pytest.raises(cpu.CompiledCPUError, match="atomic_address fails -- its atomics "
                       "compile to plain loads and stores"):
        dsl.from_triton(histogram_through_table).launch(
            addresses(*hists), torch.zeros(8, dtype=torch.int32),
            torch.zeros(1000, dtype=torch.int32), 1000, BINS=6, BLOCK=128, grid=(8,),
            backend="compiled-cpu")
    assert not any(h.any() for h in hists)


@dsl.jit
def dsl_gather_rows(table, out, n, BLOCK: dsl.constexpr):
    """The DSL's own spelling: a logical load of an address, cast to a pointer."""
    g = dsl.program_id(0)
    src = dsl.load(table, g).to(dsl.pointer_type(dsl.float32))
    offs = dsl.arange(0, BLOCK)
    dsl.store(out, g * BLOCK + offs, dsl.load(src + offs, mask=offs < n, other=0.0))


def test_dsl_kernels_cast_addresses_to_pointers_too():
    xs = [np.arange(10, dtype=np.float32), np.arange(20, 30, dtype=np.float32)]
    table = np.array([x.ctypes.data for x in xs], np.int64)
    out = np.full(32, -1.0, np.float32)
    dsl_gather_rows[(2,)](table, out, 10, BLOCK=16)
    expected = np.zeros((2, 16), np.float32)
    expected[:, :10] = xs
    np.testing.assert_array_equal(out.reshape(2, 16), expected)


def test_triton_s_own_interpreter_agrees(tmp_path):
    """The second oracle: the same kernels on the same inputs under Triton's own
    interpreter write the same bits (each interpreter in its own process)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    runner = Path(__file__).parent / "address_pointers_runner.py"
    saved = {}
    for switch in ("TRITON_INTERPRET", "DSL_TRITON_INTERPRET"):
        env = {k: v for k, v in os.environ.items()
               if k not in ("TRITON_INTERPRET", "DSL_TRITON_INTERPRET")}
        env[switch] = "1"
        path = tmp_path / f"{switch}.npz"
        done = subprocess.run([sys.executable, str(runner), str(path)], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        saved[switch] = np.load(path)
    theirs, ours = saved["TRITON_INTERPRET"], saved["DSL_TRITON_INTERPRET"]
    assert sorted(theirs.files) == sorted(ours.files) and len(ours.files) == 7
    for name in ours.files:
        assert theirs[name].tobytes() == ours[name].tobytes(), name
