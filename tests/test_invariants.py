"""Invariants of the interpreter and the index rewriter that the rest of the suite only
covers through the compiled-CPU path (which needs the LLVM toolchain).

Pinned here, each with a kernel run in the default NumPy interpreter:

- the offset simplifier drops ``x % m`` and ``x // m`` only where ``0 <= x < m`` is
  provable, not merely ``x >= 0``;
- bounds checks reject index ``numel`` (one past the end) on both the lazy
  ``start + arange`` path and the materialized (gathered) path, and nothing is written;
- ``dsl.sum`` on floats adds in the halving-tree order of rule 10 (``x[i] + x[i + h]``,
  ``h`` the largest power of two below ``n``, then again on the ``h`` partials), not
  left to right and not NumPy's pairwise order;
- ``start + arange`` near the int32 limit wraps like Triton's int32 arithmetic, and
  comparisons on the wrapped values see the wrapped values.
"""

from __future__ import annotations

import numpy as np
import pytest

import dsl

# ----------------------------------------------------------------------------- % and //


@dsl.jit
def mod_gather(x, out):
    i = dsl.arange(0, 16)
    dsl.store(out, i, dsl.load(x, i % 4))


@dsl.jit
def floordiv_gather(x, out, FORM: dsl.constexpr):
    i = dsl.arange(0, 16)
    if FORM == "plain":
        j = i // 4
    if FORM == "plus_one":
        j = i // 4 + 1
    if FORM == "times_four":
        j = (i // 4) * 4
    if FORM == "div_mod":
        j = (i // 4) * 4 + i % 4
    dsl.store(out, i, dsl.load(x, j))


@dsl.jit
def mod_floordiv_values(q, r):
    i = dsl.arange(0, 16)
    dsl.store(q, i, i // 4)
    dsl.store(r, i, i % 4)


def test_mod_in_a_load_index_is_kept_when_the_range_exceeds_the_modulus():
    """``arange(0, 16) % 4`` is nonnegative but not below 4: the ``%`` must stay."""
    x = np.arange(10, 26, dtype=np.float32)
    out = np.full(16, -1.0, np.float32)
    mod_gather(x, out)
    np.testing.assert_array_equal(out, x[np.tile(np.arange(4), 4)])


@pytest.mark.parametrize("form, expected", [
    ("plain", np.arange(16) // 4),
    ("plus_one", np.arange(16) // 4 + 1),
    ("times_four", np.arange(16) // 4 * 4),
    ("div_mod", np.arange(16)),
], ids=["plain", "plus_one", "times_four", "div_mod"])
def test_floordiv_in_a_load_index_is_kept_when_the_range_exceeds_the_divisor(form, expected):
    """``arange(0, 16) // 4`` is 0,0,0,0,1,1,1,1,...: it must not be folded to 0. (A bare
    ``i // 4`` offset is never rewritten, since the constant 0 saves no op; the other
    forms are ones where folding would be accepted as a simplification.)"""
    x = np.arange(10, 30, dtype=np.float32)
    out = np.full(16, -1.0, np.float32)
    floordiv_gather(x, out, FORM=form)
    np.testing.assert_array_equal(out, x[expected])


def test_mod_and_floordiv_values_of_an_arange():
    """The same expressions stored as values (not used as offsets)."""
    q = np.full(16, -1, np.int32)
    r = np.full(16, -1, np.int32)
    mod_floordiv_values(q, r)
    np.testing.assert_array_equal(q, np.arange(16) // 4)
    np.testing.assert_array_equal(r, np.arange(16) % 4)


# ----------------------------------------------------------------------------- bounds


@dsl.jit
def contiguous_load(x, out, start):
    i = dsl.arange(0, 8)
    dsl.store(out, i, dsl.load(x, start + i))


@dsl.jit
def contiguous_store(x, out, start):
    i = dsl.arange(0, 8)
    dsl.store(out, start + i, dsl.load(x, i))


@dsl.jit
def contiguous_masked_load(x, out, start, n):
    i = dsl.arange(0, 8)
    idx = start + i
    dsl.store(out, i, dsl.load(x, idx, idx < n, other=0.0))


@dsl.jit
def contiguous_masked_store(x, out, start, n):
    i = dsl.arange(0, 8)
    idx = start + i
    dsl.store(out, idx, dsl.load(x, i), idx < n)


@dsl.jit
def gathered_load(x, where, out):
    i = dsl.arange(0, 8)
    dsl.store(out, i, dsl.load(x, dsl.load(where, i)))


@dsl.jit
def gathered_store(x, where, out):
    i = dsl.arange(0, 8)
    dsl.store(out, dsl.load(where, i), dsl.load(x, i))


@dsl.jit
def strided_load(x, out, start):
    i = dsl.arange(0, 8)
    dsl.store(out, i, dsl.load(x, start + i * 2))


@dsl.jit
def strided_masked_store(x, out, start, n):
    i = dsl.arange(0, 8)
    idx = start + i * 2
    dsl.store(out, idx, dsl.load(x, i), idx < n)


def _src():
    return np.arange(1, 9, dtype=np.float32)


def test_contiguous_access_ending_exactly_at_numel_is_in_bounds():
    """Control for the one-past-the-end tests: lanes 8..15 of a 16-element tensor."""
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(8, np.float32)
    contiguous_load(x, out, 8)
    np.testing.assert_array_equal(out, x[8:])
    out16 = np.zeros(16, np.float32)
    contiguous_store(_src(), out16, 8)
    np.testing.assert_array_equal(out16[8:], _src())


def test_contiguous_load_touching_numel_raises():
    """Lanes 9..16 of a 16-element tensor: the last lane reads index 16 == numel."""
    x = np.arange(16, dtype=np.float32)
    out = np.full(8, -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="index 16 was accessed"):
        contiguous_load(x, out, 9)
    assert np.all(out == -1.0)


def test_contiguous_store_touching_numel_raises_and_writes_nothing():
    out = np.full(16, -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="index 16 was accessed"):
        contiguous_store(_src(), out, 9)
    assert np.all(out == -1.0)


def test_contiguous_masked_accesses_letting_numel_through_raise():
    """A mask ``idx < numel + 1`` lets the lane at index numel through."""
    x = np.arange(16, dtype=np.float32)
    out = np.full(8, -1.0, np.float32)
    contiguous_masked_load(x, out, 9, 16)  # the mask stops at numel: fine
    np.testing.assert_array_equal(out, [9, 10, 11, 12, 13, 14, 15, 0])
    out[:] = -1.0
    with pytest.raises(dsl.OutOfBoundsError, match="index 16 was accessed"):
        contiguous_masked_load(x, out, 9, 17)
    assert np.all(out == -1.0)

    out16 = np.full(16, -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="index 16 was accessed"):
        contiguous_masked_store(_src(), out16, 9, 17)
    assert np.all(out16 == -1.0)


def test_gathered_accesses_touching_numel_raise_and_write_nothing():
    """Indices loaded from a tensor take the materialized bounds-check path."""
    x = np.arange(16, dtype=np.float32)
    ok = np.array([0, 15, 3, 2, 1, 7, 8, 9], np.int32)
    bad = np.array([0, 15, 3, 16, 1, 7, 8, 9], np.int32)
    out = np.full(8, -1.0, np.float32)
    gathered_load(x, ok, out)
    np.testing.assert_array_equal(out, x[ok])
    out[:] = -1.0
    with pytest.raises(dsl.OutOfBoundsError, match="index 16 was accessed"):
        gathered_load(x, bad, out)
    assert np.all(out == -1.0)

    out16 = np.full(16, -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="index 16 was accessed"):
        gathered_store(_src(), bad, out16)
    assert np.all(out16 == -1.0)


def test_strided_accesses_touching_numel_raise_and_write_nothing():
    """``start + arange * 2`` is not a lazy run either; index 16 is its last lane."""
    x = np.arange(16, dtype=np.float32)
    out = np.full(8, -1.0, np.float32)
    strided_load(x, out, 1)  # 1, 3, ..., 15
    np.testing.assert_array_equal(out, x[1::2])
    out[:] = -1.0
    with pytest.raises(dsl.OutOfBoundsError, match="index 16 was accessed"):
        strided_load(x, out, 2)  # 2, 4, ..., 16
    assert np.all(out == -1.0)

    out16 = np.full(16, -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="index 16 was accessed"):
        strided_masked_store(_src(), out16, 2, 17)
    assert np.all(out16 == -1.0)


# ----------------------------------------------------------------------------- sum order


@dsl.jit
def row_sum(x, out, N: dsl.constexpr):
    i = dsl.arange(0, N)
    dsl.store(out, dsl.arange(0, 1), dsl.sum(dsl.load(x, i), axis=0)[None])


@dsl.jit
def sum_2d(x, out0, out1, R: dsl.constexpr, C: dsl.constexpr):
    r = dsl.arange(0, R)
    c = dsl.arange(0, C)
    v = dsl.load(x, r[:, None] * C + c[None, :])
    dsl.store(out1, r, dsl.sum(v, axis=1))
    dsl.store(out0, c, dsl.sum(v, axis=0))


def _sequential(a, axis):
    return np.take(np.add.accumulate(a, axis=axis, dtype=np.float32), -1, axis=axis)


def halving_sum(values, dtype=np.float32):
    """Rule 10's order, one addition at a time in ``dtype`` (independent of
    numerics.tree_sum)."""
    values = [dtype(v) for v in values]
    while len(values) > 1:
        half = 1 << ((len(values) - 1).bit_length() - 1)
        values = [values[i] + values[i + half] if i + half < len(values) else values[i]
                  for i in range(half)]
    return values[0]


def _bits(a):
    return np.asarray(a, np.float32).view(np.int32)


def test_float_sum_adds_in_the_halving_tree_order():
    """A 4096-element fp32 sum equals the halving tree, bit for bit, which differs
    from both the left-to-right sum and NumPy's pairwise sum on this data."""
    rng = np.random.default_rng(1234)
    x = (rng.standard_normal(4096) * 1000).astype(np.float32)
    tree = halving_sum(x)
    assert tree != _sequential(x, 0), "data does not tell the orders apart"
    assert tree != np.sum(x, dtype=np.float32), "data does not tell the orders apart"
    out = np.zeros(1, np.float32)
    row_sum(x, out, N=4096)
    assert _bits(out[0]) == _bits(tree)


def test_float_sum_of_a_2d_block_follows_the_tree_along_each_axis():
    """Rows summed along axis 1 and columns along axis 0, bit for bit."""
    rng = np.random.default_rng(99)
    rows, cols = 8, 1024
    x = (rng.standard_normal((rows, cols)) * 1000).astype(np.float32)
    out0 = np.zeros(cols, np.float32)
    out1 = np.zeros(rows, np.float32)
    expect1 = [halving_sum(row) for row in x]
    expect0 = [halving_sum(col) for col in x.T]
    assert not np.array_equal(_bits(expect1), _bits(_sequential(x, 1)))
    assert not np.array_equal(_bits(expect0), _bits(_sequential(x, 0)))
    sum_2d(x.reshape(-1), out0, out1, R=rows, C=cols)
    np.testing.assert_array_equal(_bits(out1), _bits(expect1))
    np.testing.assert_array_equal(_bits(out0), _bits(expect0))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 1003])
def test_tree_sum_of_any_length_carries_unpaired_elements_over(n):
    """Lengths that are not powers of two (blocks of ``zeros``/``full``): the elements
    without a partner carry over unchanged; a 16-bit operand sums in fp32."""
    from dsl.numerics import tree_sum

    rng = np.random.default_rng(n)
    x = (rng.standard_normal((3, n)) * 1000).astype(np.float16)
    got = tree_sum(x, 1, np.dtype(np.float32))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(_bits(got), _bits([halving_sum(row) for row in x]))


def test_the_tree_is_more_accurate_than_a_left_to_right_sum():
    """Rounding error grows with the tree's depth (log n), not with n."""
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, 1 << 16).astype(np.float32)
    exact = x.astype(np.float64).sum()
    out = np.zeros(1, np.float32)
    row_sum(x, out, N=1 << 16)
    assert abs(out[0] - exact) * 4 < abs(_sequential(x, 0) - exact)


# ----------------------------------------------------------------------------- int32 wrap


@dsl.jit
def wrapped_lanes(out_mask, out_idx, start, n):
    i = dsl.arange(0, 16)
    idx = start + i
    m = idx < n
    dsl.store(out_mask, i, dsl.where(m, 1, 0))
    dsl.store(out_idx, i, idx)


@pytest.mark.parametrize("n", [2**31 - 1, 2**31 - 4, 0, -(2**31) + 4])
def test_start_plus_arange_wraps_in_int32_and_comparisons_see_the_wrap(n):
    """``start + arange`` past 2**31 - 1 wraps to negative values, as in Triton."""
    start = 2**31 - 8
    with np.errstate(over="ignore"):
        idx = np.int32(start) + np.arange(16, dtype=np.int32)
    expect_mask = (idx < np.int32(n)).astype(np.int32)
    assert idx[-1] < 0, "the lanes must wrap for this test to mean anything"
    out_mask = np.full(16, -7, np.int32)
    out_idx = np.full(16, -7, np.int32)
    wrapped_lanes(out_mask, out_idx, np.int32(start), np.int32(n))
    np.testing.assert_array_equal(out_idx, idx)
    np.testing.assert_array_equal(out_mask, expect_mask)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_tree_sum_in_cache_sized_chunks_is_the_same_tree(axis, monkeypatch):
    """A large operand is summed in chunks along an axis that is not summed; each
    element's tree is unchanged."""
    from dsl import numerics

    monkeypatch.setattr(numerics, "_TREE_CHUNK_BYTES", 1024)
    x = (np.random.default_rng(axis).standard_normal((6, 40, 100)) * 1000).astype(np.float32)
    got = numerics.tree_sum(x, axis, np.dtype(np.float32))
    moved = np.moveaxis(x, axis, -1)
    want = np.array([halving_sum(v) for v in moved.reshape(-1, moved.shape[-1])],
                    np.float32).reshape(moved.shape[:-1])
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("n", [2, 17, 33, 100, 256, 1024])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("block_width", [4, 128])
@pytest.mark.parametrize("shifted", [False, True])
def test_tree_sum_of_rows_in_chunks_is_the_same_tree(n, dtype, block_width, shifted,
                                                     monkeypatch):
    """Rows (the last axis) take a scheduled path: chunks of rows, a power-of-two
    row's first level written block-major, levels into separate buffers (by shifted
    contiguous adds when ``shifted``), the narrow levels on a transposed copy. Each
    row's tree is unchanged, with a partial last chunk, on a strided 2-D view and a
    3-D operand."""
    from dsl import numerics

    monkeypatch.setattr(numerics, "_TREE_LEVEL_BYTES", 256)
    monkeypatch.setattr(numerics, "_TREE_SHIFTED_MIN_BYTES", 0 if shifted else 1 << 60)
    monkeypatch.setattr(numerics, "_TREE_BLOCK_WIDTH", block_width)
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((37, 2 * n)) * 1000).astype(dtype)
    acc = np.dtype(np.float64 if dtype == np.float64 else np.float32)
    for operand in (x[:, :n], x[:, ::2], np.ascontiguousarray(x[:, :n])):
        got = numerics.tree_sum(operand, 1, acc)
        assert got.dtype == acc
        want = [halving_sum(row, acc.type) for row in operand]
        np.testing.assert_array_equal(got, np.array(want, acc))
    cube = np.ascontiguousarray(x[:36, :n]).reshape(4, 9, n)
    got = numerics.tree_sum(cube, 2, acc)
    want = numerics.tree_sum(cube.reshape(36, n), 1, acc).reshape(4, 9)
    np.testing.assert_array_equal(got, want)



def test_contiguous_rows_are_summed_without_strided_adds(monkeypatch):
    """C-contiguous rows of a power-of-two length (from ``_TREE_SHIFTED_MIN_BYTES`` on)
    take every level above the transposed tail as contiguous adds
    (``numerics._add_row_halves``: NumPy adds two strided halves several times slower
    per element). The sums across two rows that this computes and drops raise no
    floating-point error, even where errors raise."""
    from dsl import numerics

    strided: list[tuple[int, ...]] = []

    class SpyingNumPy:
        def __getattr__(self, name: str) -> object:
            return getattr(np, name)

        @staticmethod
        def add(*args: object, **kwargs: object) -> object:
            strided.extend(a.shape for a in args[:2] if isinstance(a, np.ndarray)
                           and a.ndim > 1 and not a.flags.c_contiguous)
            return np.add(*args, **kwargs)

    monkeypatch.setattr(numerics, "np", SpyingNumPy())
    monkeypatch.setattr(numerics, "_TREE_SHIFTED_MIN_BYTES", 1 << 20)
    x = (np.random.default_rng(8).standard_normal((300, 1024)) * 1000).astype(np.float32)
    sign = np.where(np.arange(300) % 2 == 0, 1.0, -1.0).astype(np.float32)
    x[:, 0], x[:, 512] = 3e38 * sign, -3e38 * sign  # a row's own pair sums to 0, and
    # element 512 of a row with element 0 of the next (a dropped sum) to 6e38: inf
    with np.errstate(all="raise"):
        got = numerics.tree_sum(x, 1, np.dtype(np.float32))
    assert not strided
    np.testing.assert_array_equal(_bits(got), _bits(np.array([halving_sum(r) for r in x],
                                                              np.float32)))
