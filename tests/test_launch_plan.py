"""Cached launches: launch recipes (``dsl.launch_cache``) and launch plans
(``lowering.plan``). A repeated launch must give bit for bit what a fresh
interpreter run gives, and keep every check of the full path."""

from __future__ import annotations

import importlib
import re
import warnings

import ml_dtypes
import numpy as np
import pytest

import dsl
from dsl.backends import UnknownBackendError
from dsl.options import Options
from lowering import interpreter, plan

BF16 = ml_dtypes.bfloat16


@dsl.jit
def add_kernel(x, y, out, n, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        mask = idx < n
        dsl.store(out, idx, dsl.load(x, idx, mask) + dsl.load(y, idx, mask), mask)


@dsl.jit
def mixed_kernel(x, y, out, n, scale, BLOCK: dsl.constexpr):
    """Casts, a scalar argument, constants, a where on the mask, an index used as data."""
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        mask = idx < n
        xv = dsl.load(x, idx, mask, 1.0).to(dsl.float32)
        yv = dsl.load(y, idx, mask).to(dsl.float32)
        r = dsl.where(xv > 0.5, xv * scale - yv, dsl.exp(yv)) + idx.to(dsl.float32)
        dsl.store(out, idx, dsl.where(mask, r, 0.0).to(out.dtype), mask)


@dsl.jit
def program_kernel(x, out, n, BLOCK: dsl.constexpr):
    """Triton's style: one block per program, no loop."""
    idx = dsl.program_id(0) * BLOCK + dsl.arange(0, BLOCK)
    mask = idx < n
    dsl.store(out, idx, dsl.sqrt(dsl.abs(dsl.load(x, idx, mask))) * 2.0, mask)


@dsl.jit
def scale_kernel(x, out, n, s, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        dsl.store(out, idx, dsl.load(x, idx, idx < n) * s, idx < n)


@dsl.jit
def padded_kernel(x, out, n, m, BLOCK: dsl.constexpr):
    """Stores lanes a load leaves masked off: they must hold its ``other``."""
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        dsl.store(out, idx, dsl.load(x, idx, idx < m, 2.0) * 3.0, idx < n)


def _count_calls(monkeypatch, owner: type, name: str) -> dict[str, int]:
    """Patches ``owner.name`` to count its calls in ``["n"]``."""
    count = {"n": 0}
    original = getattr(owner, name)

    def counting(self, *args, **kwargs):
        count["n"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return count


@pytest.fixture
def replays(monkeypatch):
    """Counts plan replays: a replay from a recipe and one from a Launch both run
    ``Plan.run``; a hot launcher (``dsl.hot_launch``) runs the plan's statements
    inline, and is counted when it ran them."""
    jit_module = importlib.import_module("dsl.jit")  # (``dsl.jit`` is the decorator)

    count = _count_calls(monkeypatch, plan.Plan, "run")
    _count_hot_runs(monkeypatch, jit_module, count)
    return count


@pytest.fixture
def hot_runs(monkeypatch):
    """Counts only the calls a hot launcher ran."""
    return _count_hot_runs(monkeypatch, importlib.import_module("dsl.jit"), {"n": 0})


def _count_hot_runs(monkeypatch, jit_module, count: dict[str, int]) -> dict[str, int]:
    make = jit_module.hot_launcher

    def ran() -> None:
        count["n"] += 1

    def counted_launcher(*args, **kwargs):
        return make(*args, **kwargs, on_run=ran)

    monkeypatch.setattr(jit_module, "hot_launcher", counted_launcher)
    return count


@pytest.fixture
def prepares(monkeypatch):
    """Counts the ``Launch`` objects launch recipes prepare (a replay builds none)."""
    from dsl.launch_cache import LaunchRecipe

    return _count_calls(monkeypatch, LaunchRecipe, "prepare")


def _fresh(kernel, args, kwargs, grid):
    """What a plain interpreter run (no recipe, no plan) writes for these arguments."""
    memo: dict[int, np.ndarray] = {}  # one copy per array: an alias stays an alias
    copies = [memo.setdefault(id(a), a.copy()) if isinstance(a, np.ndarray) else a
              for a in args]
    launch = kernel.prepare(tuple(copies), kwargs, grid)
    interpreter.Interpreter(launch, Options()).run()
    return copies


CASES = {
    "vector add, ragged": (add_kernel, lambda r: (r.random(1000, np.float32),
                                                  r.random(1000, np.float32),
                                                  np.empty(1000, np.float32), 1000),
                           {"BLOCK": 256}, (4,), 2),
    "mixed fp16 in, bf16 out": (mixed_kernel, lambda r: (
        r.random(777).astype(np.float16), r.standard_normal(777).astype(np.float16),
        np.empty(777, BF16), 777, np.float32(1.5)), {"BLOCK": 128}, (3,), 2),
    "one block per program": (program_kernel, lambda r: (
        r.standard_normal(500).astype(np.float32), np.empty(500, np.float32), 500),
        {"BLOCK": 128}, (4,), 1),
    "a load shorter than the store": (padded_kernel, lambda r: (
        r.standard_normal(300).astype(np.float32), np.empty(300, np.float32), 300, 170),
        {"BLOCK": 512}, (2,), 1),
}


@pytest.mark.parametrize("case", CASES)
def test_a_repeated_flat_launch_replays_its_plan_bit_for_bit(case, replays):
    kernel, make, kwargs, grid, out_at = CASES[case]
    rng = np.random.default_rng(0)
    for _ in range(3):
        args = make(rng)  # new data (and new buffers) every call
        expected = _fresh(kernel, args, kwargs, grid)[out_at]
        kernel[grid](*args, **kwargs)
        np.testing.assert_array_equal(args[out_at].view(np.uint8),
                                      expected.view(np.uint8))
    assert replays["n"] == 2, "the second and third launches must replay the plan"


def test_a_scalar_argument_is_read_per_launch_not_baked_into_the_plan(replays):
    x = np.ones(64, np.float32)
    for s in (0.0, -0.0, 2.5, -0.0):  # 0.0 == -0.0: only the bits tell them apart
        out = np.empty(64, np.float32)
        scale_kernel[(2,)](x, out, 64, s, BLOCK=32)
        np.testing.assert_array_equal(out.view(np.uint32),
                                      (x * np.float32(s)).view(np.uint32))
    assert replays["n"] >= 1


def test_an_in_place_launch_is_interpreted_every_time(replays):
    x = np.arange(100, dtype=np.float32)
    for _ in range(3):
        scale_kernel[(2,)](x, x, 100, 2.0, BLOCK=64)
    np.testing.assert_array_equal(x, np.arange(100, dtype=np.float32) * 8)
    assert replays["n"] == 0, "a stored tensor that is also read gets no plan"


def test_out_of_bounds_is_still_caught_after_cached_launches():
    src, dst = np.arange(64, dtype=np.float32), np.full(64, -1.0, np.float32)
    for _ in range(3):
        add_kernel[(2,)](src, src, dst, 64, BLOCK=32)
    dst[:] = -1.0
    with pytest.raises(dsl.OutOfBoundsError, match="tensor 'x' has 64 elements"):
        add_kernel[(2,)](src, src, dst, 65, BLOCK=32)
    assert np.all(dst == -1.0), "a failing launch writes nothing"


def test_a_new_dtype_shape_stride_or_constexpr_gets_its_own_specialization():
    rng = np.random.default_rng(1)
    base = rng.standard_normal(512).astype(np.float32)
    for x, block in ((base, 64), (base.astype(np.float16), 64), (base[::2], 64),
                     (base[::2], 128), (base, 64)):
        out = np.empty(x.shape, x.dtype)
        add_kernel[(2,)](x, x, out, x.size, BLOCK=block)
        np.testing.assert_array_equal(out, x + x)


def test_a_cached_launch_still_rejects_partial_overlap_and_read_only_outputs():
    buf = np.arange(65, dtype=np.float32)
    a, b, out = buf[:-1].copy(), buf[1:].copy(), np.empty(64, np.float32)
    for _ in range(2):
        add_kernel[(2,)](a, b, out, 64, BLOCK=32)
    # same dtypes, shapes and strides as the cached call: only addresses differ
    with pytest.raises(dsl.DSLLaunchError, match="partially overlap"):
        add_kernel[(2,)](buf[:-1], buf[:-1], buf[1:], 64, BLOCK=32)
    np.testing.assert_array_equal(buf, np.arange(65, dtype=np.float32))
    out.flags.writeable = False
    with pytest.raises(dsl.DSLLaunchError, match="read-only"):
        add_kernel[(2,)](a, b, out, 64, BLOCK=32)


OVERLAP_ORDER = """
import numpy as np, dsl

@dsl.jit
def two_out(x, y, o1, o2, n, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        i = start + dsl.arange(0, BLOCK)
        a, b = dsl.load(x, i, i < n), dsl.load(y, i, i < n)
        dsl.store(o1, i, a + b, i < n)
        dsl.store(o2, i, a - b, i < n)

big = np.arange(900, dtype=np.float32)
try:
    two_out[(2,)](np.zeros(300, np.float32), big[0:300], big[1:301], big[1:301], 300, BLOCK=128)
except dsl.DSLLaunchError as err:
    print(str(err).splitlines()[0].split("error: ", 1)[1])
"""


def test_an_overlap_error_names_the_same_pair_whatever_the_string_hashes(tmp_path):
    """Two outputs overlap an input: the error named the pair met first in a set of
    parameter names, which changed with PYTHONHASHSEED (found in session 28); it is
    the first stored parameter in order now."""
    import os
    import subprocess
    import sys

    script = tmp_path / "overlap_order.py"  # (a kernel's source must be in a file)
    script.write_text(OVERLAP_ORDER)
    messages = set()
    for seed in ("0", "3"):  # (the set met 'o2' first under 0 and 'o1' under 3)
        run = subprocess.run([sys.executable, str(script)], capture_output=True,
                             text=True, env={**os.environ, "PYTHONHASHSEED": seed}, check=True)
        messages.add(run.stdout.strip())
    assert len(messages) == 1, messages
    message = messages.pop()
    assert "'o1'" in message and "'y'" in message and "'o2'" not in message, message


def test_a_cached_launch_sees_a_changed_environment(monkeypatch):
    x = np.ones(32, np.float32)
    add_kernel[(1,)](x, x, np.empty(32, np.float32), 32, BLOCK=32)
    monkeypatch.setenv("DSL_BACKEND", "no-such-backend")
    with pytest.raises(UnknownBackendError, match="no-such-backend"):
        add_kernel[(1,)](x, x, np.empty(32, np.float32), 32, BLOCK=32)


def test_a_cached_launch_tells_autograd_about_writes(torch):
    x = torch.ones(64)
    out = torch.empty(64)
    versions = []
    for _ in range(3):
        add_kernel[(2,)](x, x, out, 64, BLOCK=32)
        versions.append(out._version)
    assert versions == sorted(set(versions)), "every launch bumps the version counter"
    assert torch.equal(out, x + x)


def test_kernels_that_are_not_flat_get_no_plan():
    @dsl.jit
    def row_sum(x, out, BLOCK: dsl.constexpr):
        r = dsl.program_id(0)
        cols = dsl.arange(0, BLOCK)
        dsl.store(out, r, dsl.sum(dsl.load(x, r * BLOCK + cols), 0))

    x = np.arange(32, dtype=np.float32)
    out = np.empty(4, np.float32)
    for _ in range(2):
        row_sum[(4,)](x, out, BLOCK=8)
    np.testing.assert_array_equal(out, x.reshape(4, 8).sum(1))
    fn = next(iter(row_sum._cache.values()))
    assert interpreter._facts(fn).flat is None
    assert interpreter._facts(next(iter(add_kernel._cache.values()))).flat is not None


def test_a_repeated_call_runs_its_plan_straight_from_the_call_values(prepares, replays):
    """The third call with the same recipe, grid and scalars builds no ``Launch``; a
    new scalar value takes the full path once, then replays too."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(4000).astype(np.float32)
    for n in (4000, 4000, 4000, 4000, 3999, 3999, 3999):
        out = np.zeros(4000, np.float32)
        scale_kernel[(3,)](x, out, n, 0.5, BLOCK=512)
        np.testing.assert_array_equal(out[:n], x[:n] * np.float32(0.5))
        assert not out[n:].any()
    # calls 1-2 (and 5-6 for n=3999) may prepare a Launch while recipe and plan are
    # made; the others replay from the values
    assert prepares["n"] <= 3
    assert replays["n"] >= 4


def test_a_replayed_call_that_aliases_its_output_is_interpreted_correctly(replays):
    x = np.arange(96, dtype=np.float32)
    y = np.ones(96, np.float32)
    for _ in range(3):
        out = np.empty(96, np.float32)
        add_kernel[(2,)](x, y, out, 96, BLOCK=64)
    before = replays["n"]
    add_kernel[(2,)](x, y, x, 96, BLOCK=64)  # same key; out is x itself
    np.testing.assert_array_equal(x, np.arange(96, dtype=np.float32) + 1)
    assert replays["n"] == before, "an output aliasing an input is never replayed"


@dsl.jit
def two_lengths(x, y, out, A: dsl.constexpr, B: dsl.constexpr):
    """Two independent copies with blocks of different lengths (a concatenation)."""
    i = dsl.arange(0, A)
    dsl.store(out, i, dsl.load(x, i))
    j = dsl.arange(0, B)
    dsl.store(out, A + j, dsl.load(y, j) * 2.0)


def test_accesses_of_different_lengths_get_no_plan_and_stay_right(replays):
    x, y = np.arange(64, dtype=np.float32), np.arange(16, dtype=np.float32)
    for _ in range(3):
        out = np.zeros(80, np.float32)
        two_lengths[(1,)](x, y, out, A=64, B=16)
        np.testing.assert_array_equal(out, np.concatenate([x, 2 * y]))
    assert replays["n"] == 0


@dsl.jit
def shifted_copy(x, out, n, SHIFT: dsl.constexpr, BLOCK: dsl.constexpr):
    """Pointer arithmetic reading past the end of ``x``'s view, inside its allocation."""
    i = dsl.arange(0, BLOCK)
    dsl.store(out + i, dsl.load(x + i + SHIFT, mask=i < n), mask=i < n)


def test_pointer_kernels_replay_and_still_check_the_memory_a_call_brings(prepares, replays):
    big = np.arange(128, dtype=np.float32)
    for _ in range(4):
        out = np.zeros(64, np.float32)
        shifted_copy[(1,)](big[:64], out, 64, SHIFT=32, BLOCK=64)
        np.testing.assert_array_equal(out, big[32:96])
    assert replays["n"] >= 2 and prepares["n"] <= 1, \
        "a pointer-addressed launch replays its plan straight from the call's values"
    assert shifted_copy._hot is not None, "the hot launcher checks the memory's reach"
    owned = np.arange(64, dtype=np.float32)  # the same key, but memory ends at 64
    out = np.full(64, -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="'x'"):
        shifted_copy[(1,)](owned, out, 64, SHIFT=32, BLOCK=64)
    assert np.all(out == -1.0), "nothing is written"


def test_an_array_over_a_torch_tensor_is_its_own_allocation_for_pointers(torch, replays):
    """A NumPy array whose base is not an array (here, a view of a torch tensor's
    memory) is taken as its own allocation, as the full path takes it: a replayed
    call reads it, and a pointer past its end is out of bounds, even though the
    tensor's storage goes on."""
    storage = torch.arange(128, dtype=torch.float32)
    for _ in range(4):
        out = np.zeros(32, np.float32)
        shifted_copy[(1,)](storage[:64].numpy(), out, 32, SHIFT=32, BLOCK=32)
        np.testing.assert_array_equal(out, np.arange(32, 64, dtype=np.float32))
    assert replays["n"] >= 2 and shifted_copy._hot is not None
    out = np.full(64, -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="'x'"):
        shifted_copy[(1,)](storage[:64].numpy(), out, 64, SHIFT=32, BLOCK=64)
    assert np.all(out == -1.0), "nothing is written"


def test_torch_tensors_replay_and_pointers_still_reach_only_their_storage(torch, replays):
    """Contiguous torch tensors' buffers are read inline on a replay: a tensor that is
    all of its storage is its own memory; one that is part of a larger storage lets
    a pointer reach the rest of that storage, and no further."""
    big = torch.arange(128, dtype=torch.float32)
    for x in (torch.arange(64, dtype=torch.float32) + 32, big[:64], big[32:96]):
        for _ in range(4):  # the same key each time: the later calls replay
            out = torch.zeros(32)
            shifted_copy[(1,)](x, out, 32, SHIFT=32, BLOCK=32)
            assert torch.equal(out, x[32:64])
    assert replays["n"] >= 6
    out = torch.zeros(32)  # past the view, inside the storage: allowed
    shifted_copy[(1,)](big[:64], out, 32, SHIFT=64, BLOCK=32)
    assert torch.equal(out, big[64:96])
    out = torch.full((32,), -1.0)
    with pytest.raises(dsl.OutOfBoundsError, match="'x'"):  # past the storage's end
        shifted_copy[(1,)](big[64:], out, 32, SHIFT=64, BLOCK=32)
    assert torch.all(out == -1.0), "nothing is written"


def test_dsl_kernels_on_torch_tensors_replay_bit_for_bit(torch, replays):
    x, y = torch.linspace(-3, 3, 1000), torch.linspace(1, 2, 1000)
    for a, b in ((x, y), (x, y), (x, y), (x[::1], y.flip(0)), (x, y)):
        out = torch.empty(1000)
        add_kernel[(4,)](a, b, out, 1000, BLOCK=256)
        assert torch.equal(out, a + b)
    assert replays["n"] >= 3
    strided = torch.linspace(0, 1, 2000)[::2]  # not contiguous: the general path
    for _ in range(3):
        out = torch.empty(1000)
        add_kernel[(4,)](strided, y, out, 1000, BLOCK=256)
        assert torch.equal(out, strided + y)


def test_a_call_with_an_exact_key_seen_before_skips_the_recipe_keys(monkeypatch, replays):
    """The hot path: once a call's exact key (``exact_call_key``) ran a replay, a call
    with that key runs it again without building the recipe and replay keys; any
    change the key holds (a scalar's sign, writeability, a new grid) misses it."""
    from dsl.jit import JITFunction

    counted = _count_calls(monkeypatch, JITFunction, "_recipe_key")
    x = np.linspace(-1, 1, 300, dtype=np.float32)
    for _ in range(5):
        out = np.empty(300, np.float32)
        scale_kernel[(2,)](x, out, 300, 0.5, BLOCK=128)
        np.testing.assert_array_equal(out, x * np.float32(0.5))
    assert counted["n"] == 2 and replays["n"] == 4, \
        "calls 4 and 5 take the hot path (no recipe key), and all replays run the plan"
    for s in (-0.0, 0.0, -0.0):  # equal as floats, different bits: different exact keys
        out = np.empty(300, np.float32)
        scale_kernel[(2,)](x, out, 300, s, BLOCK=128)
        np.testing.assert_array_equal(out.view(np.uint32), (x * np.float32(s)).view(np.uint32))
    out.flags.writeable = False
    with pytest.raises(dsl.DSLLaunchError, match="read-only"):
        scale_kernel[(2,)](x, out, 300, 0.5, BLOCK=128)
    out = np.zeros(300, np.float32)
    scale_kernel[(1,)](x, out, 300, 0.5, BLOCK=128)  # another grid: one program
    np.testing.assert_array_equal(out, x * np.float32(0.5))


def test_the_hot_path_still_catches_overlap_and_runs_aliases_correctly(replays):
    x, y = np.arange(96, dtype=np.float32), np.ones(96, np.float32)
    for _ in range(4):  # the last two take the hot path
        add_kernel[(2,)](x, y, np.empty(96, np.float32), 96, BLOCK=64)
    before = replays["n"]
    add_kernel[(2,)](x, y, x, 96, BLOCK=64)  # the same exact key; out is x itself
    np.testing.assert_array_equal(x, np.arange(96, dtype=np.float32) + 1)
    assert replays["n"] == before, "an output aliasing an input is never replayed"
    buf = np.arange(97, dtype=np.float32)  # views that do not own their memory
    with pytest.raises(dsl.DSLLaunchError, match="partially overlap"):
        add_kernel[(2,)](buf[:-1], y, buf[1:], 96, BLOCK=64)
    np.testing.assert_array_equal(buf, np.arange(97, dtype=np.float32))


def test_a_plan_computes_a_stored_value_straight_into_its_run_only_when_nothing_else_reads_it():
    @dsl.jit
    def twice(x, a, b, n, BLOCK: dsl.constexpr):
        for start in dsl.tile_range(0, n, BLOCK):
            idx = start + dsl.arange(0, BLOCK)
            v = dsl.load(x, idx, idx < n) * 3.0
            dsl.store(a, idx, v, idx < n)  # v has a second reader: computed, then copied
            dsl.store(b, idx, v + 1.0, idx < n)  # its only reader: written in place

    x = np.linspace(0, 1, 200, dtype=np.float32)
    for _ in range(3):
        a, b = np.empty(200, np.float32), np.empty(200, np.float32)
        twice[(2,)](x, a, b, 200, BLOCK=64)
        np.testing.assert_array_equal(a, x * np.float32(3))
        np.testing.assert_array_equal(b, x * np.float32(3) + np.float32(1))
    fn = next(iter(twice._cache.values()))
    plans = [p for p in interpreter._facts(fn).plans.values() if p is not None]
    assert len(plans) == 1
    source = plans[0].source
    # (the ufunc takes its output by position: ``f(r3, r4, b2)``)
    assert len(re.findall(r"\(r\d+, r\d+, b\d\)", source)) == 1 and \
        re.search(r"\(r\d+, r\d+, b2\)", source), source
    assert "r1 = b0\n" in source, "a run that is all of its buffer is the buffer itself"


def test_a_plan_slices_a_run_that_is_part_of_its_buffer():
    @dsl.jit
    def head_plus_one(x, out, n, BLOCK: dsl.constexpr):
        for start in dsl.tile_range(0, n, BLOCK):
            idx = start + dsl.arange(0, BLOCK)
            dsl.store(out, idx, dsl.load(x, idx, idx < n) + 1.0, idx < n)

    x = np.linspace(0, 1, 300, dtype=np.float32)
    for _ in range(3):
        out = np.full(300, -1.0, np.float32)
        head_plus_one[(1,)](x, out, 200, BLOCK=64)
        np.testing.assert_array_equal(out[:200], x[:200] + np.float32(1))
        assert np.all(out[200:] == -1.0)
    fn = next(iter(head_plus_one._cache.values()))
    plans = [p for p in interpreter._facts(fn).plans.values() if p is not None]
    assert len(plans) == 1
    assert "b0[0:200]" in plans[0].source and ", b1[0:200])" in plans[0].source, \
        plans[0].source


# ----------------------------------------------------------------------------- hot launchers


def _scale(x, out, n, s, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        dsl.store(out, idx, dsl.load(x, idx, idx < n) * s, idx < n)


def _hot_scale_kernel():
    """A new kernel whose call has been repeated until it has a hot launcher."""
    kernel = dsl.jit(_scale)
    x = np.linspace(-1, 1, 300, dtype=np.float32)
    for _ in range(3):
        out = np.empty(300, np.float32)
        kernel[(2,)](x, out, 300, 0.5, BLOCK=128)
    assert kernel._hot is not None, "the key repeated: it has a hot launcher"
    return kernel, x


def test_a_hot_launcher_runs_a_repeated_call_without_building_its_key(monkeypatch, hot_runs):
    """The hot launcher compares the call with the key itself: no ``exact_call_key``,
    no recipe; the plan's statements run inline, bit for bit as a fresh run."""
    kernel, x = _hot_scale_kernel()
    jit_module = importlib.import_module("dsl.jit")
    keys = {"n": 0}
    original = jit_module.exact_call_key
    monkeypatch.setattr(jit_module, "exact_call_key",
                        lambda *a: keys.__setitem__("n", keys["n"] + 1) or original(*a))
    before = hot_runs["n"]
    for _ in range(3):
        out = np.empty(300, np.float32)
        kernel[(2,)](x, out, 300, 0.5, BLOCK=128)
        np.testing.assert_array_equal(out, _fresh(kernel, (x, out, 300, 0.5),
                                                  {"BLOCK": 128}, (2,))[1])
    assert keys["n"] == 0 and hot_runs["n"] == before + 3


@pytest.mark.parametrize("bad,good", [((2.0,), (2,)), ((True,), (1,)), (True, 1),
                                      ((2, 1.0), (2, 1))])
def test_a_grid_equal_to_a_valid_one_is_refused_after_it_ran(bad, good):
    """``(2.0,) == (2,)`` and ``True == 1``: the launch caches (exact key, hot launcher,
    recipe) tell them apart, so such a grid is refused however often the valid one
    ran before (it ran from those caches, unchecked)."""
    kernel, x = _hot_scale_kernel()
    for _ in range(3):
        kernel[good](x, np.empty(300, np.float32), 300, 0.5, BLOCK=128)
    out = np.full(300, 7.0, np.float32)
    with pytest.raises(dsl.DSLLaunchError, match="grid must be"):
        kernel[bad](x, out, 300, 0.5, BLOCK=128)
    assert (out == 7.0).all()


@pytest.mark.parametrize("bad,good", [(128.0, 128), (np.int64(128), 128)])
def test_a_constexpr_equal_to_a_valid_one_is_refused_after_it_ran(bad, good):
    """``128.0 == 128``: the in-memory specializations are keyed by the constexpr's
    type too, so a value a fresh kernel refuses is refused after the valid one ran
    (it ran the int's build)."""
    kernel = dsl.jit(_scale)
    x = np.linspace(-1, 1, 300, dtype=np.float32)
    with pytest.raises(dsl.DSLCompileError) as fresh:
        dsl.jit(_scale)[(3,)](x, np.empty(300, np.float32), 300, 0.5, BLOCK=bad)
    for _ in range(3):
        kernel[(3,)](x, np.empty(300, np.float32), 300, 0.5, BLOCK=good)
    out = np.full(300, 7.0, np.float32)
    with pytest.raises(dsl.DSLCompileError) as after:
        kernel[(3,)](x, out, 300, 0.5, BLOCK=bad)
    assert str(after.value) == str(fresh.value)
    assert (out == 7.0).all()


@dsl.jit
def _offset_copy(x, out, n, BLOCK: dsl.constexpr):
    i = dsl.program_id(0) * BLOCK + dsl.arange(0, BLOCK)
    dsl.store(out, i, dsl.load(x, i, i < n), i < n)


def test_a_numpy_scalar_constexpr_in_arithmetic_says_what_to_pass():
    x = np.ones(256, np.float32)
    with pytest.raises(dsl.DSLCompileError,
                       match=r"a NumPy scalar, np.int64\(128\): pass a Python int"):
        _offset_copy[(2,)](x, np.empty_like(x), 256, BLOCK=np.int64(128))


HOT_MISSES = {
    "another float": lambda x, out: ((x, out, 300, 0.25), {"BLOCK": 128}, (2,)),
    "a float's sign": lambda x, out: ((x, out, 300, -0.0), {"BLOCK": 128}, (2,)),
    "another int": lambda x, out: ((x, out, 299, 0.5), {"BLOCK": 128}, (2,)),
    "an int for a float": lambda x, out: ((x, out, 300, 1), {"BLOCK": 128}, (2,)),
    "another grid": lambda x, out: ((x, out, 300, 0.5), {"BLOCK": 128}, (1,)),
    "another constexpr": lambda x, out: ((x, out, 300, 0.5), {"BLOCK": 64}, (2,)),
    "a keyword given by position": lambda x, out: ((x, out, 300, 0.5, 128), {}, (2,)),
    "another dtype": lambda x, out: ((x.astype(np.float16), out, 300, 0.5), {"BLOCK": 128},
                                     (2,)),
    "another shape": lambda x, out: ((np.append(x, 7.0).astype(np.float32), out, 300, 0.5),
                                     {"BLOCK": 128}, (2,)),
    "other strides": lambda x, out: ((np.repeat(x, 2)[::2], out, 300, 0.5), {"BLOCK": 128},
                                     (2,)),
    "an output that is an input": lambda x, out: ((out, out, 300, 0.5), {"BLOCK": 128}, (2,)),
}


@pytest.mark.parametrize("change", HOT_MISSES)
def test_a_call_that_differs_from_the_hot_key_misses_it_and_stays_right(change, hot_runs):
    """Each part of the key the launcher compares: a call that differs in it is not
    run by the hot launcher, and gives what a fresh interpreter run gives."""
    kernel, x = _hot_scale_kernel()
    out = np.linspace(2, 3, 300, dtype=np.float32)
    args, kwargs, grid = HOT_MISSES[change](x, out)
    want = _fresh(kernel, args, kwargs, grid)
    before = hot_runs["n"]
    kernel[grid](*args, **kwargs)
    assert hot_runs["n"] == before, "the hot launcher did not run this call"
    for got, expected in zip(args, want):
        if isinstance(got, np.ndarray):
            np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                          np.ascontiguousarray(expected).view(np.uint8))
    out = np.empty(300, np.float32)
    kernel[(2,)](x, out, 300, 0.5, BLOCK=128)  # the hot key again
    assert hot_runs["n"] == before + 1
    np.testing.assert_array_equal(out, x * np.float32(0.5))


def test_a_hot_launcher_still_sees_planning_read_only_outputs_and_the_environment(
        monkeypatch, hot_runs):
    from dsl.jit import planning

    kernel, x = _hot_scale_kernel()
    out = np.full(300, 7.0, np.float32)
    with planning() as plans:  # recorded, not run
        kernel[(2,)](x, out, 300, 0.5, BLOCK=128)
    assert len(plans) == 1 and np.all(out == 7.0)
    out.flags.writeable = False
    with pytest.raises(dsl.DSLLaunchError, match="read-only"):
        kernel[(2,)](x, out, 300, 0.5, BLOCK=128)
    monkeypatch.setenv("DSL_BACKEND", "no-such-backend")
    with pytest.raises(UnknownBackendError, match="no-such-backend"):
        kernel[(2,)](x, np.empty(300, np.float32), 300, 0.5, BLOCK=128)
    assert hot_runs["n"] == 0


def test_keys_with_a_nan_get_no_hot_launcher():
    kernel = dsl.jit(_scale)
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    for _ in range(4):
        out = np.empty(64, np.float32)
        kernel[(1,)](x, out, 64, float("nan"), BLOCK=64)
        assert np.isnan(out).all()
    assert kernel._hot is None


def _hot_torch_scale_kernel(torch):
    """A new kernel whose call on torch tensors repeated until it has a hot launcher."""
    kernel = dsl.jit(_scale)
    x = torch.linspace(-1, 1, 300)
    for _ in range(3):
        kernel[(2,)](x, torch.empty(300), 300, 0.5, BLOCK=128)
    assert kernel._hot is not None, "the key repeated: it has a hot launcher"
    return kernel, x


def test_torch_tensors_get_a_hot_launcher_that_reads_them_and_tells_autograd(torch,
                                                                            hot_runs):
    kernel, x = _hot_torch_scale_kernel(torch)
    before = hot_runs["n"]
    for source in (x, torch.linspace(-2, 2, 300), x.clone().requires_grad_()):
        out = torch.empty(300)
        versions = out._version
        kernel[(2,)](source, out, 300, 0.5, BLOCK=128)
        assert torch.equal(out, source.detach() * 0.5)
        assert out._version > versions, "autograd is told about the write"
    assert hot_runs["n"] == before + 3, "new data, and a tensor that requires grad"
    saved = torch.ones(300, requires_grad=True)
    out = torch.zeros(300)
    loss = (saved * out).sum()  # saves ``out`` for the backward
    kernel[(2,)](x, out, 300, 0.5, BLOCK=128)
    assert hot_runs["n"] == before + 4
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


TORCH_HOT_MISSES = {
    "another dtype": lambda torch, x, out: (x.double(), out),
    "another shape": lambda torch, x, out: (torch.cat([x, x[:1]]), out),
    "other strides": lambda torch, x, out: (x.repeat_interleave(2)[::2], out),
    "a tensor subclass": lambda torch, x, out: (torch.nn.Parameter(x.clone()), out),
    "a NumPy array for a tensor": lambda torch, x, out: (x.numpy(), out),
    "an output that is an input": lambda torch, x, out: (out, out),
    "a view into a larger storage": lambda torch, x, out: (torch.cat([x, x])[300:], out),
}


@pytest.mark.parametrize("change", TORCH_HOT_MISSES)
def test_a_torch_call_that_differs_from_the_hot_key_misses_it_and_stays_right(
        change, torch, hot_runs):
    kernel, x = _hot_torch_scale_kernel(torch)
    out = torch.linspace(2, 3, 300)
    source, out = TORCH_HOT_MISSES[change](torch, x, out)
    want = source.detach().numpy().copy() * np.float32(0.5) if isinstance(source, torch.Tensor) \
        else source * np.float32(0.5)
    before = hot_runs["n"]
    kernel[(2,)](source, out, 300, 0.5, BLOCK=128)
    if change != "a view into a larger storage":  # (a DSL kernel reads the view alone)
        assert hot_runs["n"] == before, "the hot launcher did not run this call"
    np.testing.assert_array_equal(out.numpy(), want[:300].astype(np.float32))


def test_a_nested_or_sparse_tensor_for_a_hot_torch_key_is_named_as_by_a_fresh_kernel(torch):
    """The hot launcher reads a torch tensor's shape and strides, which a nested
    (shape) or sparse (strides) tensor refuses with torch's own RuntimeError; such a
    call falls back to the full path, which names the argument (found in session 28)."""
    def outcome(kernel, x):
        with pytest.raises(dsl.DSLLaunchError) as err:
            kernel[(2,)](x, torch.empty(300), 300, 0.5, BLOCK=128)
        return str(err.value)

    for dense, bad in ((torch.linspace(-1, 1, 300), lambda: torch.nested.nested_tensor(
            [torch.ones(150), torch.ones(150)])),
            (torch.zeros(3, 100), lambda: torch.ones(3, 100).to_sparse_csr())):
        kernel = dsl.jit(_scale)
        for _ in range(3):
            kernel[(2,)](dense, torch.empty(300), 300, 0.5, BLOCK=128)
        assert kernel._hot is not None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch's nested and sparse CSR are beta)
            hot, fresh = outcome(kernel, bad()), outcome(dsl.jit(_scale), bad())
        assert hot == fresh and "argument 'x'" in hot


def test_a_hot_launcher_over_torch_checks_what_pointers_reach(torch, hot_runs):
    """A pointer-addressed tensor that is part of a larger storage gets the general
    reach computation inside the hot launcher: a pointer may reach the rest of the
    storage, and one past its end is out of bounds, with nothing written."""
    kernel = dsl.jit(shifted_copy.fn)  # a kernel of its own: no launcher from other tests
    big = torch.arange(128, dtype=torch.float32)
    for _ in range(4):  # past the view, inside the storage
        out = torch.zeros(32)
        kernel[(1,)](big[:64], out, 32, SHIFT=64, BLOCK=32)
        assert torch.equal(out, big[64:96])
    ran = hot_runs["n"]
    assert ran >= 1
    out = torch.zeros(32)
    kernel[(1,)](big[32:96], out, 32, SHIFT=64, BLOCK=32)  # same key, other view
    assert torch.equal(out, big[96:128]) and hot_runs["n"] == ran + 1
    out = torch.full((32,), -1.0)
    with pytest.raises(dsl.OutOfBoundsError, match="'x'"):  # past the storage's end
        kernel[(1,)](big[64:], out, 32, SHIFT=64, BLOCK=32)
    assert torch.all(out == -1.0), "nothing is written"
    assert hot_runs["n"] == ran + 1, "the hot launcher left that call to the full path"


def test_a_hot_launcher_tells_a_zero_from_a_negative_zero(hot_runs):
    kernel = dsl.jit(_scale)
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    for s in (0.0, 0.0, 0.0, -0.0, 0.0):
        out = np.empty(64, np.float32)
        kernel[(1,)](x, out, 64, s, BLOCK=64)
        np.testing.assert_array_equal(out.view(np.uint32), (x * np.float32(s)).view(np.uint32))
    assert hot_runs["n"] == 1, "the third 0.0 made the launcher; -0.0 missed it; 0.0 ran it"


def test_indexing_a_hot_kernel_with_its_grid_gives_the_launch_itself(hot_runs):
    """``kernel[grid]`` for the hot launcher's grid is its ``call``: no closure per
    indexing, no wrapper around the guard (most of a 1K vector add's Python). Other
    grids, and grids equal to it but of other types, get the kernel's own path."""
    kernel, x = _hot_scale_kernel()
    launch = kernel[(2,)]
    assert launch is kernel[(2,)] is kernel._hot.call
    assert kernel[(1,)] is not launch and kernel[(2.0,)] is not launch
    assert kernel[(np.array([2, 2]),)] is not launch  # (no ``==`` on the array)
    before = hot_runs["n"]
    for scale in (0.5, 0.5, 0.25):
        out = np.empty(300, np.float32)
        launch(x, out, 300, scale, BLOCK=128)
        np.testing.assert_array_equal(out, x * np.float32(scale))
    assert hot_runs["n"] == before + 2, "the other scale left the launcher for the key path"


HELD_MISSES = {
    "too few arguments": lambda x, out: ((x, out), {}),
    "a positional one by name": lambda x, out: ((x, out), {"n": 300, "s": 0.5, "BLOCK": 128}),
    "an unknown keyword": lambda x, out: ((x, out, 300, 0.5), {"BLOCK": 128, "other": 1}),
    "per-call options": lambda x, out: ((x, out, 300, 0.5),
                                        {"BLOCK": 128, "options": Options()}),
    "a per-call backend": lambda x, out: ((x, out, 300, 0.5),
                                          {"BLOCK": 128, "backend": "interpreter"}),
}


@pytest.mark.parametrize("change", HELD_MISSES)
def test_a_call_the_held_launch_does_not_fit_takes_the_kernels_own_path(change, hot_runs):
    """The launch ``kernel[grid]`` gave binds its arguments by position and keyword
    name; a call of another form falls back to the kernel's path with its arguments as
    given, so it runs or fails exactly as on a kernel with no hot launcher."""
    kernel, x = _hot_scale_kernel()
    outcomes = []
    for launch in (kernel[(2,)], dsl.jit(_scale)[(2,)]):
        out = np.zeros(300, np.float32)
        args, kwargs = HELD_MISSES[change](x, out)
        before = hot_runs["n"]
        try:
            launch(*args, **kwargs)
            outcomes.append(out)
        except Exception as exc:  # noqa: BLE001 -- compared between the two kernels
            outcomes.append(f"{type(exc).__name__}: {exc}")
        assert hot_runs["n"] == before
    if isinstance(outcomes[0], str):
        assert outcomes[0] == outcomes[1]
    else:
        np.testing.assert_array_equal(outcomes[0], outcomes[1])
        np.testing.assert_array_equal(outcomes[0], x * np.float32(0.5))


def _plain_add(x, out, n, a0, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        dsl.store(out, idx, dsl.load(x, idx, idx < n) + a0, idx < n)


def _typed_add(x, out, n, ndarray, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        dsl.store(out, idx, dsl.load(x, idx, idx < n) + ndarray, idx < n)


@pytest.mark.parametrize("body", [_plain_add, _typed_add])
def test_a_keyword_named_like_a_name_of_the_launch_still_runs_hot(body, hot_runs):
    """The launch binds the key's keywords as parameters of their own names; one
    named like a name the generated code uses (its positional ``a0``, ... or a global
    such as ``ndarray``) would shadow it, so such a key binds ``*args, **kwargs``."""
    kernel = dsl.jit(body)
    name = "a0" if body is _plain_add else "ndarray"
    x = np.linspace(-1, 1, 100, dtype=np.float32)
    for _ in range(4):
        out = np.empty(100, np.float32)
        kernel[(2,)](x, out, 100, **{name: 2.0}, BLOCK=64)
        np.testing.assert_array_equal(out, x + np.float32(2.0))
    assert hot_runs["n"] == 1 and "def call(*args, **kwargs):" in kernel._hot.source


@dsl.jit
def rows_and_columns(x, out, M, N, BM: dsl.block_size, BN: dsl.block_size):
    for start in dsl.tile_range(0, M, BM):
        r = start + dsl.arange(0, BM)
        c = dsl.arange(0, BN)  # one block of columns: BN must cover N
        m = (r[:, None] < M) & (c[None, :] < N)
        dsl.store(out, r[:, None] * N + c[None, :],
                  dsl.load(x, r[:, None] * N + c[None, :], m) + 1.0, m)


def test_several_open_block_sizes_make_a_tile_that_fits_in_memory():
    """Every block size left to the launcher was sized by the largest tensor's element
    count: a 300x300 array made a 65536x65536 tile (a 16 GiB MemoryError, found in
    session 19). Several open blocks now each cover the longest dimension, and a tile
    past ``MAX_OPEN_TILE`` elements is refused with the blocks named."""
    for shape in ((37, 29), (300, 300), (5, 1000)):
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        out = np.zeros_like(x)
        rows_and_columns(x, out, *shape)
        np.testing.assert_array_equal(out, x + 1)
    x = np.zeros((1, 5000), np.float32)
    out = np.full_like(x, 7.0)
    with pytest.raises(dsl.DSLLaunchError, match="BM, BN were left to the launcher.*"
                                                 "8192.*pass them explicitly"):
        rows_and_columns(x, out, 1, 5000)
    assert (out == 7.0).all()
    rows_and_columns(x, out, 1, 5000, BM=1, BN=8192)
    assert (out == 1.0).all()


def test_a_grid_is_an_int_or_a_tuple_or_list_of_ints():
    """``kernel[np.int64(4)]`` raised a raw TypeError, ``kernel[2.0]`` too, and
    ``kernel[range(3)]`` launched the grid (0, 1, 2) (found in session 19)."""
    x = np.arange(64, dtype=np.float32)
    for grid in (4, np.int64(4), (4,), [4], (np.int32(4), 1), [4, 1, 1]):
        out = np.zeros(64, np.float32)
        rows_and_columns[grid](x.reshape(4, 16), out.reshape(4, 16), 4, 16, BM=1, BN=16)
        np.testing.assert_array_equal(out, x + 1)
    for grid in (2.0, range(3), np.array(4), np.array([4]), (4, 1, 1, 1), (-1,), "4", (True,)):
        with pytest.raises(dsl.DSLLaunchError, match="grid must be 1 to 3 non-negative "
                                                     "integers"):
            rows_and_columns[grid](x.reshape(4, 16), np.zeros((4, 16), np.float32), 4, 16,
                                   BM=1, BN=16)


@dsl.jit
def copy_2d(x, out, M: dsl.constexpr, N: dsl.constexpr):
    r, c = dsl.arange(0, M)[:, None], dsl.arange(0, N)[None, :]
    dsl.store(out, r * N + c, dsl.load(x, r * N + c))


def test_an_output_view_that_overlaps_itself_is_refused():
    """``as_strided(buf, (4, 8), (16, 4))`` (rows overlapping) was accepted as an output
    and its rows overwrote each other, even under DSL_RACE_CHECK=full (found in
    session 19); a stride-0 output was already refused. Interleaved axes that reach
    distinct elements stay accepted."""
    from numpy.lib.stride_tricks import as_strided

    src = np.arange(32, dtype=np.float32).reshape(4, 8)
    buf = np.zeros(20, np.float32)
    with pytest.raises(dsl.DSLLaunchError, match="'out' is stored to but its view overlaps "
                                                 "itself"):
        copy_2d(src, as_strided(buf, shape=(4, 8), strides=(16, 4)), M=4, N=8)
    assert not buf.any()
    buf = np.zeros(12, np.float32)
    apart = as_strided(buf, shape=(4, 2), strides=(8, 20))  # offsets 0 5 2 7 4 9 6 11
    copy_2d(src[:4, :2].copy(), apart, M=4, N=2)
    np.testing.assert_array_equal(apart, src[:4, :2])
    copy_2d(src.T.copy(), np.zeros((8, 4), np.float32).T.T, M=8, N=4)  # plain layouts pass


@dsl.jit
def scaled_copy(x, out, scale, N: dsl.constexpr):
    i = dsl.arange(0, N)
    dsl.store(out, i, dsl.load(x, i) * scale)


def test_a_float_argument_past_float32_converts_to_infinity_without_a_warning():
    """``1e300`` for a float32 parameter is infinity, as the cast gives, but NumPy's
    "overflow encountered in cast" warning leaked from the launch caches (found in
    session 19); every launch path converts it quietly."""
    import warnings

    x = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for scale in (1e300, -1e300, 2.0, 1e300, 1e300, 1e300):  # the cached paths too
            out = np.zeros(4, np.float32)
            scaled_copy[(1,)](x, out, scale, N=4)
            as_float32 = np.float32(scale) if abs(scale) < 1e38 else \
                np.float32(np.copysign(np.inf, scale))
            np.testing.assert_array_equal(out, x * as_float32)


def test_interleaved_views_that_share_no_element_are_not_an_overlap():
    """Writing ``buf[::2]`` from ``buf[1::2]`` was refused as a partial overlap (the
    test compared the views' memory spans; found in session 19); NumPy's exact test
    now decides, and views that do share an element stay refused."""
    buf = np.arange(16, dtype=np.float32)
    scaled_copy[(1,)](buf[1::2], buf[::2], 2.0, N=8)
    np.testing.assert_array_equal(buf[::2], 2 * np.arange(1, 16, 2, dtype=np.float32))
    np.testing.assert_array_equal(buf[1::2], np.arange(1, 16, 2, dtype=np.float32))
    with pytest.raises(dsl.DSLLaunchError, match="partially overlap"):
        scaled_copy[(1,)](buf[1:9], buf[:8], 2.0, N=8)


@dsl.jit
def read_ahead(x, out, n, BLOCK: dsl.constexpr):
    i = dsl.program_id(0) * BLOCK + dsl.arange(0, BLOCK)
    dsl.store(out, i, dsl.load(x, i + 1, i + 1 < n, 0.0) * 2.0, i < n)


def test_the_full_race_check_sees_one_tensor_passed_under_two_names(monkeypatch):
    """``out[i] = 2 * x[i + 1]`` with ``x is out``: program 0 reads the element program
    1 writes, so the result depends on their order (compiled code differed from run to
    run), but the full check tracked ``x`` and ``out`` apart and passed it (found in
    session 19). Exact aliases are now tracked as one tensor."""
    monkeypatch.setenv("DSL_RACE_CHECK", "full")
    buf = np.arange(16, dtype=np.float32)
    for x, out in ((buf, buf), (buf, buf[:])):
        with pytest.raises(dsl.DataRaceError, match="full check.*element 8 of tensor 'out' "
                                                    "is written by program 1 and read by "
                                                    "program 0"):
            read_ahead[(2,)](x, out, 16, BLOCK=8)
        np.testing.assert_array_equal(buf, np.arange(16, dtype=np.float32))
    out = np.zeros(16, np.float32)
    read_ahead[(2,)](buf, out, 16, BLOCK=8)  # apart: no race
    np.testing.assert_array_equal(out, np.append(2 * buf[1:], 0.0))


@dsl.jit
def last_program_rewrites_the_first_block(x, out, n, BLOCK: dsl.constexpr):
    pid = dsl.program_id(0)
    i = pid * BLOCK + dsl.arange(0, BLOCK)
    target = dsl.where(pid == dsl.num_programs(0) - 1, i - pid * BLOCK, i)
    dsl.store(out, target, dsl.load(x, i) + 1.0, target < n)


def test_a_race_between_programs_more_than_a_chunk_apart_is_found():
    """The race check compares the lanes of one store within a batch of rows; when the
    pre-pass found lanes clashing and left the verdict to the stored values, the run
    compared them in its own, 16 times smaller batches, so two programs more than
    2**21 elements apart passed unseen (found in session 19 at 6M elements). The run
    now takes the pre-pass's batches."""
    block = 1024
    n = 3 * interpreter.CHUNK_ELEMENTS  # three of the run's chunks
    x, out = np.arange(n, dtype=np.float32), np.zeros(n, np.float32)
    with pytest.raises(dsl.DataRaceError, match="two lanes store element 0 of tensor 'out'"):
        last_program_rewrites_the_first_block[(n // block,)](x, out, n, BLOCK=block)
    assert not out.any()
    x[:block] = x[-block:]  # the same bits from both programs: not a race
    last_program_rewrites_the_first_block[(n // block,)](x, out, n, BLOCK=block)
    np.testing.assert_array_equal(out[:-block], x[:-block] + 1)
