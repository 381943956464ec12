"""Lazy 2-D index blocks (``lowering.lanes.Affine``/``BoxMask``): 2-D loads and stores
run as strided windows of memory, with the same results, bounds errors and
all-or-nothing behaviour as the materialized path they replace."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_invariants import halving_sum

import dsl
from lowering import lanes, memory


@dsl.jit
def tile_copy(x, out, n_rows, n_cols, scale, ROWS: dsl.constexpr, COLS: dsl.constexpr):
    """out = x * scale over a rows x cols matrix in ROWS x COLS tiles."""
    cols = dsl.arange(0, COLS)[None, :]
    for r0 in dsl.tile_range(0, n_rows, ROWS):
        rows = r0 + dsl.arange(0, ROWS)[:, None]
        mask = (rows < n_rows) & (cols < n_cols)
        v = dsl.load(x, rows * n_cols + cols, mask, other=0.0)
        dsl.store(out, rows * n_cols + cols, v * scale, mask)


@dsl.jit
def transpose(x, out, n_rows, n_cols, ROWS: dsl.constexpr, COLS: dsl.constexpr):
    """out (cols x rows) = x.T: the load walks rows, the store walks columns."""
    r = dsl.program_id(0) * ROWS + dsl.arange(0, ROWS)[:, None]
    c = dsl.program_id(1) * COLS + dsl.arange(0, COLS)[None, :]
    mask = (r < n_rows) & (c < n_cols)
    dsl.store(out, c * n_rows + r, dsl.load(x, r * n_cols + c, mask), mask)


@dsl.jit
def row_sums(x, out, n_rows, n_cols, ROWS: dsl.constexpr, COLS: dsl.constexpr):
    cols = dsl.arange(0, COLS)[None, :]
    for r0 in dsl.tile_range(0, n_rows, ROWS):
        rows = r0 + dsl.arange(0, ROWS)[:, None]
        v = dsl.load(x, rows * n_cols + cols, (rows < n_rows) & (cols < n_cols), 0.0)
        r = r0 + dsl.arange(0, ROWS)
        dsl.store(out, r, dsl.sum(v, 1), r < n_rows)


@pytest.fixture
def strided(monkeypatch):
    """Counts loads and stores done as strided windows."""
    count = {"load": 0, "store": 0}
    load, store = memory._load_affine, memory.StoreJournal._store_affine

    def counting_load(*args):
        out = load(*args)
        count["load"] += out is not None
        return out

    def counting_store(self, *args):
        done = store(self, *args)
        count["store"] += done
        return done

    monkeypatch.setattr(memory, "_load_affine", counting_load)
    monkeypatch.setattr(memory.StoreJournal, "_store_affine", counting_store)
    return count


@pytest.mark.parametrize("shape,rows,cols,grid", [
    ((37, 19), 8, 32, (3,)), ((64, 64), 16, 64, (4,)), ((5, 100), 4, 128, (1,)),
    ((1, 3), 2, 4, (2,)), ((130, 7), 32, 8, (40,))])
def test_2d_tiles_load_and_store_as_strided_windows(shape, rows, cols, grid, strided):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    out = np.full(shape, np.nan, np.float32)
    tile_copy[grid](x, out, shape[0], shape[1], 2.0, ROWS=rows, COLS=cols)
    np.testing.assert_array_equal(out, x * np.float32(2.0))
    assert strided["load"] >= 1 and strided["store"] >= 1


def test_a_transposing_store_walks_memory_with_other_strides(strided):
    x = np.random.default_rng(1).standard_normal((45, 30)).astype(np.float32)
    out = np.zeros((30, 45), np.float32)
    transpose[(3, 2)](x, out, 45, 30, ROWS=16, COLS=16)
    np.testing.assert_array_equal(out, x.T)
    # the programs' store windows interleave (disjoint elements, overlapping ranges):
    # the store takes the general path, which the result above checks
    assert strided["load"] >= 1


def test_row_sums_read_the_matrix_as_windows(strided):
    x = np.random.default_rng(2).standard_normal((100, 70)).astype(np.float32)
    out = np.zeros(100, np.float32)
    row_sums[(4,)](x, out, 100, 70, ROWS=8, COLS=128)
    np.testing.assert_array_equal(out, [halving_sum(row) for row in x])  # dsl.sum's order
    assert strided["load"] >= 1


def test_an_out_of_bounds_2d_access_names_the_lane_and_writes_nothing():
    x = np.ones((10, 10), np.float32)
    out = np.full((10, 10), -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError) as info:
        tile_copy[(2,)](x, out, 11, 10, 1.0, ROWS=4, COLS=16)  # one row too many
    text = str(info.value)
    assert "tensor 'x' has 100 elements but index 100 was accessed" in text
    # row 10 is the third row of program 0's second tile (rows 8..11): lane 2 * 16
    assert "program id (0, 0, 0), lane 32" in text
    assert np.all(out == -1.0)


def test_rows_of_one_program_rewriting_elements_keep_program_order():
    @dsl.jit
    def overwrite(out, ROWS: dsl.constexpr):
        cols = dsl.arange(0, 4)[None, :]
        for it in range(3):  # every iteration writes the same 2x4 window
            rows = dsl.arange(0, ROWS)[:, None]
            dsl.store(out, rows * 4 + cols, dsl.zeros((ROWS, 4), dsl.float32) + it)

    out = np.zeros(8, np.float32)
    overwrite[(1,)](out, ROWS=2)
    np.testing.assert_array_equal(out, np.full(8, 2.0, np.float32))


@settings(max_examples=60, deadline=None)
@given(st.integers(-50, 50), st.lists(st.tuples(st.integers(1, 5), st.integers(-7, 7)),
                                      min_size=1, max_size=3),
       st.integers(1, 3), st.data())
def test_affine_blocks_and_box_masks_materialize_exactly(base0, axes, rows, data):
    shape = tuple(n for n, _ in axes)
    coefs = tuple(c for _, c in axes)
    base = np.asarray([base0 + 11 * r for r in range(rows)], np.int64)
    block = lanes.Affine.make(base, shape, coefs, np.dtype(np.int32))
    assert block is not None
    grids = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    expected = base.reshape((-1,) + (1,) * len(shape)) + sum(
        c * (g if n > 1 else 0) for c, g, n in zip(coefs, grids, shape))
    np.testing.assert_array_equal(block.materialize(), expected)
    bound = np.asarray(data.draw(st.lists(st.integers(-60, 90), min_size=rows,
                                          max_size=rows)), np.int64)
    box = block.mask_below(bound)
    if box is not None:  # one axis varies, with a positive coefficient
        np.testing.assert_array_equal(box.materialize(),
                                      expected < bound.reshape((-1,) + (1,) * len(shape)))


def test_an_affine_block_that_would_overflow_int32_is_not_made():
    assert lanes.Affine.make(np.asarray([2**31 - 10], np.int64), (4, 8), (1, 2),
                             np.dtype(np.int32)) is None


def test_disjoint_2d_stores_let_chunks_run_on_several_threads():
    from dsl.options import Options
    from lowering.interpreter import Interpreter

    x = np.zeros((256, 64), np.float32)
    launch = tile_copy.prepare((x, np.empty_like(x), 256, 64, 1.0), {"ROWS": 8, "COLS": 64},
                               (4,))
    interp = Interpreter(launch, Options(interpreter_threads=2))
    assert interp.prove_in_bounds()
    assert interp.parallel, "the pre-pass proves the tiles' stores disjoint"
    interleaved = transpose.prepare((x, np.empty((64, 256), np.float32), 256, 64),
                                    {"ROWS": 16, "COLS": 16}, (16, 4))
    interp = Interpreter(interleaved, Options(interpreter_threads=2))
    assert interp.prove_in_bounds()
    assert interp.parallel, "tiles whose index ranges interleave, in disjoint bands of lines"
    overlapping = half_overlapping_2d_tiles.prepare((x, np.empty_like(x)), {}, (8,))
    interp = Interpreter(overlapping, Options(interpreter_threads=2))
    assert not interp.prove_in_bounds(), "lanes that clash: a race unless the values agree"
    assert not interp.parallel, "tiles whose bands of lines overlap are not proved disjoint"


def _row_sums_checked(x: np.ndarray) -> None:
    """``row_sums`` of ``x`` (a reduction: not a flat kernel, so every launch runs the
    interpreter), checked against rule 10's order."""
    out = np.full(x.shape[0], np.nan, np.float32)
    row_sums[(4,)](x, out, x.shape[0], x.shape[1], ROWS=8, COLS=x.shape[1])
    np.testing.assert_array_equal(out, [halving_sum(row) for row in x])


def test_a_proved_launch_does_not_check_its_accesses_again(monkeypatch):
    """The pre-pass proves every load and store in bounds; the run that follows (and
    every later launch of the same shape, which reuses the proof) checks none again."""
    from lowering import interpreter

    checked = []
    check = interpreter.check_bounds
    monkeypatch.setattr(interpreter, "check_bounds",
                        lambda *args: (checked.append(1), check(*args))[1])
    x = np.random.default_rng(5).standard_normal((96, 64)).astype(np.float32)
    _row_sums_checked(x)
    assert checked, "the first launch of a shape runs the pre-pass"
    checked.clear()
    _row_sums_checked(x)
    assert not checked, "a launch whose accesses are proved checks none of them"
    with pytest.raises(dsl.OutOfBoundsError):  # a shape of its own: proved anew
        row_sums[(4,)](x, np.empty(90, np.float32), 96, 64, ROWS=8, COLS=64)


def test_threading_choice_alternates_then_keeps_the_faster_way():
    from lowering.workers import ThreadingChoice

    choice = ThreadingChoice()
    ways = []
    for seconds in (3.0, 2.0, 1.0, 5.0, 4.0, 6.0):  # parallel gets 3, 1, 4; alone 2, 5, 6
        ways.append(choice.parallel())
        choice.record(ways[-1], seconds)
    assert ways == [True, False] * ThreadingChoice.TRIALS
    assert choice.parallel() is True
    choice.record(False, 0.5)  # one faster launch alone turns it
    assert choice.parallel() is False


def test_a_launch_shape_times_its_chunks_on_threads_and_alone(monkeypatch):
    """Chunks proved disjoint run on the worker threads or alone, whichever the shape's
    first launches found faster (``lowering.workers.ThreadingChoice``), with the same
    result either way."""
    from lowering import interpreter, workers

    monkeypatch.setattr(interpreter, "CHUNK_ELEMENTS", 1 << 12)  # 8 chunks
    monkeypatch.setattr(interpreter, "PARALLEL_MIN_ELEMENTS", 0)
    monkeypatch.setenv("DSL_INTERPRETER_THREADS", "2")
    runs: list[tuple[bool, float]] = []
    record = workers.ThreadingChoice.record
    monkeypatch.setattr(workers.ThreadingChoice, "record",
                        lambda self, way, took: (runs.append((way, took)),
                                                 record(self, way, took))[1])
    x = np.random.default_rng(6).standard_normal((256, 64)).astype(np.float32)
    for _ in range(3 * workers.ThreadingChoice.TRIALS):
        _row_sums_checked(x)
    trials = 2 * workers.ThreadingChoice.TRIALS
    assert [way for way, _ in runs[:trials]] == [True, False] * (trials // 2)
    faster = min(t for way, t in runs[:trials] if way) <= \
        min(t for way, t in runs[:trials] if not way)
    assert all(way is faster for way, _ in runs[trials:]), runs


def test_a_launch_derives_no_ir_fact_an_earlier_launch_derived(monkeypatch):
    """What the IR alone decides (block sizes, nested regions, which values only
    addresses read, which loads only stores under their mask read) is derived once per
    specialization and shared by later launches, not again at each: a small
    interpreted launch spent ~10% of its time re-deriving it."""
    from lowering import interpreter

    derived = []
    max_block = interpreter._max_block
    monkeypatch.setattr(interpreter, "_max_block",
                        lambda *args: (derived.append(1), max_block(*args))[1])
    walk = interpreter.walk_block
    monkeypatch.setattr(interpreter, "walk_block",
                        lambda *args: (derived.append(2), walk(*args))[1])
    x = np.random.default_rng(7).standard_normal((48, 96)).astype(np.float32)

    def launch(rows: int) -> None:  # a specialization no other test launches
        out = np.full(rows, np.nan, np.float32)
        row_sums[(3,)](x[:rows], out, rows, 96, ROWS=2, COLS=128)
        np.testing.assert_array_equal(out, [halving_sum(np.pad(r, (0, 32))) for r in x[:rows]])

    launch(48)
    assert derived, "the first launch derives them"
    derived.clear()
    launch(48)
    launch(40)  # another launch shape of the same specialization
    assert not derived


def test_the_cpu_count_is_read_once_per_process(monkeypatch):
    """``Options.workers`` is read by every interpreted launch; ``os.cpu_count`` reads the
    system's CPU list each call (~8 us)."""
    import os

    from dsl.options import Options

    calls = []
    count = os.cpu_count
    monkeypatch.setattr(os, "cpu_count", lambda: (calls.append(1), count())[1])
    options = Options()
    assert options.workers == options.workers >= 1
    assert len(calls) <= 1


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint16,
                                   np.uint32])
def test_loop_trip_counts_are_pythons_range_lengths(dtype):
    """``_trip_counts``'s quick way for bounds of 32 bits or fewer gives
    ``len(range(lo, hi, step))`` at the edges of every such type; a zero step is an
    error."""
    from lowering.interpreter import DSLRuntimeError, _trip_counts

    info = np.iinfo(dtype)
    edges = sorted(v for v in {int(info.min), int(info.min) + 1, -7, -1, 0, 1, 3, 7,
                               int(info.max) - 1, int(info.max)} if info.min <= v <= info.max)
    steps = [s for s in {int(info.min), -5, -1, 1, 2, 5, int(info.max)}
             if s != 0 and info.min <= s <= info.max]
    lo, hi, step = (np.array(v, dtype) for v in zip(*[
        (a, b, s) for a in edges for b in edges for s in steps]))
    got = _trip_counts(lo, hi, step)
    want = [len(range(a, b, s)) for a, b, s in zip(lo.tolist(), hi.tolist(), step.tolist())]
    assert got.dtype == np.int64 and got.tolist() == want
    with pytest.raises(DSLRuntimeError, match="step is zero"):
        _trip_counts(lo[:2], hi[:2], np.zeros(2, dtype))


@dsl.jit
def half_overlapping_2d_tiles(x, out):
    """Program p copies lines 8p .. 8p + 15 of a 64-column matrix: each tile shares
    half its lines with the next program's."""
    r = dsl.program_id(0) * 8 + dsl.arange(0, 16)[:, None]
    c = dsl.arange(0, 64)[None, :]
    dsl.store(out, r * 64 + c, dsl.load(x, r * 64 + c))


def _record_takes(monkeypatch, name):
    """Wrap the load path ``memory.<name>`` (which returns None when it declines) and
    return the list of whether each call took the load."""
    taken = []
    path = getattr(memory, name)

    def recording(*args):
        out = path(*args)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(memory, name, recording)
    return taken


@dsl.jit
def shuffled_tiles(x, out, n_rows, n_cols, ROWS: dsl.constexpr, COLS: dsl.constexpr):
    """Program p copies tile (p * 5) % tiles: the programs' bases do not step evenly."""
    tiles = dsl.cdiv(n_rows, ROWS)
    t = (dsl.program_id(0) * 5) % tiles
    r = t * ROWS + dsl.arange(0, ROWS)[:, None]
    c = dsl.arange(0, COLS)[None, :]
    mask = (r < n_rows) & (c < n_cols)
    dsl.store(out, r * n_cols + c, dsl.load(x, r * n_cols + c, mask, other=-1.0), mask)


@pytest.mark.parametrize("n_rows,n_cols", [(96, 16), (90, 13)])
def test_tiles_in_a_shuffled_order_load_as_windows_picked_by_base(n_rows, n_cols, monkeypatch):
    """Rows whose bases do not step evenly still load as windows of memory (one
    sliding-window view, picked by base), full tiles and ragged edge tiles alike."""
    picked = _record_takes(monkeypatch, "_gather_windows")
    x = np.random.default_rng(4).standard_normal((n_rows, n_cols)).astype(np.float32)
    out = np.full_like(x, np.nan)
    shuffled_tiles[(6,)](x, out, n_rows, n_cols, ROWS=16, COLS=16)  # 6 tiles; 5 is coprime
    np.testing.assert_array_equal(out, x)
    assert picked and all(picked)


@dsl.jit
def gather_rows(ids, table, out, n_ids, dim, ROWS: dsl.constexpr, COLS: dsl.constexpr,
                KEEP_INDEX: dsl.constexpr):
    """out[t, :] = table[ids[t], :]; with KEEP_INDEX the index is also stored, so
    something other than a load reads it."""
    t = dsl.program_id(0) * ROWS + dsl.arange(0, ROWS)
    c = dsl.arange(0, COLS)[None, :]
    row = dsl.load(ids, t, t < n_ids, other=0)[:, None]
    mask = (t[:, None] < n_ids) & (c < dim)
    where = row * dim + c
    dsl.store(out, t[:, None] * dim + c, dsl.load(table, where, mask, other=-1.0), mask)
    if KEEP_INDEX:
        dsl.store(out, t[:, None] * dim + c, where.to(dsl.float32), mask)


@pytest.fixture
def runs_loaded(monkeypatch):
    """Records loads done through ``RowRuns`` windows."""
    return _record_takes(monkeypatch, "_load_runs")


@pytest.mark.parametrize("n_ids,dim", [(64, 16), (50, 13)])
def test_rows_picked_by_loaded_ids_load_as_row_windows(n_ids, dim, runs_loaded):
    """``table[ids[t], :]``: the index ``row * dim + cols`` (``row`` loaded) stays a
    run per row, loaded as windows; ragged tiles keep ``other`` outside the mask."""
    rng = np.random.default_rng(6)
    table = rng.standard_normal((40, dim)).astype(np.float32)
    ids = rng.integers(0, 40, n_ids).astype(np.int32)
    out = np.full((n_ids, dim), np.nan, np.float32)
    gather_rows[(4,)](ids, table, out, n_ids, dim, ROWS=16, COLS=16, KEEP_INDEX=False)
    np.testing.assert_array_equal(out, table[ids])
    assert runs_loaded and all(runs_loaded)


def test_an_index_something_else_reads_is_not_kept_as_runs(runs_loaded):
    rng = np.random.default_rng(7)
    table = rng.standard_normal((40, 16)).astype(np.float32)
    ids = rng.integers(0, 40, 64).astype(np.int32)
    out = np.zeros((64, 16), np.float32)
    gather_rows[(4,)](ids, table, out, 64, 16, ROWS=16, COLS=16, KEEP_INDEX=True)
    np.testing.assert_array_equal(out, (ids[:, None] * 16 + np.arange(16)).astype(np.float32))
    assert not runs_loaded


@pytest.mark.parametrize("bad", [40, -1])
def test_a_loaded_row_outside_the_table_names_the_lane_and_writes_nothing(bad, runs_loaded):
    rng = np.random.default_rng(8)
    table = rng.standard_normal((40, 13)).astype(np.float32)
    ids = rng.integers(0, 40, 50).astype(np.int32)
    ids[37] = bad
    out = np.zeros((50, 13), np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="tensor 'table' has 520 elements") as err:
        gather_rows[(4,)](ids, table, out, 50, 13, ROWS=16, COLS=16, KEEP_INDEX=False)
    assert "program id (2, 0, 0), lane 80" in str(err.value)  # row 5 of program 2, column 0
    assert not out.any()


@pytest.fixture
def load_results(monkeypatch):
    """The type of every value the interpreter's loads return."""
    import lowering.interpreter as interp

    seen: list[type] = []
    real = interp.load

    def spy(*args, **kwargs):
        value = real(*args, **kwargs)
        seen.append(type(value))
        return value

    monkeypatch.setattr(interp, "load", spy)
    return seen


@dsl.jit
def gather_rows_to(ids, dest, table, out, n_ids, dim, ROWS: dsl.constexpr,
                   COLS: dsl.constexpr, SCATTER: dsl.constexpr):
    """out[dest[t], :] = table[ids[t], :] (SCATTER) or out[t, :] = table[ids[t], :]."""
    t = dsl.program_id(0) * ROWS + dsl.arange(0, ROWS)
    c = dsl.arange(0, COLS)[None, :]
    inside = t < n_ids
    row = dsl.load(ids, t, inside, other=0)[:, None]
    to = dsl.load(dest, t, inside, other=0)[:, None] if SCATTER else t[:, None]
    mask = inside[:, None] & (c < dim)
    dsl.store(out, to * dim + c, dsl.load(table, row * dim + c, mask, other=7.0), mask)


@pytest.mark.parametrize("scatter", [False, True])
def test_a_gather_only_stored_under_its_mask_keeps_no_padding(scatter, load_results):
    """Rows of 13 in a block of 16: the load hands the store its 13 valid columns,
    whole rows of the table not yet copied (``TakenLines``); the store takes them
    straight into its windows, or, scattered through loaded row numbers, copies and
    pads them first."""
    from lowering.lanes import TakenLines

    rng = np.random.default_rng(9)
    table = rng.standard_normal((40, 13)).astype(np.float32)
    ids = rng.integers(0, 40, 64).astype(np.int32)
    dest = rng.permutation(64).astype(np.int32)
    out = np.full((64, 13), np.nan, np.float32)
    gather_rows_to[(4,)](ids, dest, table, out, 64, 13, ROWS=16, COLS=16, SCATTER=scatter)
    want = np.empty_like(out)
    want[dest if scatter else np.arange(64)] = table[ids]
    np.testing.assert_array_equal(out, want)
    assert TakenLines in load_results


def test_a_ragged_gather_or_one_read_by_other_ops_is_padded(load_results):
    """The last tile of 50 rows is short (two boxes): the block is padded as before."""
    from lowering.lanes import BoxedValues, TakenLines

    rng = np.random.default_rng(10)
    table = rng.standard_normal((40, 13)).astype(np.float32)
    ids = rng.integers(0, 40, 50).astype(np.int32)
    out = np.full((50, 13), np.nan, np.float32)
    gather_rows_to[(4,)](ids, ids, table, out, 50, 13, ROWS=16, COLS=16, SCATTER=False)
    np.testing.assert_array_equal(out, table[ids])
    assert BoxedValues not in load_results and TakenLines not in load_results


@dsl.jit
def gather_rows_within(ids, table, n_ids, dim, ROWS: dsl.constexpr, COLS: dsl.constexpr):
    """table[40 + t, :] = table[ids[t], :], every id below 40."""
    t = dsl.program_id(0) * ROWS + dsl.arange(0, ROWS)
    c = dsl.arange(0, COLS)[None, :]
    inside = t < n_ids
    row = dsl.load(ids, t, inside, other=0)[:, None]
    mask = inside[:, None] & (c < dim)
    dsl.store(table, (40 + t[:, None]) * dim + c, dsl.load(table, row * dim + c, mask), mask)


def test_rows_of_a_tensor_the_launch_writes_are_copied_when_loaded(load_results):
    """Rows gathered into the same tensor: a tensor the launch writes is read when
    the load runs (``BoxedValues``), never late (``TakenLines``)."""
    from lowering.lanes import BoxedValues, TakenLines

    rng = np.random.default_rng(11)
    table = rng.standard_normal((104, 13)).astype(np.float32)
    ids = rng.integers(0, 40, 64).astype(np.int32)
    want = table.copy()
    want[40:] = table[ids]
    gather_rows_within[(4,)](ids, table, 64, 13, ROWS=16, COLS=16)
    np.testing.assert_array_equal(table, want)
    assert BoxedValues in load_results and TakenLines not in load_results


@dsl.jit
def shuffled_2d_tiles(x, out, n_rows, n_cols, ROWS: dsl.constexpr, COLS: dsl.constexpr):
    """Program p copies tile (p * 5) % tiles of a grid of row and column tiles: the
    tiles' index ranges interleave and their bases do not step evenly."""
    tiles_c = dsl.cdiv(n_cols, COLS)
    t = (dsl.program_id(0) * 5) % (dsl.cdiv(n_rows, ROWS) * tiles_c)
    r = (t // tiles_c) * ROWS + dsl.arange(0, ROWS)[:, None]
    c = (t % tiles_c) * COLS + dsl.arange(0, COLS)[None, :]
    mask = (r < n_rows) & (c < n_cols)
    dsl.store(out, r * n_cols + c, dsl.load(x, r * n_cols + c, mask, other=-1.0) * 2.0, mask)


@pytest.mark.parametrize("n_rows,n_cols", [(64, 48), (60, 45)])
def test_tiles_of_a_matrix_in_a_shuffled_order_store_through_windows(n_rows, n_cols,
                                                                     monkeypatch):
    """A grid of 2-D tiles written in an order whose bases do not step evenly (a
    grouped matmul's output) is proved injective by bands of lines and written as
    windows picked by base, ragged edge tiles included."""
    taken = []
    scatter = memory.StoreJournal._scatter_windows

    def recording(self, *args):
        taken.append(scatter(self, *args))
        return taken[-1]

    monkeypatch.setattr(memory.StoreJournal, "_scatter_windows", recording)
    x = np.random.default_rng(5).standard_normal((n_rows, n_cols)).astype(np.float32)
    out = np.full_like(x, np.nan)
    shuffled_2d_tiles[(12,)](x, out, n_rows, n_cols, ROWS=16, COLS=16)  # 4 x 3 tiles
    np.testing.assert_array_equal(out, 2 * x)
    assert taken and all(taken)


def _tiles(bases, height, width, line=100):
    bases = np.asarray(bases, np.int64)
    return memory.AffineAccess(bases, (line, 1), (height, width),
                               np.tile(np.asarray([height, width], np.int64), (len(bases), 1)))


def test_tiles_are_injective_only_in_disjoint_bands_without_overlap_or_wrap():
    grid = [r * 100 * 8 + c * 10 for r in range(3) for c in range(10)]
    assert _tiles(np.random.default_rng(0).permutation(grid), 8, 10).injective()
    assert not _tiles([0, 5], 8, 10).injective(), "two tiles of one band overlap"
    assert not _tiles([0, 4 * 100 + 0], 8, 10).injective(), "bands share lines 4..7"
    assert _tiles([0, 8 * 100 + 5], 8, 10).injective(), "bands apart: columns may overlap"
    assert not _tiles([95, 8 * 100], 8, 10).injective(), "a tile wraps into the next line"
    assert not _tiles([0, 0], 8, 10).injective(), "one tile twice"


def test_runs_that_are_whole_lines_are_taken_from_the_matrix_into_the_given_buffer():
    """``memory._pick_runs``: an embedding's rows (starts at multiples of the run
    length, a buffer of whole lines) are copied into the caller's (pooled) buffer;
    any other runs are picked from a sliding-window view. Both equal the lanes."""
    buffer = np.arange(60, dtype=np.float32)
    given = []

    def allocate(shape, dtype):
        given.append(np.empty(shape, dtype))
        return given[-1]

    def lanes(starts, length, step):
        return buffer[starts[..., None] + step * np.arange(length)]

    lines = np.array([[10, 0], [50, 20]])
    picked = memory._pick_runs(buffer, lines, 10, 1, allocate)
    np.testing.assert_array_equal(picked, lanes(lines, 10, 1))
    assert len(given) == 1 and picked is given[0]
    for starts, length, step in (([[3, 17]], 10, 1), ([[0, 20]], 7, 1), ([[0, 10]], 10, 2)):
        starts = np.asarray(starts)
        np.testing.assert_array_equal(memory._pick_runs(buffer, starts, length, step, allocate),
                                      lanes(starts, length, step))
    assert len(given) == 1, "runs that are not whole lines are picked from windows"


@settings(max_examples=60, deadline=None)
@given(data=st.data(), length=st.sampled_from([1, 4, 16]), rows=st.integers(1, 12),
       mode=st.sampled_from(["direct", "deferred", "undo"]))
def test_lane_rows_with_any_starts_load_and_store_as_the_materialised_index_does(
        data, length, rows, mode):
    """``lane_access``'s runs (a 1-D block per row from an arbitrary start, under a lane
    mask of another base) against the index and mask materialised."""
    size = 64
    starts = np.asarray(data.draw(st.lists(st.integers(0, size - length), min_size=rows,
                                           max_size=rows)), np.int64)
    mask_base = data.draw(st.integers(-4, 8))
    bound = np.asarray(data.draw(st.lists(st.integers(mask_base - 2, mask_base + length + 2),
                                          min_size=rows, max_size=rows)), np.int64)
    index = lanes.Lanes(starts, length, np.dtype(np.int32))
    mask = lanes.LaneMask(lanes.Lanes(np.full(rows, mask_base), length, np.dtype(np.int32)),
                          bound)
    buffer = np.arange(size, dtype=np.float32) * 3 + 1
    off, valid = index.materialize(), mask.materialize()
    assert memory.lane_access(index, mask) is not None

    got = memory.load(buffer, index, mask, np.full(1, -7, np.float32), copy=True)
    np.testing.assert_array_equal(np.broadcast_to(got, off.shape),
                                  np.where(valid, buffer[off], np.float32(-7)))

    values = (np.arange(rows * length, dtype=np.float32).reshape(rows, length) + 100)
    written = np.zeros(size, np.float32)
    journal = memory.StoreJournal(mode)
    journal.store(written, index, values, mask, (rows, length))
    journal.commit() if mode == "deferred" else None
    expected = np.zeros(size, np.float32)
    for r in range(rows):  # in row order: the last row wins where runs overlap
        expected[off[r][valid[r]]] = values[r][valid[r]]
    np.testing.assert_array_equal(written, expected)
    if mode == "undo":
        journal.rollback()
        assert not written.any()


# -- stores whose rows interleave through an outer axis (a concatenation) -------------


@dsl.jit
def concat_rows(x, y, out, n_rows, n_cols, COLS: dsl.constexpr):
    """out (2, n_rows, n_cols) = stack(x, y): program r writes row r of both halves,
    so the programs' index ranges interleave. Its row block has one lane, so its
    mask ``r < n_rows`` is a plain boolean per program, not a lazy box."""
    r = dsl.program_id(0) + dsl.arange(0, 1)[None, :, None]
    c = dsl.arange(0, COLS)[None, None, :]
    half = dsl.arange(0, 2)[:, None, None]
    mask = (c < n_cols) & (r < n_rows)
    xv = dsl.load(x, r * n_cols + c, mask, 0.0)
    yv = dsl.load(y, r * n_cols + c, mask, 0.0)
    dsl.store(out, half * (n_rows * n_cols) + r * n_cols + c, dsl.where(half == 0, xv, yv),
              mask)


@dsl.jit
def concat_rows_clashing(x, out, n_rows, n_cols, COLS: dsl.constexpr):
    """Like ``concat_rows``, but the second half starts one row too early: program
    r + 1's first half overlaps program r's second half."""
    r = dsl.program_id(0) + dsl.arange(0, 1)[None, :, None]
    c = dsl.arange(0, COLS)[None, None, :]
    half = dsl.arange(0, 2)[:, None, None]
    mask = (c < n_cols) & (r < n_rows)
    xv = dsl.load(x, r * n_cols + c, mask, 0.0)
    dsl.store(out, half * ((n_rows - 1) * n_cols) + r * n_cols + c, xv + half, mask)


@pytest.mark.parametrize("n_rows,n_cols,cols", [(9, 5, 8), (33, 16, 16), (1, 3, 4)])
def test_a_concatenation_whose_programs_write_both_halves_stores_through_windows(
        n_rows, n_cols, cols, strided):
    """Each program's lanes cover a piece of both halves, so the programs' index
    ranges interleave: the store is proved injective by taking the halves as rows
    of their own, and written as windows instead of a checked scatter."""
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal((n_rows, n_cols)).astype(np.float32) for _ in range(2))
    out = np.full((2, n_rows, n_cols), np.nan, np.float32)
    concat_rows[(n_rows,)](x, y, out, n_rows, n_cols, COLS=cols)
    np.testing.assert_array_equal(out, np.stack([x, y]))
    assert strided["store"] >= 1


def test_a_concatenation_whose_halves_overlap_is_still_a_race():
    x = np.ones((6, 4), np.float32)
    out = np.zeros(12 * 4, np.float32)
    with pytest.raises(dsl.DataRaceError, match="program id"):
        concat_rows_clashing[(6,)](x, out, 6, 4, COLS=4)
    assert not out.any(), "nothing is written"


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_injective_only_when_no_two_lanes_share_an_element(data):
    """``AffineAccess.injective`` against counting every valid lane's element: it may
    fail to prove an injective access (the caller then checks lane by lane), but
    never calls one injective that is not."""
    rank = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    coefs = tuple(data.draw(st.lists(st.integers(-6, 12), min_size=rank, max_size=rank)))
    rows = data.draw(st.integers(1, 5))
    base = np.asarray(data.draw(st.lists(st.integers(0, 40), min_size=rows, max_size=rows)),
                      np.int64)
    extents = np.asarray([[data.draw(st.integers(0, n)) for n in shape] for _ in range(rows)],
                         np.int64).reshape(rows, rank)
    access = memory.AffineAccess(base, coefs, shape, extents)
    seen = []
    for r in range(rows):
        for lane in np.ndindex(*(int(e) for e in extents[r])):
            seen.append(int(base[r]) + sum(c * i for c, i in zip(coefs, lane)))
    if access.injective():
        assert len(seen) == len(set(seen))


def test_injective_proves_interleaved_halves_and_refuses_overlapping_ones():
    """A (2, 1, width) block per row, as the peer suite's 3-D concatenations store."""
    rows, width, half = 50, 7, 1000
    extents = np.tile(np.asarray([2, 1, width], np.int64), (rows, 1))
    extents[-3:, 2] = 4  # ragged last rows
    bases = np.arange(rows, dtype=np.int64) * width
    apart = memory.AffineAccess(bases, (half, 0, 1), (2, 1, width), extents)
    assert apart.injective()
    overlapping = memory.AffineAccess(bases, ((rows - 1) * width, 0, 1), (2, 1, width),
                                      extents)
    assert not overlapping.injective()


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_row_groups_are_numpy_unique_rows_in_order(data):
    rows = data.draw(st.integers(2, 60))
    rank = data.draw(st.integers(1, 3))
    top = data.draw(st.integers(1, 5))
    extents = np.asarray(data.draw(st.lists(st.lists(st.integers(0, top), min_size=rank,
                                                     max_size=rank),
                                            min_size=rows, max_size=rows)), np.int64)
    groups = memory._row_groups(extents)
    if (extents == extents[0]).all():
        assert len(groups) == 1 and np.array_equal(groups[0][1], extents[0])
        return
    kinds, inverse = np.unique(extents, axis=0, return_inverse=True)
    assert len(groups) == kinds.shape[0]
    for g, (sel, kind) in enumerate(groups):
        np.testing.assert_array_equal(kind, kinds[g])
        np.testing.assert_array_equal(sel, np.nonzero(inverse.reshape(-1) == g)[0])


def test_a_boolean_per_row_over_unit_axes_is_a_box():
    valid = np.array([True, False, True]).reshape(3, 1, 1)
    box = lanes.BoxMask.of(valid)
    assert box is not None and box.shape == (1, 1)
    np.testing.assert_array_equal(box.materialize(), valid)
    assert lanes.BoxMask.of(np.ones((3, 1, 2), bool)) is None, "a lane axis of 2"
    assert lanes.BoxMask.of(np.ones((3, 1, 1), np.int32)) is None, "not a boolean"
