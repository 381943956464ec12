"""Per-thread scratch buffers for the interpreter's chunk results.

A chunk of a batched loop computes every elementwise result into a fresh
multi-megabyte array unless it can reuse one; fresh arrays cost page faults that
took as long as the arithmetic itself (``benchmarks/bench_bce.py``). Chunk values
never outlive their chunk (stores copy them out), so a thread may hand the buffer
an op used in one chunk, or in an earlier launch, to the same op again.

Buffers are keyed by op and kept per thread (a thread runs one chunk at a time),
least recently used first out, under a byte budget per thread.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

BYTES_PER_THREAD = 96 << 20

_local = threading.local()


def _pool() -> OrderedDict[int, np.ndarray]:
    pool = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = OrderedDict()
        _local.nbytes = 0
    return pool


def scratch(key: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A buffer of ``shape`` and ``dtype`` for ``key`` on this thread (contents undefined)."""
    pool = _pool()
    buffer = pool.pop(key, None)
    if buffer is not None and (buffer.shape != shape or buffer.dtype != dtype):
        _local.nbytes -= buffer.nbytes
        buffer = None
    if buffer is None:
        buffer = np.empty(shape, dtype)
        _local.nbytes += buffer.nbytes
    pool[key] = buffer
    while _local.nbytes > BYTES_PER_THREAD and len(pool) > 1:
        _, evicted = pool.popitem(last=False)
        _local.nbytes -= evicted.nbytes
    return buffer
