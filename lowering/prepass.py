"""The index slice of a kernel: the ops that decide where memory is accessed.

A launch must be all-or-nothing: an out-of-bounds access anywhere means no output
is written. Queuing every store until the end costs a full extra pass over the
outputs (and fresh memory for them), so the interpreter first tries to *prove* the
launch in-bounds: it runs only the ops that compute load/store indices and masks,
over every program and iteration, checking bounds, and writes directly in the real
run if the proof succeeds.

``index_slice`` returns the op set of that proof (the backward closure of every
load/store index and mask, plus the loops that enclose accesses and their bounds),
or None when an index or mask depends on loaded data; then the store journal is
used instead. With the interpreter's lazy index blocks the pre-pass costs
O(tiles), not O(elements), for tile-loop kernels.
"""

from __future__ import annotations

from dsl.ir import Block, Function, Op, Value


def _definitions(fn: Function) -> tuple[dict[int, Op], dict[int, tuple[Op, int]]]:
    """Defining op of each result; (for op, arg position) of each loop block argument."""
    producers: dict[int, Op] = {}
    block_args: dict[int, tuple[Op, int]] = {}
    for op in fn.walk():
        for r in op.results:
            producers[r.uid] = op
        if op.kind == "for":
            for i, arg in enumerate(op.regions[0].args):
                block_args[arg.uid] = (op, i)
    return producers, block_args


def _enclosing_loops(block: Block, outer: list[Op], out: dict[int, list[Op]]) -> None:
    for op in block.ops:
        out[id(op)] = outer
        for region in op.regions:
            _enclosing_loops(region, outer + [op], out)


def index_slice(fn: Function) -> set[int] | None:
    """Ids of the ops needed to compute every access's index and mask, or None if
    some index or mask depends on a load."""
    producers, block_args = _definitions(fn)
    loops: dict[int, list[Op]] = {}
    _enclosing_loops(fn.body, [], loops)
    needed: set[int] = set()
    work: list[Value] = []

    def need_op(op: Op) -> None:
        if id(op) in needed:
            return
        needed.add(id(op))
        if op.kind == "for":
            work.extend(op.operands[:3])  # trip counts
        elif op.kind not in ("load", "store"):
            work.extend(op.operands)
        for loop in loops[id(op)]:
            need_op(loop)

    for op in fn.walk():
        if op.kind in ("load", "store"):
            need_op(op)
            work.append(op.operands[1])
            if op.attrs["masked"]:
                work.append(op.operands[4 if op.kind == "store" else 3])

    seen: set[int] = set()
    while work:
        v = work.pop()
        if v.uid in seen:
            continue
        seen.add(v.uid)
        if v.uid in producers:
            op = producers[v.uid]
            if op.kind == "load":
                return None  # a data-dependent index: cannot be proved ahead
            if op.kind == "for":  # a loop result: the loop carries all its values
                yield_op = op.regions[0].ops[-1]
                work.extend(op.operands[3:])
                work.extend(yield_op.operands)
                needed.add(id(yield_op))
            need_op(op)
        elif v.uid in block_args:
            loop, position = block_args[v.uid]
            need_op(loop)
            if position > 0:  # a loop-carried value: carry all of them, for simplicity
                yield_op = loop.regions[0].ops[-1]
                work.extend(loop.operands[3:])
                work.extend(yield_op.operands)
                needed.add(id(yield_op))
    return needed
