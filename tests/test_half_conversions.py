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


def _spy(monkeypatch) -> list[int]:
    """The sizes of the arrays converted through torch."""
    seen: list[int] = []
    original = numerics._convert_through_torch

    def spy(x, dtype, out=None):
        result = original(x, dtype, out)
        if result is not None:
            seen.append(x.size)
        return result

    monkeypatch.setattr(numerics, "_convert_through_torch", spy)
    return seen


def test_float32_to_float16_through_torch_rounds_exactly_as_numpy(torch, monkeypatch):
    x = _float32_cases()  # not a multiple of the piece size
    seen = _spy(monkeypatch)
    with np.errstate(over="ignore"):
        expected = x.astype(np.float16)
    _same(_to_float16(x), expected, np.uint16)
    _same(cast_array(x, float16), expected, np.uint16)
    assert seen == [x.size, x.size] and x.size % numerics._TORCH_PIECE


def test_float16_to_float32_through_torch_is_exact(torch, monkeypatch):
    every = np.tile(np.arange(1 << 16, dtype=np.uint16).view(np.float16), 2)
    seen = _spy(monkeypatch)
    _same(widen_to_float32(every), every.astype(np.float32), np.uint32)
    _same(cast_array(every, float32), every.astype(np.float32), np.uint32)
    strided = every.reshape(256, 512)[:, ::-2]  # a non-contiguous view: a contiguous result
    widened = widen_to_float32(strided)
    assert widened.flags.c_contiguous
    _same(widened, strided.astype(np.float32), np.uint32)
    assert len(seen) == 3


def test_float16_to_float32_into_out_without_torch(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    every = np.tile(np.arange(1 << 16, dtype=np.uint16).view(np.float16), 2)
    out = np.full(every.shape, 7.0, np.float32)
    assert widen_to_float32(every, out) is out
    _same(out, every.astype(np.float32), np.uint32)


def test_float16_to_float32_without_torch_is_bitwise_and_exact(monkeypatch):
    """Without torch, large float16 arrays widen by integer passes
    (``_widen_float16_bitwise``): every float16 pattern, NaN payloads and signalling
    NaNs included, gives NumPy's float32 bits, in any shape, contiguous or not, and
    across the pieces it works in."""
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    calls: list[int] = []
    original = numerics._widen_float16_bitwise

    def spy(x, out):
        calls.append(x.size)
        return original(x, out)

    monkeypatch.setattr(numerics, "_widen_float16_bitwise", spy)
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    shuffled = np.random.default_rng(1).permutation(np.tile(every, 3))  # 3 pieces and a part
    for x in (every, shuffled, shuffled.reshape(-1, 96), shuffled.reshape(-1, 96)[:, ::-3]):
        widened = widen_to_float32(x)
        assert widened.flags.c_contiguous and widened.shape == x.shape
        np.testing.assert_array_equal(widened.view(np.uint32),
                                      x.astype(np.float32).view(np.uint32))
    assert calls == [every.size, shuffled.size, shuffled.size, shuffled.size // 3]
    small = every[:100]
    np.testing.assert_array_equal(widen_to_float32(small).view(np.uint32),
                                  small.astype(np.float32).view(np.uint32))
    assert len(calls) == 4  # below the minimum: NumPy's own cast


def test_float16_to_float32_through_torch_into_out(torch, monkeypatch):
    seen = _spy(monkeypatch)
    every = np.tile(np.arange(1 << 16, dtype=np.uint16).view(np.float16), 2)
    out = np.empty(every.shape, np.float32)
    assert widen_to_float32(every, out) is out
    _same(out, every.astype(np.float32), np.uint32)
    assert seen == [every.size]


def test_torch_is_used_only_for_large_arrays_and_never_imported(torch, monkeypatch):
    seen = _spy(monkeypatch)
    big = np.linspace(-3, 3, 1 << 15, dtype=np.float32)
    _same(_to_float16(big[:100]), big[:100].astype(np.float16), np.uint16)
    assert seen == [], "small: NumPy's cast"
    _same(_to_float16(big.astype(">f4")), big.astype(np.float16), np.uint16)
    assert seen == [], "non-native byte order: NumPy's cast"
    monkeypatch.delitem(sys.modules, "torch")
    _same(_to_float16(big), big.astype(np.float16), np.uint16)
    assert seen == [], "torch is used only when loaded"


def test_read_only_and_broadcast_arrays_convert_through_torch_without_a_warning(torch, monkeypatch):
    seen = _spy(monkeypatch)
    rng = np.random.default_rng(2)
    row = rng.standard_normal(1 << 12).astype(np.float16)
    wide = np.broadcast_to(row, (8, row.shape[0]))  # read-only, a stride of 0
    frozen = rng.standard_normal(1 << 15).astype(np.float32)
    frozen.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(widen_to_float32(wide), wide.astype(np.float32), np.uint32)
        _same(_to_float16(frozen), frozen.astype(np.float16), np.uint16)
    assert seen == [wide.size, frozen.size]
    assert not frozen.flags.writeable and np.array_equal(wide[3], row), "inputs unchanged"


def test_conversions_on_worker_threads_give_the_same_bits(torch):
    """The interpreter's worker threads convert concurrently (torch runs each piece on
    the calling thread)."""
    from lowering import workers

    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(1 << 17).astype(np.float32) for _ in range(4)]
    results: dict[int, np.ndarray] = {}
    workers.run_all([lambda i=i: results.__setitem__(i, _to_float16(arrays[i]))
                     for i in range(4)], 2)
    for i, x in enumerate(arrays):
        _same(results[i], x.astype(np.float16), np.uint16)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_a_dot_of_float16_tiles_is_the_same_with_and_without_torch(torch, monkeypatch, dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 64, 32)).astype(np.float16)
    b = rng.standard_normal((64, 32, 64)).astype(np.float16).transpose(0, 2, 1)
    acc = rng.standard_normal((64, 64, 64)).astype(dtype)
    seen = _spy(monkeypatch)
    with_torch = numerics.dot(a, b.transpose(0, 2, 1), acc)
    assert seen, "the operands went through torch"
    monkeypatch.delitem(sys.modules, "torch")
    without = numerics.dot(a, b.transpose(0, 2, 1), acc)
    assert with_torch.dtype == dtype
    np.testing.assert_array_equal(with_torch.view(np.uint8), without.view(np.uint8))


def test_conversions_are_not_seen_by_a_torch_function_mode(torch, monkeypatch):
    """A ``TorchFunctionMode`` the script set (the peer-suite harness maps the NPU to
    the CPU with one) sees none of the conversions' slices and copies, which it would
    otherwise slow tenfold, and the result is the same."""
    from torch.overrides import TorchFunctionMode

    seen = _spy(monkeypatch)
    calls: list[object] = []

    class Counting(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            calls.append(func)
            return func(*args, **(kwargs or {}))

    x = np.random.default_rng(4).standard_normal(1 << 17).astype(np.float16)
    with Counting():
        wide = widen_to_float32(x)
        torch.ones(2).add_(1)  # the mode is on: it sees the script's own calls
    _same(wide, x.astype(np.float32), np.uint32)
    assert seen == [x.size], "converted through torch"
    assert [getattr(f, "__name__", "") for f in calls] == ["ones", "add_"]
