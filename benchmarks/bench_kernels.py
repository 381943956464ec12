"""Interpreter speed beyond elementwise kernels: the kernel gallery against NumPy.

For each kernel of issue 11's list it times the gallery's host function
(``examples/``, run in the NumPy interpreter) and the NumPy reference, interleaved
and best-of-N in one process, checks the result, and prints interpreter / NumPy per
kernel and the geometric mean (below 1 means the interpreter is faster). A kernel
under 2 ms is timed over runs of calls that fill 2 ms (the mean per call of the best
run), since a single call of a few microseconds is mostly timer and cache noise. Row
sum and row max are small kernels defined here; everything else is the gallery's.

    python benchmarks/bench_kernels.py [--repeat 3] [--quick] [--only 'vector add']
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import argmax as ex_argmax  # noqa: E402
import attention as ex_attention  # noqa: E402
import cumsum as ex_cumsum  # noqa: E402
import dropout as ex_dropout  # noqa: E402
import embedding as ex_embedding  # noqa: E402
import histogram as ex_histogram  # noqa: E402
import layer_norm as ex_layer_norm  # noqa: E402
import matmul as ex_matmul  # noqa: E402
import softmax as ex_softmax  # noqa: E402
import vector_add as ex_vector_add  # noqa: E402
from _timing import best_of  # noqa: E402

import dsl  # noqa: E402


@dsl.jit
def row_reduce(x, out, MAX: dsl.constexpr, ROWS: dsl.constexpr, BLOCK_C: dsl.constexpr):
    """Sum (or max) of each row of a 2-D array."""
    n_rows, n_cols = x.shape[0], x.shape[1]
    cols = dsl.arange(0, BLOCK_C)[None, :]
    for r0 in dsl.tile_range(0, n_rows, ROWS):
        rows = r0 + dsl.arange(0, ROWS)[:, None]
        mask = (rows < n_rows) & (cols < n_cols)
        v = dsl.load(x, rows * n_cols + cols, mask, -float("inf") if MAX else 0.0)
        r = r0 + dsl.arange(0, ROWS)
        dsl.store(out, r, dsl.max(v, 1) if MAX else dsl.sum(v, 1), r < n_rows)


def row_reduce_host(x: np.ndarray, largest: bool) -> np.ndarray:
    out = np.empty(x.shape[0], np.float32)
    block_c = 1 << max(x.shape[1] - 1, 0).bit_length()
    row_reduce(x, out, MAX=largest, ROWS=max(1, 8192 // block_c), BLOCK_C=block_c)
    return out


def cases(quick: bool) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """(name, interpreter call, NumPy call) for each kernel."""
    rng = np.random.default_rng(0)
    scale = 4 if quick else 1
    small = rng.standard_normal(1024).astype(np.float32)
    big = rng.standard_normal((1 << 24) // scale).astype(np.float32)
    square = rng.standard_normal((4096 // scale, 1024)).astype(np.float32)
    ragged = rng.standard_normal((1000, 781)).astype(np.float32)
    w, b = rng.standard_normal(1024).astype(np.float32), rng.standard_normal(1024).astype(
        np.float32)
    y, mean, rstd = ex_layer_norm.reference(square, w, b)
    dy = rng.standard_normal(square.shape).astype(np.float32)
    a16, b16 = (rng.standard_normal((512, 512)).astype(np.float16) for _ in range(2))
    q, k, v = (rng.standard_normal((4, 512, 32)).astype(np.float16) for _ in range(3))
    table = rng.standard_normal((50_000, 300)).astype(np.float16)
    ids = rng.integers(0, table.shape[0], 16_384 // scale).astype(np.int32)
    data = rng.standard_normal(1_000_000 // scale).astype(np.float32)
    return [
        ("vector add 1K", lambda: ex_vector_add.add(small, small),
         lambda: ex_vector_add.reference(small, small)),
        ("vector add 16M", lambda: ex_vector_add.add(big, big),
         lambda: ex_vector_add.reference(big, big)),
        ("softmax square", lambda: ex_softmax.softmax(square),
         lambda: ex_softmax.reference(square)),
        ("softmax ragged 1000x781", lambda: ex_softmax.softmax(ragged),
         lambda: ex_softmax.reference(ragged)),
        ("layer norm forward", lambda: ex_layer_norm.layer_norm(square, w, b),
         lambda: ex_layer_norm.reference(square, w, b)),
        ("layer norm backward", lambda: ex_layer_norm.layer_norm_backward(dy, square, w, mean,
                                                                          rstd),
         lambda: ex_layer_norm.reference_backward(dy, square, w, mean, rstd)),
        ("row sum", lambda: row_reduce_host(square, False), lambda: square.sum(axis=1)),
        ("row max", lambda: row_reduce_host(square, True), lambda: square.max(axis=1)),
        ("matmul via dot 512^3 fp16", lambda: ex_matmul.matmul(a16, b16),
         lambda: ex_matmul.reference(a16, b16)),
        ("attention forward", lambda: ex_attention.attention(q, k, v),
         lambda: ex_attention.reference(q, k, v)),
        ("embedding gather", lambda: ex_embedding.embedding(ids, table),
         lambda: ex_embedding.reference(ids, table)),
        ("cumsum", lambda: ex_cumsum.cumsum(square), lambda: ex_cumsum.reference(square)),
        ("histogram", lambda: ex_histogram.histogram(data, 256, -4.0, 4.0),
         lambda: ex_histogram.reference(data, 256, -4.0, 4.0)),
        ("dropout", lambda: ex_dropout.dropout(big, 0.3, 7),
         lambda: ex_dropout.reference(big, 0.3, 7)),
        ("row argmax", lambda: ex_argmax.argmax(square), lambda: ex_argmax.reference(square)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--only", metavar="TEXT",
                        help="only the kernels whose name contains TEXT (the geometric mean "
                             "is then theirs)")
    args = parser.parse_args()
    print(f"{'kernel':<28} {'interp ms':>10} {'numpy ms':>10} {'interp/numpy':>13}")
    ratios = []
    for name, interp, numpy_fn in cases(args.quick):
        if args.only and args.only not in name:
            continue
        # a kernel under 2 ms is timed over runs of calls (see ``best_of``)
        t = best_of({"interp": interp, "numpy": numpy_fn}, args.repeat, min_sample=0.002)
        ratio = t["interp"] / t["numpy"]
        ratios.append(ratio)
        print(f"{name:<28} {t['interp'] * 1e3:>10.4g} {t['numpy'] * 1e3:>10.4g} {ratio:>13.2f}",
              flush=True)
    if not ratios:
        parser.error(f"no kernel's name contains {args.only!r}")
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"{'geometric mean':<28} {'':>10} {'':>10} {geomean:>13.2f}")


if __name__ == "__main__":
    main()
