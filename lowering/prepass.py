"""The index slice of a kernel: the ops that decide where memory is accessed.

A launch must be all-or-nothing: an out-of-bounds access anywhere means no output
is written. Queuing every store until the end costs a full extra pass over the
outputs (and fresh memory for them), so the interpreter first tries to *prove* the
launch in-bounds: it runs only the ops that compute load/store indices and masks,
over every program and iteration, checking bounds, and writes directly in the real
run if the proof succeeds.

``index_slice`` returns the op set of that proof (the backward closure of every
load/store index and mask, plus the loops that enclose accesses and their bounds),
or None when an index or mask depends on loaded data; then ``gather_slice`` may
still give one that loads the index data itself (loads only, of tensors the kernel
does not write), and otherwise the store journal is used instead. With the
interpreter's lazy index blocks the pre-pass costs O(tiles), not O(elements), for
tile-loop kernels.
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
    found = _slice(fn, gathers=False)
    return None if found is None else found[0]


def gather_slice(fn: Function) -> tuple[set[int], frozenset[int]] | None:
    """For a kernel whose ``index_slice`` is None because a *load*'s index depends on
    loaded data (an embedding lookup, a gather through an index tensor): the index
    slice including those data loads, and the ids of the data loads. None when a
    store's or an atomic's index or mask depends on data, when a data load reads a
    tensor the kernel writes, or when the indices need values a loop carries (which
    would pull the loop's whole computation, a matmul's dots say, into the pre-pass).

    A pre-pass over this slice loads the index data for real, so its proof holds for
    one launch only, and only while no tensor it reads shares memory with one the
    launch writes (the interpreter checks both)."""
    writes_only = _slice(fn, gathers=False, roots="writes")
    if writes_only is None:
        return None
    return _slice(fn, gathers=True)


def _slice(fn: Function, gathers: bool, roots: str = "all"
           ) -> tuple[set[int], frozenset[int]] | None:
    if fn.host_addresses():
        return None  # (accesses at integer addresses are checked as they run)
    block_args = _loop_arguments(fn)
    written = fn.tensors_written()
    data_loads: set[int] = set()
    loops: dict[int, list[Op]] = {}
    _enclosing_loops(fn.body, [], loops)
    needed: set[int] = set()
    work: list[Value] = []

    def carry_all(op: Op) -> bool:
        """A value carried or merged by a region op is needed: carry all of them (the
        terminators of every region), for simplicity. False when gathering: refused."""
        if gathers:
            return False
        work.extend(op.inits)
        for region in op.regions:
            terminator = region.ops[-1]
            work.extend(terminator.operands)
            needed.add(id(terminator))
        return True

    def need_op(op: Op) -> bool:
        if id(op) in needed:
            return True
        needed.add(id(op))
        work.extend(_index_operands(op))
        if op.defn.conditional_loop and not carry_all(op):
            return False  # how often it runs depends on everything it carries
        return all(need_op(loop) for loop in loops[id(op)])

    for op in fn.walk():
        root = op.defn.writes_memory or (op.defn.reads_memory and roots == "all")
        if root and not need_op(op):
            return None

    seen: set[int] = set()
    while work:
        v = work.pop()
        if v.uid in seen:
            continue
        seen.add(v.uid)
        if v.owner is not None:
            op = v.owner
            if op.defn.reads_memory:  # a data-dependent index
                # (plain loads only: an atomic also writes)
                if not gathers or op.defn.writes_memory or op.tensor in written:
                    return None  # cannot be proved ahead
                data_loads.add(id(op))
                if op.other is not None:  # masked-off lanes hold it
                    work.append(op.other)
            if op.regions and not carry_all(op):  # a loop result: it carries all its values
                return None
            if not need_op(op):
                return None
        elif v.uid in block_args:
            loop, position = block_args[v.uid]
            if not need_op(loop):
                return None
            # not a for's induction variable
            if (position > 0 or loop.defn.conditional_loop) and not carry_all(loop):
                return None
    return needed, frozenset(data_loads)
