"""Lazy index blocks for the interpreter.

Tile-loop kernels compute ``idx = start + arange(0, BLOCK)`` and ``mask = idx < n``.
Materialising those as int arrays costs as much as the arithmetic the kernel does,
and hides the fact that a contiguous load is just a slice. So the interpreter keeps
them lazy:

- ``Lanes``: ``value[row, lane] = base[row] + lane`` over a 1-D block of ``length``.
- ``LaneMask``: ``lanes < bound[row]``.

Both know how to materialise themselves exactly (with the IR dtype's wrap-around),
and the interpreter falls back to materialising whenever an op is not one of the
few that preserve the form (adding a lane-uniform value, comparing with one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_INT_LIMITS = {np.dtype(np.int32): (-(2**31), 2**31 - 1), np.dtype(np.int64): (-(2**63), 2**63 - 1)}


@dataclass(frozen=True)
class Lanes:
    """``base[row] + lane`` for ``lane`` in ``[0, length)``; ``base`` has shape (rows,) or (1,)."""

    base: np.ndarray  # int64
    length: int
    dtype: np.dtype

    def materialize(self) -> np.ndarray:
        lanes = np.arange(self.length, dtype=np.int64)
        return (self.base[:, None] + lanes[None, :]).astype(self.dtype)

    def take(self, rows: np.ndarray) -> Lanes:
        if self.base.shape[0] == 1:
            return self
        return Lanes(self.base[rows], self.length, self.dtype)

    def shifted(self, delta: np.ndarray) -> Lanes | None:
        """``self + delta`` (delta per row), or None if the sum could leave the dtype's range."""
        base = self.base + delta.astype(np.int64)
        lo, hi = _INT_LIMITS[self.dtype]
        if base.size and (base.min() < lo or base.max() + self.length - 1 > hi):
            return None
        return Lanes(base, self.length, self.dtype)

    def consecutive_start(self) -> int | None:
        """If row r covers ``[s + r*length, s + (r+1)*length)``, return ``s``."""
        base = self.base
        if base.shape[0] > 1 and not np.all(np.diff(base) == self.length):
            return None
        return int(base[0])


@dataclass(frozen=True)
class LaneMask:
    """``lanes < bound[row]``; ``bound`` has shape (rows,) or (1,)."""

    lanes: Lanes
    bound: np.ndarray  # int64

    def materialize(self) -> np.ndarray:
        lanes = np.arange(self.lanes.length, dtype=np.int64)
        return (self.lanes.base[:, None] + lanes[None, :]) < self.bound[:, None]

    def take(self, rows: np.ndarray) -> LaneMask:
        bound = self.bound if self.bound.shape[0] == 1 else self.bound[rows]
        return LaneMask(self.lanes.take(rows), bound)

    def valid_counts(self) -> np.ndarray:
        """Number of leading valid lanes of each row."""
        return np.clip(self.bound - self.lanes.base, 0, self.lanes.length)

    def all_true(self) -> bool:
        return bool(np.all(self.bound >= self.lanes.base + self.lanes.length))


def materialize(x: object) -> np.ndarray:
    """An ndarray for a runtime value, lazy or not."""
    if isinstance(x, (Lanes, LaneMask)):
        return x.materialize()
    assert isinstance(x, np.ndarray)
    return x


def take_rows(x: object, rows: np.ndarray) -> object:
    """Restrict a runtime value to ``rows`` of the batch (row-uniform values stay as they are)."""
    if isinstance(x, (Lanes, LaneMask)):
        return x.take(rows)
    if not isinstance(x, np.ndarray):
        return x  # a bound tensor: the same for every row
    return x if x.shape[0] == 1 else x[rows]
