"""The interpreter overwrites a temporary in place at its last use (``out=``, see
``Interpreter._reusable``): no value still to be read may see that write. A view of the
temporary (reshape, permute, flip, split, slices, bitcast, unit axes, broadcasts,
hints) or a region op's result that may be the temporary itself (a loop of no trips)
shares its memory, so its uses count as the temporary's (``interpreter._last_uses``).
Before session 28 each case below stored the overwritten values."""

import numpy as np
import pytest

import dsl

N = 64


@dsl.jit
def _through_reshape(t):
    return dsl.reshape(dsl.reshape(t, (8, 8)), (N,))


@dsl.jit
def _through_flip(t):
    return dsl.flip(dsl.flip(t, 0), 0)


@dsl.jit
def _through_split(t):
    a, b = dsl.split(dsl.reshape(t, (N // 2, 2)))
    return dsl.reshape(dsl.join(a, b), (N,))


@dsl.jit
def _through_slice(t):
    return dsl.extract_slice(t, [0], [N], [1])


@dsl.jit
def _through_bitcast(t):
    return t.to(dsl.int32, bitcast=True).to(dsl.float32, bitcast=True)


@dsl.jit
def _through_unit_axis(t):
    return dsl.reshape(dsl.expand_dims(t, 0), (N,))


@dsl.jit
def _through_broadcast(t):
    return dsl.sum(dsl.broadcast_to(t[None, :], (2, N)), 0) * 0.5


VIEWS = {"reshape": _through_reshape, "flip": _through_flip, "split": _through_split,
         "extract_slice": _through_slice, "bitcast": _through_bitcast,
         "expand_dims": _through_unit_axis, "broadcast": _through_broadcast}


def _kernel(view):
    def body(x, y, out, N: dsl.constexpr):
        i = dsl.arange(0, N)
        t = dsl.load(x, i) + 1.0  # a temporary of the interpreter's own
        v = view(t)  # read after t's last direct use
        m = t * dsl.load(y, i)  # t's last direct use: t's buffer may take the product
        dsl.store(out, i, m + v)
    return dsl.jit(body)


@pytest.mark.parametrize("view", VIEWS)
def test_a_view_of_a_temporary_keeps_its_values_after_the_temporarys_last_use(view):
    x = np.arange(N, dtype=np.float32)
    y = np.full(N, 2.0, np.float32)
    out = np.zeros(N, np.float32)
    _kernel(VIEWS[view])[(1,)](x, y, out, N=N)
    np.testing.assert_array_equal(out, (x + 1) * y + (x + 1))


@dsl.jit
def _transposed(x, y, out):
    r, c = dsl.arange(0, 8)[:, None], dsl.arange(0, 8)[None, :]
    t = dsl.load(x, r * 8 + c) + 1.0
    v = dsl.trans(t)
    m = t * dsl.load(y, r * 8 + c)
    dsl.store(out, r * 8 + c, m + dsl.trans(v))


def test_a_transposed_temporary_keeps_its_values_after_the_temporarys_last_use():
    x = np.arange(N, dtype=np.float32)
    y = np.full(N, 2.0, np.float32)
    out = np.zeros(N, np.float32)
    _transposed[(1,)](x, y, out)
    np.testing.assert_array_equal(out, (x + 1) * y + (x + 1))


@dsl.jit
def _hinted(x, y, out, N: dsl.constexpr):
    i = dsl.arange(0, N)
    t = dsl.load(x, i) + 4
    v = dsl.multiple_of(t, 4)
    m = t * dsl.load(y, i)
    dsl.store(out, i, m + v)


def test_a_hinted_temporary_keeps_its_values_after_the_temporarys_last_use():
    x = np.arange(N, dtype=np.int32) * 4
    y = np.full(N, 3, np.int32)
    out = np.zeros(N, np.int32)
    _hinted[(1,)](x, y, out, N=N)
    np.testing.assert_array_equal(out, (x + 4) * y + (x + 4))


@dsl.jit
def _doubled_n_times(x, y, out, n, N: dsl.constexpr):
    i = dsl.arange(0, N)
    t = dsl.load(x, i) + 1.0
    r = t
    for _ in range(n):  # no trips: r is t itself
        r = r * 2.0
    m = t * dsl.load(y, i)
    dsl.store(out, i, m + r)


@pytest.mark.parametrize("trips", [0, 1, 3])
def test_a_loop_result_that_may_be_a_temporary_keeps_its_values(trips):
    x = np.arange(N, dtype=np.float32)
    y = np.full(N, 2.0, np.float32)
    out = np.zeros(N, np.float32)
    _doubled_n_times[(1,)](x, y, out, trips, N=N)
    np.testing.assert_array_equal(out, (x + 1) * y + (x + 1) * np.float32(2.0 ** trips))


@dsl.jit
def _maximum_of_a_reshaped(x, y, out, N: dsl.constexpr):
    i = dsl.arange(0, N)
    t = dsl.load(x, i) + 1.0
    v = dsl.reshape(t, (N // 2, 2))
    m = dsl.maximum(t, dsl.load(y, i))  # may write into t's buffer (numpy_out)
    dsl.store(out, i, m + dsl.reshape(v, (N,)))


def test_maximum_into_a_temporary_keeps_a_view_of_it():
    x = np.arange(N, dtype=np.float32)
    y = np.full(N, 100.0, np.float32)
    out = np.zeros(N, np.float32)
    _maximum_of_a_reshaped[(1,)](x, y, out, N=N)
    np.testing.assert_array_equal(out, np.maximum(x + 1, y) + (x + 1))
