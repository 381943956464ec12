"""Index replay (``lowering.index_replay``): launches with one proof key set the index
values the first one computed instead of computing them again, and give the bits a
fresh interpreter gives, whatever the data."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest
from test_affine_blocks import row_sums  # (launched here with ROWS=4 only)
from test_invariants import halving_sum

import dsl
from lowering import index_replay, interpreter


@dsl.jit
def running_max(x, out, n, BLOCK: dsl.constexpr):
    """A loop carrying a value (run trip by trip), an index used as data."""
    offs = dsl.arange(0, BLOCK)
    best = dsl.full((BLOCK,), -float("inf"), dsl.float32)
    for start in range(0, n, BLOCK):
        v = dsl.load(x, start + offs, start + offs < n, -float("inf"))
        best = dsl.maximum(best, v + (start + offs).to(dsl.float32) * 0.0)
    dsl.store(out, offs, best)


@dsl.jit
def branchy(x, out, n, BLOCK: dsl.constexpr):
    """An ``if`` on loaded data: its batches' rows depend on the data."""
    pid = dsl.program_id(0)
    offs = pid * BLOCK + dsl.arange(0, BLOCK)
    v = dsl.load(x, offs, offs < n, 0.0)
    if dsl.sum(v, 0) > 0.0:
        dsl.store(out, offs, v * 2.0 + offs.to(dsl.float32), offs < n)
    else:
        dsl.store(out, offs, -v + offs.to(dsl.float32), offs < n)


def _counting(monkeypatch, kinds: tuple[str, ...]) -> list[str]:
    """Counts the interpreter's runs of the handlers of ``kinds``."""
    calls: list[str] = []
    for kind in kinds:
        handler = interpreter.HANDLERS[kind]
        monkeypatch.setitem(interpreter.HANDLERS, kind,
                            lambda self, op, frame, h=handler, k=kind:
                            (calls.append(k), h(self, op, frame))[1])
    return calls


def _sums(x: np.ndarray, cols: int = 128) -> np.ndarray:
    out = np.full(x.shape[0], np.nan, np.float32)
    row_sums[(3,)](x, out, x.shape[0], x.shape[1], ROWS=4, COLS=cols)
    padded = np.pad(x, ((0, 0), (0, cols - x.shape[1])))
    np.testing.assert_array_equal(out, [halving_sum(row) for row in padded])
    return out


def test_a_repeated_launch_shape_computes_no_index_op_again(monkeypatch):
    """The second launch of a shape sets the index values (aranges, offsets, masks,
    broadcasts) the first recorded; its loads, reductions and stores still run."""
    calls = _counting(monkeypatch, ("arange", "mul", "lt", "and", "load", "reduce", "store"))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((37, 100)).astype(np.float32)
    _sums(x)
    assert {"arange", "mul", "lt", "load", "reduce", "store"} <= set(calls)
    calls.clear()
    y = rng.standard_normal((37, 100)).astype(np.float32)  # other data, the same shape
    _sums(y)
    assert sorted(set(calls)) == ["load", "reduce", "store"], calls
    calls.clear()
    _sums(y[:30])  # another proof key: computed (and recorded) anew
    assert "arange" in calls


def test_replayed_launches_follow_their_data_and_scalars():
    rng = np.random.default_rng(2)
    for rows, cols in [(16, 128), (16, 128), (16, 100), (16, 100), (9, 128), (16, 128)]:
        _sums(rng.standard_normal((rows, cols)).astype(np.float32))
    for n in (300, 300, 257, 300):
        x = rng.standard_normal(n).astype(np.float32)
        out = np.empty(64, np.float32)
        running_max[(1,)](x, out, n, BLOCK=64)
        expect = np.full(64, -np.inf, np.float32)
        for start in range(0, n, 64):
            chunk = np.full(64, -np.inf, np.float32)
            chunk[:min(64, n - start)] = x[start:start + 64]
            expect = np.maximum(expect, chunk)
        np.testing.assert_array_equal(out, expect)


def test_chunks_on_threads_or_alone_replay_their_own_batches(monkeypatch):
    """A launch shape run in chunks, on worker threads or alone (other chunk sizes),
    keeps each batch's values apart: the keys name the rows a batch took."""
    monkeypatch.setattr(interpreter, "CHUNK_ELEMENTS", 1 << 10)
    monkeypatch.setattr(interpreter, "PARALLEL_MIN_ELEMENTS", 0)
    rng = np.random.default_rng(3)
    for threads in ("2", "1", "2", "1", "3"):
        monkeypatch.setenv("DSL_INTERPRETER_THREADS", threads)
        _sums(rng.standard_normal((64, 128)).astype(np.float32))


def test_kernels_whose_batches_depend_on_data_replay_nothing(monkeypatch):
    """An ``if`` on data splits rows by their values: such a kernel computes its index
    values at every launch, and each launch follows its data."""
    fn_facts = []
    facts = interpreter._facts
    monkeypatch.setattr(interpreter, "_facts",
                        lambda fn: (fn_facts.append(facts(fn)), fn_facts[-1])[1])
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = rng.standard_normal(200).astype(np.float32)
        out = np.empty_like(x)
        branchy[(4,)](x, out, 200, BLOCK=64)
        expect = np.empty_like(x)
        for p in range(4):
            part = slice(64 * p, 64 * p + 64)
            offs = np.arange(64 * p, min(200, 64 * p + 64)).astype(np.float32)
            chunk = np.zeros(64, np.float32)
            chunk[:offs.size] = x[part]
            if halving_sum(chunk) > 0:
                expect[part] = x[part] * np.float32(2.0) + offs
            else:
                expect[part] = -x[part] + offs
        np.testing.assert_array_equal(out, expect)
    assert fn_facts and all(not f.replayed_ops for f in fn_facts)


def test_recorded_values_are_read_only_copies():
    """A recorded array is a copy the recording launch cannot overwrite later (a chunk's
    pooled buffer, a temporary written in place), and nothing can write through it."""
    values = index_replay.IndexValues()
    owned = np.arange(6, dtype=np.int32)
    values.record(("batch", 1), [owned])
    owned[:] = -1
    (kept,) = values.lookup(("batch", 1))
    assert kept.tolist() == list(range(6)) and not kept.flags.writeable
    with pytest.raises(ValueError):
        kept[0] = 5
    values.record(("batch", 2), [np.zeros(index_replay.MAX_ARRAY_ELEMENTS + 1)])
    assert values.lookup(("batch", 2)) is None, "too large: computed at every launch"


def test_program_ids_of_small_grids_are_made_once_and_read_only(monkeypatch):
    ids, pid = interpreter._program_ids(3, 2, 2)
    assert ids.tolist() == list(range(12))
    assert pid[7].tolist() == [1, 0, 1] and pid.dtype == np.int32  # 7 = 1 + 3 * (0 + 2 * 1)
    assert not ids.flags.writeable and not pid.flags.writeable
    assert interpreter._program_ids(3, 2, 2)[1] is pid, "shared by the grid's launches"
    monkeypatch.setattr(interpreter, "_SHARED_GRID_PROGRAMS", 8)
    big = interpreter._program_ids(3, 2, 2)[1]
    assert big is not pid and np.array_equal(big, pid), "a large grid's ids: made per launch"


def test_a_kernel_reading_a_pointers_address_replays_nothing(kernel_from_source):
    """A pointer cast to an integer is its buffer's address, which the proof key does
    not fix: an alignment test on it (a store masked by ``address % 8 == 0``) must
    follow each launch's tensor, not replay the first launch's answer (found by
    session 27's hunt)."""
    if not os.environ.get("CI"):
        pytest.importorskip("triton")
    kernel, _ = kernel_from_source("store_if_aligned", textwrap.dedent("""\
        import triton
        import triton.language as tl

        @triton.jit
        def store_if_aligned(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            o2 = offs[:, None] * 2 + tl.arange(0, 2)[None, :]  # 2-D: no launch plan
            aligned = (x_ptr.to(tl.int64) % 8) == 0
            v = tl.load(x_ptr + o2, mask=o2 < n, other=0.0)
            tl.store(out_ptr + o2, v, mask=(o2 < n) & aligned)
        """))
    launch = dsl.from_triton(kernel)
    for start in (0, 1, 0, 1, 1, 0):  # bases 16-byte aligned: a view from 1 is off by 4
        x = np.arange(200 + start, dtype=np.float32)[start:start + 100]
        out = np.full(100, -1.0, np.float32)
        launch[(2,)](x, out, 100, BLOCK=32)
        aligned = x.ctypes.data % 8 == 0
        np.testing.assert_array_equal(out, x if aligned else np.full(100, -1.0, np.float32))
