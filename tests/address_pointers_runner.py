"""Runs the pointer-table kernels of ``test_address_pointers.py`` on fixed inputs in
whichever interpreter the environment selects (``TRITON_INTERPRET=1``: Triton's own;
``DSL_TRITON_INTERPRET=1``: this project's) and saves what they wrote to the ``.npz``
file named by the first argument. Only kernels Triton 3.2's interpreter can run are
here (it cannot take a loop bound loaded from memory, nor a pointer difference)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import test_address_pointers as kernels  # noqa: E402


def addresses(*tensors: torch.Tensor) -> torch.Tensor:
    return torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64)


def run() -> dict[str, np.ndarray]:
    results: dict[str, np.ndarray] = {}
    gen = torch.Generator().manual_seed(0)
    xs = [torch.randn(37, generator=gen), torch.randn(50, generator=gen)]
    out = torch.zeros(2 * 64)
    kernels.gather_through_table[(2,)](addresses(*xs), out, 37, BLOCK=64)
    results["gather"] = out.numpy()
    targets = [torch.zeros(40), torch.zeros(40)]
    kernels.scatter_through_table[(2,)](addresses(*targets), torch.randn(128, generator=gen),
                                        40, BLOCK=64)
    results["scatter"] = torch.cat(targets).numpy()
    data = torch.randint(0, 6, (1000,), generator=gen, dtype=torch.int32)
    hists = [torch.zeros(6, dtype=torch.int32) for _ in range(2)] + \
        [torch.zeros(1, dtype=torch.int32)]
    kernels.histogram_through_table[(8,)](addresses(*hists), torch.arange(8, dtype=torch.int32)
                                          % 2, data, 1000, BINS=6, BLOCK=128)
    results["atomics"] = torch.cat(hists).numpy()
    src = torch.randn(6, 8, generator=gen).to(torch.bfloat16)
    dst = torch.zeros(3, 8, dtype=torch.bfloat16)
    kernels.copy_rows_as_bytes[(3,)](src, dst, torch.tensor([4, 0, 5], dtype=torch.int32),
                                     ROW_BYTES=16)
    results["bytes"] = dst.view(torch.int16).numpy()
    x, q, k = (torch.randn(n, generator=gen) for n in (16, 8, 8))
    out = torch.zeros(16)
    kernels.scale_by_either[(2,)](x, q, k, out, N=8)
    results["select"] = out.numpy()
    rows = [torch.randn(6, generator=gen) for _ in range(4)]
    out = torch.ones(4, 8)
    kernels.rows_through_table[(1,)](addresses(*rows), out, 6, R=4, C=8)
    results["rows"] = out.numpy()
    shorts, strided = torch.arange(64, dtype=torch.int16), torch.zeros(64, dtype=torch.int16)
    kernels.copy_every_third[(1,)](shorts.data_ptr(), strided.data_ptr(), 5, 6, BLOCK=8)
    results["byte_addresses"] = strided.numpy()
    return {name: np.ascontiguousarray(v) for name, v in results.items()}


if __name__ == "__main__":
    np.savez(sys.argv[1], **run())
