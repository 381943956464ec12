"""Applies ``@triton.autotune`` in a process with no device driver and without the
``DSL_TRITON_INTERPRET`` switch (``test_triton_compat.py`` runs it in a fresh process),
importing ``dsl`` before Triton (argument ``dsl-first``) or after it, then runs the
kernel through ``dsl.from_triton``; prints the stored values' check."""

from __future__ import annotations

import sys

if sys.argv[1] == "dsl-first":
    import triton

    import dsl
else:
    import triton

    import dsl
import numpy as np
import triton.language as tl


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
