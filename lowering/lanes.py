"""Lazy index blocks for the interpreter.

Tile-loop kernels compute ``idx = start + arange(0, BLOCK)`` and ``mask = idx < n``.
Materialising those as int arrays costs as much as the arithmetic the kernel does,
and hides the fact that a contiguous load is just a slice. So the interpreter keeps
them lazy:

- ``Lanes``: ``value[row, lane] = base[row] + lane`` over a 1-D block of ``length``.
- ``LaneMask``: ``lanes < bound[row]``.

Blocks of more dimensions (``rows[:, None] * n_cols + cols[None, :]``, masked with
``(rows < n_rows) & (cols < n_cols)``) have two more forms, so that a 2-D load is a
strided window of memory instead of a gather through a full index array:

- ``Affine``: ``value[row, i_0, ..., i_d] = base[row] + sum_k coefs[k] * i_k``; the
  coefficients are the same for every row (a size-1 axis has coefficient 0).
- ``BoxMask``: ``i_k < bounds[k][row]`` on every bounded axis ``k``: the valid lanes of
  each row form a box anchored at the origin.

A data-dependent row index (``table[ids[t], :]``: ``row * dim + cols`` with ``row``
loaded) has one more, made only for an index that nothing but loads reads:

- ``RowRuns``: ``starts[row, i_0, ..., i_{d-1}] + step * i_d``: a run along the last
  axis from a start that may differ for every lane of the leading axes.

A masked load whose value only stores under the same mask read has one data form:

- ``BoxedValues``: the loaded box of each row, without the padding around it (a
  row of an embedding table, 300 wide, in a block of 512), which the store writes
  as it is.

All know how to materialise themselves exactly (with the IR dtype's wrap-around; a
lazy form is only made when no value leaves the dtype's range), and the interpreter
falls back to materialising whenever an op is not one of the few that preserve the
form (adding a lane-uniform value or another affine block, multiplying by a
uniform scalar, comparing with a lane-uniform value, ``&`` of two masks, inserting
or broadcasting unit axes).
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
        # (bases are int64: an unsigned 64-bit block stays lazy only below 2**63)
        info = np.iinfo(self.dtype)
        lo, hi = max(int(info.min), -(2**63)), min(int(info.max), 2**63 - 1)
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


def _axis(values: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """1-D ``values`` laid along block axis ``axis`` of a (rows, *block) array."""
    shape = [1] * (rank + 1)
    shape[axis + 1] = values.shape[0]
    return values.reshape(shape)


@dataclass(frozen=True)
class Affine:
    """``base[row] + sum_k coefs[k] * i_k`` over a block of ``shape``; ``base`` has
    shape (rows,) or (1,). Build with ``Affine.make``, which refuses forms whose
    values could leave the dtype's range."""

    base: np.ndarray  # int64
    shape: tuple[int, ...]
    coefs: tuple[int, ...]
    dtype: np.dtype

    @staticmethod
    def make(base: np.ndarray, shape: tuple[int, ...], coefs: tuple[int, ...],
             dtype: np.dtype) -> Affine | None:
        limits = _INT_LIMITS.get(np.dtype(dtype))
        if limits is None or len(shape) != len(coefs):
            return None
        coefs = tuple(int(c) if n > 1 else 0 for c, n in zip(coefs, shape))
        low = sum(c * (n - 1) for c, n in zip(coefs, shape) if c < 0)
        high = sum(c * (n - 1) for c, n in zip(coefs, shape) if c > 0)
        if base.size and (int(base.min()) + low < limits[0] or
                          int(base.max()) + high > limits[1]):
            return None
        return Affine(base.astype(np.int64, copy=False), tuple(shape), coefs, np.dtype(dtype))

    @staticmethod
    def of(x: object) -> Affine | None:
        """``x`` as an affine block when it is one (a ``Lanes`` is)."""
        if isinstance(x, Affine):
            return x
        if isinstance(x, Lanes):
            return Affine(x.base, (x.length,), (1,), x.dtype)
        return None

    @property
    def rows(self) -> int:
        return self.base.shape[0]

    def simplest(self) -> Affine | Lanes:
        """A 1-D block with coefficient 1 as the ``Lanes`` it is (whose contiguous
        runs the interpreter turns into slices)."""
        if len(self.shape) == 1 and self.coefs == (1,):
            return Lanes(self.base, self.shape[0], self.dtype)
        return self

    def materialize(self) -> np.ndarray:
        rank = len(self.shape)
        acc = self.base.reshape((-1,) + (1,) * rank)
        for k, (n, c) in enumerate(zip(self.shape, self.coefs)):
            if c:
                acc = acc + _axis(np.arange(n, dtype=np.int64) * c, k, rank)
        return np.broadcast_to(acc, (acc.shape[0],) + self.shape).astype(self.dtype)

    def take(self, rows: np.ndarray) -> Affine:
        if self.base.shape[0] == 1:
            return self
        return Affine(self.base[rows], self.shape, self.coefs, self.dtype)

    def expanded(self, axis: int) -> Affine:
        """A unit axis inserted at ``axis``."""
        return Affine(self.base, self.shape[:axis] + (1,) + self.shape[axis:],
                      self.coefs[:axis] + (0,) + self.coefs[axis:], self.dtype)

    def lead(self, count: int) -> Affine:
        """``count`` unit axes in front (a broadcast to a higher rank)."""
        return Affine(self.base, (1,) * count + self.shape, (0,) * count + self.coefs,
                      self.dtype)

    def shifted(self, delta: np.ndarray) -> Affine | None:
        """``self + delta`` (delta per row, or one for all rows)."""
        return Affine.make(self.base + delta.astype(np.int64), self.shape, self.coefs,
                           self.dtype)

    def scaled(self, factor: int) -> Affine | None:
        """``self * factor`` (the same factor for every row and lane)."""
        return Affine.make(self.base * factor, self.shape,
                           tuple(c * factor for c in self.coefs), self.dtype)

    def plus(self, other: Affine) -> Affine | None:
        """``self + other``, broadcasting the block shapes (NumPy rules)."""
        if len(self.shape) != len(other.shape) or any(
                a != b and 1 not in (a, b) for a, b in zip(self.shape, other.shape)):
            return None
        if self.rows != other.rows and 1 not in (self.rows, other.rows):
            return None
        shape = tuple(max(a, b) for a, b in zip(self.shape, other.shape))
        coefs = tuple(a + b for a, b in zip(self.coefs, other.coefs))
        return Affine.make(self.base + other.base, shape, coefs, self.dtype)

    def mask_below(self, bound: np.ndarray) -> BoxMask | None:
        """``self < bound`` (bound per row) as a box, when one axis alone varies with a
        positive coefficient."""
        varying = [k for k, c in enumerate(self.coefs) if c]
        if len(varying) != 1 or self.coefs[varying[0]] < 0:
            return None
        k = varying[0]
        c = self.coefs[k]
        # base + c*i < bound  <=>  i < (bound - base - 1) // c + 1
        upper = np.clip((bound.astype(np.int64) - self.base - 1) // c + 1, 0, self.shape[k])
        return BoxMask(self.shape, tuple(upper if j == k else None
                                         for j in range(len(self.shape))))


def _stretched(bound: np.ndarray | None, size: int, length: int) -> np.ndarray | None:
    """A box's bound along an axis of ``size`` lanes as a bound along the same axis
    broadcast to ``length``: an axis of one lane is valid all along or not at all (its
    bound 1 means every lane, not the first: ``rows_mask & (pid < n)`` kept one row)."""
    if bound is None or size == length:
        return bound
    return np.where(bound >= 1, length, 0)


@dataclass(frozen=True)
class BoxMask:
    """Lanes with ``i_k < bounds[k][row]`` on every axis whose bound is not None; each
    bound (shape (rows,) or (1,), int64) lies in ``[0, shape[k]]``."""

    shape: tuple[int, ...]
    bounds: tuple[np.ndarray | None, ...]

    @staticmethod
    def of(x: object) -> BoxMask | None:
        """``x`` as a box mask when it is one (a ``LaneMask`` is, and so is a boolean
        array whose block axes all have length 1: a condition per row, such as
        ``offs < n`` for a block of one lane, whose one lane is valid or not)."""
        if isinstance(x, BoxMask):
            return x
        if isinstance(x, LaneMask):
            return BoxMask((x.lanes.length,), (x.valid_counts(),))
        if isinstance(x, np.ndarray) and x.dtype == np.bool_ and x.ndim >= 2 and \
                all(n == 1 for n in x.shape[1:]):
            return BoxMask(x.shape[1:], (x.reshape(-1).astype(np.int64),) +
                           (None,) * (x.ndim - 2))
        return None

    @property
    def rows(self) -> int:
        return max((b.shape[0] for b in self.bounds if b is not None), default=1)

    def materialize(self) -> np.ndarray:
        rank = len(self.shape)
        valid = np.ones((1,) + (1,) * rank, bool)
        for k, bound in enumerate(self.bounds):
            if bound is not None:
                lanes = _axis(np.arange(self.shape[k], dtype=np.int64), k, rank)
                valid = valid & (lanes < bound.reshape((-1,) + (1,) * rank))
        return np.broadcast_to(valid, (valid.shape[0],) + self.shape).copy()

    def take(self, rows: np.ndarray) -> BoxMask:
        return BoxMask(self.shape, tuple(b if b is None or b.shape[0] == 1 else b[rows]
                                         for b in self.bounds))

    def expanded(self, axis: int) -> BoxMask:
        return BoxMask(self.shape[:axis] + (1,) + self.shape[axis:],
                       self.bounds[:axis] + (None,) + self.bounds[axis:])

    def lead(self, count: int) -> BoxMask:
        return BoxMask((1,) * count + self.shape, (None,) * count + self.bounds)

    def both(self, other: BoxMask) -> BoxMask | None:
        """``self & other``, broadcasting the block shapes."""
        if len(self.shape) != len(other.shape) or any(
                a != b and 1 not in (a, b) for a, b in zip(self.shape, other.shape)):
            return None
        shape = tuple(max(a, b) for a, b in zip(self.shape, other.shape))
        bounds: list[np.ndarray | None] = []
        for k, n in enumerate(shape):
            a, b = (_stretched(box.bounds[k], box.shape[k], n) for box in (self, other))
            bounds.append(a if b is None else b if a is None else np.minimum(a, b))
        return BoxMask(shape, tuple(bounds))

    def extents(self, rows: int, shape: tuple[int, ...]) -> np.ndarray:
        """(rows, rank) int64: the valid extent along each axis of ``shape`` (which
        this mask broadcasts to), per row."""
        out = np.empty((rows, len(shape)), np.int64)
        for k, n in enumerate(shape):
            bound = self.bounds[k]
            if bound is None:
                out[:, k] = n
            elif self.shape[k] == 1:  # the same validity all along a broadcast axis
                out[:, k] = np.where(bound >= 1, n, 0)
            else:
                out[:, k] = np.minimum(bound, n)
        return out

    def all_true(self) -> bool:
        return all(b is None or bool(np.all(b >= n)) for b, n in zip(self.bounds, self.shape))


@dataclass(frozen=True)
class RowRuns:
    """``starts[row, i_0, ..., i_{d-1}] + step * i_d`` over a block of ``shape``;
    ``starts`` has shape (rows, *shape[:-1]) or (1, *shape[:-1]). Build with
    ``RowRuns.of``, which refuses forms whose values could leave the dtype's range."""

    starts: np.ndarray  # int64
    shape: tuple[int, ...]
    step: int
    dtype: np.dtype

    @staticmethod
    def of(runs: Affine, starts: np.ndarray) -> RowRuns | None:
        """``runs + starts``: an affine block that varies along its last axis alone
        (with a positive coefficient), plus an integer array of shape
        (rows, *block) that does not vary along that axis."""
        rank = len(runs.shape)
        limits = _INT_LIMITS.get(runs.dtype)
        if limits is None or rank < 2 or starts.ndim != rank + 1 or starts.shape[-1] != 1 \
                or any(runs.coefs[:-1]) or runs.coefs[-1] <= 0:
            return None
        try:
            lead = np.broadcast_shapes(runs.shape[:-1], starts.shape[1:-1])
        except ValueError:
            return None
        if 1 not in (runs.rows, starts.shape[0]) and runs.rows != starts.shape[0]:
            return None
        first = starts[..., 0].astype(np.int64) + runs.base.reshape((-1,) + (1,) * (rank - 1))
        first = np.broadcast_to(first, (first.shape[0],) + lead)
        reach = runs.coefs[-1] * (runs.shape[-1] - 1)
        if first.size and (int(first.min()) < limits[0] or int(first.max()) + reach > limits[1]):
            return None
        return RowRuns(first, lead + (runs.shape[-1],), runs.coefs[-1], runs.dtype)

    @property
    def rows(self) -> int:
        return self.starts.shape[0]

    def materialize(self) -> np.ndarray:
        lanes = np.arange(self.shape[-1], dtype=np.int64) * self.step
        return (self.starts[..., None] + lanes).astype(self.dtype)

    def take(self, rows: np.ndarray) -> RowRuns:
        if self.starts.shape[0] == 1:
            return self
        return RowRuns(self.starts[rows], self.shape, self.step, self.dtype)


@dataclass(frozen=True)
class BoxedValues:
    """A masked load's values kept as its valid lanes alone: ``values`` is
    (rows, *extents), the box at the origin of each row's block of ``shape`` (the same
    box for every row); the other lanes hold ``other`` (0 when absent). Made only for a
    load that nothing but stores under the same mask read, so the padding is never
    written, copied or looked at (``Interpreter._stored_under_its_mask``)."""

    values: np.ndarray
    shape: tuple[int, ...]
    other: object | None

    @property
    def extents(self) -> tuple[int, ...]:
        return self.values.shape[1:]

    def materialize(self) -> np.ndarray:
        rows = self.values.shape[0]
        out = np.empty((rows,) + self.shape, self.values.dtype)
        out[...] = 0 if self.other is None else materialize(self.other)
        out[(slice(None),) + tuple(slice(0, e) for e in self.extents)] = self.values
        return out

    def take(self, rows: np.ndarray) -> BoxedValues:
        if self.values.shape[0] == 1:
            return self
        other = None if self.other is None else take_rows(self.other, rows)
        return BoxedValues(self.values[rows], self.shape, other)


@dataclass(frozen=True)
class TakenLines:
    """A ``BoxedValues`` not yet copied: each row's box is whole lines of a tensor read
    as a matrix (an embedding's rows of the table), ``matrix[lines]``, shaped
    (rows, *lines.shape[1:], line length). A store whose destination is contiguous
    takes the lines straight into memory (``StoreJournal``), one copy where loading
    them first and storing them after made two. Made only for a tensor the launch
    does not write, so reading it late reads the same values."""

    matrix: np.ndarray  # (lines of the tensor, line length)
    lines: np.ndarray  # (rows, ...) line numbers, each checked to be in the matrix
    shape: tuple[int, ...]
    other: object | None

    @property
    def extents(self) -> tuple[int, ...]:
        return self.lines.shape[1:] + self.matrix.shape[1:]

    def boxed(self) -> BoxedValues:
        """The values, copied."""
        values = np.take(self.matrix, self.lines.reshape(-1), axis=0, mode="clip")
        return BoxedValues(values.reshape(self.lines.shape + self.matrix.shape[1:]),
                           self.shape, self.other)

    def materialize(self) -> np.ndarray:
        return self.boxed().materialize()

    def take(self, rows: np.ndarray) -> TakenLines:
        if self.lines.shape[0] == 1:
            return self
        other = None if self.other is None else take_rows(self.other, rows)
        return TakenLines(self.matrix, self.lines[rows], self.shape, other)


_LAZY = (Lanes, LaneMask, Affine, BoxMask, RowRuns, BoxedValues, TakenLines)


def materialize(x: object) -> np.ndarray:
    """An ndarray for a runtime value, lazy or not."""
    if isinstance(x, _LAZY):
        return x.materialize()
    assert isinstance(x, np.ndarray)
    return x


def take_rows(x: object, rows: np.ndarray) -> object:
    """Restrict a runtime value to ``rows`` of the batch (row-uniform values stay as they are)."""
    if isinstance(x, _LAZY):
        return x.take(rows)
    if not isinstance(x, np.ndarray):
        return x  # a bound tensor: the same for every row
    return x if x.shape[0] == 1 else x[rows]
