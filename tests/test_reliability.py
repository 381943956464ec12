"""Reliability fixes (issue 12): reductions given as arrays give a status, and writes
into torch tensors are visible to autograd (the version counter moves)."""

from __future__ import annotations

import numpy as np
import pytest

import dsl
import ops

X = np.full(4, 0.5, np.float32)


@pytest.mark.parametrize("reduction", [np.array([1, 2]), np.array(1.5), np.array([1])],
                         ids=["vector", "float", "one-element"])
def test_a_reduction_given_as_an_array_is_status_161002(reduction):
    with pytest.raises(ops.AclnnError) as info:
        ops.binary_cross_entropy_backward(np.float32(1.0), X, X, None, reduction)
    assert info.value.status == 161002
    out = np.full(4, 7.0, np.float32)
    status, _, executor = ops.aclnn.binary_cross_entropy_backward_get_workspace_size(
        np.float32(1.0), X, X, None, reduction, out)
    assert status == 161002 and executor is None and (out == 7.0).all()


def test_a_reduction_given_as_a_tensor_is_status_161002(torch):
    with pytest.raises(ops.AclnnError) as info:
        ops.binary_cross_entropy_with_logits(X, X, reduction=torch.tensor(1.0))
    assert info.value.status == 161002
    # a 0-d integer is an index like any other: still accepted
    ops.binary_cross_entropy_backward(np.float32(1.0), X, X, None, np.array(1))


def test_out_into_a_saved_torch_tensor_makes_backward_raise_like_torch(torch):
    a = torch.rand(8, requires_grad=True)
    b = a * 2
    c = b.sin()  # saves b for the backward
    ops.binary_cross_entropy_backward(torch.tensor(1.0), torch.rand(8), torch.rand(8),
                                      out=b.detach())
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_phase_two_and_custom_kernels_move_the_version_counter(torch):
    out = torch.empty(4)
    status, _, executor = ops.aclnn.binary_cross_entropy_backward_get_workspace_size(
        torch.tensor(1.0), torch.rand(4), torch.rand(4), None, 1, out)
    before = out._version
    assert ops.aclnn.binary_cross_entropy_backward(None, 0, executor) == 0
    assert out._version > before

    @dsl.jit
    def fill(dst, src):
        i = dsl.arange(0, 4)
        dsl.store(dst, i, dsl.load(src, i) + 1.0)

    dst, src = torch.zeros(4), torch.ones(4)
    versions = dst._version, src._version
    fill(dst, src)
    assert dst._version > versions[0] and src._version == versions[1]
    assert (dst == 2).all()


def test_demo_says_cached_instead_of_replaying_stored_timings(tmp_path, monkeypatch):
    """Issue 12, point 11: a lowering served from the on-disk cache is not timed now."""
    import io

    from conftest import ORACLES_REQUIRED

    from lowering.compiler import ToolchainMissing, toolchain
    from ops import cli

    try:
        toolchain()
    except ToolchainMissing as err:
        if ORACLES_REQUIRED:
            pytest.fail(f"the lowering toolchain is required in CI: {err}")
        pytest.skip(str(err))
    from dsl.backends import get_backend

    monkeypatch.setenv("DSL_CACHE_DIR", str(tmp_path))
    first, second = io.StringIO(), io.StringIO()
    get_backend("hivm").memory.clear()  # nothing lowered earlier in this process
    assert cli.lower_both(first) == 0
    get_backend("hivm").memory.clear()  # a new process: only the disk cache remains
    assert cli.lower_both(second) == 0
    assert "cached" not in first.getvalue() and " ms" in first.getvalue()
    rows = [line for line in second.getvalue().splitlines() if "Ascend910B4" in line]
    assert len(rows) == 4 and all(line.rstrip().endswith("cached") for line in rows)


@dsl.jit
def gather_rows(table, index, out, n, BLOCK: dsl.constexpr):
    i = dsl.arange(0, BLOCK)
    m = i < n
    dsl.store(out, i, dsl.load(table, dsl.load(index, i, m), m), m)


@dsl.jit
def scatter_rows(values, index, out, n, BLOCK: dsl.constexpr):
    i = dsl.arange(0, BLOCK)
    m = i < n
    dsl.store(out, dsl.load(index, i, m), dsl.load(values, i, m), m)


@pytest.mark.parametrize("bad", [16, -5, 10**8])
@pytest.mark.parametrize("backend", ["interpreter", "compiled-cpu"])
def test_data_dependent_indices_are_checked_in_every_backend(bad, backend, request):
    """Issue 12, point 1: an index read from data that is out of bounds raises
    OutOfBoundsError with nothing written, in compiled-CPU mode too."""
    if backend == "compiled-cpu":
        request.getfixturevalue("cpu_toolchain")
    table = np.arange(16, dtype=np.float32)
    index = np.arange(10, dtype=np.int32)[::-1].copy()
    out = np.full(10, -1.0, np.float32)
    gather_rows.launch(table, index, out, 10, BLOCK=16, grid=(1,), backend=backend)
    np.testing.assert_array_equal(out, table[index])
    index[3] = bad
    out[:] = -1.0
    with pytest.raises(dsl.OutOfBoundsError, match=f"index {bad} was accessed"):
        gather_rows.launch(table, index, out, 10, BLOCK=16, grid=(1,), backend=backend)
    assert (out == -1.0).all()
    target = np.full(16, -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="out-of-bounds store"):
        scatter_rows.launch(table, index, target, 10, BLOCK=16, grid=(1,), backend=backend)
    assert (target == -1.0).all()


def test_a_nan_probability_never_becomes_finite():
    """Issue 12, point 4: the -100 clamp of the log terms lets NaN through, as
    PyTorch's does; out-of-range probabilities give NaN from the operator API."""
    x = np.array([np.nan, 0.5, 0.25], np.float32)
    y = np.array([1.0, 0.0, 1.0], np.float32)
    assert np.isnan(ops.binary_cross_entropy(x, y, reduction="mean"))
    per_element = ops.binary_cross_entropy(x, y, reduction="none")
    assert np.isnan(per_element[0]) and np.isfinite(per_element[1:]).all()
    for bad in (-0.5, 2.0):
        assert np.isnan(ops.binary_cross_entropy(np.array([bad], np.float32),
                                                 np.array([1.0], np.float32), reduction="sum"))
    # the clamp itself still holds: log(0) is clamped to -100
    np.testing.assert_allclose(ops.binary_cross_entropy(np.array([0.0], np.float32),
                                                        np.array([1.0], np.float32),
                                                        reduction="sum"), 100.0)


def test_the_torch_drop_in_refuses_probabilities_outside_0_1_like_torch(torch):
    import ops.torch as ot

    for values in ([float("nan"), 0.5], [-0.5, 0.5], [0.5, 2.0], [float("inf"), 0.5]):
        x = torch.tensor(values)
        y = torch.ones(2)
        with pytest.raises(RuntimeError, match="between 0 and 1") as ours:
            ot.binary_cross_entropy(x, y)
        with pytest.raises(RuntimeError) as theirs:
            torch.nn.functional.binary_cross_entropy(x, y)
        assert "between 0 and 1" in str(theirs.value) and ours.value is not None


@pytest.mark.parametrize("loss", ["binary_cross_entropy", "binary_cross_entropy_with_logits"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_of_an_empty_input_follow_the_spec_whatever_the_target_shape(loss, reduction):
    """Issue 12, point 7: an empty input skips the shape checks (spec step 4) in the
    losses as in the backward operators; mean gives NaN, sum 0."""
    x = np.zeros((0, 3), np.float32)
    y = np.zeros((2, 5), np.float32)
    result = getattr(ops, loss)(x, y, reduction=reduction)
    if reduction == "none":
        assert result.shape == (0, 3)
    else:
        assert np.isnan(result) if reduction == "mean" else result == 0
    out = np.full((), 7.0, np.float32) if reduction != "none" else np.zeros((0, 3), np.float32)
    phase1 = getattr(ops.aclnn, f"{loss}_get_workspace_size")
    args = (x, y, None, None) if "logits" in loss else (x, y, None)
    status, size, executor = phase1(*args, reduction, out)
    assert status == 0
    assert getattr(ops.aclnn, loss)(np.zeros(size, np.uint8) if size else None, size,
                                    executor) == 0


# ----------------------------------------------------------------------------- caches (point 2)


@pytest.mark.parametrize("damage", ["truncated", "empty", "random", "sig_truncated",
                                    "sig_random", "sig_wrong_shape", "directory"])
def test_a_damaged_compiled_cpu_cache_entry_is_rebuilt(tmp_path, damage, cpu_toolchain):
    cpu = cpu_toolchain
    from dsl.options import Options
    from lowering.triton_codegen import generate

    table, index = np.arange(16, dtype=np.float32), np.arange(10, dtype=np.int32)
    launch = gather_rows.prepare((table, index, np.zeros(10, np.float32), 10),
                                 {"BLOCK": 16}, (1,))
    options = Options(cache_dir=tmp_path)
    generated = generate(launch.function, tree_sums=True)
    first = cpu.compile_cpu(generated, options=options)
    library, sig = first.library, first.library.with_suffix(".sig")
    data = library.read_bytes()
    if damage == "truncated":
        library.write_bytes(data[:len(data) // 2])
    elif damage == "empty":
        library.write_bytes(b"")
    elif damage == "random":
        library.write_bytes(np.random.default_rng(0).bytes(len(data)))
    elif damage == "sig_truncated":
        sig.write_bytes(sig.read_bytes()[:7])
    elif damage == "sig_random":
        sig.write_bytes(np.random.default_rng(1).bytes(40))
    elif damage == "sig_wrong_shape":
        sig.write_text("[1, 2, 3]")
    else:
        library.unlink()
        library.mkdir()
    second = cpu.compile_cpu(generated, options=options)
    assert second.stages, "the damaged entry must be compiled again, not loaded"
    assert library.read_bytes() == data or library.stat().st_size > 0
    out = np.zeros(10, np.float32)
    cpu._LOADED.clear()
    gather_rows.launch(table, index, out, 10, BLOCK=16, grid=(1,), backend="compiled-cpu",
                       options=options)
    np.testing.assert_array_equal(out, table[index])


@pytest.mark.parametrize("damage", ["list", "null", "string", "truncated_hivm", "directory",
                                    "lock_directory"])
def test_a_damaged_lowering_cache_entry_is_rebuilt(tmp_path, damage):
    from lowering import cache
    from lowering.compiler import LoweredKernel, StageReport
    from lowering.triton_codegen import GeneratedKernel

    target = __import__("dsl").targets.get_target("Ascend910B4")
    made = []

    def compile_once():
        made.append(1)
        g = GeneratedKernel("k", "src", {"x": "*fp32"}, {}, 9)
        return LoweredKernel("k", target, g, "ttir", "linalg", "hivm " * 100,
                             [StageReport("hivm", True, 0.1, 3)], 1, 2, 3, tmp_path / "k.py")

    key = cache.cache_key("test", damage)
    first, compiled = cache.load_or_compile(key, compile_once, tmp_path)
    assert compiled
    entry = tmp_path / "lowered" / f"{key}.json"
    if damage == "list":
        entry.write_text("[1, 2, 3]")
    elif damage == "null":
        entry.write_text("null")
    elif damage == "string":
        entry.write_text('"hello"')
    elif damage == "truncated_hivm":  # still valid JSON, with a shorter HIVM text
        import json

        record = json.loads(entry.read_text())
        payload = json.loads(record["payload"])
        payload["hivm"] = payload["hivm"][:10]
        record["payload"] = json.dumps(payload, sort_keys=True)
        entry.write_text(json.dumps(record))
    elif damage == "directory":
        entry.unlink()
        entry.mkdir()
    else:
        lock = tmp_path / "lowered" / f"{key}.lock"
        lock.unlink()
        lock.mkdir()
    second, compiled = cache.load_or_compile(key, compile_once, tmp_path)
    assert second.hivm == "hivm " * 100
    assert compiled == (damage != "lock_directory") and len(made) == 1 + compiled
    third, compiled = cache.load_or_compile(key, compile_once, tmp_path)
    assert not compiled and third.hivm == second.hivm  # the rebuilt entry is used


# ----------------------------------------------------------------------------- aliasing (point 3)

BIG = 3_000_000  # above the interpreter's chunk size (2**21 elements per op)


def _aliasing_cases():
    rng = np.random.default_rng(5)
    buf = rng.uniform(0.05, 0.95, BIG + 1).astype(np.float32)
    yield "shifted", buf[:-1], buf[1:]
    x = rng.uniform(0.05, 0.95, BIG).astype(np.float32)
    yield "reversed", x, x[::-1]
    m = rng.uniform(0.05, 0.95, (1500, 2000)).astype(np.float32)
    yield "transposed", m, m.T


@pytest.mark.parametrize("case", ["shifted", "reversed", "transposed"])
def test_an_out_that_partially_overlaps_the_input_gives_the_unaliased_result(case):
    name, x, out = next(c for c in _aliasing_cases() if c[0] == case)
    if case == "transposed":  # out=x.T for input x needs a square shape
        x = np.ascontiguousarray(x[:1500, :1500])
        out = x.T
    target = np.full(x.shape, 0.5, np.float32)
    expected = ops.binary_cross_entropy_backward(np.float32(1.0), x.copy(), target, None,
                                                 "sum")
    ops.binary_cross_entropy_backward(np.float32(1.0), x, target, None, "sum", out=out)
    np.testing.assert_array_equal(out, expected)


def test_exact_aliasing_stays_in_place_and_correct():
    x = np.random.default_rng(6).uniform(0.05, 0.95, BIG).astype(np.float32)
    expected = ops.binary_cross_entropy_backward(np.float32(1.0), x.copy(), x.copy(), None,
                                                 "sum")
    y = x.copy()
    ops.binary_cross_entropy_backward(np.float32(1.0), x, y, None, "sum", out=x)
    np.testing.assert_array_equal(x, expected)


# ----------------------------------------------------------------------------- races (point 10)


@dsl.jit
def racy_histogram(data, bins, n, BLOCK: dsl.constexpr):
    i = dsl.program_id(0) * BLOCK + dsl.arange(0, BLOCK)
    m = i < n
    b = dsl.load(data, i, m)
    dsl.store(bins, b, dsl.load(bins, b, m) + 1, m)  # not atomic: lanes collide


@dsl.jit
def every_program_writes_the_total(x, out, n, BLOCK: dsl.constexpr):
    i = dsl.program_id(0) * BLOCK + dsl.arange(0, BLOCK)
    dsl.store(out, dsl.arange(0, 1) * 0, dsl.sum(dsl.load(x, i, i < n), 0) + dsl.zeros((1,),
                                                                                         dsl.float32))


@dsl.jit
def half_overlapping_tiles(x, y, BLOCK: dsl.constexpr, SHIFT: dsl.constexpr = 0):
    # tiles start every BLOCK // 2 elements, so neighbours overlap by half a tile; with
    # SHIFT, a program stores values shifted by its id, and the overlaps disagree
    i = dsl.program_id(0) * (BLOCK // 2) + dsl.arange(0, BLOCK)
    dsl.store(y, i, dsl.load(x, i) + SHIFT * dsl.program_id(0))


@dsl.jit
def rewrite_in_order(out, n, BLOCK: dsl.constexpr):
    for k in range(0, n):  # one program rewrites the same block: in order, not a race
        dsl.store(out, dsl.arange(0, BLOCK), dsl.zeros((BLOCK,), dsl.int32) + k)


def test_a_racy_histogram_is_reported_with_both_writers_and_writes_nothing():
    data = (np.arange(100) % 7).astype(np.int32)
    bins = np.zeros(7, np.int32)
    with pytest.raises(dsl.DataRaceError, match="two lanes store element") as info:
        racy_histogram[(4,)](data, bins, 100, BLOCK=32)
    text = str(info.value)
    assert "program id (0, 0, 0) lane" in text and "test_reliability.py" in text
    assert not bins.any()


def test_programs_storing_one_element_race_unless_the_check_is_off(monkeypatch):
    # each program stores its own slice's total, a different value
    x, out = np.arange(64, dtype=np.float32), np.zeros(1, np.float32)
    with pytest.raises(dsl.DataRaceError, match="program id \\(0, 0, 0\\) lane 0 and program "
                                                "id \\(1, 0, 0\\) lane 0"):
        every_program_writes_the_total[(4,)](x, out, 64, BLOCK=16)
    assert out[0] == 0.0
    monkeypatch.setenv("DSL_RACE_CHECK", "0")
    every_program_writes_the_total[(4,)](x, out, 64, BLOCK=16)
    assert out[0] in {x[k * 16:(k + 1) * 16].sum() for k in range(4)}


@dsl.jit
def every_program_stores_its_block_to_the_front(x, y, B: dsl.constexpr):
    lanes = dsl.arange(0, B)
    dsl.store(y, lanes, dsl.load(x, dsl.program_id(0) * B + lanes))


def test_a_race_decided_by_values_is_decided_again_for_new_data():
    # the first launch's blocks agree, so it does not race; the same launch with
    # other data must not replay that verdict (no launch plan keeps it)
    x, y = np.tile(np.arange(8, dtype=np.float32), 3), np.zeros(8, np.float32)
    for _ in range(3):
        every_program_stores_its_block_to_the_front[(3,)](x, y, B=8)
    np.testing.assert_array_equal(y, np.arange(8))
    x[17] = -1.0  # program 2's block now differs from the others at lane 1
    y[:] = 0
    with pytest.raises(dsl.DataRaceError, match="two lanes store element 1"):
        every_program_stores_its_block_to_the_front[(3,)](x, y, B=8)
    assert not y.any()


def test_programs_storing_the_same_values_do_not_race():
    # every program stores the same total (the grid repeats the work): whichever
    # lands last, memory ends the same
    x, out = np.ones(64, np.float32), np.zeros(1, np.float32)
    every_program_writes_the_total[(4,)](x, out, 64, BLOCK=16)
    assert out[0] == 16.0
    y = np.zeros(32, np.float32)  # overlapping tiles that agree on the overlap
    half_overlapping_tiles[(3,)](np.arange(64, dtype=np.float32), y, BLOCK=16)
    np.testing.assert_array_equal(y, np.arange(32, dtype=np.float32))
    y[:] = 0
    with pytest.raises(dsl.DataRaceError, match="two lanes store element 8"):
        half_overlapping_tiles[(3,)](np.arange(64, dtype=np.float32), y, BLOCK=16, SHIFT=1)
    assert not y.any()  # nothing written


def test_one_program_rewriting_in_order_and_tiles_are_not_races():
    out = np.zeros(8, np.int32)
    rewrite_in_order[(1,)](out, 5, BLOCK=8)
    assert (out == 4).all()
    x = np.arange(1000, dtype=np.float32)
    result = ops.binary_cross_entropy_backward(np.float32(1.0), x / 1000 + 1e-3,
                                               np.zeros(1000, np.float32), None, "none")
    assert np.isfinite(result).all()


@dsl.jit
def overlapping_tiles(out, MASKED: dsl.constexpr):
    lane = dsl.arange(0, 128)
    where = dsl.program_id(0) * 100 + lane
    if MASKED:
        dsl.store(out, where, lane, lane < 100)  # rows cover 100 elements each: disjoint
    else:
        dsl.store(out, where, lane)  # 128-lane rows 100 apart overlap


def test_tile_stores_race_only_where_their_active_lanes_overlap():
    out = np.zeros(400, np.int32)
    overlapping_tiles[(3,)](out, MASKED=True)
    np.testing.assert_array_equal(out[:300], np.tile(np.arange(100), 3))
    with pytest.raises(dsl.DataRaceError, match="element 100 of tensor 'out'"):
        overlapping_tiles[(3,)](np.zeros(400, np.int32), MASKED=False)


# ----------------------------------------------------------------------------- point 8


def test_infinite_pos_weight_gives_the_spec_infinities_not_nan():
    """Issue 12, point 8: pos_weight = inf with logits -inf or -200 gave NaN where the
    spec's formula (and torch) give +-inf."""
    x = np.array([-np.inf, -200.0, -100.0, -20.0, 0.0, 20.0, 100.0, 200.0, np.inf], np.float32)
    for p in (np.inf, -np.inf, 2.0, np.nan):
        pw = np.full(x.shape, p, np.float32)
        for y in (0.0, 0.5, 1.0):
            target = np.full(x.shape, y, np.float32)
            got = ops.binary_cross_entropy_with_logits_target_backward(
                np.float32(1.0), x, target, None, pw, "none")
            want = np.asarray(ops.bce_with_logits_target_backward_reference(
                np.float32(1.0), x, target, None, pw, "none"))
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"p={p}")
            finite = np.isfinite(want)
            np.testing.assert_array_equal(got[~finite & ~np.isnan(want)],
                                          want[~finite & ~np.isnan(want)])
            np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-30)


def test_forward_mode_ad_raises_instead_of_a_silent_zero_tangent(torch):
    """Issue 12, point 9: jvp returned a zero tangent; now it says it is unsupported,
    and reverse mode keeps working."""
    import ops.torch as ot

    x, y = torch.rand(4) * 0.8 + 0.1, torch.rand(4)
    with pytest.raises(NotImplementedError, match="forward-mode AD"):
        torch.func.jvp(lambda a: ot.binary_cross_entropy(a, y), (x,), (torch.ones(4),))
    with pytest.raises(NotImplementedError, match="forward-mode AD"):
        torch.func.jvp(lambda a: ot.binary_cross_entropy_with_logits(a, y), (x,),
                       (torch.ones(4),))
    import torch.autograd.forward_ad as fwad

    with fwad.dual_level(), pytest.raises(NotImplementedError, match="forward-mode AD"):
        ot.binary_cross_entropy_with_logits(fwad.make_dual(x, torch.ones(4)), y)
    xr = x.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(ot.binary_cross_entropy(xr, y), xr)
    xt = x.clone().requires_grad_(True)
    (want,) = torch.autograd.grad(torch.nn.functional.binary_cross_entropy(xt, y), xt)
    torch.testing.assert_close(g, want)


@dsl.jit
def shift_copy(x, out, n, BLOCK: dsl.block_size):
    for start in dsl.tile_range(0, n, BLOCK):
        i = start + dsl.arange(0, BLOCK)
        dsl.store(out, i, dsl.load(x, i, i < n) * 2.0, i < n)


def test_a_dsl_kernel_whose_stores_partially_overlap_its_loads_is_refused():
    """Issue 12, point 3 for custom kernels: partially overlapping arguments are refused
    before anything runs (the answer would depend on the order programs run in); the
    same view passed twice (in place) stays fine, at any size."""
    buf = np.arange(BIG + 1, dtype=np.float32)
    with pytest.raises(dsl.DSLLaunchError, match="'out' and 'x' partially overlap"):
        shift_copy(buf[:-1], buf[1:], BIG)
    np.testing.assert_array_equal(buf, np.arange(BIG + 1, dtype=np.float32))
    x = np.arange(BIG, dtype=np.float32)
    shift_copy(x, x, BIG)
    np.testing.assert_array_equal(x, np.arange(BIG, dtype=np.float32) * 2)


@dsl.jit
def store_row_bytes_and_scale(row_bytes, row_scales, rows, READ_BACK: dsl.constexpr):
    """Rows of 8 bytes: 4 data bytes through a uint8 view of the memory, then a
    float32 scale through a float32 view of the same memory (SGLang's fp8 KV-cache
    writers); with READ_BACK the bytes are also read."""
    pid = dsl.program_id(0)
    lane = dsl.arange(0, 4)
    data = (lane + pid * 4).to(dsl.uint8)
    if READ_BACK:
        data += dsl.load(row_bytes, pid * 8 + lane)
    dsl.store(row_bytes, pid * 8 + lane, data)
    dsl.store(row_scales, pid * 2 + 1, pid.to(dsl.float32) * 0.5)


def test_views_of_one_memory_a_kernel_only_writes_may_overlap():
    """Refused before session 23 (SGLang's KV-cache writers): only an argument the
    kernel reads can see the order of another's stores into its memory. Reading one
    of them back is still refused, on the first and on a cached launch."""
    for _ in range(2):  # (the second launch goes through the launch cache)
        cache = np.zeros((3, 8), np.uint8)
        store_row_bytes_and_scale[(3,)](cache.reshape(-1), cache.reshape(-1).view(np.float32),
                                        3, READ_BACK=False)
        expected = np.zeros((3, 8), np.uint8)
        for row in range(3):
            expected[row, :4] = np.arange(4) + row * 4
            expected[row, 4:] = np.frombuffer(np.float32(row * 0.5).tobytes(), np.uint8)
        np.testing.assert_array_equal(cache, expected)
        with pytest.raises(dsl.DSLLaunchError, match="'row_scales' and 'row_bytes' partially "
                           "overlap"):
            store_row_bytes_and_scale[(3,)](cache.reshape(-1),
                                            cache.reshape(-1).view(np.float32), 3,
                                            READ_BACK=True)
        np.testing.assert_array_equal(cache, expected)


@dsl.jit
def reads_the_neighbours_block(buf, n, BLOCK: dsl.constexpr):
    pid = dsl.program_id(0)
    mine = pid * BLOCK + dsl.arange(0, BLOCK)
    dsl.store(buf, mine, dsl.zeros((BLOCK,), dsl.float32) + pid.to(dsl.float32), mine < n)
    theirs = (mine + BLOCK) % n  # the next program's block: written by another program
    dsl.store(buf, mine, dsl.load(buf, theirs), mine < n)


@dsl.jit
def two_stores_collide(out, BLOCK: dsl.constexpr):
    pid = dsl.program_id(0)
    i = dsl.arange(0, BLOCK)
    dsl.store(out, pid * BLOCK + i, i)
    dsl.store(out, (pid + 1) % 2 * BLOCK + i, i * 2)  # the other program's elements


def test_the_full_race_check_finds_what_the_fast_one_cannot(monkeypatch):
    buf = np.zeros(64, np.float32)
    reads_the_neighbours_block[(4,)](buf, 64, BLOCK=16)  # fast: each store is clean
    out = np.zeros(32, np.int32)
    two_stores_collide[(2,)](out, BLOCK=16)
    monkeypatch.setenv("DSL_RACE_CHECK", "full")
    buf[:] = -1.0
    with pytest.raises(dsl.DataRaceError, match="full check.*read by program .* and written"):
        reads_the_neighbours_block[(4,)](buf, 64, BLOCK=16)
    assert (buf == -1.0).all()  # undone
    with pytest.raises(dsl.DataRaceError, match="full check.*written by program .* and written"):
        two_stores_collide[(2,)](np.zeros(32, np.int32), BLOCK=16)
    # the operators' kernels are race-free under the full check too
    x = np.linspace(0.1, 0.9, 5000).astype(np.float32)
    ops.binary_cross_entropy_backward(np.float32(1.0), x, x[::-1].copy(), None, "mean")
    ops.binary_cross_entropy_with_logits(x, x, reduction="sum")


def test_a_reused_bounds_proof_never_hides_an_out_of_bounds_launch():
    """The interpreter reuses the bounds proof of a launch with the same grid, scalar
    and layout arguments and tensor sizes; anything else proves again."""
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    shift_copy[(2,)](x, out, 64, BLOCK=16)
    shift_copy[(2,)](x, out, 64, BLOCK=16)  # the proof is reused
    np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(dsl.OutOfBoundsError):  # another n
        shift_copy[(2,)](x, np.zeros(64, np.float32), 65, BLOCK=16)
    short = np.zeros(60, np.float32)
    with pytest.raises(dsl.OutOfBoundsError):  # same n, a smaller output
        shift_copy[(2,)](x, short, 64, BLOCK=16)
    assert not short.any()


@dsl.jit
def terabyte_block(out):
    dsl.store(out, 0, 1.0)
    dsl.store(out, 1, dsl.sum(dsl.zeros((2**20, 2**20), dsl.float32), None))


def test_a_launch_too_large_for_memory_is_a_dsl_error():
    # NumPy's MemoryError (2 TiB for the block) came out of the interpreter as it was
    out = np.zeros(2, np.float32)
    with pytest.raises(dsl.DSLRuntimeError, match="kernel 'terabyte_block': the interpreter "
                                                  "ran out of memory .* too large for this "
                                                  "machine"):
        terabyte_block[(1,)](out)
    assert out[1] == 0


# ----------------------------------------------------------------------------- misuse
# (session 25's hunt: each of these raised Python's or NumPy's own exception from inside
# the project, without the argument, the kernel or the setting it was about)


@dsl.jit
def store_scalar(x, out):
    dsl.store(out, 0, x)


@dsl.jit
def unrolled_by_zero(out):
    for i in dsl.static_range(0, 4, 0):
        dsl.store(out, i, 1.0)


@dsl.jit
def calls_itself(x):
    return calls_itself(x)


@dsl.jit
def uses_recursion(out):
    dsl.store(out, 0, calls_itself(1.0))


def test_what_is_not_a_kernel_is_refused_by_name():
    with pytest.raises(dsl.DSLCompileError, match="a kernel is a function defined with def"):
        dsl.jit(lambda x: x)
    with pytest.raises(TypeError, match="dsl.jit decorates a function defined with def, got int"):
        dsl.jit(5)
    with pytest.raises(ValueError, match="tensor_spec: unknown dtype 'float33'"):
        dsl.tensor_spec("float33")
    with pytest.raises(TypeError, match="tensor_spec takes a dtype or its name, got int"):
        dsl.tensor_spec(5)
    with pytest.raises(ValueError, match="Options.cache_dir must be a path, got 5"):
        dsl.Options(cache_dir=5)


def test_misused_launches_name_the_argument_or_setting(torch):
    out = np.zeros(4, np.float32)
    with pytest.raises(dsl.DSLLaunchError, match="options= takes a dsl.Options record"):
        store_scalar.launch(1.0, out, grid=(1,), options=3)
    with pytest.raises(dsl.DSLLaunchError, match="options= takes a dsl.Options record"):
        store_scalar.lower(1.0, dsl.tensor_spec("float32"), options=3)
    with pytest.raises(dsl.DSLLaunchError, match="argument 'x': unsupported element type "
                                                 "float128"):
        store_scalar[(1,)](np.longdouble(1.5), out)
    nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    with pytest.raises(dsl.DSLLaunchError, match="argument 'out': a nested tensor"):
        store_scalar[(1,)](1.0, nested)
    assert not out.any()


def test_kernels_that_cannot_be_built_are_compile_errors_at_their_line():
    out = np.zeros(4, np.float32)
    with pytest.raises(dsl.DSLCompileError, match="static_range\\(\\) takes 1 to 3 bounds and "
                                                  "a nonzero step, got \\(0, 4, 0\\)"):
        unrolled_by_zero[(1,)](out)
    with pytest.raises(dsl.DSLCompileError, match="calls_itself\\(\\) calls itself "
                                                  "\\(calls_itself -> calls_itself\\)"):
        uses_recursion[(1,)](out)


def test_an_unusable_cache_folder_is_named(cpu_toolchain, tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    with pytest.raises(dsl.DSLError, match=f"the cache folder {not_a_folder} \\(DSL_CACHE_DIR, "
                                           "Options.cache_dir\\) cannot hold"):
        store_scalar.launch(1.0, np.zeros(4, np.float32), grid=(1,), backend="compiled-cpu",
                            options=dsl.Options(cache_dir=not_a_folder))


@dsl.jit
def stepped(out, s):
    for i in range(0, 4, s):
        dsl.store(out, i, 1.0)


def test_a_runtime_step_of_zero_and_an_unknown_backend_say_where():
    out = np.zeros(4, np.float32)
    with pytest.raises(dsl.DSLRuntimeError, match="test_reliability.py:[0-9]+:[0-9]+: range\\(\\) "
                                                  "step is zero in kernel 'stepped'"):
        stepped[(1,)](out, 0)
    with pytest.raises(dsl.DSLError, match="unknown backend 'nope'"):
        stepped.launch(out, 1, grid=(1,), backend="nope")
    assert not out.any()


@dsl.jit
def indexes_an_argument(x, out):
    dsl.store(out, 0, x[0])


def test_indexing_a_tensor_argument_says_to_load_it():
    # the message was "constexpr indexing failed: 'ViewArg' object is not subscriptable"
    with pytest.raises(dsl.DSLCompileError, match="a tensor argument is not indexed: load it "
                                                  "\\(dsl.load\\(x, index\\)"):
        indexes_an_argument[(1,)](np.zeros(4, np.float32), np.zeros(1, np.float32))
