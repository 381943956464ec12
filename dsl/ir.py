"""The typed IR: one definition shared by the interpreter and the code generator.

Shape of the IR (an SSA form with nested regions, like a small MLIR):

- ``Function``: a specialized kernel. Its ``params`` are the body block's arguments:
  user tensor arguments (type ``ViewType``), user scalar arguments, and the hidden
  scalar arguments a view's layout needs (sizes, strides, base offset), which the
  launcher fills in. Constexpr arguments are gone: they were folded by the frontend.
- ``Block``: an argument list and a list of ``Op``s executed in order.
- ``Op``: ``kind`` (a name from ``dsl.opdefs`` or a structural kind listed below),
  operand ``Value``s, result ``Value``s, ``attrs`` and a ``SourceLoc``. A ``for`` op
  owns one region (its body block).
- ``Value``: an SSA value with a ``Type`` (dtype + block shape; shape ``()`` is a
  scalar) or a ``ViewType``.

Every implicit conversion of the source language is explicit here: promotion is a
``cast`` op, broadcasting is a ``broadcast`` op, and each operand of an elementwise
op has exactly the result's shape. A load or store of a view carries the logical
index (used for bounds checks) and the physical offset the compiler derived from
the view's layout.

Structural op kinds (their semantics are not elementwise, so they are not in the
op table): ``const``, ``arange``, ``program_id``, ``num_programs``, ``cast``,
``broadcast``, ``expand_dims``, ``reduce``, ``load``, ``store``, ``for``, ``yield``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from dsl.dtypes import DType
from dsl.errors import UNKNOWN_LOC, SourceLoc
from dsl.layout import Layout


@dataclass(frozen=True)
class Type:
    """Type of a value: element dtype and block shape (``()`` for scalars)."""

    dtype: DType
    shape: tuple[int, ...] = ()

    @property
    def is_block(self) -> bool:
        return bool(self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def with_dtype(self, dtype: DType) -> Type:
        return Type(dtype, self.shape)

    def __str__(self) -> str:
        if not self.shape:
            return self.dtype.name
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class ViewType:
    """Type of a tensor argument: element dtype and layout class."""

    dtype: DType
    layout: Layout

    shape: tuple[int, ...] = ()  # views are not blocks; kept for uniform access

    def __str__(self) -> str:
        return f"view<{self.dtype.name},{self.layout}>"


_ids = itertools.count()


class Value:
    """An SSA value. ``owner`` is the defining op, or None for a block argument."""

    __slots__ = ("type", "name", "owner", "uid")

    def __init__(self, type: Type | ViewType, name: str | None = None, owner: Op | None = None):
        self.type = type
        self.name = name
        self.owner = owner
        self.uid = next(_ids)

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def rank(self) -> int:
        return len(self.type.shape)

    def __repr__(self) -> str:
        return f"Value({self.name or self.uid}: {self.type})"


@dataclass(eq=False)
class Block:
    """A region body: block arguments and ops in execution order."""

    args: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)


@dataclass(eq=False)
class Op:
    """One operation. See the module docstring for the structural kinds."""

    kind: str
    operands: list[Value]
    results: list[Value]
    attrs: dict[str, Any] = field(default_factory=dict)
    loc: SourceLoc = UNKNOWN_LOC
    regions: list[Block] = field(default_factory=list)

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"op {self.kind} has {len(self.results)} results")
        return self.results[0]


@dataclass(frozen=True)
class Param:
    """A kernel parameter: the block argument plus how the launcher fills it.

    ``role`` is ``"tensor"`` or ``"scalar"`` for user arguments, and for hidden ones
    ``"size"``, ``"stride"`` or ``"base"`` of the tensor ``of`` (dimension ``dim``).
    """

    value: Value
    role: str
    user_name: str
    of: str | None = None
    dim: int | None = None


@dataclass(eq=False)
class Function:
    """A specialized kernel: parameters and body."""

    name: str
    params: list[Param]
    body: Block
    source_file: str = "<unknown>"
    specialization: tuple = ()

    def walk(self) -> Iterator[Op]:
        """All ops, nested regions included, in program order."""
        yield from walk_block(self.body)

    def __str__(self) -> str:
        return format_function(self)


def walk_block(block: Block) -> Iterator[Op]:
    for op in block.ops:
        yield op
        for region in op.regions:
            yield from walk_block(region)


# ----------------------------------------------------------------------------- printer


def _fmt_attr(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, DType):
        return value.name
    return str(value)


class _Namer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.counter = 0

    def __call__(self, v: Value) -> str:
        if v.uid not in self.names:
            if v.name:
                self.names[v.uid] = f"%{v.name}"
            else:
                self.names[v.uid] = f"%{self.counter}"
                self.counter += 1
        return self.names[v.uid]


def format_function(fn: Function) -> str:
    """Readable text of a function: one op per line with its type and source line."""
    name = _Namer()
    params = ", ".join(f"{name(p.value)}: {p.value.type}" for p in fn.params)
    lines = [f"kernel @{fn.name}({params}) {{"]
    _format_block(fn.body, name, lines, indent=1)
    lines.append("}")
    return "\n".join(lines)


_ROLES = {"load": ("", "index", "offset", "mask", "other"),
          "store": ("", "index", "offset", "value", "mask"),
          "for": ("from", "to", "step")}


def _format_operands(op: Op, name: _Namer) -> str:
    """Operands, labelled by role where the position alone would not tell."""
    roles = _ROLES.get(op.kind)
    if roles is None:
        return ", ".join(name(o) for o in op.operands)
    parts = []
    for i, operand in enumerate(op.operands):
        role = roles[i] if i < len(roles) else "init"
        parts.append(f"{role}={name(operand)}" if role else name(operand))
    return " ".join(parts)


def _format_block(block: Block, name: _Namer, lines: list[str], indent: int) -> None:
    pad = "  " * indent
    for op in block.ops:
        results = ", ".join(name(r) for r in op.results)
        lhs = f"{results} = " if results else ""
        operands = _format_operands(op, name)
        attrs = " ".join(f"{k}={_fmt_attr(v)}" for k, v in op.attrs.items()
                         if k not in ("tensor", "masked"))
        types = ", ".join(str(r.type) for r in op.results)
        text = f"{pad}{lhs}{op.kind}"
        if operands:
            text += f" {operands}"
        if attrs:
            text += f" {{{attrs}}}"
        if types:
            text += f" : {types}"
        if op.regions:
            body = op.regions[0]
            args = ", ".join(f"{name(a)}: {a.type}" for a in body.args)
            text += f" ({args}) {{"
        where = f"line {op.loc.line}" if op.loc.line else ""
        lines.append(f"{text:<72}  # {where}" if where else text)
        for region in op.regions:
            _format_block(region, name, lines, indent + 1)
            lines.append(f"{pad}}}")


# ----------------------------------------------------------------------------- verifier


class IRVerificationError(Exception):
    """The IR broke one of its invariants (a compiler bug, not a user error)."""


def verify(fn: Function) -> None:
    """Check the invariants backends rely on: every operand is defined before use
    (in its block or an enclosing one), elementwise operands have the result's
    shape, ``for`` regions yield values of the carried types, loads and stores name
    a tensor parameter."""
    from dsl.opdefs import OPS  # the op table imports nothing from here

    tensors = {p.user_name for p in fn.params if p.role == "tensor"}

    def check_block(block: Block, visible: set[int]) -> None:
        defined = set(visible) | {a.uid for a in block.args}
        for op in block.ops:
            for operand in op.operands:
                if operand.uid not in defined:
                    raise IRVerificationError(f"{op.kind} at line {op.loc.line} uses {operand} "
                                              "before its definition")
            if op.kind in OPS and op.kind != "where":
                shapes = {o.shape for o in op.operands}
                if shapes != {op.result.shape}:
                    raise IRVerificationError(f"{op.kind} at line {op.loc.line}: operand "
                                              f"shapes {shapes} differ from {op.result.shape}")
            if op.kind in ("load", "store") and op.attrs.get("tensor") not in tensors:
                raise IRVerificationError(f"{op.kind} of unknown tensor {op.attrs.get('tensor')}")
            if op.kind == "for":
                body = op.regions[0]
                carried = [a.type for a in body.args[1:]]
                if [r.type for r in op.results] != carried or \
                        [o.type for o in op.operands[3:]] != carried:
                    raise IRVerificationError(f"for at line {op.loc.line}: carried types differ")
                last = body.ops[-1] if body.ops else None
                if last is None or last.kind != "yield" or \
                        [o.type for o in last.operands] != carried:
                    raise IRVerificationError(f"for at line {op.loc.line}: bad yield")
                check_block(body, defined)
            defined.update(r.uid for r in op.results)

    check_block(fn.body, set())
