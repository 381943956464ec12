"""Loads, stores and bounds checks of the interpreter, and the store journal.

Every load and store is checked against its tensor view before it touches memory:
the logical index of each active lane must lie in ``[0, numel)``. A violation raises
``OutOfBoundsError`` naming the kernel, source line, program id, tensor and index.

The ``StoreJournal`` makes a launch all-or-nothing, in one of three modes:
- ``direct``: the interpreter has already proved every access in bounds (see
  ``lowering.prepass``), so stores are written at once with no bookkeeping.
- ``deferred`` (unproved, and no stored tensor overlaps a loaded one): stores are
  queued and written when the launch finishes.
- ``undo`` (unproved, and a stored tensor is also read): stores are written at
  once, the old contents are kept, and an error rolls them back.
Either way a failing launch leaves every output as it was. Loads may return views
of input buffers unless a stored tensor overlaps a loaded one (then they copy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dsl.errors import DataRaceError, OutOfBoundsError, SourceLoc
from dsl.numerics import as_strided
from lowering.lanes import (
    Affine,
    BoxedValues,
    BoxMask,
    LaneMask,
    Lanes,
    RowRuns,
    TakenLines,
    materialize,
)

# How a load allocates its result: ``np.empty``, or a pooled buffer (contents undefined)
Allocate = Callable[[tuple[int, ...], np.dtype], np.ndarray]


@dataclass
class AccessSite:
    """What an error message needs about one load/store op."""

    kernel: str
    kind: str  # "load" | "store"
    tensor: str
    numel: int  # elements of the view, or of the memory it spans for a pointer access
    loc: SourceLoc
    pointer: bool = False  # Triton's pointer form: the index is the element offset


def _raise_oob(site: AccessSite, pid: np.ndarray, row: int, lane: int, index: int) -> None:
    program = tuple(int(p) for p in pid[row]) if pid.shape[0] > row else (0, 0, 0)
    if site.pointer:
        raise OutOfBoundsError(
            f"{site.loc}: out-of-bounds {site.kind} in kernel '{site.kernel}': pointer "
            f"offset {index} is outside tensor '{site.tensor}', whose memory holds "
            f"{site.numel} elements (program id {program}, lane {lane})\n{site.loc.excerpt()}")
    raise OutOfBoundsError(
        f"{site.loc}: out-of-bounds {site.kind} in kernel '{site.kernel}': tensor "
        f"'{site.tensor}' has {site.numel} elements but index {index} was accessed "
        f"(program id {program}, lane {lane})\n{site.loc.excerpt()}")


@dataclass(frozen=True)
class AffineAccess:
    """An access through an ``Affine`` block under a ``BoxMask`` (or no mask): per row,
    the valid lanes are the box ``[0, extents[row, k])`` on every axis."""

    base: np.ndarray  # (rows,) int64: the index of lane (0, ..., 0)
    coefs: tuple[int, ...]
    shape: tuple[int, ...]  # the block
    extents: np.ndarray  # (rows, rank) int64

    def span(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(active, lowest, highest): per row, whether any lane is valid and the least
        and greatest index its valid lanes touch."""
        reach = (self.extents - 1) * np.asarray(self.coefs, np.int64)
        active = (self.extents > 0).all(axis=1)
        return (active, self.base + np.minimum(reach, 0).sum(axis=1),
                self.base + np.maximum(reach, 0).sum(axis=1))

    def groups(self) -> list[tuple[np.ndarray | slice, np.ndarray, int, int]] | None:
        """Rows sharing one box whose bases step evenly: (rows, extents, first base,
        step) per group; None when some group's bases do not step evenly."""
        out = []
        for sel, extents in _row_groups(self.extents):
            bases = self.base[sel]
            step = int(bases[1] - bases[0]) if bases.shape[0] > 1 else 0
            if bases.shape[0] > 2 and not np.all(np.diff(bases) == step):
                return None
            out.append((sel, extents, int(bases[0]), step))
        return out

    def window(self, buffer: np.ndarray, count: int, extents: np.ndarray, first: int,
               step: int, writeable: bool = False) -> np.ndarray:
        """The (count, *extents) strided view of ``buffer`` one group addresses (every
        element of it was bounds-checked: the view never leaves the buffer)."""
        item = buffer.itemsize
        return as_strided(
            buffer[first:], shape=(count,) + tuple(int(e) for e in extents),
            strides=(step * item,) + tuple(c * item for c in self.coefs), writeable=writeable)

    def injective(self) -> bool:
        """True when no two valid lanes of the launch address one element: within a
        row (mixed-radix coefficients) and between rows (disjoint index ranges)."""
        widest = self.extents.max(axis=0)
        reach = 0
        for c, e in sorted(zip((abs(c) for c in self.coefs), widest)):
            if e > 1 and c <= reach:
                return False
            reach += c * (e - 1)
        active, low, high = self.span()
        low, high = low[active], high[active]
        order = np.argsort(low, kind="stable")
        if np.all(low[order][1:] > high[order][:-1]):
            return True
        if self._disjoint_tiles(active, widest):
            return True
        split = self._split_outermost(widest)
        return split is not None and split.injective()

    def _split_outermost(self, widest: np.ndarray) -> AffineAccess | None:
        """The same lanes with the axis of the largest coefficient unrolled into rows:
        row ``r``'s lanes at position ``i`` of that axis become a row of their own,
        based at ``base[r] + coef * i``. Rows whose ranges interleave only through
        that axis (a store of two halves, each row writing its piece of both) then
        have ranges the test in ``injective`` can order (``widest``: its widest extent
        per axis). None when no axis is left to unroll or the rows would number more
        than ``_SPLIT_ROWS``."""
        axes = [k for k in range(len(self.coefs)) if widest[k] > 1]
        if not axes:
            return None
        k = max(axes, key=lambda a: abs(self.coefs[a]))
        count = int(widest[k])
        rows = self.extents.shape[0]
        if rows * count > _SPLIT_ROWS:
            return None
        at = np.arange(count, dtype=np.int64)
        keep = at[None, :] < self.extents[:, k:k + 1]  # (rows, count)
        bases = (np.broadcast_to(self.base, (rows,))[:, None] + self.coefs[k] * at)[keep]
        extents = np.repeat(self.extents, count, axis=0)[keep.reshape(-1)]
        extents[:, k] = 1
        shape = self.shape[:k] + (1,) + self.shape[k + 1:]
        coefs = self.coefs[:k] + (0,) + self.coefs[k + 1:]
        return AffineAccess(bases, coefs, shape, extents)

    def _disjoint_tiles(self, active: np.ndarray, widest: np.ndarray) -> bool:
        """True when the rows' boxes are tiles of a row-major 2-D layout (outer
        coefficient above the inner axis' reach, no box wrapping past a line) that
        sit in bands of lines no two bands share, and do not overlap within a band:
        the tiles of a matrix that programs visit in any order, ragged edge tiles
        included. False when that cannot be shown (called when the rows' index
        ranges interleave, so the range test failed)."""
        if len(self.coefs) != 2 or min(self.coefs) <= 0:
            return False
        inner, outer = sorted(range(2), key=lambda k: self.coefs[k])
        c_in, c_out = self.coefs[inner], self.coefs[outer]
        if c_out <= c_in * (int(widest[inner]) - 1):
            return False
        extents = self.extents[active]
        width = c_in * (extents[:, inner] - 1)  # each box's reach along a line
        height = extents[:, outer]  # and its lines
        line, col = np.divmod(self.base[active], c_out)
        if np.any(col + width >= c_out):
            return False  # a box wraps into the next line
        order = np.lexsort((col, line))
        line, col, width, height = line[order], col[order], width[order], height[order]
        same = line[1:] == line[:-1]
        if not np.all(col[1:][same] > (col + width)[:-1][same]):
            return False
        starts, first = np.unique(line, return_index=True)
        lines = np.maximum.reduceat(height, first)  # each band's lines
        return bool(np.all(starts[1:] >= starts[:-1] + lines[:-1]))


# the most rows ``AffineAccess._split_outermost`` makes (the injectivity test then
# gives up: the caller's general path decides)
_SPLIT_ROWS = 1 << 22


def _row_groups(extents: np.ndarray) -> list[tuple[np.ndarray | slice, np.ndarray]]:
    """Rows with the same box extents: (rows, extents) per distinct box."""
    rows = extents.shape[0]
    if rows == 1 or (extents == extents[0]).all():
        return [(slice(0, rows), extents[0])]
    span = extents.max(axis=0).astype(np.int64) + 1
    if float(np.prod(span.astype(np.float64))) < 2.0**62:
        # one int64 key per row, the first axis most significant (so the groups come
        # in the rows' lexicographic order, as from ``np.unique(axis=0)``): a 1-D
        # unique, many times faster than sorting row records
        weights = np.append(np.cumprod(span[::-1])[::-1][1:], 1)
        _, first, inverse = np.unique(extents @ weights, return_index=True,
                                      return_inverse=True)
        kinds = extents[first]
    else:
        kinds, inverse = np.unique(extents, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    # each group's rows in increasing order, from one stable sort (not one scan of
    # every row per group)
    order = np.argsort(inverse, kind="stable")
    ends = np.cumsum(np.bincount(inverse, minlength=kinds.shape[0]))
    return [(order[end - count:end], kinds[g]) for g, (end, count) in
            enumerate(zip(ends, np.diff(ends, prepend=0)))]


def _box(sel: np.ndarray | slice, extents: np.ndarray) -> tuple:
    """The index of a group's valid lanes in a (rows, *block) array."""
    return (sel,) + tuple(slice(0, int(e)) for e in extents)


def affine_access(index: object, mask: object | None) -> AffineAccess | None:
    """The access as an ``AffineAccess`` when its index is affine and its mask a box
    (1-D ``Lanes``/``LaneMask`` accesses keep their own paths); else None."""
    if isinstance(index, Lanes) and (mask is None or isinstance(mask, LaneMask)):
        return None
    affine = Affine.of(index)
    box = None if mask is None else BoxMask.of(mask)
    if affine is None or (mask is not None and box is None):
        return None
    if box is not None and (len(box.shape) != len(affine.shape) or any(
            a != b and 1 not in (a, b) for a, b in zip(affine.shape, box.shape))):
        return None
    shape = affine.shape if box is None else tuple(max(a, b) for a, b in
                                                   zip(affine.shape, box.shape))
    rows = max(affine.rows, box.rows if box is not None else 1)
    extents = box.extents(rows, shape) if box is not None else \
        np.broadcast_to(np.asarray(shape, np.int64), (rows, len(shape)))
    coefs = tuple(c if n == m else 0 for c, n, m in zip(affine.coefs, affine.shape, shape))
    return AffineAccess(np.broadcast_to(affine.base, (rows,)), coefs, shape,
                        np.asarray(extents))


def lane_access(index: Lanes, mask: object | None, rows: int | None = None
                ) -> AffineAccess | None:
    """A 1-D ``Lanes`` access under ``LaneMask`` (or no mask) as an ``AffineAccess``:
    row ``r`` covers ``[base[r], base[r] + count[r])``, its mask's valid lanes being a
    prefix of the block whatever the mask's own base. The bounds check reads each
    row's run from it; loads and stores take it for rows whose bases step unevenly
    (one row per loaded index, ``idx * cols + lanes``), which the contiguous-run path
    does not cover. None for another mask."""
    if mask is not None and not (isinstance(mask, LaneMask) and
                                 mask.lanes.length == index.length):
        return None
    counts = mask.valid_counts() if mask is not None else np.full(1, index.length, np.int64)
    rows = max(index.base.shape[0], counts.shape[0], rows or 1)
    return AffineAccess(np.broadcast_to(index.base, (rows,)), (1,), (index.length,),
                        np.broadcast_to(counts, (rows,)).reshape(rows, 1))


def check_bounds(site: AccessSite, index: object, mask: object | None, pid: np.ndarray) -> None:
    """Raise if an active lane's logical index is outside ``[0, numel)``."""
    access = affine_access(index, mask)
    if access is not None:
        active, low, high = access.span()
        if not (active & ((low < 0) | (high >= site.numel))).any():
            return  # else the exact check below finds the first bad lane
    if isinstance(index, Lanes) and (lanes := lane_access(index, mask)) is not None:
        first, counts = lanes.base, lanes.extents[:, 0]  # each row's run
        last = first + counts - 1
        bad = (counts > 0) & ((first < 0) | (last >= site.numel))
        if not bad.any():
            return
        row = int(np.argmax(bad))
        start = int(first[row])
        lane = 0 if start < 0 or start >= site.numel else site.numel - start  # the first bad
        _raise_oob(site, pid, row, lane, start + lane)
    if isinstance(index, RowRuns) and _runs_within(index, mask, site.numel):
        return
    idx = materialize(index)
    if _within(idx, mask, site.numel):
        return  # else the exact check below finds the first bad lane
    bad = (idx < 0) | (idx >= site.numel)
    if mask is not None:
        bad = bad & materialize(mask)
    if not bad.any():
        return
    full = np.broadcast_to(bad, np.broadcast_shapes(bad.shape, idx.shape))
    pos = np.unravel_index(int(np.argmax(full)), full.shape)
    row = pos[0] if pid.shape[0] > 1 else 0
    lane = int(np.ravel_multi_index(pos[1:], full.shape[1:])) if len(pos) > 1 else 0
    value = int(np.broadcast_to(idx, full.shape)[pos])
    _raise_oob(site, pid, row, lane, value)


def _run_groups(runs: RowRuns, mask: object | None
                ) -> list[tuple[np.ndarray | slice, np.ndarray, np.ndarray]] | None:
    """Per group of rows sharing one valid box: (rows, extents, the starts of the valid
    runs); None when the mask is not a box."""
    box = None if mask is None else BoxMask.of(mask)
    if mask is not None and (box is None or len(box.shape) != len(runs.shape)):
        return None
    rows = max(runs.rows, box.rows if box is not None else 1)
    starts = np.broadcast_to(runs.starts, (rows,) + runs.shape[:-1])
    extents = box.extents(rows, runs.shape) if box is not None else \
        np.broadcast_to(np.asarray(runs.shape, np.int64), (rows, len(runs.shape)))
    out = []
    for sel, extent in _row_groups(np.asarray(extents)):
        if (extent > 0).all():
            out.append((sel, extent, starts[_box(sel, extent[:-1])]))
    return out


def _runs_within(runs: RowRuns, mask: object | None, numel: int) -> bool:
    """True when every valid run of ``runs`` lies in ``[0, numel)`` (False: not proved)."""
    groups = _run_groups(runs, mask)
    if groups is None:
        return False
    for _, extent, starts in groups:
        if int(starts.min()) < 0 or int(starts.max()) + runs.step * (int(extent[-1]) - 1) \
                >= numel:
            return False
    return True


def _load_runs(buffer: np.ndarray, runs: RowRuns, mask: object | None, other: object | None,
               allocate: Allocate = np.empty, boxed: bool = False, late: bool = False
               ) -> np.ndarray | BoxedValues | TakenLines | None:
    """A load through ``RowRuns``: each valid run is one window of a sliding-window view
    of ``buffer``, picked by its start (a row copy, as ``table[ids]`` is). None when the
    mask is not a box. ``late`` (with ``boxed``: nothing writes ``buffer`` in this
    launch): runs that are whole lines of ``buffer`` stay ``TakenLines``, copied by
    the store that reads them."""
    groups = _run_groups(runs, mask)
    if groups is None or buffer.ndim != 1:
        return None
    rows = max(runs.rows, BoxMask.of(mask).rows if mask is not None else 1)
    shape = (rows,) + runs.shape
    if late and boxed and len(groups) == 1 and isinstance(groups[0][0], slice):
        _, extent, starts = groups[0]
        length = int(extent[-1])
        if starts.shape[0] == rows and tuple(extent) != runs.shape and \
                _whole_lines(buffer, starts, length, runs.step) and \
                int(starts.min()) >= 0 and int(starts.max()) + length <= buffer.shape[0]:
            return TakenLines(buffer.reshape(-1, length), starts // length, runs.shape, other)
    picked = []
    for sel, extent, starts in groups:
        length = int(extent[-1])
        positions = buffer.shape[0] - runs.step * (length - 1)
        if positions <= 0 or int(starts.min()) < 0 or int(starts.max()) >= positions:
            return None
        picked.append((sel, extent, _pick_runs(buffer, starts, length, runs.step,
                                               allocate if len(groups) == 1 else np.empty)))
    if len(picked) == 1 and isinstance(picked[0][0], slice) and picked[0][2].shape[0] == rows:
        if tuple(picked[0][1]) == runs.shape:
            return picked[0][2]
        if boxed:
            return BoxedValues(picked[0][2], runs.shape, other)
    out = _around(shape, buffer.dtype, other, [(sel, extent) for sel, extent, _ in picked],
                  allocate)
    for sel, extent, values in picked:
        out[_box(sel, extent)] = values
    return out


def _whole_lines(buffer: np.ndarray, starts: np.ndarray, length: int, step: int) -> bool:
    """True when the runs are whole lines of ``buffer`` read as a (-1, length) matrix."""
    return step == 1 and buffer.shape[0] % length == 0 and not np.any(starts % length)


def _pick_runs(buffer: np.ndarray, starts: np.ndarray, length: int, step: int,
               allocate: Allocate) -> np.ndarray:
    """``starts.shape + (length,)``: the run of ``length`` elements ``step`` apart at
    each start (all checked to lie in ``buffer``). Runs that are whole lines of
    ``buffer`` read as a matrix (an embedding table's rows) are taken from that
    matrix into an ``allocate``d array (a pooled one per chunk: a fresh one costs a
    page fault per 4 KiB, which took as long as the copy); others are picked from
    a sliding-window view."""
    item = buffer.itemsize
    if _whole_lines(buffer, starts, length, step):
        out = allocate(starts.shape + (length,), buffer.dtype)
        np.take(buffer.reshape(-1, length), starts.reshape(-1) // length, axis=0,
                out=out.reshape(-1, length), mode="clip")  # (no clipping: checked)
        return out
    windows = as_strided(
        buffer, shape=(buffer.shape[0] - step * (length - 1), length),
        strides=(item, step * item), writeable=False)
    return windows[starts]


def _within(idx: np.ndarray, mask: object | None, numel: int) -> bool:
    """True when every active lane of the materialised index ``idx`` is in
    ``[0, numel)``, proved from its least and greatest value -- over the whole index
    without a mask, over each row group's valid box under a ``BoxMask`` -- with no
    temporary the size of the index. False only means "not proved"."""
    if mask is None:
        return idx.size == 0 or (int(idx.min()) >= 0 and int(idx.max()) < numel)
    box = BoxMask.of(mask)
    if box is None or len(box.shape) != idx.ndim - 1:
        return False
    rows = max(idx.shape[0], box.rows)
    shape = (rows,) + np.broadcast_shapes(idx.shape[1:], box.shape)
    full = np.broadcast_to(idx, shape)
    for sel, extents in _row_groups(box.extents(rows, shape[1:])):
        if (extents > 0).all():
            part = full[_box(sel, extents)]
            if int(part.min()) < 0 or int(part.max()) >= numel:
                return False
    return True


def check_store_race(site: AccessSite, index: object, mask: object | None, pid: np.ndarray,
                     shape: tuple[int, ...], value: np.ndarray | None = None) -> None:
    """Raise ``DataRaceError`` when two active lanes of one store, in different
    programs or in one program's block, write the same element (a race without
    atomics: the result would depend on the order). Rows of one program (loop
    iterations run in order) may rewrite an element. With the stored ``value`` given,
    lanes that write the same bits to an element do not race (whichever lands last,
    memory ends the same: tiles that overlap, or a grid axis the kernel ignores);
    without it every clash is a race."""
    access = affine_access(index, mask)
    if access is not None and access.extents.shape[0] == shape[0] and access.injective():
        return  # no two lanes of the store address one element (rows shared by all
        # the batch's rows, a broadcast index, are not: every row writes them)
    lanes = lane_access(index, mask, shape[0]) if isinstance(index, Lanes) else None
    if lanes is not None:
        # each row's run, for every row of the batch (an index or a mask shared by
        # every row is stored by every row: each row's run, not one)
        first, counts = lanes.base, lanes.extents[:, 0]
        if first.shape[0] < 2:
            return  # one row: its lanes are distinct
        order = np.argsort(first, kind="stable")
        start, count = first[order], counts[order]
        active = count > 0
        start, count, rows = start[active], count[active], order[active]
        clash = np.nonzero(start[1:] < start[:-1] + count[:-1])[0]
        for k in clash:
            a, b = int(rows[k]), int(rows[k + 1])
            if a < pid.shape[0] and b < pid.shape[0] and np.array_equal(pid[a], pid[b]):
                continue
            if value is not None:
                break  # the values decide: compared element by element below
            _raise_race(site, pid, (a, int(start[k + 1] - first[a])), (b, 0),
                        int(start[k + 1]))
        else:
            return
    idx = np.broadcast_to(materialize(index), shape)
    active = np.ones(shape, bool) if mask is None else np.broadcast_to(materialize(mask), shape)
    flat = idx[active]
    if flat.size < 2:
        return
    # linear in the lanes: count each element's stores (bounds were checked before, so
    # the span is at most the tensor's size); sort only when some element repeats
    low = int(flat.min())
    if int(np.bincount(flat - low).max()) < 2:
        return
    where = np.nonzero(active)
    order = np.argsort(flat, kind="stable")
    same = np.nonzero(flat[order][1:] == flat[order][:-1])[0]
    if same.size == 0:
        return
    rows = where[0]
    lanes = np.ravel_multi_index(where[1:], shape[1:]) if len(shape) > 1 else \
        np.zeros(flat.size, np.int64)
    if value is not None:  # only lanes writing different bits to one element race
        written = np.ascontiguousarray(np.broadcast_to(value, shape)[active])
        bits = written.view(f"u{written.dtype.itemsize}")
        same = same[bits[order[same]] != bits[order[same + 1]]]
    for k in same:
        i, j = int(order[k]), int(order[k + 1])
        ri, rj = int(rows[i]), int(rows[j])
        if ri != rj and pid.shape[0] > max(ri, rj) and np.array_equal(pid[ri], pid[rj]):
            continue  # one program's loop iterations, in order
        _raise_race(site, pid, (ri, int(lanes[i])), (rj, int(lanes[j])), int(flat[i]))


def _raise_race(site: AccessSite, pid: np.ndarray, first: tuple[int, int],
                second: tuple[int, int], index: int) -> None:
    def program(row: int) -> tuple[int, ...]:
        return tuple(int(p) for p in pid[row]) if pid.shape[0] > row else (0, 0, 0)

    raise DataRaceError(
        f"{site.loc}: data race in kernel '{site.kernel}': two lanes store element {index} "
        f"of tensor '{site.tensor}' without an atomic -- program id {program(first[0])} "
        f"lane {first[1]} and program id {program(second[0])} lane {second[1]}, both at "
        f"this line (use dsl.atomic_* to combine, or make the indices distinct; "
        f"DSL_RACE_CHECK=0 turns the check off)\n{site.loc.excerpt()}")


def _contiguous_run(offset: object, mask: object | None, rows: int | None = None
                    ) -> tuple[int, int] | None:
    """If the access is one contiguous flat range, return ``(lo, count)``. ``rows``,
    when given, is the number of rows the access must cover."""
    if not isinstance(offset, Lanes):
        return None
    if rows is not None and offset.base.shape[0] != rows:
        return None
    start = offset.consecutive_start()
    if start is None:
        return None
    rows = offset.base.shape[0]
    total = rows * offset.length
    if mask is None:
        return start, total
    if not isinstance(mask, LaneMask) or mask.bound.shape[0] != 1:
        return None
    if not np.array_equal(mask.lanes.base, offset.base):
        return None
    count = int(np.clip(int(mask.bound[0]) - start, 0, total))
    return start, count


def load(buffer: np.ndarray, offset: object, mask: object | None, other: object | None,
         copy: bool, allocate: Allocate = np.empty, boxed: bool = False, late: bool = False
         ) -> np.ndarray | BoxedValues | TakenLines:
    """Gather ``buffer[offset]`` for active lanes, ``other`` elsewhere. The result may
    have size-1 axes where the offsets do not vary (NumPy broadcasting semantics).
    ``boxed``: the caller only stores the value under the same mask, so a gather whose
    valid lanes form one box over every row may return ``BoxedValues`` (no padding).
    ``late``: nothing writes ``buffer`` in this launch, so a boxed gather of whole
    lines may stay ``TakenLines``, read when it is stored."""
    if mask is not None and isinstance(mask, LaneMask) and mask.all_true():
        mask = None
    if buffer.size == 0 and mask is not None:
        # an empty argument: the bounds checks let only masked-off lanes through (a
        # pointer that a scalar where() chose against, FlagGems' cat), so all are other
        fill = np.asarray(0 if other is None else materialize(other))
        shape = np.broadcast_shapes(np.shape(materialize(offset)), np.shape(materialize(mask)),
                                    fill.shape)
        return np.array(np.broadcast_to(fill, shape), dtype=buffer.dtype)
    if isinstance(offset, RowRuns):
        picked = _load_runs(buffer, offset, mask, other, allocate, boxed, late)
        if picked is not None:
            return picked
    access = affine_access(offset, mask)
    if access is not None:
        strided = _load_affine(buffer, access, other, allocate)
        if strided is not None:
            return strided
    run = _contiguous_run(offset, mask)
    if run is not None:
        lo, count = run
        assert isinstance(offset, Lanes)
        shape = (offset.base.shape[0], offset.length)
        total = shape[0] * shape[1]
        data = buffer[lo:lo + count]
        if count == total:
            out = data.reshape(shape)
            return out.copy() if copy else out
        flat = allocate(shape, buffer.dtype).reshape(-1)
        flat[:count] = data
        fill = 0 if other is None else materialize(other)
        if np.size(fill) == 1:  # the lanes past the run hold ``other``
            flat[count:] = np.reshape(fill, -1)[0] if np.ndim(fill) else fill
        else:
            flat[count:] = np.broadcast_to(fill, shape).reshape(-1)[count:]
        return flat.reshape(shape)
    if isinstance(offset, Lanes) and (lanes := lane_access(offset, mask)) is not None:
        gathered = _load_affine(buffer, lanes, other, allocate)
        if gathered is not None:
            return gathered
    off = materialize(offset)
    if mask is None:
        return buffer[off]  # fancy indexing copies
    box = BoxMask.of(mask)
    if box is not None and len(box.shape) == off.ndim - 1:
        return _gather_boxes(buffer, off, box, other, allocate)
    m = materialize(mask)
    safe = np.where(m, off, 0)
    values = buffer[safe]
    return np.where(m, values, materialize(other) if other is not None else 0).astype(buffer.dtype)


def _gather_boxes(buffer: np.ndarray, offset: np.ndarray, box: BoxMask, other: object | None,
                  allocate: Allocate = np.empty) -> np.ndarray:
    """A gather under a box mask: only each row's valid box is read (no pass over the
    masked-off lanes), the rest is ``other``."""
    rows = max(offset.shape[0], box.rows)
    shape = (rows,) + np.broadcast_shapes(offset.shape[1:], box.shape)
    offset = np.broadcast_to(offset, shape)
    groups = [(sel, extents) for sel, extents in _row_groups(box.extents(rows, shape[1:]))
              if (extents > 0).all()]
    out = _around(shape, buffer.dtype, other, groups, allocate)
    for sel, extents in groups:
        where = _box(sel, extents)
        out[where] = buffer[offset[where]]
    return out


def _around(shape: tuple[int, ...], dtype: np.dtype, other: object | None,
            boxes: list[tuple[np.ndarray | slice, np.ndarray]],
            allocate: Allocate = np.empty) -> np.ndarray:
    """A new (rows, *block) array for a masked load whose valid lanes are ``boxes``
    ((rows, extents) each, written by the caller next): ``other`` (0 when absent)
    outside them. One box over every row (the common case: a block padded past the
    end of each row) fills only the lanes past its extents, not the whole block
    first."""
    if len(boxes) != 1 or not isinstance(boxes[0][0], slice) or \
            boxes[0][0] != slice(0, shape[0]):
        return _filled(shape, dtype, other, allocate)
    out = allocate(shape, dtype)
    fill = 0 if other is None else np.broadcast_to(materialize(other), shape)
    lead: tuple = (slice(None),)
    for axis, extent in enumerate(int(e) for e in boxes[0][1]):
        if extent < shape[axis + 1]:
            where = lead + (slice(extent, None),)
            out[where] = 0 if other is None else fill[where]  # type: ignore[index]
        lead += (slice(0, extent),)
    return out


def _filled(shape: tuple[int, ...], dtype: np.dtype, other: object | None,
            allocate: Allocate = np.empty) -> np.ndarray:
    """A new (rows, *block) array holding a masked load's ``other`` (0 when absent),
    which may differ from lane to lane."""
    if other is None and allocate is np.empty:
        return np.zeros(shape, dtype)  # calloc: no pass of its own over the memory
    out = allocate(shape, dtype)
    out[...] = 0 if other is None else materialize(other)
    return out


def _load_affine(buffer: np.ndarray, access: AffineAccess, other: object | None,
                 allocate: Allocate = np.empty) -> np.ndarray | None:
    """An affine load as strided windows of ``buffer`` (None: the rows' bases do not
    step evenly; the caller gathers instead)."""
    groups = access.groups()
    if groups is None:
        return _gather_windows(buffer, access, other, allocate)
    rows = access.extents.shape[0]
    shape = (rows,) + access.shape
    if len(groups) == 1 and tuple(groups[0][1]) == access.shape:
        _, extents, first, step = groups[0]
        return np.ascontiguousarray(access.window(buffer, rows, extents, first, step))
    out = _around(shape, buffer.dtype, other,
                  [(sel, extents) for sel, extents, _, _ in groups if (extents > 0).all()],
                  allocate)
    for sel, extents, first, step in groups:
        if (extents == 0).any():
            continue
        count = sel.stop - sel.start if isinstance(sel, slice) else sel.shape[0]
        out[_box(sel, extents)] = access.window(buffer, count, extents, first, step)
    return out


def _box_windows(buffer: np.ndarray, access: AffineAccess, writeable: bool
                 ) -> list[tuple[np.ndarray | slice, np.ndarray, np.ndarray, np.ndarray]] | None:
    """Per group of rows with one box (empty boxes left out): (rows, extents, a
    sliding-window view of ``buffer`` whose window ``p`` is the box with its first
    lane at ``p``, the rows' bases). None for a negative coefficient or a base the
    view does not hold, checked for every group before any view is made."""
    if min(access.coefs, default=0) < 0 or buffer.ndim != 1:
        return None
    item = buffer.itemsize
    groups = []
    for sel, extents in _row_groups(access.extents):
        if (extents == 0).any():
            continue
        reach = sum((int(e) - 1) * c for e, c in zip(extents, access.coefs))
        positions = buffer.shape[0] - reach
        bases = access.base[sel]
        if positions <= 0 or bases.min() < 0 or bases.max() >= positions:
            return None
        groups.append((sel, extents, positions, bases))
    return [(sel, extents, as_strided(
        buffer, shape=(positions,) + tuple(int(e) for e in extents),
        strides=(item,) + tuple(c * item for c in access.coefs), writeable=writeable), bases)
        for sel, extents, positions, bases in groups]


def _gather_windows(buffer: np.ndarray, access: AffineAccess, other: object | None,
                    allocate: Allocate = np.empty) -> np.ndarray | None:
    """An affine load whose rows' bases do not step evenly (programs in a grouped or
    data-dependent order): every row's box is one element of a sliding-window view of
    ``buffer`` (window ``p`` is the box whose first lane sits at ``p``), picked by
    fancy indexing on the bases -- a copy of each box, with no index array per lane.
    None (the caller gathers lane by lane) for a negative coefficient or a base the
    view does not hold."""
    groups = _box_windows(buffer, access, writeable=False)
    if groups is None:
        return None
    rows = access.extents.shape[0]
    picked = [(sel, extents, windows[bases]) for sel, extents, windows, bases in groups]
    if len(picked) == 1 and isinstance(picked[0][0], slice) and \
            tuple(picked[0][1]) == access.shape:
        return picked[0][2]
    out = _around((rows,) + access.shape, buffer.dtype, other,
                  [(sel, extents) for sel, extents, _ in picked], allocate)
    for sel, extents, values in picked:
        out[_box(sel, extents)] = values
    return out


def _rows(value: BoxedValues | TakenLines) -> int:
    return value.values.shape[0] if isinstance(value, BoxedValues) else value.lines.shape[0]


@dataclass
class StoreJournal:
    """Writes, queues or logs the stores of one launch; see the module doc."""

    mode: str  # "direct" | "deferred" | "undo"
    _pending: list[tuple[np.ndarray, object, np.ndarray]] = field(default_factory=list)
    _undo: list[tuple[np.ndarray, object, np.ndarray]] = field(default_factory=list)

    def store(self, buffer: np.ndarray, offset: object, value: np.ndarray | BoxedValues,
              mask: object | None, shape: tuple[int, ...]) -> None:
        """Write ``value`` at ``offset`` in the active lanes (``BoxedValues``: a load's
        box, stored under the mask it was loaded with)."""
        if mask is not None and isinstance(mask, LaneMask) and mask.all_true():
            mask = None
        if isinstance(value, TakenLines) and self.mode != "direct":
            value = value.boxed()  # (queued or logged: copied now)
        run = _contiguous_run(offset, mask, rows=shape[0])
        if run is not None:
            lo, count = run
            flat = np.broadcast_to(materialize(value), shape).reshape(-1)[:count]
            self._write(buffer, slice(lo, lo + count), flat)
            return
        if self._store_affine(buffer, offset, value, mask, shape):
            return
        value = materialize(value)
        off = np.broadcast_to(materialize(offset), shape)
        vals = np.broadcast_to(value, shape)
        if mask is not None:
            m = np.broadcast_to(materialize(mask), shape)
            off, vals = off[m], vals[m]
        self._write(buffer, off.reshape(-1), vals.reshape(-1))

    def _store_affine(self, buffer: np.ndarray, offset: object, value: np.ndarray | BoxedValues,
                      mask: object | None, shape: tuple[int, ...]) -> bool:
        """Write an affine store (or 1-D lane rows from any starts, ``lane_access``)
        through strided windows when its lanes provably hit distinct elements (then
        the order of the writes cannot matter), in the journal's mode (a window is
        written, queued or logged whole); False when the general path must do it."""
        access = lane_access(offset, mask, shape[0]) if isinstance(offset, Lanes) else \
            affine_access(offset, mask)
        if access is None or access.shape != shape[1:] or \
                access.extents.shape[0] not in (1, shape[0]) or not access.injective():
            return False
        if access.extents.shape[0] == 1 and shape[0] > 1:
            return False  # every row writes the same elements: not injective across rows
        groups = access.groups()
        if groups is None:
            return self._scatter_windows(buffer, access, value, shape)
        if isinstance(value, (BoxedValues, TakenLines)) and not (
                len(groups) == 1 and tuple(groups[0][1]) == value.extents and
                _rows(value) == shape[0]):
            value = value.materialize()
        values = value if isinstance(value, (BoxedValues, TakenLines)) else \
            np.broadcast_to(value, shape)
        for sel, extents, first, step in groups:
            if (extents == 0).any():
                continue
            count = sel.stop - sel.start if isinstance(sel, slice) else sel.shape[0]
            window = access.window(buffer, count, extents, first, step, writeable=True)
            if isinstance(values, TakenLines):
                if window.flags.c_contiguous:  # one copy, straight into memory
                    np.take(values.matrix, values.lines.reshape(-1), axis=0, mode="clip",
                            out=window.reshape(-1, values.matrix.shape[1]))
                    continue
                values = values.boxed()
            part = values.values[sel] if isinstance(values, BoxedValues) else \
                values[_box(sel, extents)]
            self._write(window, Ellipsis, part)  # in the journal's mode
        return True

    def _scatter_windows(self, buffer: np.ndarray, access: AffineAccess,
                         value: np.ndarray | BoxedValues, shape: tuple[int, ...]) -> bool:
        """An injective affine store whose rows' bases do not step evenly (programs in
        a grouped order): each row's box is one element of a writeable sliding-window
        view of ``buffer``, written by fancy indexing on the bases (the mirror of
        ``_gather_windows``; the windows overlap, but no two rows' boxes share an
        element). False, with nothing written, for a negative coefficient or a base
        the view does not hold."""
        groups = _box_windows(buffer, access, writeable=True)
        if groups is None:
            return False
        values = value.materialize() if isinstance(value, (BoxedValues, TakenLines)) else \
            np.broadcast_to(value, shape)
        for sel, extents, windows, bases in groups:
            self._write(windows, bases, values[_box(sel, extents)])
        return True

    def _write(self, buffer: np.ndarray, where: object, values: np.ndarray) -> None:
        if self.mode == "deferred":
            self._pending.append((buffer, where, values))
            return
        if self.mode == "undo":
            self._undo.append((buffer, where, buffer[where].copy()))
        buffer[where] = values

    def write_elements(self, buffer: np.ndarray, where: np.ndarray, values: np.ndarray
                       ) -> None:
        """Write ``values`` at the flat positions ``where`` of ``buffer`` (checked by the
        caller), in the journal's mode."""
        self._write(buffer, where, values)

    def update(self, buffer: np.ndarray, where: np.ndarray, values: np.ndarray) -> None:
        """Write at once (a read-modify-write), logging the old values in undo mode."""
        if self.mode == "deferred":
            raise AssertionError("read-modify-write ops never run in deferred mode")
        self._write(buffer, where, values)

    def commit(self) -> None:
        """Write the queued stores in program order (deferred mode)."""
        for buffer, where, values in self._pending:
            buffer[where] = values
        self._pending.clear()
        self._undo.clear()

    def rollback(self) -> None:
        """Undo the stores written so far (immediate mode), newest first."""
        for buffer, where, old in reversed(self._undo):
            buffer[where] = old
        self._undo.clear()
        self._pending.clear()
