"""Passes over the typed IR, run on every specialization before either backend.

Each pass is a named rewrite of a freshly built ``Function`` (in place) that keeps
its meaning; ``optimize`` runs them in order and, with ``dump_ir`` (the options
record, ``DSL_DUMP_IR=1``), prints the IR after each one. Both backends consume the
result, so the interpreter checks exactly what is lowered. Passes read op kinds
only through the registry (``dsl.opdefs``: effects, identities, elementwise
meaning) and through their own handler tables below, and keep def-use exact
through the IR's use lists.

1. ``fold_constants``: an elementwise op, cast or broadcast whose operands are all
   constants becomes a constant (evaluated with the op table, ``dsl.opdefs``);
   integer ``x + 0``, ``x * 1``, ``x // 1`` become ``x`` (the records' identities).
2. ``simplify_indices``: integer expressions that feed load/store offsets and
   masks are rewritten with sympy (expanded, range facts applied, common factors
   pulled out with ``factor_terms``): leaves are integer symbols with the facts the IR
   knows (``arange(s, e)`` lies in ``[s, e)``, program ids, sizes and bases are
   non-negative, sizes positive). ``x % m`` and ``x // m`` disappear where
   ``0 <= x < m`` is provable, comparisons that are provably true become constant
   true (and masks that are always true are dropped from loads and stores). The
   result is printed back with ``//`` and ``%`` only where both sides are provably
   non-negative, and only when it has fewer ops than the original.
3. ``eliminate_common_subexpressions``: identical pure ops (same kind, operands,
   attributes, type) are computed once.
4. ``eliminate_dead_code``: pure ops and loads whose results are unused are removed.
5. ``prune_hidden_params``: layout parameters (sizes, strides, bases) that no op
   reads any more are dropped from the signature, so the launcher does not pass
   them and generated code does not declare them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import sympy

# sympy's Add imports these on its first use in a process (~30 ms, measured on the
# first launch of a kernel): load them with sympy, so a first launch costs its own work
import sympy.calculus.accumulationbounds  # noqa: E402, F401
import sympy.matrices.expressions  # noqa: E402, F401
import sympy.tensor.tensor  # noqa: E402, F401

from dsl import dtypes as dt
from dsl.ir import Block, Function, IRVerificationError, Op, Type, Value, format_function, verify, walk_block
from dsl.numerics import cast_array

# ----------------------------------------------------------------------------- helpers


def _const_value(v: Value) -> object | None:
    return v.owner.constant if v.owner is not None else None


def _make_const(template: Op, value: object, type_: Type) -> Op:
    return Op.create("const", [], [type_], {"value": value}, template.loc)


def _python_value(array: np.ndarray, dtype: dt.DType) -> object:
    scalar = array.reshape(-1)[0]
    if dtype.is_bool:
        return bool(scalar)
    if dtype.is_int:
        return int(scalar)
    return float(scalar)


# ----------------------------------------------------------------------------- 1. folding


def fold_constants(fn: Function) -> None:
    """Fold operations over constants; drop integer identities."""

    def visit(block: Block) -> None:
        for i, op in enumerate(block.ops):
            for region in op.regions:
                visit(region)
            folder = _FOLDERS.get(op.kind)
            folded = folder(op) if folder is not None else None
            if folded is None:
                continue
            if isinstance(folded, Value):  # an identity: the op dies in dead-code removal
                op.result.replace_all_uses_with(folded)
                continue
            block.ops[i] = folded
            op.result.replace_all_uses_with(folded.result)
            op.erase()

    visit(fn.body)


def _fold_elementwise(op: Op) -> Op | Value | None:
    ew = op.defn.elementwise
    assert ew is not None
    values = [_const_value(v) for v in op.operands]
    dtype = op.result.dtype
    if ew.absorbing is not None and dtype.is_int and not dtype.is_bool and \
            ew.absorbing in values:
        # ``r * 0``: Triton kernels broadcast a block of pointers so (``x_ptr + r * 0 +
        # c``), and the code generator sees the broadcast only once it is one
        return _make_const(op, ew.absorbing, op.result.type)
    if ew.neutral is not None and dtype.is_int and not dtype.is_bool:
        a, b = op.lhs, op.rhs
        if values[1] == ew.neutral and a.type == op.result.type:
            return a
        if ew.neutral_left and values[0] == ew.neutral and b.type == op.result.type:
            return b
    if any(v is None for v in values):
        return None
    arrays = [np.asarray([v], dtype=o.dtype.np) for v, o in zip(values, op.operands)]
    result = ew.evaluate(*arrays, dtype=op.compute_dtype)
    return _make_const(op, _python_value(result, dtype), op.result.type)


def _fold_cast(op: Op) -> Op | None:
    value = _const_value(op.source)
    if value is None:
        return None
    dtype = op.result.dtype
    result = cast_array(np.asarray([value], dtype=op.source.dtype.np), dtype)
    return _make_const(op, _python_value(result, dtype), op.result.type)


def _fold_broadcast(op: Op) -> Op | None:
    value = _const_value(op.source)
    return None if value is None else _make_const(op, value, op.result.type)


def _elementwise_kinds() -> list[str]:
    from dsl.opdefs import OPS

    return [name for name, d in OPS.items() if d.is_elementwise]


# Which kinds fold, and how (a pass's handler table).
_FOLDERS: dict[str, Callable[[Op], Op | Value | None]] = {
    "cast": _fold_cast, "broadcast": _fold_broadcast,
    **{kind: _fold_elementwise for kind in _elementwise_kinds()},
}


# ----------------------------------------------------------------------------- 2. indices


def _arange_range(op: Op) -> tuple[int | None, int | None]:
    return op.attrs["start"], op.attrs["end"] - 1


# Integer ranges of leaf ops (a pass's handler table); other leaves are unbounded.
_LEAF_RANGES: dict[str, Callable[[Op], tuple[int | None, int | None]]] = {
    "arange": _arange_range,
    "program_id": lambda op: (0, None),
    "num_programs": lambda op: (1, None),
}
_PARAM_RANGES = {"size": (1, None), "base": (0, None), "dim": (0, None)}


class _Ranges:
    """Sympy symbols for IR leaves, with the integer ranges the IR proves."""

    def __init__(self, fn: Function) -> None:
        self.symbols: dict[int, sympy.Symbol] = {}
        self.bounds: dict[sympy.Symbol, tuple[int | None, int | None]] = {}
        self.leaves: dict[sympy.Symbol, Value] = {}
        self.roles = {p.value.uid: p.role for p in fn.params}

    def symbol(self, v: Value) -> sympy.Symbol:
        if v.uid in self.symbols:
            return self.symbols[v.uid]
        leaf = _LEAF_RANGES.get(v.owner.kind) if v.owner is not None else None
        lo, hi = leaf(v.owner) if leaf is not None and v.owner is not None else \
            _PARAM_RANGES.get(self.roles.get(v.uid, ""), (None, None))
        kwargs = {"integer": True}
        if lo is not None and lo >= 0:
            kwargs["nonnegative"] = True
        if lo is not None and lo >= 1:
            kwargs["positive"] = True
        sym = sympy.Symbol(f"s{len(self.symbols)}", **kwargs)
        self.symbols[v.uid] = sym
        self.bounds[sym] = (lo, hi)
        self.leaves[sym] = v
        return sym

    def interval(self, expr: sympy.Expr) -> tuple[sympy.Expr | None, sympy.Expr | None]:
        """Constant lower/upper bounds of ``expr`` where they follow from the leaves."""
        if expr.is_Integer:
            return expr, expr
        if expr.is_Symbol:
            lo, hi = self.bounds.get(expr, (None, None))
            return (sympy.Integer(lo) if lo is not None else None,
                    sympy.Integer(hi) if hi is not None else None)
        if expr.is_Add:
            parts = [self.interval(a) for a in expr.args]
            lo = sum((p[0] for p in parts), sympy.Integer(0)) if all(p[0] is not None
                                                                    for p in parts) else None
            hi = sum((p[1] for p in parts), sympy.Integer(0)) if all(p[1] is not None
                                                                    for p in parts) else None
            return lo, hi
        if expr.is_Mul and len(expr.args) == 2 and expr.args[0].is_Integer:
            k = expr.args[0]
            lo, hi = self.interval(expr.args[1])
            if k >= 0:
                return (k * lo if lo is not None else None, k * hi if hi is not None else None)
            return (k * hi if hi is not None else None, k * lo if lo is not None else None)
        return (sympy.Integer(0) if expr.is_nonnegative else None), None


def _floor_of(a: sympy.Expr, b: sympy.Expr, ranges: _Ranges) -> sympy.Expr | None:
    if _provably_nonnegative(a, ranges) and _provably_positive(b, ranges):
        return sympy.floor(a / b)
    return None  # C division of possibly negative operands: not sympy's floor


def _mod_of(a: sympy.Expr, b: sympy.Expr, ranges: _Ranges) -> sympy.Expr | None:
    if _provably_nonnegative(a, ranges) and _provably_positive(b, ranges):
        return sympy.Mod(a, b)
    return None


# Integer ops sympy can reason about (a pass's handler table): operand expressions
# -> the op's expression, or None when it must stay a leaf.
_ARITHMETIC: dict[str, Callable[[sympy.Expr, sympy.Expr, _Ranges], sympy.Expr | None]] = {
    "add": lambda a, b, r: a + b,
    "sub": lambda a, b, r: a - b,
    "mul": lambda a, b, r: a * b,
    "floordiv": _floor_of,
    "mod": _mod_of,
}


def _is_arithmetic(v: Value) -> bool:
    owner = v.owner
    return owner is not None and owner.kind in _ARITHMETIC and v.dtype.is_int \
        and not v.dtype.is_bool


# Ops that carry an integer expression through unchanged (a pass's handler table):
# the operand standing for the op's value, or None.
_PASS_THROUGH: dict[str, Callable[[Op], Value | None]] = {
    "broadcast": lambda op: op.source if op.source.dtype == op.result.dtype else None,
}


def _pass_through(v: Value) -> Value | None:
    owner = v.owner
    rule = _PASS_THROUGH.get(owner.kind) if owner is not None else None
    return rule(owner) if rule is not None and owner is not None else None


def _to_sympy(v: Value, ranges: _Ranges) -> sympy.Expr:
    value = _const_value(v)
    if value is not None and isinstance(value, int) and not isinstance(value, bool):
        return sympy.Integer(value)
    source = _pass_through(v)
    if source is not None:
        return _to_sympy(source, ranges)
    owner = v.owner
    if owner is not None and _is_arithmetic(v):
        lhs, rhs = _to_sympy(owner.lhs, ranges), _to_sympy(owner.rhs, ranges)
        expr = _ARITHMETIC[owner.kind](lhs, rhs, ranges)
        if expr is not None:
            return expr
    return ranges.symbol(v)


def _leaves(v: Value, ranges: _Ranges) -> dict[int, bool]:
    """The values ``_to_sympy(v)`` may make symbols of, by uid, each with whether the
    IR bounds it (an ``arange``, a program id, a size or base of a tensor); through
    ``//`` and ``%`` to their operands' leaves."""
    found: dict[int, bool] = {}
    stack = [v]
    while stack:
        v = stack.pop()
        if _const_value(v) is not None:
            continue
        source = _pass_through(v)
        if source is not None:
            stack.append(source)
        elif _is_arithmetic(v):
            stack += (v.owner.lhs, v.owner.rhs)  # type: ignore[union-attr]
        else:
            owner = v.owner
            found[v.uid] = (owner is not None and owner.kind in _LEAF_RANGES) or \
                ranges.roles.get(v.uid, "") in _PARAM_RANGES
    return found


def _provably_nonnegative(e: sympy.Expr, ranges: _Ranges) -> bool:
    lo, _ = ranges.interval(e)
    return bool(e.is_nonnegative) or (lo is not None and lo >= 0)


def _provably_positive(e: sympy.Expr, ranges: _Ranges) -> bool:
    lo, _ = ranges.interval(e)
    return bool(e.is_positive) or (lo is not None and lo >= 1)


def _range_rewrite(expr: sympy.Expr, ranges: _Ranges) -> sympy.Expr:
    """Drop ``% m`` and ``// m`` where ``0 <= x < m`` is provable."""

    def mod_rule(e: sympy.Expr) -> sympy.Expr:
        x, m = e.args
        lo, hi = ranges.interval(x)
        if lo is not None and lo >= 0 and hi is not None and m.is_Integer and hi < m:
            return x
        return e

    def floor_rule(e: sympy.Expr) -> sympy.Expr:
        frac = e.args[0]
        num, den = frac.as_numer_denom()
        lo, hi = ranges.interval(num)
        if den.is_Integer and lo is not None and lo >= 0 and hi is not None and hi < den:
            return sympy.Integer(0)
        return e

    expr = expr.replace(lambda e: isinstance(e, sympy.Mod), mod_rule)
    return expr.replace(lambda e: isinstance(e, sympy.floor), floor_rule)


def _count_ops(v: Value, seen: set[int]) -> int:
    if v.uid in seen or v.owner is None or not (_is_arithmetic(v) or _pass_through(v) is not None):
        return 0
    seen.add(v.uid)
    return 1 + sum(_count_ops(o, seen) for o in v.owner.operands)


class _Printer:
    """Emits IR for a sympy expression, to be placed before ``anchor``."""

    def __init__(self, anchor: Op, ranges: _Ranges, type_: Type) -> None:
        self.anchor, self.ranges, self.type = anchor, ranges, type_
        self.new_ops: list[Op] = []

    def emit(self, kind: str, operands: list[Value], attrs: dict | None = None,
             type_: Type | None = None) -> Value:
        op = Op.create(kind, operands, [type_ or self.type], attrs, self.anchor.loc)
        self.new_ops.append(op)
        return op.result

    def discard(self) -> None:
        """Forget the emitted ops (they were not used): leave the use lists exact."""
        for op in self.new_ops:
            op.erase()
        self.new_ops.clear()

    def leaf(self, v: Value) -> Value:
        if v.type == self.type:
            return v
        if v.type.dtype == self.type.dtype and not v.shape:
            return self.emit("broadcast", [v])
        if not v.shape:
            cast = self.emit("cast", [v], {"dtype": self.type.dtype}, Type(self.type.dtype))
            return self.emit("broadcast", [cast]) if self.type.shape else cast
        raise ValueError("cannot reuse a leaf of another shape")

    def print(self, e: sympy.Expr) -> Value:
        if e.is_Integer:
            return self.emit("const", [], {"value": int(e)})
        if e.is_Symbol:
            return self.leaf(self.ranges.leaves[e])
        if e.is_Add or e.is_Mul:
            terms = [self.print(a) for a in e.args]
            out = terms[0]
            for t in terms[1:]:
                out = self.emit("add" if e.is_Add else "mul", [out, t])
            return out
        if isinstance(e, sympy.Mod):
            return self.emit("mod", [self.print(e.args[0]), self.print(e.args[1])])
        if isinstance(e, sympy.floor):
            num, den = e.args[0].as_numer_denom()
            return self.emit("floordiv", [self.print(num), self.print(den)])
        raise ValueError(f"cannot print {e}")


def simplify_indices(fn: Function) -> None:
    """Rewrite load/store offsets and masks with range-aware sympy simplification."""
    ranges = _Ranges(fn)

    def visit(block: Block) -> None:
        i = 0
        while i < len(block.ops):
            op = block.ops[i]
            for region in op.regions:
                visit(region)
            if op.defn.index_roles is not None and "offset" in op.defn.signature.roles:
                # (a pointer's offsets are the kernel author's own expression, kept as
                # written: Triton compiles them so, and sympy would only cost time)
                pointer = op.attrs.get("pointer") or op.defn.host_address
                for role in ("index", "offset") if not pointer else ():
                    i += _simplify_operand(block, op, role, ranges)
                _drop_true_mask(op, ranges)
            i += 1

    visit(fn.body)


def _simplify_operand(block: Block, op: Op, role: str, ranges: _Ranges) -> int:
    """Rewrite ``op``'s ``role`` operand if sympy finds a smaller equal expression;
    return the number of ops inserted before ``op``."""
    offset = op.operand(role)
    if offset is None or not _is_arithmetic(offset):
        return 0
    printer = _Printer(op, ranges, offset.type)
    try:
        expr = _to_sympy(offset, ranges)
        simpler = _range_rewrite(sympy.expand(expr), ranges)
        # factor_terms, not sympy.simplify: on all 10,285 offsets and indices of the
        # test suite (session 16) both gave the same expression, while simplify took
        # ~8 ms a call against ~0.6 ms and imports sympy.physics.units on its first
        # call in a process (80-160 ms of a first launch)
        simpler = _range_rewrite(sympy.factor_terms(simpler), ranges)
        if simpler.has(sympy.Mod, sympy.floor) and any(
                not _provably_nonnegative(a, ranges) for f in simpler.atoms(sympy.Mod)
                for a in f.args):
            return 0
        new_offset = printer.print(simpler)
    except (ValueError, TypeError, RecursionError):
        printer.discard()
        return 0
    if len(printer.new_ops) >= _count_ops(offset, set()):
        printer.discard()
        return 0
    at = block.ops.index(op)
    block.ops[at:at] = printer.new_ops
    op.set_operand(role, new_offset)
    return len(printer.new_ops)


def _drop_true_mask(op: Op, ranges: _Ranges) -> None:
    """A mask that is provably all true is removed (with ``other``, for loads)."""
    mask = op.mask
    if mask is not None and _provably_true(mask, ranges):
        op.drop_optional()


# Comparisons whose truth follows from the interval [lo, hi] of ``rhs - lhs``
# (a pass's handler table).
_TRUE_WHEN: dict[str, Callable[[sympy.Expr | None, sympy.Expr | None], bool]] = {
    "lt": lambda lo, hi: lo is not None and lo >= 1,
    "le": lambda lo, hi: lo is not None and lo >= 0,
    "gt": lambda lo, hi: hi is not None and hi <= -1,
    "ge": lambda lo, hi: hi is not None and hi <= 0,
}


def _provably_true(mask: Value, ranges: _Ranges) -> bool:
    value = _const_value(mask)
    if value is not None:
        return bool(value)
    owner = mask.owner
    if owner is None or owner.kind not in _TRUE_WHEN:
        return False
    a, b = owner.lhs, owner.rhs
    if not a.dtype.is_int or a.dtype.is_bool:
        return False
    # An unbounded leaf (a scalar argument, a loop counter, loaded data) on one side
    # only leaves the difference unbounded: no sympy needed to say so (most masks of
    # Triton kernels, ``offs < n``, are of that kind, and sympy took ~0.3 ms each).
    # A leaf that cancels on its own side (``n - n``) is missed: the mask then stays,
    # which is never wrong.
    leaves_a, leaves_b = _leaves(a, ranges), _leaves(b, ranges)
    if any(not bounded and uid not in leaves_b for uid, bounded in leaves_a.items()) or \
            any(not bounded and uid not in leaves_a for uid, bounded in leaves_b.items()):
        return False
    try:
        diff = _to_sympy(b, ranges) - _to_sympy(a, ranges)
    except (ValueError, TypeError):
        return False
    lo, hi = ranges.interval(sympy.expand(diff))
    return _TRUE_WHEN[owner.kind](lo, hi)


# ----------------------------------------------------------------------------- 3-5. cleanup


def eliminate_common_subexpressions(fn: Function) -> None:
    """Compute identical pure ops once (scoped: an outer value may serve a loop body)."""

    def key(op: Op) -> tuple:
        attrs = tuple(sorted((k, repr(v)) for k, v in op.attrs.items()))
        return (op.kind, tuple(v.uid for v in op.operands), attrs,
                tuple(r.type for r in op.results))

    def visit(block: Block, seen: dict[tuple, Value]) -> None:
        scope = dict(seen)
        kept = []
        for op in block.ops:
            for region in op.regions:
                visit(region, {} if op.defn.isolated_regions else scope)
            if op.defn.is_pure and len(op.results) == 1 and not op.regions:
                k = key(op)
                if k in scope:
                    op.result.replace_all_uses_with(scope[k])
                    op.erase()
                    continue
                scope[k] = op.result
            kept.append(op)
        block.ops[:] = kept

    visit(fn.body, {})


def eliminate_dead_code(fn: Function) -> None:
    """Remove pure ops and loads whose results nothing uses. One backward walk
    suffices: a definition always precedes its uses, and erasing an op updates the
    use lists of its operands before the walk reaches them."""

    def visit(block: Block) -> None:
        kept = []
        for op in reversed(block.ops):
            for region in op.regions:
                visit(region)
            if op.defn.removable and not any(r.has_uses for r in op.results):
                op.erase()
                continue
            kept.append(op)
        block.ops[:] = kept[::-1]

    visit(fn.body)


def prune_hidden_params(fn: Function) -> None:
    """Drop layout parameters no op reads (from the signature and the body's args)."""
    unused = {id(p) for p in fn.params if p.hidden and not p.value.has_uses}
    if unused:
        fn.params = [p for p in fn.params if id(p) not in unused]
        fn.body.args = [p.value for p in fn.params]


PASSES: list[tuple[str, Callable[[Function], None]]] = [
    ("fold-constants", fold_constants),
    ("simplify-indices", simplify_indices),
    ("fold-constants", fold_constants),
    ("eliminate-common-subexpressions", eliminate_common_subexpressions),
    ("eliminate-dead-code", eliminate_dead_code),
    ("prune-hidden-params", prune_hidden_params),
]


def optimize(fn: Function, dump_ir: bool = False, verify_each: bool = False) -> Function:
    """Run the passes in order (in place) and verify the result; ``verify_each``
    verifies after every pass instead (a broken invariant then names its pass), and
    ``dump_ir`` prints the IR after each to stderr."""
    if dump_ir:
        print(f"// IR of {fn.name} after build\n{format_function(fn)}\n", file=sys.stderr)
    for number, (name, run) in enumerate(PASSES, 1):
        run(fn)
        if verify_each or number == len(PASSES):
            try:
                verify(fn)
            except IRVerificationError as err:
                where = f"after pass {name}" if verify_each else "after the passes"
                raise IRVerificationError(f"{where}: {err}") from None
        if dump_ir:
            print(f"// IR of {fn.name} after {name}\n{format_function(fn)}\n", file=sys.stderr)
    return fn


__all__ = ["optimize", "fold_constants", "simplify_indices", "eliminate_common_subexpressions",
           "eliminate_dead_code", "prune_hidden_params", "walk_block"]
