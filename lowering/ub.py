"""Unified Buffer (UB) use: an estimate before compiling, the real use after.

Measurement (after compiling): the high-water mark of the UB ``pointer_cast``s in
the final HIVM (``hivm.hir.pointer_cast(%c<offset>_i64) : memref<...,
#hivm.address_space<ub>>``: offset plus buffer size), and the capacity from the
module's ``UB_SIZE`` device-spec entry (bits).

Estimate (before the kernel is sent to the backend), two parts:

- ``Calibration``: bishengir's buffer planning is not derivable from the IR (a
  liveness count of live tile buffers, double-buffered at loads and stores, was off
  by up to 2x against the measured use), but for a given specialization the use is
  linear in BLOCK (56.31 B/element at 1024 and 56.22 at 2048 for BCE backward in
  fp32). So the estimate compiles the same specialization at two small blocks
  (which cannot overflow), fits ``fixed + per_element * BLOCK`` and extrapolates.
  ``lowering.blocking`` uses it to pick the largest block that fits and to refuse a
  block that would not.
- ``static_estimate``: the liveness count above, which names the buffers live at
  the peak for the overflow error message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from math import prod
from typing import Any

from dsl.errors import DSLError
from dsl.ir import Block, Function, Op, Value, walk_block
from dsl.opdefs import OPS

_ELEMENT_BITS = {"f32": 32, "f16": 16, "bf16": 16, "f64": 64, "i1": 8, "i8": 8, "i16": 16,
                 "i32": 32, "i64": 64}
_POINTER_CAST = re.compile(r"hivm\.hir\.pointer_cast\(([^)]*)\)\s*:\s*memref<([^>]*?),\s*"
                           r"#hivm\.address_space<(\w+)>>")
_UB_SIZE = re.compile(r'"UB_SIZE",\s*(\d+)')
# The on-chip memories bishengir plans (address space -> the device spec's size entry
# and the name Ascend's documentation uses): the vector unit's Unified Buffer, and the
# Cube unit's L1 and L0 buffers, which dot kernels use instead of UB.
MEMORIES = {"ub": ("UB_SIZE", "UB"), "cbuf": ("L1_SIZE", "L1"), "ca": ("L0A_SIZE", "L0A"),
            "cb": ("L0B_SIZE", "L0B"), "cc": ("L0C_SIZE", "L0C")}


@dataclass(frozen=True)
class UBBuffer:
    what: str
    bytes: int


@dataclass(frozen=True)
class UBEstimate:
    """Estimated peak UB bytes and the buffers live at the peak."""

    bytes: int
    buffers: tuple[UBBuffer, ...]

    def describe(self) -> str:
        return ", ".join(f"{b.what} {b.bytes} B" for b in self.buffers)


@dataclass(frozen=True)
class Calibration:
    """UB bytes of one specialization as a function of its block size."""

    fixed: float
    per_element: float
    probes: tuple[tuple[int, int], ...]  # (block, measured bytes)

    def bytes_at(self, block: int) -> int:
        return int(round(self.fixed + self.per_element * block))

    @staticmethod
    def fit(probes: list[tuple[int, int]]) -> Calibration:
        (b1, m1), (b2, m2) = probes[0], probes[-1]
        slope = (m2 - m1) / (b2 - b1)
        return Calibration(m1 - slope * b1, slope, tuple(probes))


class UBOverflowError(DSLError):
    """A specialization's estimated UB need exceeds the target's UB; it was not sent
    to the backend."""

    def __init__(self, kernel: str, target: object, needed: int, block: int | None,
                 live: UBEstimate, measured: bool = False, loc: Any = None,
                 memory: str = "UB", capacity: int | None = None) -> None:
        self.needed = needed
        self.live = live
        self.measured = measured
        self.loc = loc
        self.memory = memory
        if capacity is None:
            capacity = getattr(target, "ub_bytes", None)
        at = f" at BLOCK={block}" if block else ""
        how = "bishengir-compile found that it needs" if measured else "needs about"
        where = f"\n{loc}: in your kernel:\n{loc.excerpt()}" if loc is not None else ""
        what = "Unified Buffer" if memory == "UB" else f"the Cube unit's {memory} buffer"
        # bishengir reports only the total: the buffers named with a measured figure
        # are this project's liveness model's, which the toolchain may plan otherwise
        whose = "this project's liveness model puts these tile buffers at the peak" \
            if measured else "the tile buffers live at the peak are"
        buffers = f"; {whose}: {live.describe()}" if memory == "UB" else ""
        super().__init__(
            f"kernel '{kernel}'{at} {how} {needed} bytes of {what} but "
            f"{getattr(target, 'name', target)} has {capacity}{buffers}. Use a smaller "
            f"block size.{where}")


def _bytes(v: Value) -> int:
    shape = v.type.shape
    return prod(shape) * max(v.type.dtype.itemsize, 1) if shape else 0


def _describe(v: Value, kind: str) -> str:
    return f"{kind} {v.type}"


# How each op kind occupies UB (the UB model's handler table; tests/test_registry.py
# fails when a registered kind is missing). A rule returns (buffers the op's results
# keep live from here on, buffers live at this op only).
Rule = Callable[[Op], tuple[list[tuple[Value, UBBuffer]], list[UBBuffer]]]


def _tile(op: Op) -> tuple[list[tuple[Value, UBBuffer]], list[UBBuffer]]:
    """Each block result is one tile buffer."""
    return [(r, UBBuffer(_describe(r, op.kind), _bytes(r))) for r in op.results
            if _bytes(r)], []


def _free(op: Op) -> tuple[list[tuple[Value, UBBuffer]], list[UBBuffer]]:
    """Constants (splatted on use) and control ops take no buffer of their own."""
    return [], []


def _broadcast(op: Op) -> tuple[list[tuple[Value, UBBuffer]], list[UBBuffer]]:
    """A broadcast scalar is a splat (free); a broadcast block is a new tile."""
    return _free(op) if not op.source.shape else _tile(op)


def _load(op: Op) -> tuple[list[tuple[Value, UBBuffer]], list[UBBuffer]]:
    """A loaded tile is double-buffered."""
    r = op.result
    return ([(r, UBBuffer(_describe(r, op.kind), 2 * _bytes(r)))] if _bytes(r) else []), []


def _store(op: Op) -> tuple[list[tuple[Value, UBBuffer]], list[UBBuffer]]:
    """The stored value's staging copy, live at the store only."""
    return [], [UBBuffer(_describe(op.value, "store staging"), _bytes(op.value))]


UB_RULES: dict[str, Rule] = {
    **{kind: _tile for kind, d in OPS.items() if d.is_elementwise},
    "const": _free,
    "arange": _tile,
    "program_id": _tile,
    "num_programs": _tile,
    "cast": _tile,
    "bitcast": _tile,
    "broadcast": _broadcast,
    "expand_dims": _tile,
    "reduce": _tile,
    "dot": _tile,
    "arg_reduce": _tile,
    "scan": _tile,
    "randint": _tile,
    "randint4x": _tile,
    "rand": _tile,
    "randn": _tile,
    "reshape": _tile,
    "permute": _tile,
    "cat": _tile,
    "join": _tile,
    "split": _tile,
    "flip": _tile,
    "extract_slice": _tile,
    "insert_slice": _tile,
    "gather": _tile,
    "histogram": _tile,
    "inline_asm": _tile,
    "sort": _tile,
    "load": _load,
    "store": _store,
    "load_address": _load,
    "store_address": _store,
    "atomic_address": _load,
    "tensor_address": _free,
    "atomic_cas_address": _load,
    "atomic": _load,
    "atomic_cas": _load,
    "for": _tile,
    "if": _tile,
    "reduce_fn": _tile,
    "scan_fn": _tile,
    "hint": _tile,
    "print": _free,
    "device_assert": _free,
    "while": _tile,
    "yield": _free,
}


def static_estimate(fn: Function) -> UBEstimate:
    """Peak bytes of simultaneously live block values, load/store buffers doubled."""
    best: tuple[int, tuple[UBBuffer, ...]] = (0, ())

    def scan(block: Block, outer_live: dict[int, UBBuffer]) -> None:
        nonlocal best
        last_use: dict[int, int] = {}
        for i, op in enumerate(block.ops):
            used = [v.uid for v in op.operands]
            for region in op.regions:
                for nested in walk_block(region):
                    used.extend(v.uid for v in nested.operands)
            for uid in used:
                last_use[uid] = i
        live = dict(outer_live)
        for i, op in enumerate(block.ops):
            for region in op.regions:
                scan(region, live)
            kept, transient = UB_RULES[op.kind](op)
            for value, buffer in kept:
                live[value.uid] = buffer
            buffers = list(live.values()) + transient
            total = sum(b.bytes for b in buffers)
            if total > best[0]:
                best = (total, tuple(buffers))
            for uid in [u for u in live if u in last_use and last_use[u] <= i]:
                del live[uid]

    scan(fn.body, {})
    return UBEstimate(best[0], best[1])


_REPORTED_OVERFLOW = re.compile(r"\b(\w+) overflow, requires (\d+) bits while (\d+) bits "
                                r"available")


def reported_overflow(text: str) -> tuple[str, int, int] | None:
    """(memory, bytes needed, bytes available) when bishengir-compile refused a kernel
    for overflowing an on-chip memory (UB, or the Cube unit's L1/L0 buffers)."""
    match = _REPORTED_OVERFLOW.search(text)
    if not match:
        return None
    space = match.group(1).lower()
    name = MEMORIES.get(space, (None, space.upper()))[1]
    return name, int(match.group(2)) // 8, int(match.group(3)) // 8


def measured_bytes(hivm: str, space: str = "ub") -> int:
    """High-water mark of the buffers planned in one on-chip memory of a HIVM module
    (``space``: an address space of ``MEMORIES``; UB by default)."""
    high = 0
    for operands, memref, where in _POINTER_CAST.findall(hivm):
        if where != space:
            continue
        offsets = [int(m) for m in re.findall(r"%c(\d+)_i64", operands)]
        *dims, element = memref.split("x")
        if any(not d.isdigit() for d in dims) or element not in _ELEMENT_BITS:
            continue
        size = prod(int(d) for d in dims) * _ELEMENT_BITS[element] // 8
        for offset in offsets:
            high = max(high, offset + size)
    return high


def memory_use(hivm: str) -> dict[str, tuple[int, int | None]]:
    """(high-water mark, capacity) in bytes of every on-chip memory the module uses."""
    use = {}
    for space, (entry, name) in MEMORIES.items():
        used = measured_bytes(hivm, space)
        if used or space == "ub":
            match = re.search(rf'"{entry}",\s*(\d+)', hivm)
            use[name] = (used, int(match.group(1)) // 8 if match else None)
    return use


def capacity_bytes(hivm: str) -> int | None:
    """UB capacity from the module's device spec (UB_SIZE is in bits)."""
    match = _UB_SIZE.search(hivm)
    return int(match.group(1)) // 8 if match else None
