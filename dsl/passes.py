"""Passes over the typed IR, run on every specialization before either backend.

Each pass is a named rewrite of a freshly built ``Function`` (in place) that keeps
its meaning; ``optimize`` runs them in order and, with ``DSL_DUMP_IR=1``, prints
the IR after each one. Both backends consume the result, so the interpreter checks
exactly what is lowered.

1. ``fold_constants``: an elementwise op, cast or broadcast whose operands are all
   constants becomes a constant (evaluated with the op table, ``dsl.opdefs``);
   integer ``x + 0``, ``x * 1``, ``x // 1`` become ``x``.
2. ``simplify_indices``: integer expressions that feed load/store offsets and
   masks are rewritten with sympy: leaves are integer symbols with the facts the IR
   knows (``arange(s, e)`` lies in ``[s, e)``, program ids, sizes and bases are
   non-negative, sizes positive). ``x % m`` and ``x // m`` disappear where
   ``0 <= x < m`` is provable, comparisons that are provably true become constant
   true (and masks that are always true are dropped from loads and stores). The
   result is printed back with ``//`` and ``%`` only where both sides are provably
   non-negative, and only when it has fewer ops than the original.
3. ``eliminate_common_subexpressions``: identical pure ops (same kind, operands,
   attributes, type) are computed once.
4. ``eliminate_dead_code``: pure ops whose results are unused are removed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import numpy as np
import sympy

from dsl import dtypes as dt
from dsl.ir import Block, Function, Op, Type, Value, format_function, verify, walk_block
from dsl.opdefs import OPS, cast_array

_PURE = set(OPS) | {"const", "arange", "program_id", "num_programs", "cast", "broadcast",
                    "expand_dims", "reduce"}


# ----------------------------------------------------------------------------- helpers


def _uses(fn: Function) -> dict[int, int]:
    counts: dict[int, int] = {}
    for op in fn.walk():
        for v in op.operands:
            counts[v.uid] = counts.get(v.uid, 0) + 1
    return counts


def _replace_all_uses(fn: Function, old: Value, new: Value) -> None:
    for op in fn.walk():
        op.operands = [new if v is old else v for v in op.operands]


def _const_value(v: Value) -> object | None:
    owner = v.owner
    if owner is not None and owner.kind == "const":
        return owner.attrs["value"]
    return None


def _make_const(template: Op, value: object, type_: Type) -> Op:
    op = Op("const", [], [], {"value": value}, template.loc)
    op.results = [Value(type_, owner=op)]
    return op


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
            folded = _fold(op)
            if folded is None:
                continue
            if isinstance(folded, Value):
                _replace_all_uses(fn, op.result, folded)
                continue
            block.ops[i] = folded
            _replace_all_uses(fn, op.result, folded.result)

    visit(fn.body)


def _fold(op: Op) -> Op | Value | None:
    if op.kind not in OPS and op.kind not in ("cast", "broadcast"):
        return None
    values = [_const_value(v) for v in op.operands]
    if op.kind in ("add", "mul", "floordiv") and op.result.dtype.is_int \
            and not op.result.dtype.is_bool:
        neutral = 0 if op.kind == "add" else 1
        a, b = op.operands
        if values[1] == neutral and a.type == op.result.type:
            return a
        if op.kind != "floordiv" and values[0] == neutral and b.type == op.result.type:
            return b
    if any(v is None for v in values):
        return None
    dtype = op.result.dtype
    if op.kind == "broadcast":
        return _make_const(op, values[0], op.result.type)
    if op.kind == "cast":
        src = op.operands[0].dtype
        result = cast_array(np.asarray([values[0]], dtype=src.np), dtype)
        return _make_const(op, _python_value(result, dtype), op.result.type)
    operand_dtype = op.operands[-1].dtype
    arrays = [np.asarray([v], dtype=o.dtype.np) for v, o in zip(values, op.operands)]
    result = OPS[op.kind].evaluate(*arrays, dtype=operand_dtype)
    return _make_const(op, _python_value(result, dtype), op.result.type)


# ----------------------------------------------------------------------------- 2. indices


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
        lo: int | None = None
        hi: int | None = None
        owner = v.owner
        role = self.roles.get(v.uid)
        if owner is not None and owner.kind == "arange":
            lo, hi = owner.attrs["start"], owner.attrs["end"] - 1
        elif owner is not None and owner.kind in ("program_id",):
            lo = 0
        elif owner is not None and owner.kind == "num_programs" or role == "size":
            lo = 1
        elif role == "base":
            lo = 0
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


_LINEAR = {"add", "sub", "mul", "floordiv", "mod"}


def _to_sympy(v: Value, ranges: _Ranges, budget: list[int]) -> sympy.Expr:
    budget[0] += 1
    owner = v.owner
    value = _const_value(v)
    if value is not None and isinstance(value, int) and not isinstance(value, bool):
        return sympy.Integer(value)
    if owner is not None and owner.kind == "broadcast" and owner.operands[0].dtype == v.dtype:
        return _to_sympy(owner.operands[0], ranges, budget)
    if owner is not None and owner.kind in _LINEAR and v.dtype.is_int and not v.dtype.is_bool:
        a, b = (_to_sympy(o, ranges, budget) for o in owner.operands)
        if owner.kind == "add":
            return a + b
        if owner.kind == "sub":
            return a - b
        if owner.kind == "mul":
            return a * b
        if owner.kind == "floordiv" and _provably_nonnegative(a, ranges) \
                and _provably_positive(b, ranges):
            return sympy.floor(a / b)
        if owner.kind == "mod" and _provably_nonnegative(a, ranges) \
                and _provably_positive(b, ranges):
            return sympy.Mod(a, b)
    return ranges.symbol(v)


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
    owner = v.owner
    if owner is None or v.uid in seen or owner.kind not in _LINEAR | {"broadcast"}:
        return 0
    seen.add(v.uid)
    return 1 + sum(_count_ops(o, seen) for o in owner.operands)


class _Printer:
    """Emits IR for a sympy expression before ``anchor`` in ``block``."""

    def __init__(self, block: Block, anchor: Op, ranges: _Ranges, type_: Type) -> None:
        self.block, self.anchor, self.ranges, self.type = block, anchor, ranges, type_
        self.new_ops: list[Op] = []

    def emit(self, kind: str, operands: list[Value], attrs: dict | None = None) -> Value:
        op = Op(kind, operands, [], dict(attrs or {}), self.anchor.loc)
        op.results = [Value(self.type, owner=op)]
        self.new_ops.append(op)
        return op.result

    def leaf(self, v: Value) -> Value:
        if v.type == self.type:
            return v
        if v.type.dtype == self.type.dtype and not v.shape:
            return self.emit("broadcast", [v])
        if not v.shape:
            scalar = Type(self.type.dtype)
            cast = Op("cast", [v], [], {"dtype": self.type.dtype}, self.anchor.loc)
            cast.results = [Value(scalar, owner=cast)]
            self.new_ops.append(cast)
            return self.emit("broadcast", [cast.result]) if self.type.shape else cast.result
        raise ValueError("cannot reuse a leaf of another shape")

    def print(self, e: sympy.Expr) -> Value:
        if e.is_Integer:
            return self.emit("const", [], {"value": int(e)})
        if e.is_Symbol:
            return self.leaf(self.ranges.leaves[e])
        if e.is_Add:
            terms = [self.print(a) for a in e.args]
            out = terms[0]
            for t in terms[1:]:
                out = self.emit("add", [out, t])
            return out
        if e.is_Mul:
            factors = [self.print(a) for a in e.args]
            out = factors[0]
            for f in factors[1:]:
                out = self.emit("mul", [out, f])
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
            if op.kind in ("load", "store"):
                for position in (1, 2):  # the logical index and the physical offset
                    i += _simplify_operand(block, op, position, ranges)
                _drop_true_mask(op, ranges)
            i += 1

    visit(fn.body)


def _simplify_operand(block: Block, op: Op, position: int, ranges: _Ranges) -> int:
    """Rewrite ``op.operands[position]`` if sympy finds a smaller equal expression;
    return the number of ops inserted before ``op``."""
    offset = op.operands[position]
    if offset.owner is None or offset.owner.kind not in _LINEAR:
        return 0
    try:
        budget = [0]
        expr = _to_sympy(offset, ranges, budget)
        simpler = _range_rewrite(sympy.expand(expr), ranges)
        simpler = _range_rewrite(sympy.simplify(simpler), ranges)
        if simpler.has(sympy.Mod, sympy.floor) and any(
                not _provably_nonnegative(a, ranges) for f in simpler.atoms(sympy.Mod)
                for a in f.args):
            return 0
        printer = _Printer(block, op, ranges, offset.type)
        new_offset = printer.print(simpler)
    except (ValueError, TypeError, RecursionError):
        return 0
    if len(printer.new_ops) >= _count_ops(offset, set()):
        return 0
    at = block.ops.index(op)
    block.ops[at:at] = printer.new_ops
    op.operands[position] = new_offset
    return len(printer.new_ops)


def _drop_true_mask(op: Op, ranges: _Ranges) -> None:
    """A mask that is provably all true is removed (with ``other``, for loads)."""
    if not op.attrs.get("masked"):
        return
    mask = op.operands[4 if op.kind == "store" else 3]
    if not _provably_true(mask, ranges):
        return
    op.operands = op.operands[:4] if op.kind == "store" else op.operands[:3]
    op.attrs = dict(op.attrs, masked=False)


def _provably_true(mask: Value, ranges: _Ranges) -> bool:
    value = _const_value(mask)
    if value is not None:
        return bool(value)
    owner = mask.owner
    if owner is None or owner.kind not in ("lt", "le", "ge", "gt"):
        return False
    a, b = owner.operands
    if not a.dtype.is_int or a.dtype.is_bool:
        return False
    try:
        budget = [0]
        diff = _to_sympy(b, ranges, budget) - _to_sympy(a, ranges, budget)  # b - a
    except (ValueError, TypeError):
        return False
    lo, hi = ranges.interval(sympy.expand(diff))
    if owner.kind == "lt":
        return lo is not None and lo >= 1
    if owner.kind == "le":
        return lo is not None and lo >= 0
    if owner.kind == "gt":
        return hi is not None and hi <= -1
    return hi is not None and hi <= 0


# ----------------------------------------------------------------------------- 3-4. cleanup


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
                visit(region, scope)
            if op.kind in _PURE and len(op.results) == 1 and not op.regions:
                k = key(op)
                if k in scope:
                    _replace_all_uses(fn, op.result, scope[k])
                    continue
                scope[k] = op.result
            kept.append(op)
        block.ops[:] = kept

    visit(fn.body, {})


def eliminate_dead_code(fn: Function) -> None:
    """Remove pure ops (loads included) whose results nothing uses."""
    while _remove_unused(fn.body, _uses(fn)):
        pass


def _remove_unused(block: Block, uses: dict[int, int]) -> bool:
    changed = False
    kept = []
    for op in block.ops:
        for region in op.regions:
            changed |= _remove_unused(region, uses)
        if (op.kind in _PURE or op.kind == "load") and \
                all(uses.get(r.uid, 0) == 0 for r in op.results):
            changed = True
            continue
        kept.append(op)
    block.ops[:] = kept
    return changed


PASSES: list[tuple[str, Callable[[Function], None]]] = [
    ("fold-constants", fold_constants),
    ("simplify-indices", simplify_indices),
    ("fold-constants", fold_constants),
    ("eliminate-common-subexpressions", eliminate_common_subexpressions),
    ("eliminate-dead-code", eliminate_dead_code),
]


def optimize(fn: Function) -> Function:
    """Run the passes in order (in place); ``DSL_DUMP_IR=1`` prints the IR after each."""
    dump = os.environ.get("DSL_DUMP_IR", "") not in ("", "0")
    if dump:
        print(f"// IR of {fn.name} after build\n{format_function(fn)}\n", file=sys.stderr)
    for name, run in PASSES:
        run(fn)
        verify(fn)
        if dump:
            print(f"// IR of {fn.name} after {name}\n{format_function(fn)}\n", file=sys.stderr)
    return fn


__all__ = ["optimize", "fold_constants", "simplify_indices", "eliminate_common_subexpressions",
           "eliminate_dead_code", "walk_block"]
