"""Applies ``@triton.autotune`` in a process with no device driver and without the
``DSL_TRITON_INTERPRET`` switch (``test_triton_compat.py`` runs it in a fresh process),
importing ``dsl`` before Triton (argument ``dsl-first``) or after it, then runs the
kernel through ``dsl.from_triton``; prints the stored values' check."""

from __future__ import annotations

import importlib
import sys

# (import_module: an import sorter would put both orders back into one)
FIRST, SECOND = ("dsl", "triton") if sys.argv[1] == "dsl-first" else ("triton", "dsl")
importlib.import_module(FIRST)
importlib.import_module(SECOND)

import numpy as np  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import dsl  # noqa: E402


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})],
                 key=["n"])
@triton.jit
def doubled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, offs < n) * 2, offs < n)


x = np.arange(40, dtype=np.float32)
out = np.zeros_like(x)
dsl.from_triton(doubled)[lambda meta: (triton.cdiv(40, meta["BLOCK"]),)](x, out, 40)
print("doubled" if np.array_equal(out, x * 2) else f"wrong: {out}")
