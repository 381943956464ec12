"""Loops that only accumulate dots (``acc = dot(a, b, acc)`` over k tiles) and loads
read only as dot operands: the interpreter computes every step's tiles at once
(``Interpreter._for_dot_sums``) and may read a float32 copy of a float16 tensor
(``Interpreter._widened``). Both are speed-ups only: every result must be bit for
bit what the step-by-step loop gives, and every check must still fire."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from test_gallery import ex

import dsl
from lowering import interpreter


@dsl.jit
def matmul_kernel(a, b, c, M, N, K, BM: dsl.constexpr, BN: dsl.constexpr, BK: dsl.constexpr):
    pid = dsl.program_id(0)
    tiles_n = dsl.cdiv(N, BN)
    rm = (pid // tiles_n) * BM + dsl.arange(0, BM)
    rn = (pid % tiles_n) * BN + dsl.arange(0, BN)
    acc = dsl.zeros((BM, BN), c.dtype)
    for k0 in range(0, K, BK):
        rk = k0 + dsl.arange(0, BK)
        ta = dsl.load(a, rm[:, None] * K + rk[None, :], (rm[:, None] < M) & (rk[None, :] < K), 0.0)
        tb = dsl.load(b, rk[:, None] * N + rn[None, :], (rk[:, None] < K) & (rn[None, :] < N), 0.0)
        acc = dsl.dot(ta, tb, acc, out_dtype=c.dtype)
    dsl.store(c, rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) & (rn[None, :] < N))


@dsl.jit
def two_accumulators(a, b, c, d, K, BK: dsl.constexpr):
    """Two dots per step, one shared operand, a tile that no program id changes."""
    r = dsl.arange(0, 16)
    acc = dsl.zeros((16, 16), dsl.float32)
    acc2 = dsl.zeros((16, 16), dsl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + dsl.arange(0, BK)
        ta = dsl.load(a, r[:, None] * K + rk[None, :])
        tb = dsl.load(b, rk[:, None] * 16 + r[None, :])
        acc = dsl.dot(ta, tb, acc)
        acc2 = dsl.dot(ta, tb * 2.0, acc2)
    p = dsl.program_id(0)
    dsl.store(c, p * 256 + r[:, None] * 16 + r[None, :], acc)
    dsl.store(d, p * 256 + r[:, None] * 16 + r[None, :], acc2)


@dsl.jit
def scaled_accumulator(a, b, c, K, BK: dsl.constexpr):
    """The accumulator is read by more than the dot: not a dot-only loop."""
    r = dsl.arange(0, 16)
    acc = dsl.zeros((16, 16), dsl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + dsl.arange(0, BK)
        acc = dsl.dot(dsl.load(a, r[:, None] * K + rk[None, :]),
                      dsl.load(b, rk[:, None] * 16 + r[None, :]), acc) * 0.5
    dsl.store(c, r[:, None] * 16 + r[None, :], acc)


@pytest.fixture
def step_by_step(monkeypatch):
    """Runs a launch with the dot-loop path and the widened loads switched off."""
    def run(launch):
        with monkeypatch.context() as m:
            m.setattr(interpreter, "dot_accumulation", lambda op: None)
            m.setattr(interpreter.Interpreter, "_widened",
                      lambda self, op, tensor, rows: tensor.buffer)
            interpreter._FACTS.clear()
            launch()
        interpreter._FACTS.clear()
    return run


def _operands(rng, m, n, k, dtype):
    if dtype == np.int8:
        return (rng.integers(-128, 128, (m, k)).astype(np.int8),
                rng.integers(-128, 128, (k, n)).astype(np.int8))
    return (rng.standard_normal((m, k)).astype(dtype),
            rng.standard_normal((k, n)).astype(dtype))


CASES = {  # name -> (operand dtype, accumulator dtype, M, N, K, BK)
    "fp16 in, fp32 acc": (np.float16, np.float32, 96, 80, 200, 32),
    "bf16 in, fp32 acc": (ml_dtypes.bfloat16, np.float32, 64, 64, 128, 32),
    "fp32 in, fp32 acc, ragged k": (np.float32, np.float32, 70, 50, 77, 16),
    "fp16 in, fp16 acc": (np.float16, np.float16, 64, 48, 96, 16),
    "int8 in, int32 acc": (np.int8, np.int32, 48, 64, 160, 32),
}


@pytest.mark.parametrize("name", CASES)
def test_a_dot_loop_gives_the_bits_of_the_step_by_step_loop(name, step_by_step):
    dtype, acc_dtype, m, n, k, bk = CASES[name]
    a, b = _operands(np.random.default_rng(7), m, n, k, dtype)
    grid = (-(-m // 32) * -(-n // 16),)
    fast, slow = np.empty((m, n), acc_dtype), np.empty((m, n), acc_dtype)
    matmul_kernel[grid](a, b, fast, m, n, k, BM=32, BN=16, BK=bk)
    step_by_step(lambda: matmul_kernel[grid](a, b, slow, m, n, k, BM=32, BN=16, BK=bk))
    np.testing.assert_array_equal(fast.view(np.uint8), slow.view(np.uint8))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    if acc_dtype == np.int32:
        np.testing.assert_array_equal(fast, exact.astype(np.int64).astype(np.int32))
    else:
        assert np.allclose(fast, exact, rtol=0, atol=2 * k * np.finfo(acc_dtype).eps *
                           (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))).max())


def test_the_dot_loop_path_runs_for_a_matmul_loop_and_not_for_other_loops(monkeypatch):
    taken = []
    original = interpreter.Interpreter._for_dot_sums

    def recording(self, op, *args):
        taken.append(op)
        return original(self, op, *args)

    monkeypatch.setattr(interpreter.Interpreter, "_for_dot_sums", recording)
    read = []
    widened = interpreter.Interpreter._widened

    def reading(self, op, tensor, rows):
        buffer = widened(self, op, tensor, rows)
        read.append((op.tensor, buffer.dtype))
        return buffer

    monkeypatch.setattr(interpreter.Interpreter, "_widened", reading)
    rng = np.random.default_rng(1)
    a, b = _operands(rng, 32, 16, 64, np.float16)
    c = np.empty((32, 16), np.float32)
    matmul_kernel[(1,)](a, b, c, 32, 16, 64, BM=32, BN=16, BK=16)
    assert len(taken) == 1
    assert sorted(read) == [("a", np.float32), ("b", np.float32)], \
        "both float16 operands are read through one float32 copy each"
    a16, b16 = rng.standard_normal((16, 64)).astype(np.float32), \
        rng.standard_normal((64, 16)).astype(np.float32)
    out = np.empty((16, 16), np.float32)
    scaled_accumulator[(1,)](a16, b16, out, 64, BK=16)
    assert len(taken) == 1, "an accumulator read by more than its dot is a plain loop"
    expected = np.zeros((16, 16), np.float32)
    for k0 in range(0, 64, 16):
        expected = (a16[:, k0:k0 + 16] @ b16[k0:k0 + 16] + expected) * np.float32(0.5)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_two_accumulators_and_a_program_independent_tile(step_by_step):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 96)).astype(np.float16)
    b = rng.standard_normal((96, 16)).astype(np.float16)
    outs = [np.empty(3 * 256, np.float32) for _ in range(4)]
    two_accumulators[(3,)](a, b, outs[0], outs[1], 96, BK=32)
    step_by_step(lambda: two_accumulators[(3,)](a, b, outs[2], outs[3], 96, BK=32))
    np.testing.assert_array_equal(outs[0].view(np.uint32), outs[2].view(np.uint32))
    np.testing.assert_array_equal(outs[1].view(np.uint32), outs[3].view(np.uint32))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(outs[1].reshape(3, 16, 16)[2], 2 * exact, rtol=1e-3, atol=1e-2)


def test_an_out_of_bounds_tile_in_a_dot_loop_names_the_argument():
    a = np.ones((32, 64), np.float16)
    b = np.ones((64, 16), np.float16)
    c = np.full((32, 16), -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="tensor 'a'"):
        matmul_kernel[(1,)](a, b, c, 32, 16, 80, BM=32, BN=16, BK=16)  # K past a's columns
    assert np.all(c == -1.0), "nothing is written"


@dsl.jit
def dot_into_its_operand(a, b, K, BK: dsl.constexpr):
    """Writes the product over ``a`` itself: ``a`` may not be read through a copy."""
    r = dsl.arange(0, 16)
    acc = dsl.zeros((16, 16), dsl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + dsl.arange(0, BK)
        acc = dsl.dot(dsl.load(a, r[:, None] * K + rk[None, :]),
                      dsl.load(b, rk[:, None] * 16 + r[None, :]), acc)
    dsl.store(a, r[:, None] * K + r[None, :], acc.to(dsl.float16))


def test_a_tensor_the_launch_writes_is_not_read_through_a_float32_copy(step_by_step):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 32)).astype(np.float16)
    b = rng.standard_normal((32, 16)).astype(np.float16)
    fast, slow = a.copy(), a.copy()
    dot_into_its_operand[(1,)](fast, b, 32, BK=16)
    step_by_step(lambda: dot_into_its_operand[(1,)](slow, b, 32, BK=16))
    np.testing.assert_array_equal(fast.view(np.uint16), slow.view(np.uint16))
    np.testing.assert_allclose(fast[:, :16], (a.astype(np.float32) @ b.astype(np.float32)
                                              ).astype(np.float16), rtol=2e-3, atol=2e-3)


# -- distinct tiles (``lowering.tiles``, ``numerics.dot_steps_shared``)

# the gallery's matmul: programs walk the output tiles GROUP_M block rows at a time, so
# the tiles' bases do not step evenly from one program to the next
grouped_matmul = ex.matmul.matmul_kernel


@dsl.jit
def rotating_matmul(a, b, c, T: dsl.constexpr, BK: dsl.constexpr):
    """Program p multiplies block row (p + step) % T of ``a``: the rows pair other
    tiles at every step (no fixed grid of tile pairs)."""
    p = dsl.program_id(0)
    r = dsl.arange(0, 16)
    acc = dsl.zeros((16, 16), dsl.float32)
    for k0 in range(0, 64, BK):
        rk = k0 + dsl.arange(0, BK)
        row = ((p + k0 // BK) % T) * 16 + r
        acc = dsl.dot(dsl.load(a, row[:, None] * 64 + rk[None, :]),
                      dsl.load(b, rk[:, None] * 16 + r[None, :]), acc)
    dsl.store(c, p * 256 + r[:, None] * 16 + r[None, :], acc)


def _spy(monkeypatch, owner, name):
    """Counts the calls of ``owner.name`` (the calls still run)."""
    calls = []
    original = getattr(owner, name)

    def counting(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return calls


@pytest.mark.parametrize("chunk,table", [(1 << 20, None), (1 << 14, None), (1 << 14, 12000)])
def test_programs_read_each_distinct_tile_once_and_get_the_step_by_step_bits(
        chunk, table, monkeypatch, step_by_step):
    """A grouped 6x5-tile matmul with ragged edges, in one chunk of rows and in
    several (tiles that an earlier chunk read are not read again); with a table
    too small for every tile, later chunks load their own."""
    from lowering import tiles
    monkeypatch.setattr(interpreter, "CHUNK_ELEMENTS", chunk)
    if table:
        monkeypatch.setattr(tiles, "TABLE_ELEMENTS", table)
    rng = np.random.default_rng(11)
    m, n, k, bm, bn, bk = 90, 75, 100, 16, 16, 32
    a, b = _operands(rng, m, n, k, np.float16)
    grid = (-(-m // bm) * -(-n // bn),)
    read = []
    add = interpreter.SharedTiles.add

    refused = []

    def counting(self, first, tile, keys, reader, elements):
        read.append(len(keys))
        got = add(self, first, tile, keys, lambda rows: (read.append(-rows.shape[0]),
                                                         reader(rows))[1], elements)
        refused.append(got is None)
        return got

    monkeypatch.setattr(interpreter.SharedTiles, "add", counting)
    products = _spy(monkeypatch, interpreter, "dot_steps_shared")
    fast, slow = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
    grouped_matmul[grid](a, b, fast, BM=bm, BN=bn, BK=bk, GROUP_M=4)
    assert len(products) == 1, "one product loop for every deferred chunk's rows"
    steps, tiles_m, tiles_n = -(-k // bk), -(-m // bm), -(-n // bn)
    loaded = -sum(r for r in read if r < 0)
    if table:
        assert loaded * bm * bk < 2 * table, "the tables stop growing at their bound"
        assert any(refused) and not all(refused)
    else:
        assert loaded == steps * (tiles_m + tiles_n), "each distinct tile of a and b read once"
    if chunk < 1 << 20:
        assert sum(r > 0 for r in read) > 2, "several chunks"
    monkeypatch.setattr(interpreter.SharedTiles, "add", add)
    step_by_step(lambda: grouped_matmul[grid](a, b, slow, BM=bm, BN=bn, BK=bk, GROUP_M=4))
    np.testing.assert_array_equal(fast.view(np.uint32), slow.view(np.uint32))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(fast - exact).max() < 2 * k * 2.0**-24 * np.abs(exact).max() + 1e-3


def test_rows_that_pair_other_tiles_at_every_step_multiply_row_by_row(step_by_step):
    rng = np.random.default_rng(12)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 16)).astype(np.float32)
    fast, slow = np.empty(8 * 256, np.float32), np.empty(8 * 256, np.float32)
    rotating_matmul[(8,)](a, b, fast, T=4, BK=16)
    step_by_step(lambda: rotating_matmul[(8,)](a, b, slow, T=4, BK=16))
    np.testing.assert_array_equal(fast.view(np.uint32), slow.view(np.uint32))
    expected = np.zeros((8, 16, 16))
    for p in range(8):
        for s in range(4):
            row = (p + s) % 4
            expected[p] += a[row * 16:(row + 1) * 16, s * 16:(s + 1) * 16].astype(np.float64) \
                @ b[s * 16:(s + 1) * 16].astype(np.float64)
    np.testing.assert_allclose(fast.reshape(8, 16, 16), expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype,acc_dtype", [(np.float32, np.float32), (np.float16, np.float16),
                                             (np.int8, np.int32)])
@pytest.mark.parametrize("pairing", ["grid", "shuffled"])
@pytest.mark.parametrize("bands", [1, 3])
def test_dot_steps_shared_is_dot_steps_bit_for_bit(dtype, acc_dtype, pairing, bands):
    from dsl.numerics import dot_steps, dot_steps_shared
    from lowering import workers
    ran: list[int] = []

    def run_all(tasks):  # the interpreter's worker threads, counted
        ran.append(len(tasks))
        workers.run_all(tasks, 2)
    rng = np.random.default_rng(13)
    steps, na, nb = 3, 4, 5
    rows = na * nb
    a_tiles = (rng.standard_normal((steps * na, 8, 16)) * 3).astype(dtype)
    b_tiles = (rng.standard_normal((steps * nb, 16, 8)) * 3).astype(dtype)
    pairs = np.array([(i, j) for i in range(na) for j in range(nb)])
    a_of = np.concatenate([s * na + pairs[:, 0] for s in range(steps)])
    b_of = np.concatenate([s * nb + pairs[:, 1] for s in range(steps)])
    if pairing == "shuffled":  # each step pairs the rows differently
        a_of = np.concatenate([s * na + rng.permutation(pairs[:, 0]) for s in range(steps)])
    acc = (rng.standard_normal((rows, 8, 8)) * 3).astype(acc_dtype)
    shared = dot_steps_shared(a_tiles, a_of, b_tiles, b_of, acc, steps, bands, run_all)
    plain = dot_steps(a_tiles[a_of], b_tiles[b_of], acc, steps)
    assert shared.dtype == plain.dtype == acc_dtype
    # float32 grids are cut into bands of block rows run on threads; other dtypes, and
    # steps that pair the rows differently (no grid), are not
    assert ran == ([3] if bands == 3 and acc_dtype == np.float32 and pairing == "grid"
                   else [])
    np.testing.assert_array_equal(shared.view(np.uint8), plain.view(np.uint8))


def test_a_borrowed_buffer_is_nobody_elses_until_it_is_given_back():
    """``lowering.buffers.borrow``: a launch-long buffer (the float32 copy of a dot
    operand) may be read by any worker thread while another launch runs on the same
    threads, so a second borrow of the key gets another buffer until the first is
    given back; then the kept one comes back, for the same shape and dtype only."""
    from lowering import buffers
    key = ("test", object())
    first = buffers.borrow(key, (4, 8), np.dtype(np.float32))
    second = buffers.borrow(key, (4, 8), np.dtype(np.float32))
    assert not np.shares_memory(first, second)
    buffers.give_back(key, first)
    assert buffers.borrow(key, (4, 8), np.dtype(np.float32)) is first
    buffers.give_back(key, first)
    other = buffers.borrow(key, (4, 8), np.dtype(np.float64))
    assert other is not first and other.dtype == np.float64
    assert buffers.borrow(key, (4, 8), np.dtype(np.float32)) is not first, \
        "the kept buffer left the pool with the mismatched borrow"


def _big_fp16_operands(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((128, 96)).astype(np.float16),
            rng.standard_normal((96, 80)).astype(np.float16))


def test_repeated_and_concurrent_launches_reuse_no_buffer_another_one_still_reads(
        step_by_step, monkeypatch):
    """The float32 copies of the operands are borrowed per launch and the tiles, the
    accumulator grid and the products are per-thread scratch reused from launch to
    launch: new data each launch, and launches from two threads at once on the shared
    worker threads, still give every launch the step-by-step bits."""
    import threading
    m, n, k = 128, 80, 96
    grid = (-(-m // 32) * -(-n // 16),)
    inputs = [_big_fp16_operands(seed) for seed in range(6)]
    expected = []
    for a, b in inputs:
        slow = np.empty((m, n), np.float32)
        step_by_step(lambda a=a, b=b, slow=slow: matmul_kernel[grid](
            a, b, slow, m, n, k, BM=32, BN=16, BK=32))
        expected.append(slow)
    widened = []  # the float32 copies the launches read
    original = interpreter.Interpreter._widened

    def spying(self, op, tensor, rows):
        got = original(self, op, tensor, rows)
        if got is not tensor.buffer:
            widened.append(got)
        return got

    monkeypatch.setattr(interpreter.Interpreter, "_widened", spying)
    for (a, b), want in zip(inputs, expected):  # one after another: buffers reused
        fast = np.empty((m, n), np.float32)
        matmul_kernel[grid](a, b, fast, m, n, k, BM=32, BN=16, BK=32)
        np.testing.assert_array_equal(fast.view(np.uint32), want.view(np.uint32))
    assert widened and len({id(w) for w in widened}) < len(widened), \
        "later launches borrowed the copies the earlier ones gave back"
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def launch_all(start: int) -> None:
        try:
            for i in range(start, start + 3):
                for _ in range(4):
                    out = np.empty((m, n), np.float32)
                    a, b = inputs[i]
                    matmul_kernel[grid](a, b, out, m, n, k, BM=32, BN=16, BK=32)
                    if i in results:
                        assert np.array_equal(out.view(np.uint32),
                                              results[i].view(np.uint32))
                    results[i] = out
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=launch_all, args=(s,)) for s in (0, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, want in enumerate(expected):
        np.testing.assert_array_equal(results[i].view(np.uint32), want.view(np.uint32))
