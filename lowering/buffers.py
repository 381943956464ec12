"""Reused buffers for the interpreter's large temporaries.

A chunk of a batched loop computes every elementwise result into a fresh
multi-megabyte array unless it can reuse one; fresh arrays cost page faults that
took as long as the arithmetic itself (``benchmarks/bench_bce.py``; glibc hands a
freed megabyte back to the system and faults it in again on the next launch, ~3 us
a page here). Two kinds of reuse:

- ``scratch``: per thread, for values that die before the thread runs anything else
  that could ask for the same key (a chunk's values: stores copy them out; a dot
  loop's tiles and products, within one call). A thread may hand the buffer a key
  used in one chunk, or in an earlier launch, to the same key again. Least recently
  used first out, under a byte budget per thread.
- ``borrow`` / ``give_back``: for values that live through a whole launch, whose
  pieces may run on any worker thread while another launch runs on the same threads
  (a float32 copy of a dot operand, read by every chunk). A borrowed buffer is out of
  the shared pool until it is given back, so no two launches ever hold it at once.

Keys are hashable values that name the op (and the role) the buffer serves.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

import numpy as np

BYTES_PER_THREAD = 96 << 20

SHARED_BYTES = 256 << 20  # buffers given back and kept for the next launch, at most

_local = threading.local()
_shared: OrderedDict[Hashable, np.ndarray] = OrderedDict()
_shared_lock = threading.Lock()
_shared_bytes = 0


def _pool() -> OrderedDict[Hashable, np.ndarray]:
    pool = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = OrderedDict()
        _local.nbytes = 0
    return pool


def scratch(key: Hashable, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
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


def borrow(key: Hashable, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A buffer of ``shape`` and ``dtype`` for ``key`` (contents undefined), the
    caller's alone until it calls ``give_back``: the one kept for ``key`` when it
    fits, else a new one."""
    global _shared_bytes
    with _shared_lock:
        buffer = _shared.pop(key, None)
        if buffer is not None:
            _shared_bytes -= buffer.nbytes
    if buffer is not None and buffer.shape == shape and buffer.dtype == dtype:
        return buffer
    return np.empty(shape, dtype)


def give_back(key: Hashable, buffer: np.ndarray) -> None:
    """Keep ``buffer`` for the next ``borrow`` of ``key`` (nothing may use it after
    this call), oldest first out under ``SHARED_BYTES``."""
    global _shared_bytes
    if buffer.nbytes > SHARED_BYTES:
        return
    with _shared_lock:
        old = _shared.pop(key, None)
        if old is not None:
            _shared_bytes -= old.nbytes
        _shared[key] = buffer
        _shared_bytes += buffer.nbytes
        while _shared_bytes > SHARED_BYTES:
            _, evicted = _shared.popitem(last=False)
            _shared_bytes -= evicted.nbytes
