"""The one patch Triton's CPU interpreter (TRITON_INTERPRET=1) needs with NumPy >= 2.4.

Its ``tensor.__index__`` calls ``int()`` on a one-element 1-D array, which NumPy no
longer allows. Both children that run Triton's interpreter (tests/
triton_interpret_runner.py and the Philox child script of tests/test_philox.py)
call :func:`install` after setting TRITON_INTERPRET and before running a kernel.
"""

from __future__ import annotations

import numpy as np
import triton.runtime.interpreter as triton_interpreter


def install() -> None:
    """Make interpreter tensors usable as indices again (idempotent)."""
    original = triton_interpreter._patch_lang_tensor
    if getattr(original, "_numpy24_index", False):
        return

    def patch(tensor):
        original(tensor)
        tensor.__index__ = lambda self: int(np.asarray(self.handle.data).reshape(-1)[0])

    patch._numpy24_index = True
    triton_interpreter._patch_lang_tensor = patch
