"""IR passes: constant folding, range-aware index simplification (checked by brute
force against the unoptimized IR), CSE and dead-code elimination."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import dsl
from dsl import passes
from dsl.frontend import build_ir
from dsl.ir import IRVerificationError
from dsl.options import Options
from dsl.passes import optimize
from lowering import interpreter


@dsl.jit
def rewrites(x, out, BLOCK: dsl.constexpr):
    i = dsl.arange(0, BLOCK)
    wrapped = (i + BLOCK) % BLOCK  # == i: 0 <= i < BLOCK
    halves = (i * 4 + 2) // 4  # == i
    low = i // (BLOCK * 2)  # == 0
    a = dsl.load(x, wrapped, i < BLOCK)  # a mask that is always true
    b = dsl.load(x, halves + low)
    dsl.store(out, i, a + b, i <= BLOCK - 1)


@dsl.jit
def strided_copy(src, dst, n, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        dsl.store(dst, idx, dsl.load(src, idx, idx < n), idx < n)


_RAW_ARGS: dict[int, tuple] = {}  # runtime arguments of each unoptimized function


def _both(kernel, args, kwargs, grid=(1,)):
    """(unoptimized, optimized) functions for one specialization, and the launch."""
    launch = kernel.prepare(args, kwargs, grid)
    specs, values = kernel.bind(args, kwargs)
    raw = build_ir(kernel.source, specs)
    # the passes drop unused layout parameters: the raw function takes its own list
    _RAW_ARGS[id(raw)] = tuple(kernel.runtime_arguments(raw, values, launch.tensors))
    return raw, launch.function, launch


def _run(fn, launch) -> None:
    args = launch.args if fn is launch.function else _RAW_ARGS[id(fn)]
    interpreter.run(dataclasses.replace(launch, function=fn, args=args))


def _ops(fn, kind):
    return [op for op in fn.walk() if op.kind == kind]


@pytest.mark.parametrize("block", [2, 4, 8, 16, 64])
def test_simplified_indices_agree_with_the_original_by_brute_force(block):
    x = np.arange(block, dtype=np.float32) * 3 + 1
    raw, optimized, launch = _both(rewrites, (x, np.zeros(block, np.float32), block), {})
    results = []
    for fn in (raw, optimized):
        out = launch.tensors["out"].buffer
        out[:] = -1
        _run(fn, launch)
        results.append(out.copy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[1], 2 * x)
    # what the passes proved: no % or // left, and both masks are gone
    assert not _ops(optimized, "mod") and not _ops(optimized, "floordiv")
    assert _ops(raw, "mod") and _ops(raw, "floordiv")
    assert not any(op.masked for op in _ops(optimized, "load") + _ops(optimized, "store"))


def test_layout_offsets_brute_force_over_small_sizes_and_strides():
    """Every coalesced layout of small 2-D and 3-D views: the optimized offsets read
    exactly what NumPy indexing reads, and what the unoptimized IR reads."""
    base = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    views = []
    for a, b, c in itertools.product([slice(None), slice(1, None), slice(None, None, 2)],
                                     [slice(None), slice(None, None, -1)],
                                     [slice(None), slice(2, 3), slice(None, None, 3)]):
        views.append(base[a, b, c])
        views.append(base[a, b, c].transpose(2, 0, 1))
    views.append(dsl.broadcast_to(base[0, :, :1], (3, 5, 6)))
    for view in views:
        expected = view.to_numpy() if isinstance(view, dsl.TensorView) else view
        dst = np.zeros(expected.shape, np.float32)
        raw, optimized, launch = _both(strided_copy, (view, dst, expected.size), {"BLOCK": 8},
                                       grid=(3,))
        for fn in (raw, optimized):
            launch.tensors["dst"].buffer[:] = -1
            _run(fn, launch)
            np.testing.assert_array_equal(dst, expected)


def test_constant_folding_cse_and_dce():
    x = np.arange(16, dtype=np.float32)
    raw, optimized, _ = _both(strided_copy, (x, np.zeros(16, np.float32), 16), {"BLOCK": 16})
    count = lambda fn: sum(1 for _ in fn.walk())  # noqa: E731
    assert count(optimized) < count(raw)
    consts = [(op.attrs["value"], op.result.type) for op in _ops(optimized, "const")]
    assert len(consts) == len(set(consts)), "CSE leaves one op per distinct constant"
    # 0 + pid * BLOCK folds to pid * BLOCK; BLOCK itself is one constant, shared
    adds_of_zero = [op for op in _ops(optimized, "add")
                    if any(o.owner is not None and o.owner.kind == "const"
                           and o.owner.attrs["value"] == 0 for o in op.operands)]
    assert not adds_of_zero
    block_consts = [op for op in _ops(optimized, "const") if op.attrs["value"] == 16
                    and not op.result.shape]
    assert len(block_consts) == 1


@dsl.jit
def dead_code(x, out):
    i = dsl.arange(0, 8)
    unused = dsl.load(x, i) * 2.0  # noqa: F841
    dsl.store(out, i, dsl.full((8,), 3.0, dsl.float32) * 2.0)


def test_dead_loads_are_removed_and_constants_folded():
    x = np.zeros(8, np.float32)
    fn = dead_code.ir(x, np.zeros(8, np.float32))
    assert not _ops(fn, "load") and not _ops(fn, "mul")
    store = _ops(fn, "store")[0]
    assert store.value.owner.kind == "const" and store.value.owner.attrs["value"] == 6.0


def test_dump_ir_prints_after_each_pass(capsys):
    optimize(build_ir(dead_code.source, dead_code.bind(
        (np.zeros(8, np.float32), np.zeros(8, np.float32)), {})[0]), dump_ir=True)
    err = capsys.readouterr().err
    for name in ("after build", "after fold-constants", "after simplify-indices",
                 "after eliminate-common-subexpressions", "after eliminate-dead-code",
                 "after prune-hidden-params"):
        assert f"// IR of dead_code {name}" in err


def test_dump_ir_environment_reaches_a_new_specialization(monkeypatch, capsys):
    monkeypatch.setenv("DSL_DUMP_IR", "1")
    dead_code.ir(np.zeros(8, np.int64), np.zeros(8, np.int64))  # not built before
    assert "// IR of dead_code after eliminate-dead-code" in capsys.readouterr().err


def _break_a_use_list(fn):
    """A faulty pass: the store drops out of its operand's use list."""
    op = next(op for op in fn.walk() if op.kind == "store")
    op.operands[0]._drop_use(op)


def _count_verifications(monkeypatch):
    calls = []
    original = passes.verify
    monkeypatch.setattr(passes, "verify", lambda fn: (calls.append(fn), original(fn)))
    return calls


def _dead_code_ir():
    return build_ir(dead_code.source, dead_code.bind(
        (np.zeros(8, np.float32), np.zeros(8, np.float32)), {})[0], verify_ir=False)


def test_optimize_verifies_once_by_default_and_after_every_pass_when_asked(monkeypatch):
    calls = _count_verifications(monkeypatch)
    optimize(_dead_code_ir())
    assert len(calls) == 1
    optimize(_dead_code_ir(), verify_each=True)
    assert len(calls) == 1 + len(passes.PASSES)


def test_a_broken_invariant_is_caught_at_the_end_and_named_by_pass_when_asked(monkeypatch):
    monkeypatch.setattr(passes, "PASSES", passes.PASSES[:-1] + [("breaker", _break_a_use_list)]
                        + passes.PASSES[-1:])
    with pytest.raises(IRVerificationError, match="after the passes: .*use list"):
        optimize(_dead_code_ir())
    with pytest.raises(IRVerificationError, match="after pass breaker: .*use list"):
        optimize(_dead_code_ir(), verify_each=True)


def test_the_verify_passes_option_reads_its_variable_and_reaches_the_launch(monkeypatch):
    assert Options.from_env({"DSL_VERIFY_PASSES": "1"}).verify_passes
    assert not Options.from_env({}).verify_passes
    calls = _count_verifications(monkeypatch)
    monkeypatch.setenv("DSL_VERIFY_PASSES", "0")
    dead_code.ir(np.zeros(8, np.int16), np.zeros(8, np.int16))  # a new specialization
    assert len(calls) == 1
    monkeypatch.setenv("DSL_VERIFY_PASSES", "1")
    dead_code.ir(np.zeros(8, np.uint16), np.zeros(8, np.uint16))
    assert len(calls) == 1 + len(passes.PASSES)


@dsl.jit
def masks_of_both_kinds(x, out, n, BLOCK: dsl.constexpr):
    i = dsl.arange(0, BLOCK)
    # provable: i < BLOCK always; not provable: i < n (n is a runtime scalar)
    v = dsl.load(x, i, mask=i < BLOCK, other=0.0)
    dsl.store(out, i, v, mask=i < n)


def test_masks_with_an_unbounded_leaf_on_one_side_skip_sympy_and_provable_ones_drop(monkeypatch):
    calls = []
    original = passes._to_sympy
    monkeypatch.setattr(passes, "_to_sympy", lambda v, r: (calls.append(v), original(v, r))[1])
    fn = masks_of_both_kinds.ir(np.zeros(8, np.float32), np.zeros(8, np.float32), 8, BLOCK=8)
    load, store = _ops(fn, "load")[0], _ops(fn, "store")[0]
    assert load.mask is None  # proved true, dropped
    assert store.mask is not None  # ``i < n`` stays
    # sympy saw the provable mask's two sides only, not ``i < n``'s
    assert {v.owner.kind for v in calls if v.owner is not None} <= {"arange", "const"}
    assert len(calls) == 2
