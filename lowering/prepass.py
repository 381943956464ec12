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


def _index_operands(op: Op) -> list[Value]:
    """The operands that decide where ``op`` touches memory or how often a loop runs
    (the registry's ``index_roles``; every operand for other kinds)."""
    roles = op.defn.index_roles
    if roles is None:
        return list(op.operands)
    return [v for v in (op.operand(role) for role in roles) if v is not None]


def _loop_arguments(fn: Function) -> dict[int, tuple[Op, int]]:
    """(loop op, position) of each block argument of a region."""
    args: dict[int, tuple[Op, int]] = {}
    for op in fn.walk():
        for region in op.regions:
            for i, arg in enumerate(region.args):
                args[arg.uid] = (op, i)
    return args


def _enclosing_loops(block: Block, outer: list[Op], out: dict[int, list[Op]]) -> None:
    for op in block.ops:
        out[id(op)] = outer
        for region in op.regions:
            _enclosing_loops(region, outer + [op], out)


def index_slice(fn: Function) -> set[int] | None:
    """Ids of the ops needed to compute every access's index and mask, or None if
    some index or mask depends on a load."""
    block_args = _loop_arguments(fn)
    loops: dict[int, list[Op]] = {}
    _enclosing_loops(fn.body, [], loops)
    needed: set[int] = set()
    work: list[Value] = []

    def carry_all(op: Op) -> None:
        """A value carried or merged by a region op is needed: carry all of them (the
        terminators of every region), for simplicity."""
        work.extend(op.inits)
        for region in op.regions:
            terminator = region.ops[-1]
            work.extend(terminator.operands)
            needed.add(id(terminator))

    def need_op(op: Op) -> None:
        if id(op) in needed:
            return
        needed.add(id(op))
        work.extend(_index_operands(op))
        if op.defn.conditional_loop:  # how often it runs depends on everything it carries
            carry_all(op)
        for loop in loops[id(op)]:
            need_op(loop)

    for op in fn.walk():
        if op.defn.reads_memory or op.defn.writes_memory:
            need_op(op)

    seen: set[int] = set()
    while work:
        v = work.pop()
        if v.uid in seen:
            continue
        seen.add(v.uid)
        if v.owner is not None:
            op = v.owner
            if op.defn.reads_memory:
                return None  # a data-dependent index: cannot be proved ahead
            if op.regions:  # a loop result: the loop carries all its values
                carry_all(op)
            need_op(op)
        elif v.uid in block_args:
            loop, position = block_args[v.uid]
            need_op(loop)
            if position > 0 or loop.defn.conditional_loop:  # not a for's induction variable
                carry_all(loop)
    return needed
