"""Layout classes of tensor arguments, and host-side dimension coalescing.

A kernel sees each tensor argument as a *view*: element dtype, logical shape and
element strides over a flat buffer (stride 0 on broadcast dimensions). Kernels index
a view with a logical, row-major linear index; the compiler turns that into a
physical offset. To make that offset cheap, the host first *coalesces* the view
(as PyTorch's TensorIterator does): size-1 dimensions are dropped and neighbouring
dimensions that walk memory as one are merged. The result is summarised in a
``Layout``, which is part of a kernel's specialization key:

- ``contiguous``: one dimension, stride 1. Offset = index.
- ``scalar``: every stride 0 (a broadcast scalar). Offset = 0.
- ``strided``: anything else. Each coalesced dimension's stride is recorded when it
  is 0 or 1 (so the offset expression can drop or simplify that term) and left
  symbolic (``None``, a runtime argument) otherwise. A per-channel weight broadcast
  over a batch coalesces to sizes ``[B, C]`` strides ``(0, 1)``: offset = index % C.

Sizes are always runtime arguments, so one specialization serves every shape with
the same layout pattern.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Layout:
    """Compile-time description of a coalesced tensor view."""

    kind: str  # "contiguous" | "scalar" | "strided"
    strides: tuple[int | None, ...] = ()  # strided only: 0, 1 or None (runtime) per dim
    has_base: bool = False  # strided only: a runtime base offset (negative strides)
    index_bits: int = 32  # 64 when an index or offset may not fit int32

    def __post_init__(self) -> None:
        if self.kind not in ("contiguous", "scalar", "strided"):
            raise ValueError(f"unknown layout kind {self.kind!r}")
        if self.kind != "strided" and (self.strides or self.has_base):
            raise ValueError(f"a {self.kind} layout has no strides or base")
        if self.kind == "strided" and not self.strides:
            raise ValueError("a strided layout needs at least one dimension")
        if self.index_bits not in (32, 64):
            raise ValueError("index_bits must be 32 or 64")

    @property
    def rank(self) -> int:
        return len(self.strides)

    def __str__(self) -> str:
        if self.kind != "strided":
            text = self.kind
        else:
            pattern = ",".join("s" if s is None else str(s) for s in self.strides)
            text = f"strided[{pattern}]" + ("+base" if self.has_base else "")
        return text + ("/i64" if self.index_bits == 64 else "")


@dataclass(frozen=True)
class CoalescedView:
    """The runtime half of a coalesced view: sizes, strides and base offset."""

    layout: Layout
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    base: int  # element offset of logical element 0 from the start of the buffer


def coalesce(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Drop size-1 dimensions and merge neighbours that walk memory as one.

    Dimension ``d`` merges into its inner neighbour ``d+1`` when
    ``stride[d] == stride[d+1] * size[d+1]``, which also merges runs of broadcast
    (stride 0) dimensions.
    """
    sizes: list[int] = []
    out_strides: list[int] = []
    for size, stride in zip(shape, strides):
        if size == 1:
            continue
        if sizes and out_strides[-1] == stride * size:
            sizes[-1] *= size
            out_strides[-1] = stride
        else:
            sizes.append(size)
            out_strides.append(stride)
    return tuple(sizes), tuple(out_strides)


def span(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    """(lowest, highest) element offset a non-empty view touches, relative to element 0."""
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return lo, hi


def classify(shape: tuple[int, ...], strides: tuple[int, ...]) -> CoalescedView:
    """Coalesce a view and choose its layout class.

    ``base`` of the result is the offset of logical element 0 from the lowest address
    the view touches; 64-bit indexing is chosen when the element count or the address
    span does not fit int32.
    """
    numel = prod(shape)
    lo, hi = span(shape, strides)
    index_bits = 64 if max(numel, hi - lo + 1) > INT32_MAX else 32
    sizes, cstrides = coalesce(shape, strides)
    if all(s == 0 for s in cstrides):
        return CoalescedView(Layout("scalar", index_bits=index_bits), (), (), 0)
    if len(sizes) == 1 and cstrides[0] == 1:
        return CoalescedView(Layout("contiguous", index_bits=index_bits), sizes, cstrides, 0)
    base = sum((size - 1) * -stride for size, stride in zip(sizes, cstrides) if stride < 0)
    pattern = tuple(s if s in (0, 1) else None for s in cstrides)
    layout = Layout("strided", pattern, has_base=base != 0, index_bits=index_bits)
    return CoalescedView(layout, sizes, cstrides, base)
