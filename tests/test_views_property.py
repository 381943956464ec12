"""Property tests: any NumPy view (slices, negative steps, transposes, broadcasts,
zero-size and size-1 dimensions) is read and written through its derived offsets
exactly as NumPy indexes it."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dsl


@dsl.jit
def copy_kernel(src, dst, n, BLOCK: dsl.constexpr):
    for start in dsl.tile_range(0, n, BLOCK):
        idx = start + dsl.arange(0, BLOCK)
        dsl.store(dst, idx, dsl.load(src, idx, idx < n), idx < n)


@st.composite
def strided_views(draw):
    """A view of a random base array: per-dimension slices, maybe a transpose, maybe
    a broadcast to a larger shape."""
    rank = draw(st.integers(0, 4))
    base_shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    base = np.arange(int(np.prod(base_shape)), dtype=np.float32).reshape(base_shape)
    index = []
    for n in base_shape:
        start = draw(st.integers(0, n - 1))
        step = draw(st.sampled_from([1, 2, -1, -2]))
        index.append(slice(start, None, step) if step > 0 else slice(start, None, step))
    view = base[tuple(index) + (Ellipsis,)]  # Ellipsis keeps rank 0 a 0-d view
    if rank > 1 and draw(st.booleans()):
        view = view.transpose(draw(st.permutations(range(rank))))
    if draw(st.booleans()):
        extra = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
        target = extra + tuple(n if n != 1 else draw(st.integers(1, 3)) for n in view.shape)
        return dsl.broadcast_to(view, target), np.broadcast_to(view, target)
    return view, view


@settings(max_examples=300, deadline=None)
@given(strided_views(), st.sampled_from([4, 16, 64]), st.integers(1, 5))
def test_loads_through_any_layout_match_numpy(view_pair, block, programs):
    src, expected = view_pair
    dst = np.full(expected.shape, -1.0, np.float32)
    n = expected.size
    if n:
        copy_kernel[(programs,)](src, dst, n, BLOCK=block)
    np.testing.assert_array_equal(dst, expected)


@settings(max_examples=100, deadline=None)
@given(strided_views(), st.sampled_from([8, 32]))
def test_stores_into_any_non_broadcast_layout_match_numpy(view_pair, block):
    src, expected = view_pair
    if isinstance(src, dsl.TensorView) and src.is_broadcast:
        return  # stores into broadcast views are rejected (tested elsewhere)
    target_storage = np.zeros(np.asarray(expected).shape[::-1] + (2,), np.float32)
    target = target_storage[..., 0].T if expected.ndim else target_storage[..., 0]
    source = np.arange(expected.size, dtype=np.float32).reshape(expected.shape)
    if expected.size:
        copy_kernel(source, target, expected.size, BLOCK=block)
    np.testing.assert_array_equal(target, source)
    assert np.all(target_storage[..., 1] == 0)


def test_broadcast_to_refuses_a_shape_that_does_not_fit():
    """``dsl.broadcast_to(w, (-1, 4))`` was accepted, and a launch then reported a
    tensor of -4 elements at lane -4 (found in session 19)."""
    import pytest

    w = np.arange(4, dtype=np.float32)
    with pytest.raises(ValueError, match="negative dimension"):
        dsl.broadcast_to(w, (-1, 4))
    with pytest.raises(ValueError, match="does not broadcast"):
        dsl.broadcast_to(w, (3, 5))
    view = dsl.broadcast_to(w, (3, 4))
    assert view.shape == (3, 4) and view.strides[0] == 0
    assert dsl.broadcast_to(w, (0, 4)).shape == (0, 4)
