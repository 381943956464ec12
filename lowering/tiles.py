"""Distinct tiles of the operand loads of a dot loop.

A tiled matmul's programs share their operands: at one step of the k loop, every
program of a block row loads the same tile of ``a``, and every program of a block
column the same tile of ``b``. The interpreter runs a loop that only accumulates dots
(``Interpreter._for_dot_sums``) with every (step, program) pair as a row, in chunks of
rows; loading each row's tile would copy ``a`` and ``b`` once per block column and
once per block row.

This module owns reading each distinct tile once instead:

- ``distinct_rows`` finds, for one chunk's access, which rows read the same tile: the
  same affine base and mask box, and one ``other`` for every row.
- ``SharedTiles`` keeps the tiles one load has read so far in the loop, across
  chunks, by that key: a chunk loads only tiles no earlier chunk read, and every row
  gets a tile number in the load's table. A table holds at most ``TABLE_ELEMENTS``;
  past that, chunks load their own tiles again, so memory stays bounded.

``numerics.dot_steps_shared`` then multiplies the tables' tiles. Bounds checks stay
the caller's, on every row, before anything is read.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lowering.lanes import LaneMask, materialize
from lowering.memory import affine_access


def distinct_rows(index: object, mask: object | None, other: object | None
                  ) -> tuple[np.ndarray, np.ndarray, list] | None:
    """For a load whose rows mostly repeat one another's tiles: the first row of each
    distinct tile, each row's tile number, and each tile's key (hashable: its base,
    and its box when the rows' boxes differ). None when the access is not affine
    under a box, ``other`` differs between rows, or fewer than half the rows repeat."""
    if isinstance(mask, LaneMask) and mask.all_true():
        mask = None
    if other is not None and materialize(other).shape[0] != 1:
        return None
    access = affine_access(index, mask)
    if access is None:
        return None
    base, extents = access.base, access.extents
    if (extents == extents[0]).all():
        keys, first, tile = np.unique(base, return_index=True, return_inverse=True)
        box = tuple(extents[0].tolist())
        listed: list = [(b, box) for b in keys.tolist()]
    else:
        keys, first, tile = np.unique(np.column_stack([base, extents]), axis=0,
                                      return_index=True, return_inverse=True)
        listed = [(row[0], tuple(row[1:])) for row in keys.tolist()]
    if 2 * first.shape[0] > base.shape[0]:
        return None
    return first, tile.reshape(-1), listed


TABLE_ELEMENTS = 1 << 24  # the most elements one load's table holds (64 MiB of float32)


class SharedTiles:
    """The distinct tiles one load of a dot loop has read, over the loop's chunks."""

    def __init__(self) -> None:
        self._numbers: dict[object, int] = {}
        self._parts: list[np.ndarray] = []
        self._tiles: np.ndarray | None = None
        self._elements = 0
        self.reads = 0  # calls of ``read`` so far (each one's tiles in its own buffer)

    def add(self, first: np.ndarray, tile: np.ndarray, keys: list,
            read: Callable[[np.ndarray], np.ndarray], tile_elements: int) -> np.ndarray | None:
        """A chunk's ``distinct_rows``: ``read(rows)`` loads the tiles of those rows
        (one per row), called only for tiles no earlier chunk read. Returns each of
        the chunk's rows' tile number in this table; None, with the table as it
        was, when the new tiles would take it past ``TABLE_ELEMENTS`` (the chunk
        then loads its own tiles, and memory stays bounded as the chunks bound it)."""
        new = [i for i, key in enumerate(keys) if key not in self._numbers]
        if self._elements + len(new) * tile_elements > TABLE_ELEMENTS:
            return None
        for i in new:
            self._numbers[keys[i]] = len(self._numbers)
        numbers = np.fromiter((self._numbers[key] for key in keys), np.int64, len(keys))
        if new:
            self._parts.append(read(first[np.asarray(new)]))
            self.reads += 1
            self._elements += len(new) * tile_elements
            self._tiles = None
        return numbers[tile]

    @property
    def tiles(self) -> np.ndarray:
        """Every tile read so far, by tile number: ``(count, *block)``."""
        if self._tiles is None:
            self._tiles = self._parts[0] if len(self._parts) == 1 else \
                np.concatenate(self._parts)
            self._parts = [self._tiles]
        return self._tiles
