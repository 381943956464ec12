"""The NumPy interpreter: bounds checks and rollback, C integer division, rounding,
loops, reductions, broadcast-aware offsets and batched execution."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import dsl
from dsl import numerics
from lowering import interpreter

BF16 = ml_dtypes.bfloat16


# ----------------------------------------------------------------------------- bounds


@dsl.jit
def copy_kernel(src, dst, n, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        dsl.store(dst, idx, dsl.load(src, idx, idx < n), idx < n)


def test_out_of_bounds_load_names_kernel_line_program_tensor_and_index():
    src = np.arange(100, dtype=np.float32)
    dst = np.full(200, -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError) as info:
        copy_kernel[(4,)](src, dst, 200, BLOCK=32)
    text = str(info.value)
    assert "copy_kernel" in text and "tensor 'src' has 100 elements" in text
    assert "index 100 was accessed" in text
    # tile 3 (elements 96..127) belongs to program 3 of 4; lane 4 is element 100
    assert "program id (3, 0, 0), lane 4" in text
    assert "test_interpreter.py:" in text and "dsl.load(src, idx, idx < n)" in text
    assert np.all(dst == -1.0), "a failing launch must not write anything"


def test_out_of_bounds_store_is_detected_and_nothing_is_written():
    src = np.arange(64, dtype=np.float32)
    dst = np.full(40, -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="tensor 'dst' has 40 elements"):
        copy_kernel[(2,)](src, dst, 64, BLOCK=16)
    assert np.all(dst == -1.0)


@dsl.jit
def shifted_copy(src, dst, shift, BLOCK: dsl.constexpr):
    i = dsl.arange(0, BLOCK)
    dsl.store(dst, i, dsl.load(src, i + shift))


@pytest.mark.parametrize("shift, index, lane", [(1, 8, 7), (5, 8, 3), (8, 8, 0), (9, 9, 0),
                                                (100, 100, 0), (-3, -3, 0)])
def test_out_of_bounds_names_the_first_bad_lane_and_its_index(shift, index, lane):
    """An access whose run starts past the end of the tensor was reported at index 8
    (the tensor's size) with a negative lane ("lane -92" for a shift of 100; found in
    session 19): the first bad lane is lane 0 there, at its own index."""
    src, dst = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match=f"index {index} was accessed \\(program "
                                                   f"id \\(0, 0, 0\\), lane {lane}\\)"):
        shifted_copy[(1,)](src, dst, shift, BLOCK=8)


@dsl.jit
def gather_kernel(src, idx_tensor, dst, n):
    i = dsl.arange(0, 8)
    j = dsl.load(idx_tensor, i, i < n)
    dsl.store(dst, i, dsl.load(src, j, i < n), i < n)


def test_out_of_bounds_with_computed_indices():
    src = np.arange(10, dtype=np.float32)
    dst = np.zeros(8, np.float32)
    gather_kernel(src, np.array([0, 3, 9, 2, 0, 0, 0, 0], np.int32), dst, 4)
    np.testing.assert_array_equal(dst[:4], [0, 3, 9, 2])
    dst[:] = 5
    with pytest.raises(dsl.OutOfBoundsError, match="index -1 was accessed"):
        gather_kernel(src, np.array([0, -1, 2, 3, 0, 0, 0, 0], np.int32), dst, 4)
    assert np.all(dst == 5)


@dsl.jit
def increment_in_place(x, n, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        dsl.store(x, idx, dsl.load(x, idx, idx < n) + 1.0, idx < n)


def test_in_place_kernel_rolls_back_on_error():
    """A kernel that reads what it writes runs in immediate mode; an out-of-bounds
    access late in the launch must undo the stores already made."""
    x = np.zeros(50, np.float32)
    increment_in_place[(3,)](x, 50, BLOCK=8)
    assert np.all(x == 1)
    with pytest.raises(dsl.OutOfBoundsError):
        increment_in_place[(3,)](x, 60, BLOCK=8)
    assert np.all(x == 1), "stores of the failed launch were not rolled back"


def test_stored_broadcast_view_is_rejected_before_running():
    src = np.arange(4, dtype=np.float32)
    dst = dsl.broadcast_to(np.zeros(1, np.float32), (4,))
    with pytest.raises(dsl.DSLLaunchError, match="broadcast view"):
        copy_kernel(src, dst, 4, BLOCK=4)


# ----------------------------------------------------------------------------- numerics


@dsl.jit
def int_div_mod(a, b, q, r, n):
    i = dsl.arange(0, 16)
    m = i < n
    av = dsl.load(a, i, m)
    bv = dsl.load(b, i, m, other=1)
    dsl.store(q, i, av // bv, m)
    dsl.store(r, i, av % bv, m)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_division_truncates_like_c(dtype):
    a = np.array([7, -7, 7, -7, 0, 9, -9, 2**30, -1], dtype)
    b = np.array([2, 2, -2, -2, 3, -4, 4, 7, 5], dtype)
    q, r = np.zeros_like(a), np.zeros_like(a)
    int_div_mod(a, b, q, r, a.size)
    expected_q = [int(x / y) for x, y in zip(a.tolist(), b.tolist())]  # toward zero
    np.testing.assert_array_equal(q, expected_q)
    np.testing.assert_array_equal(r, a - b * q)  # remainder has the dividend's sign
    assert list(q[:4]) == [3, -3, -3, 3] and list(r[:4]) == [1, -1, 1, -1]


@dsl.jit
def cast_kernel(x, out, n, DTYPE: dsl.constexpr):
    i = dsl.arange(0, 16)
    dsl.store(out, i, dsl.load(x, i, i < n).to(DTYPE), i < n)


def test_bf16_casts_round_to_nearest_even():
    one = 1.0
    halfway_down = one + 2**-8  # halfway between 1 and 1+2^-7: ties to even (1.0)
    halfway_up = one + 3 * 2**-8  # halfway between 1+2^-7 and 1+2^-6: ties to 1+2^-6
    above = one + 2**-8 + 2**-20  # just above halfway: rounds up
    x = np.array([halfway_down, halfway_up, above, -halfway_up, 3.0e38], np.float32)
    out = np.zeros(5, BF16)
    cast_kernel(x, out, 5, dsl.bfloat16)
    got = out.astype(np.float64)
    assert got[0] == 1.0 and got[1] == 1 + 2**-6 and got[2] == 1 + 2**-7
    assert got[3] == -(1 + 2**-6)
    assert np.isfinite(got[4]) and abs(got[4] - 3e38) <= 3e38 * 2**-8  # within bf16 range
    # truncation would give 1.0, 1+2^-7, 1.0: make sure we are not truncating
    assert not np.array_equal(got[:3], [1.0, 1 + 2**-7, 1.0])


def test_fp16_casts_round_to_nearest_even_and_float_to_int_truncates():
    x = np.array([1 + 2**-11, 1 + 3 * 2**-11, 70000.0, 2.5, -2.5], np.float32)
    out = np.zeros(5, np.float16)
    cast_kernel(x, out, 5, dsl.float16)
    np.testing.assert_array_equal(out.astype(np.float64)[:2], [1.0, 1 + 2**-9])
    assert np.isinf(out[2])
    ints = np.zeros(5, np.int32)
    cast_kernel(np.array([2.7, -2.7, 0.5, -0.5, 1e3], np.float32), ints, 5, dsl.int32)
    np.testing.assert_array_equal(ints, [2, -2, 0, 0, 1000])


@dsl.jit
def half_arith(a, b, out):
    i = dsl.arange(0, 4)
    dsl.store(out, i, dsl.load(a, i) * dsl.load(b, i) + dsl.load(a, i))


def test_16bit_arithmetic_rounds_each_op():
    a = np.array([1.0009765625, 3.0, 0.1, 1000.0], BF16)
    b = np.array([1.0009765625, 1 / 3, 0.2, 1000.0], BF16)
    out = np.zeros(4, BF16)
    half_arith(a, b, out)
    expected = ((a * b).astype(BF16) + a).astype(BF16)  # ml_dtypes: one rounding per op
    np.testing.assert_array_equal(out, expected)


# ----------------------------------------------------------------------------- loops


@dsl.jit
def partial_sums(x, partials, n, BLOCK: dsl.constexpr):
    acc = dsl.zeros((BLOCK,), dsl.float32)
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        acc = acc + dsl.load(x, idx, idx < n).to(dsl.float32)
    dsl.store(partials, dsl.program_id(0), dsl.sum(acc, axis=0))


@pytest.mark.parametrize("n,programs,block", [(1000, 7, 16), (64, 8, 32), (5, 3, 16)])
def test_loop_carried_values_with_uneven_trip_counts(n, programs, block):
    """Programs get different numbers of tiles (some none): each sums its own."""
    x = np.arange(n, dtype=np.float16) % 17
    partials = np.zeros(programs, np.float32)
    partial_sums[(programs,)](x, partials, n, BLOCK=block)
    tiles = [range(t * block, min((t + 1) * block, n)) for t in range(-(-n // block))]
    expected = [sum(float(x[i]) for t in tiles[p::programs] for i in t) for p in range(programs)]
    np.testing.assert_allclose(partials, expected, rtol=1e-6)
    assert partials.sum() == pytest.approx(float(x.astype(np.float64).sum()))


@dsl.jit
def triangle(out, n):
    pid = dsl.program_id(0)
    total = 0
    for i in range(0, pid + 1):
        total = total + i
    dsl.store(out, pid, total, pid < n)


def test_dynamic_loop_bounds_depend_on_program_id():
    out = np.zeros(10, np.int32)
    triangle[(10,)](out, 10)
    np.testing.assert_array_equal(out, [p * (p + 1) // 2 for p in range(10)])


@dsl.jit
def countdown(out):
    acc = 0
    for i in range(10, 0, -3):
        acc = acc * 100 + i
    dsl.store(out, 0, acc)


def test_negative_step_loop():
    out = np.zeros(1, np.int64)
    countdown(out)
    assert out[0] == 10070401


@dsl.jit
def row_reductions(x, sums, maxs, mins, ROWS: dsl.constexpr, COLS: dsl.constexpr):
    r = dsl.arange(0, ROWS)
    c = dsl.arange(0, COLS)
    v = dsl.load(x, r[:, None] * COLS + c[None, :])
    dsl.store(sums, r, dsl.sum(v, axis=1))
    dsl.store(maxs, r, dsl.max(v, axis=1))
    dsl.store(mins, r, dsl.min(v, axis=1))


def test_reductions_along_an_axis():
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float16)
    sums, maxs, mins = np.zeros(4, np.float32), np.zeros(4, np.float16), np.zeros(4, np.float16)
    row_reductions(x, sums, maxs, mins, 4, 8)
    np.testing.assert_allclose(sums, x.astype(np.float32).sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(maxs, x.max(axis=1))
    np.testing.assert_array_equal(mins, x.min(axis=1))
    assert "float32" in str(row_reductions.ir(x, sums, maxs, mins, 4, 8)).split("reduce")[1]


# ----------------------------------------------------------------------------- layouts


@dsl.jit
def scale_by(x, w, out, n, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        m = idx < n
        dsl.store(out, idx, dsl.load(x, idx, m) * dsl.load(w, idx, m), m)


def _load_offset_ops(fn, tensor):
    load = next(op for op in fn.walk() if op.kind == "load" and op.tensor == tensor)
    index, offset = load.index, load.offset
    return index, offset


def test_broadcast_operands_get_simple_offsets_and_are_not_copied():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    out = np.zeros((4, 6), np.float32)
    cases = {
        "scalar": (np.array(2.0, np.float32), "const"),
        "per-channel": (np.arange(6, dtype=np.float32), "mod"),
        "contiguous": (np.ones((4, 6), np.float32) * 3, None),
    }
    for name, (w, offset_kind) in cases.items():
        wv = dsl.broadcast_to(w, (4, 6))
        assert np.shares_memory(wv.buffer, w), name
        scale_by(x, wv, out, 24, BLOCK=8)
        np.testing.assert_array_equal(out, x * np.broadcast_to(w, (4, 6)), err_msg=name)
        fn = scale_by.ir(x, wv, out, 24, BLOCK=8)
        index, offset = _load_offset_ops(fn, "w")
        if offset_kind is None:
            assert offset is index, "a contiguous load must use the index directly"
        else:
            assert offset.owner.kind == offset_kind, (name, offset.owner.kind)
            if offset_kind == "mod":  # idx % C: no division for the innermost dim
                assert offset.owner.operands[0] is index


def test_layout_classes():
    a = np.zeros((4, 5, 6), np.float32)
    assert dsl.as_view(a).coalesced().layout.kind == "contiguous"
    assert dsl.as_view(a[:, 1:3]).coalesced().layout.kind == "strided"
    assert str(dsl.broadcast_to(np.zeros(6, np.float32), (4, 5, 6)).coalesced().layout) \
        == "strided[0,1]"
    assert dsl.broadcast_to(np.zeros((), np.float32), (4, 5, 6)).coalesced().layout.kind \
        == "scalar"
    per_channel = dsl.broadcast_to(np.zeros((5, 1), np.float32), (4, 5, 6))
    c = per_channel.coalesced()
    assert c.sizes == (4, 5, 6) and str(c.layout) == "strided[0,1,0]"
    neg = dsl.as_view(a[::-1, :, ::2])
    assert neg.coalesced().layout.has_base


def test_negative_and_odd_strides_read_correctly():
    base = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    for view in (base[::-1], base[:, ::-2, 1::2], base.transpose(2, 0, 1), base[..., 3]):
        out = np.zeros(view.shape, np.float32)
        scale_by(view, np.array(2.0, np.float32) * np.ones(view.shape, np.float32), out,
                 view.size, BLOCK=16)
        np.testing.assert_array_equal(out, view * 2)


# ----------------------------------------------------------------------------- batching


@dsl.jit
def one_tile_per_program(x, out, n, BLOCK: dsl.constexpr):
    idx = dsl.program_id(0) * BLOCK + dsl.arange(0, BLOCK)
    dsl.store(out, idx, dsl.load(x, idx, idx < n) * 2, idx < n)


def test_programs_run_batched_not_one_python_call_each(monkeypatch):
    calls = []
    original = interpreter.Interpreter.run_block

    def counting(self, block, frame):
        if not self.checking:  # count the real run, not the bounds pre-pass
            calls.append(frame.size)
        return original(self, block, frame)

    monkeypatch.setattr(interpreter.Interpreter, "run_block", counting)
    n = 100_000
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    programs = -(-n // 16)
    one_tile_per_program[(programs,)](x, out, n, BLOCK=16)
    np.testing.assert_array_equal(out, x * 2)
    assert len(calls) < 20, f"{len(calls)} block evaluations for {programs} programs"
    assert sum(calls) == programs

    calls.clear()
    copy_kernel[(40,)](x, out, n, BLOCK=64)  # 1563 tiles over 40 programs
    np.testing.assert_array_equal(out, x)
    assert len(calls) < 20, f"{len(calls)} block evaluations for a 1563-tile loop"


@dsl.jit
def grid_3d(out):
    x, y, z = dsl.program_id(0), dsl.program_id(1), dsl.program_id(2)
    nx, ny = dsl.num_programs(0), dsl.num_programs(1)
    dsl.store(out, (z * ny + y) * nx + x, x * 100 + y * 10 + z)


def test_three_dimensional_grid():
    out = np.zeros(2 * 3 * 4, np.int32)
    grid_3d[(2, 3, 4)](out)
    expected = [x * 100 + y * 10 + z for z in range(4) for y in range(3) for x in range(2)]
    np.testing.assert_array_equal(out, expected)


# ----------------------------------------------------------------------------- journal modes


@dsl.jit
def bump_then_scatter(x, idx, n):
    i = dsl.arange(0, 8)
    m = i < n
    dsl.store(x, i, dsl.load(x, i, m) + 1.0, m)  # valid, written first
    dsl.store(x, dsl.load(idx, i, m), 0.0, m)  # data-dependent, may be out of bounds


def test_undo_mode_rolls_back_earlier_stores():
    """Data-dependent indices cannot be proved ahead, and the kernel reads what it
    writes: stores go straight to memory and are undone on error."""
    x = np.arange(8, dtype=np.float32)
    bump_then_scatter(x, np.array([7, 6, 5, 4, 3, 2, 1, 0], np.int32), 8)
    np.testing.assert_array_equal(x, np.zeros(8))
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="tensor 'x' has 8 elements but index 8"):
        bump_then_scatter(x, np.array([0, 1, 2, 3, 4, 5, 6, 8], np.int32), 8)
    np.testing.assert_array_equal(x, np.arange(8))


@dsl.jit
def gather_tiles(src, perm, dst, n, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        i = start + dsl.arange(0, BLOCK)
        m = i < n
        dsl.store(dst, i, dsl.load(src, dsl.load(perm, i, m), m), m)


def test_a_gather_writes_nothing_when_a_late_tile_fails():
    # the pre-pass loads perm itself (``prepass.gather_slice``) and finds the bad index
    # before anything is written
    n = 3_000_000  # several chunks
    src = np.arange(n, dtype=np.float32)
    perm = np.arange(n, dtype=np.int32)[::-1].copy()
    dst = np.zeros(n, np.float32)
    gather_tiles[(8,)](src, perm, dst, n, BLOCK=4096)
    np.testing.assert_array_equal(dst, src[::-1])
    perm[-1] = n  # out of bounds in the very last tile
    dst[:] = -1
    with pytest.raises(dsl.OutOfBoundsError, match=f"index {n} was accessed"):
        gather_tiles[(8,)](src, perm, dst, n, BLOCK=4096)
    assert np.all(dst == -1)


def _interpreter(kernel, args, kwargs, grid):
    from lowering.interpreter import Interpreter

    return Interpreter(kernel.prepare(args, kwargs, grid))


def test_the_pre_pass_loads_gather_indices_and_stores_go_straight_to_memory():
    n = 5000
    src, perm = np.arange(n, dtype=np.float32), np.arange(n, dtype=np.int32)[::-1].copy()
    interp = _interpreter(gather_tiles, (src, perm, np.zeros(n, np.float32), n),
                          {"BLOCK": 1024}, (4,))
    assert interp.data_loads and interp.journal.mode == "direct"
    assert interp.prove_in_bounds()


def test_a_gather_proof_is_not_reused_for_other_index_data():
    # proofs are cached by sizes and scalars; one that read index data must not be
    n = 5000
    src, perm = np.arange(n, dtype=np.float32), np.arange(n, dtype=np.int32)
    dst = np.zeros(n, np.float32)
    for _ in range(2):
        gather_tiles[(4,)](src, perm, dst, n, BLOCK=1024)
    np.testing.assert_array_equal(dst, src)
    perm[1234] = -1
    dst[:] = 5
    with pytest.raises(dsl.OutOfBoundsError, match="index -1 was accessed"):
        gather_tiles[(4,)](src, perm, dst, n, BLOCK=1024)
    assert np.all(dst == 5)


def test_gather_indices_sharing_memory_with_an_output_take_the_journal():
    n = 4096
    perm = np.arange(n, dtype=np.int32)[::-1].copy()  # also the output: each lane
    src = np.arange(n, dtype=np.int32) * 3  # reads its index, then writes there
    interp = _interpreter(gather_tiles, (src, perm, perm, n), {"BLOCK": 1024}, (4,))
    assert interp.index_slice is None and interp.journal.mode != "direct"
    gather_tiles[(4,)](src, perm, perm, n, BLOCK=1024)
    np.testing.assert_array_equal(perm, src[::-1])


@dsl.jit
def scatter_tiles(src, perm, dst, n, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        i = start + dsl.arange(0, BLOCK)
        m = i < n
        dsl.store(dst, dsl.load(perm, i, m), dsl.load(src, i, m), m)


def test_data_dependent_store_indices_still_defer_their_stores():
    n = 5000
    src, perm = np.arange(n, dtype=np.float32), np.arange(n, dtype=np.int32)[::-1].copy()
    dst = np.zeros(n, np.float32)
    interp = _interpreter(scatter_tiles, (src, perm, dst, n), {"BLOCK": 1024}, (4,))
    assert interp.index_slice is None and interp.journal.mode == "deferred"
    perm[-1] = n
    with pytest.raises(dsl.OutOfBoundsError):
        scatter_tiles[(4,)](src, perm, dst, n, BLOCK=1024)
    assert np.all(dst == 0)


@dsl.jit
def carried_gather(src, perm, out, n, BLOCK: dsl.constexpr):
    # the gather index is carried by the loop: the pre-pass would need the loop's
    # whole computation, so the launch keeps the journal
    j = dsl.load(perm, dsl.arange(0, BLOCK))
    acc = dsl.zeros((BLOCK,), dsl.float32)
    for _ in range(0, n):
        acc += dsl.load(src, j)
        j = dsl.load(perm, j)
    dsl.store(out, dsl.arange(0, BLOCK), acc)


def test_indices_a_loop_carries_are_not_gathered_ahead():
    perm = np.array([1, 2, 3, 0], np.int32)
    src = np.array([1.0, 10.0, 100.0, 1000.0], np.float32)
    out = np.zeros(4, np.float32)
    interp = _interpreter(carried_gather, (src, perm, out, 3), {"BLOCK": 4}, (1,))
    assert interp.index_slice is None
    carried_gather[(1,)](src, perm, out, 3, BLOCK=4)
    np.testing.assert_array_equal(out, [1110.0, 1101.0, 1011.0, 111.0])


@dsl.jit
def every_tile_writes_the_front(x, out, n, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        lanes = dsl.arange(0, BLOCK)
        dsl.store(out, lanes, dsl.load(x, start + lanes, start + lanes < n))


def test_overlapping_stores_keep_program_order():
    """Stores that hit the same elements from many tiles are not run in parallel:
    with one program the last tile wins, as in a sequential loop."""
    n, block = 4_000_000, 1024
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(block, np.float32)
    every_tile_writes_the_front[(1,)](x, out, n, BLOCK=block)
    last = (n - 1) // block * block
    expected = np.where(last + np.arange(block) < n, last + np.arange(block), 0)
    np.testing.assert_array_equal(out, expected)


def test_threads_do_not_change_results(monkeypatch):
    rng = np.random.default_rng(0)
    n = 5_000_001
    x = rng.uniform(0.01, 0.99, n).astype(np.float32)
    y = rng.uniform(0, 1, n).astype(ml_dtypes.bfloat16)
    results = []
    for workers in (1, 2, 3):
        monkeypatch.setenv("DSL_INTERPRETER_THREADS", str(workers))
        out = np.zeros(n, np.float16)
        import ops

        ops.binary_cross_entropy_backward(np.array(0.5, np.float32), x, y, None, "sum", out=out)
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


def test_fast_float16_cast_is_bit_identical_to_numpy():
    rng = np.random.default_rng(1)
    special = np.array([0.0, -0.0, 2**-14, -(2**-14), 2**-24, 2**-25, 3 * 2**-25, 2**-26,
                        65504.0, 65520.0, 1e9, -1e9, np.inf, -np.inf, np.nan,
                        2**-14 * (1 - 2**-12)], np.float32)
    for values in (special, (rng.standard_normal(100_000) * 1e-6).astype(np.float32),
                   rng.standard_normal(100_000) * 1e-5, rng.standard_normal(100_000) * 1e3):
        with np.errstate(all="ignore"):
            ours = numerics._to_float16(values)
            theirs = values.astype(np.float16)
        np.testing.assert_array_equal(ours.view(np.uint16), theirs.view(np.uint16))


@dsl.jit
def other_per_lane_1d(x, out, n, BLOCK: dsl.constexpr):
    idx = dsl.arange(0, BLOCK)
    dsl.store(out, idx, dsl.load(x, idx, idx < n, other=idx.to(dsl.float32) + 100.0))


@dsl.jit
def other_per_lane_2d(x, out, n, R: dsl.constexpr, C: dsl.constexpr):
    r = dsl.arange(0, R)[:, None]
    c = dsl.arange(0, C)[None, :]
    i = r * C + c
    dsl.store(out, i, dsl.load(x, i, (r < n) & (c < n), other=i.to(dsl.float32) + 100.0))


def test_a_masked_load_fills_each_lane_with_its_own_other():
    """``other`` may be a block: masked-off lanes take their own element of it (the
    contiguous, strided and replayed paths once filled them all with the first)."""
    for _ in range(2):  # the second launch replays the first's plan
        x, out = np.zeros(8, np.float32), np.zeros(8, np.float32)
        other_per_lane_1d[(1,)](x, out, 4, BLOCK=8)
        np.testing.assert_array_equal(out, [0, 0, 0, 0, 104, 105, 106, 107])
    x, out = np.zeros(16, np.float32), np.zeros(16, np.float32)
    other_per_lane_2d[(1,)](x, out, 2, R=4, C=4)
    expected = np.arange(16, dtype=np.float32) + 100
    expected.reshape(4, 4)[:2, :2] = 0
    np.testing.assert_array_equal(out, expected)


# ----------------------------------------------------------------------------- argmax and max


@dsl.jit
def extremes(x, idx_out, val_out, n_cols, LARGEST: dsl.constexpr, BLOCK: dsl.constexpr):
    """Per row: the index of the first extreme and the NaN-ignoring extreme itself."""
    r = dsl.program_id(0)
    cols = dsl.arange(0, BLOCK)
    v = dsl.load(x, r * n_cols + cols)
    if LARGEST:
        dsl.store(idx_out, r + cols * 0, dsl.argmax(v, 0), cols == 0)
        dsl.store(val_out, r + cols * 0, dsl.max(v, 0), cols == 0)
    else:
        dsl.store(idx_out, r + cols * 0, dsl.argmin(v, 0), cols == 0)
        dsl.store(val_out, r + cols * 0, dsl.min(v, 0), cols == 0)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype,nan", [(np.float32, False), (np.float32, True),
                                       (np.float16, False), (np.float16, True),
                                       (BF16, False), (BF16, True), (np.int32, False)])
def test_a_max_of_what_an_argmax_folded_is_the_reduce_bit_for_bit(largest, dtype, nan,
                                                                   monkeypatch):
    """``max(v)`` after ``argmax(v)`` takes the extremes the fold picked
    (``Interpreter._extremes_already_found``): the same bits as the reduce
    (``numerics.max_ignoring_nan``) in rows of ties and signed zeros (-0.0 and +0.0
    both extreme). A batch with a
    NaN reduces as usual: the fold's NaN resets it, and the reduce ignores NaNs."""
    rng = np.random.default_rng(21)
    x = rng.integers(-3, 4, (8, 16)).astype(dtype)
    if dtype != np.int32:
        sign = 1 if largest else -1
        x[0] = -sign * np.abs(x[0]) - 1
        x[0, [3, 9]] = [-0.0, 0.0]  # the extreme is a zero of either sign
        x[3] = np.where(np.arange(16) % 5 == 1, x[3], -sign * 7)
        x[3, [2, 11]] = [0.0, -0.0]
    if nan:
        x[1, 5] = np.nan
        x[2] = np.nan
        x[4] = -sign * 2  # the extreme comes before a NaN, which resets the fold
        x[4, 0], x[4, 1] = sign * 9, np.nan
    x.setflags(write=False)  # a read-only operand: the fold reads it without a copy
    found = []
    real = interpreter.Interpreter.__dict__["_extremes_already_found"].__func__

    def spy(op, frame, arr):
        found.append(real(op, frame, arr))
        return found[-1]

    def launch():
        idx, val = np.empty(8, np.int32), np.empty(8, dtype)
        extremes[(8,)](x, idx, val, 16, LARGEST=largest, BLOCK=16)
        return idx, val

    monkeypatch.setattr(interpreter.Interpreter, "_extremes_already_found", staticmethod(spy))
    idx, val = launch()
    used = [f is not None for f in found]
    assert used and (not any(used) if nan else all(used)), "the fold's extremes, without NaN"
    monkeypatch.setattr(interpreter.Interpreter, "_extremes_already_found",
                        staticmethod(lambda op, frame, arr: None))
    idx2, val2 = launch()
    np.testing.assert_array_equal(idx, idx2)
    np.testing.assert_array_equal(val.view(np.uint8), val2.view(np.uint8))
    # the plain reduce (its fold order: test_language's reductions tests)
    reduce = numerics.max_ignoring_nan if largest else numerics.min_ignoring_nan
    np.testing.assert_array_equal(val.view(np.uint8), reduce(x, 1, x.dtype).view(np.uint8))
    # every dtype folds the same way (a NaN resets the fold), bfloat16 included
    wide = x.astype(np.float64) if dtype != np.int32 else x
    np.testing.assert_array_equal(idx, numerics.arg_fold(wide, 1, largest, True)[1])


@dsl.jit
def argmax_then_max_of_another_value(x, idx_out, val_out, BLOCK: dsl.constexpr):
    """``v`` dies in ``v * 2.0`` (whose result may take its buffer): the max is of
    ``w``, a different value, not of what the argmax folded."""
    r = dsl.program_id(0)
    cols = dsl.arange(0, BLOCK)
    v = dsl.load(x, r * BLOCK + cols) + 0.0
    i = dsl.argmax(v, 0)
    w = v * 2.0
    dsl.store(idx_out, r + cols * 0, i, cols == 0)
    dsl.store(val_out, r + cols * 0, dsl.max(w, 0), cols == 0)


def test_a_max_of_another_value_in_the_folded_operands_buffer_is_its_own():
    x = np.random.default_rng(22).standard_normal((4, 32)).astype(np.float32)
    idx, val = np.empty(4, np.int32), np.empty(4, np.float32)
    argmax_then_max_of_another_value[(4,)](x, idx, val, BLOCK=32)
    np.testing.assert_array_equal(idx, np.argmax(x, axis=1))
    np.testing.assert_array_equal(val, (x * np.float32(2.0)).max(axis=1))


@dsl.jit
def box_and_a_program_condition(out, n, R: dsl.constexpr, C: dsl.constexpr):
    rows, cols = dsl.arange(0, R)[:, None], dsl.arange(0, C)[None, :]
    inside = (rows < R) & (cols < C - 1)
    dsl.store(out, rows * C + cols, 1, inside & (dsl.program_id(0) < n))
    dsl.store(out, R * C + rows * C + cols, 1, (dsl.program_id(0) < n) & inside)


@pytest.mark.parametrize("n", [0, 1])
def test_a_box_mask_and_a_per_program_condition_keep_every_row(n):
    """``(rows < R) & (cols < C) & (pid < n)`` is a box ANDed with a one-lane condition
    broadcast over the block; the condition's bound (1: valid) was taken as "the first
    lane" along the rows, so only row 0 was stored (FlagGems' kron wrote one row of six;
    found in session 20)."""
    out = np.zeros(2 * 4 * 8, np.int32)
    box_and_a_program_condition[(1,)](out, n, R=4, C=8)
    want = np.zeros((4, 8), np.int32)
    want[:, :7] = n
    np.testing.assert_array_equal(out.reshape(2, 4, 8), [want, want])
