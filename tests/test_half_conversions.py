"""float16 <-> float32 conversions (``dsl.numerics``): large arrays go through torch's
vector conversion when torch is loaded, and must give exactly NumPy's results (round
to nearest even, subnormals kept, overflow to infinity), so a kernel's bits never
depend on whether the script imported torch."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from dsl import numerics
from dsl.dtypes import float16, float32
from dsl.numerics import _to_float16, cast_array, widen_to_float32


def _float32_cases() -> np.ndarray:
    """Every float32 exponent with random mantissas and both signs, every tie between
    two float16 neighbours (normal and subnormal) with its float32 neighbours, and the
    special values."""
    rng = np.random.default_rng(0)
    exponents = np.repeat(np.arange(256, dtype=np.uint32), 2048)
    mantissas = rng.integers(0, 1 << 23, exponents.shape[0], dtype=np.uint32)
    signs = rng.integers(0, 2, exponents.shape[0], dtype=np.uint32) << np.uint32(31)
    spread = ((exponents << np.uint32(23)) | mantissas | signs).view(np.float32)
    halves = np.arange(1 << 15, dtype=np.uint16).view(np.float16).astype(np.float64)
    finite = np.sort(halves[np.isfinite(halves)])
    ties = ((finite[:-1] + finite[1:]) / 2).astype(np.float32)  # exact in float32
    near = np.concatenate([ties, np.nextafter(ties, np.float32(0)),
                           np.nextafter(ties, np.float32(np.inf))])
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.996, 65520.0,
                        2.0**-24, 2.0**-25, 3 * 2.0**-26, 2.0**-14, 1e-30], np.float32)
    return np.concatenate([spread, near, -near, special, -special])


def _same(a: np.ndarray, b: np.ndarray, bits: type) -> None:
    nan = np.isnan(a.astype(np.float32))
    np.testing.assert_array_equal(nan, np.isnan(b.astype(np.float32)))
    np.testing.assert_array_equal(a.view(bits)[~nan], b.view(bits)[~nan])


def test_float32_to_float16_through_torch_rounds_exactly_as_numpy(torch):
    x = _float32_cases()
    assert "torch" in sys.modules and numerics._torch_tensor_of(x) is not None
    with np.errstate(over="ignore"):
        expected = x.astype(np.float16)
    _same(_to_float16(x), expected, np.uint16)
    _same(cast_array(x, float16), expected, np.uint16)


def test_float16_to_float32_through_torch_is_exact(torch):
    every = np.tile(np.arange(1 << 16, dtype=np.uint16).view(np.float16), 2)
    assert numerics._torch_tensor_of(every) is not None
    _same(widen_to_float32(every), every.astype(np.float32), np.uint32)
    _same(cast_array(every, float32), every.astype(np.float32), np.uint32)
    strided = every.reshape(256, 512)[:, ::2]  # a non-contiguous view: a contiguous result
    widened = widen_to_float32(strided)
    assert widened.flags.c_contiguous
    _same(widened, strided.astype(np.float32), np.uint32)


def test_torch_is_used_only_for_large_plain_arrays_and_never_imported(torch, monkeypatch):
    big = np.ones(1 << 15, np.float32)
    assert numerics._torch_tensor_of(big) is not None
    assert numerics._torch_tensor_of(big[:100]) is None, "small: NumPy's cast"
    assert numerics._torch_tensor_of(big[::-1]) is None, "negative strides"
    assert numerics._torch_tensor_of(big.astype(">f4")) is None, "non-native byte order"
    monkeypatch.delitem(sys.modules, "torch")
    assert numerics._torch_tensor_of(big) is None, "torch is used only when loaded"
    _same(_to_float16(big), big.astype(np.float16), np.uint16)


def test_read_only_and_broadcast_arrays_convert_through_torch_without_a_warning(torch):
    rng = np.random.default_rng(2)
    row = rng.standard_normal(1 << 12).astype(np.float16)
    wide = np.broadcast_to(row, (8, row.shape[0]))  # read-only, a stride of 0
    frozen = rng.standard_normal(1 << 15).astype(np.float32)
    frozen.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert numerics._torch_tensor_of(wide) is not None
        _same(widen_to_float32(wide), wide.astype(np.float32), np.uint32)
        _same(_to_float16(frozen), frozen.astype(np.float16), np.uint16)
    assert not frozen.flags.writeable and np.array_equal(wide[3], row), "inputs unchanged"


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_a_dot_of_float16_tiles_is_the_same_with_and_without_torch(torch, monkeypatch, dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 64, 32)).astype(np.float16)
    b = rng.standard_normal((64, 32, 64)).astype(np.float16)
    acc = rng.standard_normal((64, 64, 64)).astype(dtype)
    with_torch = numerics.dot(a, b, acc)
    monkeypatch.delitem(sys.modules, "torch")
    without = numerics.dot(a, b, acc)
    assert with_torch.dtype == dtype
    np.testing.assert_array_equal(with_torch.view(np.uint8), without.view(np.uint8))
