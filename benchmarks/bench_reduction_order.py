"""The cost of ``dsl.sum``'s fixed order: the halving tree against NumPy's own sum.

Times, interleaved and best-of-N in one process, a float32 sum of a 4096x4096 array
along each axis (the issue's case) and of a batch of 8x1024 blocks (a softmax's row
sums as the interpreter sees them):
  tree        ``numerics.tree_sum``, the order every backend computes
  numpy       ``np.sum`` (pairwise along a contiguous axis; its order is NumPy's)
  sequential  left to right, as the order before the tree was computed (the summed
              axis moved outermost and copied, then reduced slice by slice)
and prints each against ``np.sum``.

    python benchmarks/bench_reduction_order.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import best_of  # noqa: E402

from dsl.numerics import tree_sum  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    square = rng.standard_normal((4096, 4096)).astype(np.float32)
    blocks = rng.standard_normal((512, 8, 1024)).astype(np.float32)
    f32 = np.dtype(np.float32)
    cases = [("4096x4096, axis 1", square, 1), ("4096x4096, axis 0", square, 0),
             ("512 blocks of 8x1024, axis 2", blocks, 2)]
    print(f"{'sum':<30} {'tree ms':>8} {'numpy ms':>9} {'seq ms':>8} {'tree/numpy':>11} "
          f"{'seq/numpy':>10}")
    for name, x, axis in cases:
        t = best_of({
            "tree": lambda x=x, axis=axis: tree_sum(x, axis, f32),
            "numpy": lambda x=x, axis=axis: np.sum(x, axis=axis, dtype=f32),
            "seq": lambda x=x, axis=axis: np.add.reduce(
                np.ascontiguousarray(np.moveaxis(x, axis, 0)), axis=0, dtype=f32),
        }, args.repeat)
        print(f"{name:<30} {t['tree'] * 1e3:>8.2f} {t['numpy'] * 1e3:>9.2f} "
              f"{t['seq'] * 1e3:>8.2f} {t['tree'] / t['numpy']:>11.2f} "
              f"{t['seq'] / t['numpy']:>10.2f}", flush=True)


if __name__ == "__main__":
    main()
