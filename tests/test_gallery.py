"""The kernel gallery (examples/): every example kernel against its NumPy reference in
the interpreter at a small and a ragged size, lowered to HIVM for Ascend910B4 within
its Unified Buffer, and bit-exact in compiled-CPU mode against the interpreter, or
refused by compiled-CPU mode with the reason where that mode cannot run it."""

from __future__ import annotations

import importlib.util
import sys
import zlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from test_compiled_cpu import differential
from test_language import dot_bound

import dsl
from lowering import cpu

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NAMES = ["vector_add", "softmax", "layer_norm", "matmul", "attention", "dropout", "cumsum",
         "histogram", "embedding", "argmax", "quantize"]


def _load(name):
    """The example module examples/<name>.py, imported under a name of its own (the
    examples import their shared helper ``_bench`` from their folder)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.append(str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"gallery_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ex = SimpleNamespace(**{name: _load(name) for name in NAMES})
rng = np.random.default_rng()
f32, f16, i32 = "float32", "float16", "int32"


@pytest.fixture(autouse=True)
def _seeded_by_test_name(request):
    """Each test draws the same data however the tests are selected or ordered."""
    rng.bit_generator.state = np.random.default_rng(
        zlib.crc32(request.node.name.encode())).bit_generator.state


def spec(dtype, rank=None):
    return dsl.tensor_spec(dtype, rank=rank)


def normal(shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def test_every_example_is_tested_and_has_the_gallery_layout():
    on_disk = {p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_")}
    assert on_disk == set(NAMES)
    for name in NAMES:
        source = (EXAMPLES / f"{name}.py").read_text()
        assert getattr(ex, name).__doc__ and 'if __name__ == "__main__":' in source
        assert "def reference" in source and "sys.exit(" in source


# ----------------------------------------------------------------------------- interpreter
# Exact comparisons use references that compute in the kernel's precision and order:
# fp32 arithmetic, sums in dsl.sum's tree order and dsl.cumsum's index order,
# fp32 transcendentals as float64 rounded to fp32 (the DSL's definition of exp).


@pytest.mark.parametrize("n", [256, 1007])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_vector_add(n, dtype):
    x, y = normal(n, dtype), normal(n, dtype)
    np.testing.assert_array_equal(ex.vector_add.add(x, y, block=256), ex.vector_add.reference(x, y))


@pytest.mark.parametrize("shape", [(8, 64), (37, 100)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_softmax(shape, dtype):
    x = normal(shape, dtype, 3.0)
    got = ex.softmax.softmax(x)
    np.testing.assert_array_equal(got, ex.softmax.reference(x))
    np.testing.assert_allclose(got.astype(np.float64).sum(axis=1), 1.0, rtol=2e-3)
    strided = normal((shape[0], 2 * shape[1]), dtype)[:, ::2]  # read in place
    np.testing.assert_array_equal(ex.softmax.softmax(strided), ex.softmax.reference(strided))


@pytest.mark.parametrize("shape", [(16, 64), (37, 100)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_layer_norm_forward_and_backward(shape, dtype):
    m, n = shape
    x, dy = (normal(shape, scale=2.0) + 0.5).astype(dtype), normal(shape, dtype)
    w, b = normal(n, dtype), normal(n, dtype)
    y, mean, rstd = ex.layer_norm.layer_norm(x, w, b)
    want_y, want_mean, want_rstd = ex.layer_norm.reference(x, w, b)
    np.testing.assert_array_equal(mean, want_mean)
    np.testing.assert_array_equal(rstd, want_rstd)
    np.testing.assert_array_equal(y, want_y)
    dx, dw, db = ex.layer_norm.layer_norm_backward(dy, x, w, mean, rstd)
    want_dx, want_dw, want_db = ex.layer_norm.reference_backward(dy, x, w, mean, rstd)
    np.testing.assert_array_equal(dx, want_dx)
    # dw and db are fp32 sums over the rows in a blocked order (per program, then over
    # the programs) against float64: the error of any order of m fp32 additions is at
    # most (m - 1) * 2**-24 * sum |terms|.
    # (16-bit dw and db are rounded once more, half an ulp of the result).
    xhat = (x.astype(np.float32) - mean[:, None]) * rstd[:, None]
    ulp = 2.0**-24 if dtype == np.float32 else 2.0**-11
    for got, want, terms in ((dw, want_dw, dy * xhat), (db, want_db, dy)):
        bound = (m - 1) * 2.0**-24 * np.abs(terms).astype(np.float64).sum(axis=0)
        assert (np.abs(got - want) <= bound + ulp * np.abs(want)).all()
    # and against the float64 gradient of the float64 forward (16-bit: rounded output)
    x64, w64, dy64 = (a.astype(np.float64) for a in (x, w, dy))
    xh = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    g = dy64 * w64
    dx64 = (g - xh * (g * xh).mean(1, keepdims=True) - g.mean(1, keepdims=True)) / np.sqrt(
        x64.var(1, keepdims=True) + 1e-5)
    tol = 1e-4 if dtype == np.float32 else 1e-2
    np.testing.assert_allclose(dx, dx64, rtol=tol, atol=tol)


@pytest.mark.parametrize("mnk", [(64, 64, 32), (70, 90, 100)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul(mnk, dtype):
    m, n, k = mnk
    a, b = normal((m, k), dtype), normal((k, n), dtype)
    got = ex.matmul.matmul(a, b, bm=32, bn=32, bk=16)  # several tiles, grouped order
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert (np.abs(got - exact) <= dot_bound(a, b, np.float32)).all()
    default = ex.matmul.matmul(a, b)  # the default 64x64x32 tiles
    assert (np.abs(default - exact) <= dot_bound(a, b, np.float32)).all()
    np.testing.assert_allclose(got, ex.matmul.reference(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(2, 64, 16), (3, 100, 32)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_attention(shape, dtype):
    q, k, v = (normal(shape, dtype) for _ in range(3))
    got = ex.attention.attention(q, k, v, bm=16, bn=32)
    # online softmax and BLAS-ordered dots against float64 plain softmax: the tolerance is
    # the example's (fp16: probabilities rounded to fp16 before the second dot)
    np.testing.assert_allclose(got, ex.attention.reference(q, k, v), rtol=0,
                               atol=ex.attention.tolerance(v))


@pytest.mark.parametrize("n", [512, 1003])
def test_dropout(n):
    x = normal(n)
    out = ex.dropout.dropout(x, 0.4, seed=123, block=128)
    np.testing.assert_array_equal(out, ex.dropout.reference(x, 0.4, 123))
    kept = out != 0
    assert 0.45 < kept.mean() < 0.75
    np.testing.assert_array_equal(out[kept], x[kept] / np.float32(0.6))
    # the mask depends on (seed, offset) only: not on the block or the grid
    np.testing.assert_array_equal(ex.dropout.dropout(x, 0.4, seed=123, block=512), out)
    assert not np.array_equal(ex.dropout.dropout(x, 0.4, seed=124, block=128) != 0, kept)


def test_dropout_reference_is_philox():
    """The example's independent Philox against the DSL's own (checked against the
    Random123 known-answer vectors in test_philox.py)."""
    from dsl import philox

    offsets = np.arange(-5, 3000, dtype=np.int32)
    for seed in (0, 123, 2**33 + 7):
        np.testing.assert_array_equal(ex.dropout.philox_rand(seed, offsets),
                                      philox.rand(np.int64(seed), offsets))


@pytest.mark.parametrize("shape", [(8, 64), (37, 100)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_cumsum(shape, dtype):
    x = normal(shape) if dtype == np.float32 else rng.integers(-1000, 1000, shape).astype(dtype)
    np.testing.assert_array_equal(ex.cumsum.cumsum(x), ex.cumsum.reference(x))


@pytest.mark.parametrize("n,nbins", [(1024, 16), (5003, 100)])
def test_histogram(n, nbins):
    x = normal(n, scale=2.0)
    x[:3] = [-4.0, 3.9999, 4.0]  # the lower edge counts, the upper does not
    got = ex.histogram.histogram(x, nbins, -4.0, 4.0, block=256)
    np.testing.assert_array_equal(got, ex.histogram.reference(x, nbins, -4.0, 4.0))
    assert got.sum() == np.count_nonzero((x >= -4) & (x < 4))
    if nbins == 16:  # bins of 1/2, exact in binary: NumPy's histogram agrees (it counts 4.0)
        np.testing.assert_array_equal(got, np.histogram(x[x < 4], nbins, (-4.0, 4.0))[0])


@pytest.mark.parametrize("tokens,dim", [(64, 32), (77, 300)])
def test_embedding(tokens, dim):
    table = normal((500, dim), np.float16)
    ids = rng.integers(0, 500, tokens).astype(np.int32)
    ids[:2] = [0, 499]
    np.testing.assert_array_equal(ex.embedding.embedding(ids, table), table[ids])


def test_embedding_out_of_range_id_is_named_and_writes_nothing():
    table, ids = normal((10, 8)), np.array([1, 2, 10, 3], np.int32)
    out = np.full((4, 8), -1.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="table"):
        ex.embedding.embedding_kernel[(2,)](ids, table, out, ROWS=2, BLOCK_D=8)
    assert (out == -1.0).all()


@pytest.mark.parametrize("shape", [(8, 64), (37, 100)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_argmax(shape, dtype):
    x = rng.integers(-20, 20, shape).astype(dtype)  # ties: the first index wins
    x[0, :] = 7
    x[1, -1] = 100  # the last (ragged) column
    idx, val = ex.argmax.argmax(x)
    want_idx, want_val = ex.argmax.reference(x)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(val, want_val)
    assert idx[0] == 0 and idx[1] == shape[1] - 1


@pytest.mark.parametrize("shape", [(8, 64), (37, 100)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_quantize_and_dequantize(shape, dtype):
    x = normal(shape, dtype, 3.0)
    x[1] = 0  # scale 1
    # row 2: scale 7.9375 / 127 = 1/16 exactly, and exact half steps: ties round up
    half_steps = (np.arange(shape[1]) % 40 - 20).astype(np.float32)
    x[2] = (half_steps + 0.5) / 16
    x[2, 0] = 7.9375
    q, scale = ex.quantize.quantize(x)
    want_q, want_scale = ex.quantize.reference(x)
    np.testing.assert_array_equal(scale, want_scale)
    np.testing.assert_array_equal(q, want_q)
    assert q.dtype == np.int8 and np.abs(q).max() == 127 and scale[1] == 1 and not q[1].any()
    assert scale[2] == 1 / 16 and (q[2, 1:] == half_steps[1:] + 1).all()
    back = ex.quantize.dequantize(q, scale)
    np.testing.assert_array_equal(back, ex.quantize.reference_dequantize(q, scale))
    # half a step, plus two fp32 roundings of at most 127 * 2**-24 steps each
    assert (np.abs(x - back) <= scale[:, None] * (0.5 + 2 * 127 * 2.0**-24)).all()


# ----------------------------------------------------------------------------- lowering
# Placeholders with the block sizes the host functions pick at realistic sizes (rows of
# 1000 -> BLOCK_C 1024), the matmul at 64x64x32, attention at head dims 16 and 32.


def _lowering_cases():
    m2, m3 = spec(f32, 2), spec(f32, 3)
    return {
        "vector_add": [(ex.vector_add.add_kernel, [spec(f32)] * 3 + [1 << 20], {"BLOCK": 4096})],
        "softmax": [(ex.softmax.softmax_kernel, [m2, m2], {"ROWS": 8, "BLOCK_C": 1024}),
                    (ex.softmax.softmax_kernel, [spec(f16, 2)] * 2, {"ROWS": 8, "BLOCK_C": 1024})],
        "layer_norm": [
            (ex.layer_norm.layer_norm_fwd, [m2, spec(f32), spec(f32), m2, spec(f32), spec(f32),
                                            1e-5], {"ROWS": 4, "BLOCK_C": 1024}),
            (ex.layer_norm.layer_norm_bwd_dx, [m2, m2] + [spec(f32)] * 3 + [m2, m2, m2],
             {"ROWS": 4, "BLOCK_C": 1024}),
            (ex.layer_norm.sum_rows, [m2, spec(f32)], {"BLOCK_P": 64, "BLOCK_C": 256})],
        "matmul": [(ex.matmul.matmul_kernel, [spec(t, 2), spec(t, 2), m2],
                    {"BM": 64, "BN": 64, "BK": 32}) for t in (f16, f32)],
        "attention": [(ex.attention.attention_fwd, [spec(t, 3)] * 3 + [m3, 0.125],
                       {"BM": 32, "BN": 64, "HEAD_DIM": d}) for t in (f16, f32) for d in (16, 32)],
        "dropout": [(ex.dropout.dropout_kernel, [spec(f32)] * 2 + [1 << 20, 0.5, 7],
                     {"BLOCK": 1024})],
        "cumsum": [(ex.cumsum.cumsum_kernel, [spec(t, 2)] * 2, {"ROWS": 4, "BLOCK_C": 1024})
                   for t in (f32, i32)],
        "histogram": [(ex.histogram.histogram_kernel, [spec(f32), spec(i32), 1 << 20, -4.0, 32.0],
                       {"NBINS": 256, "BLOCK": 4096})],
        "embedding": [(ex.embedding.embedding_kernel, [spec(i32), spec(f16, 2), spec(f16, 2)],
                       {"ROWS": 16, "BLOCK_D": 512})],
        "argmax": [(ex.argmax.argmax_kernel, [spec(t, 2), spec(i32), spec(t)],
                    {"ROWS": 8, "BLOCK_C": 1024}) for t in (f32, f16)],
        "quantize": [(ex.quantize.quantize_kernel, [m2, spec("int8", 2), spec(f32)],
                      {"ROWS": 4, "BLOCK_C": 1024}),
                     (ex.quantize.dequantize_kernel, [spec("int8", 2), spec(f32), m2],
                      {"ROWS": 4, "BLOCK_C": 1024})],
    }


@pytest.mark.parametrize("name", NAMES)
def test_lowers_to_hivm_within_ub(toolchain, name):
    for kernel, args, kwargs in _lowering_cases()[name]:
        lowered = kernel.lower(*args, target="Ascend910B4", **kwargs)
        assert lowered.hivm, kernel.name
        assert lowered.ub_measured_bytes <= lowered.ub_capacity_bytes, (kernel.name,
                                                                         lowered.ub_report())
        if name in ("matmul", "attention"):
            assert "tl.dot(" in lowered.triton
        else:  # a vector kernel: all of it in UB
            assert lowered.ub_measured_bytes > 0, kernel.name


# ----------------------------------------------------------------------------- compiled CPU


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_vector_add_compiled_cpu(cpu_toolchain, dtype):
    x, y = normal(1007, dtype), normal(1007, dtype)
    differential(ex.vector_add.add_kernel, (x, y, np.zeros_like(x), x.size), {"BLOCK": 256},
                 grid=(3,))


def test_softmax_compiled_cpu(cpu_toolchain):
    x = normal((37, 100), scale=3.0)
    differential(ex.softmax.softmax_kernel, (x, np.zeros_like(x)), {"ROWS": 8, "BLOCK_C": 128},
                 grid=(3,))


def test_layer_norm_compiled_cpu(cpu_toolchain):
    ln = ex.layer_norm
    x, dy, w, b = normal((37, 100)), normal((37, 100)), normal(100), normal(100)
    _, mean, rstd = ln.layer_norm(x, w, b)
    blocks = {"ROWS": 8, "BLOCK_C": 128}
    differential(ln.layer_norm_fwd, (x, w, b, np.zeros_like(x), np.zeros(37, np.float32),
                                     np.zeros(37, np.float32), np.float32(1e-5)), blocks, grid=(3,))
    part = np.zeros((3, 100), np.float32)
    differential(ln.layer_norm_bwd_dx, (x, dy, w, mean, rstd, np.zeros_like(x), part,
                                        part.copy()), blocks, grid=(3,))
    differential(ln.sum_rows, (normal((40, 100)), np.zeros(100, np.float32)),
                 {"BLOCK_P": 16, "BLOCK_C": 64}, grid=(2,))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul_compiled_cpu(cpu_toolchain, dtype):
    a, b = normal((70, 50), dtype), normal((50, 90), dtype)
    differential(ex.matmul.matmul_kernel, (a, b, np.zeros((70, 90), np.float32)),
                 {"BM": 32, "BN": 32, "BK": 16, "GROUP_M": 2}, grid=(9,),
                 within={"c": dot_bound(a, b, np.float32).reshape(-1)})


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_attention_compiled_cpu(cpu_toolchain, dtype):
    q, k, v = (normal((2, 50, 16), dtype) for _ in range(3))
    # the dots' k order differs (BLAS against k order): both within the example's bound
    differential(ex.attention.attention_fwd, (q, k, v, np.zeros((2, 50, 16), np.float32),
                                              np.float32(0.25)),
                 {"BM": 16, "BN": 32, "HEAD_DIM": 16}, grid=(4, 2),
                 within={"out": np.full(q.size, 2 * ex.attention.tolerance(v))})


@pytest.mark.xfail(strict=True, reason="dsl.rand is Philox, whose rounds take umulhi of uint32 "
                   "words, which triton-ascend 3.2.0's CPU lowering computes as a signed "
                   "product (see test_language.py::test_umulhi_and_cdiv_compiled_cpu_bit_exact)")
def test_dropout_compiled_cpu(cpu_toolchain):
    x = normal(1003)
    differential(ex.dropout.dropout_kernel, (x, np.zeros_like(x), x.size, np.float32(0.4), 123),
                 {"BLOCK": 256}, grid=(3,))


def test_cumsum_is_refused_by_compiled_cpu_mode(cpu_toolchain):
    x = normal((37, 100))
    with pytest.raises(cpu.CompiledCPUError, match=r"library call\(s\) triton_cumsum"):
        ex.cumsum.cumsum_kernel.launch(x, np.zeros_like(x), ROWS=8, BLOCK_C=128, grid=(3,),
                                       backend="compiled-cpu")


def test_histogram_is_refused_by_compiled_cpu_mode(cpu_toolchain):
    x = normal(1003)
    with pytest.raises(cpu.CompiledCPUError, match="CPU lowering of atomic fails"):
        ex.histogram.histogram_kernel.launch(x, np.zeros(16, np.int32), x.size, np.float32(-4),
                                             np.float32(2), NBINS=16, BLOCK=256, grid=(3,),
                                             backend="compiled-cpu")


def test_embedding_compiled_cpu(cpu_toolchain):
    table, ids = normal((500, 300), np.float16), rng.integers(0, 500, 77).astype(np.int32)
    differential(ex.embedding.embedding_kernel, (ids, table, np.zeros((77, 300), np.float16)),
                 {"ROWS": 8, "BLOCK_D": 512}, grid=(3,))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_argmax_compiled_cpu(cpu_toolchain, dtype):
    x = rng.integers(-20, 20, (37, 100)).astype(dtype)
    differential(ex.argmax.argmax_kernel, (x, np.zeros(37, np.int32), np.zeros(37, dtype)),
                 {"ROWS": 8, "BLOCK_C": 128}, grid=(3,))


def test_quantize_compiled_cpu(cpu_toolchain):
    x = normal((37, 100), scale=3.0)
    x[1] = 0
    q, scale = ex.quantize.quantize(x)
    blocks = {"ROWS": 8, "BLOCK_C": 128}
    differential(ex.quantize.quantize_kernel, (x, np.zeros_like(q), np.zeros_like(scale)), blocks,
                 grid=(3,))
    differential(ex.quantize.dequantize_kernel, (q, scale, np.zeros_like(x)), blocks, grid=(3,))
