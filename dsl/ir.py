"""The typed IR: one definition shared by the interpreter and the code generator.

Shape of the IR (an SSA form with nested regions, like a small MLIR):

- ``Function``: a specialized kernel. Its ``params`` are the body block's arguments:
  user tensor arguments (type ``ViewType``), user scalar arguments, and the hidden
  scalar arguments a view's layout needs (sizes, strides, base offset), which the
  launcher fills in. Constexpr arguments are gone: they were folded by the frontend.
- ``Block``: an argument list and a list of ``Op``s executed in order.
- ``Op``: a ``kind`` registered in ``dsl.opdefs.OPS`` (its record gives the operand
  roles, effects and typing rule), operand ``Value``s read by role, result
  ``Value``s, ``attrs`` and a ``SourceLoc``. A ``for`` op owns one region (its
  body block).
- ``Value``: an SSA value with a ``Type`` (dtype + block shape; shape ``()`` is a
  scalar) or a ``ViewType``, and the list of ops that use it (kept exact by
  ``Op``; ``replace_all_uses_with`` is linear in the number of uses).

Every implicit conversion of the source language is explicit here: promotion is a
``cast`` op, broadcasting is a ``broadcast`` op, and each operand of an elementwise
op has exactly the result's shape. A load or store of a view carries the logical
index (used for bounds checks) and the physical offset the compiler derived from
the view's layout. Removing an op from a block means ``op.erase()`` too, so that
the use lists of its operands forget it (``verify`` checks them).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsl.dtypes import DType
from dsl.errors import UNKNOWN_LOC, SourceLoc
from dsl.layout import Layout
from dsl.opdefs import OpDef, lookup


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
    """An SSA value. ``owner`` is the defining op, or None for a block argument.

    ``users`` are the ops that read it, kept up to date by ``Op`` (an op using the
    value twice is listed once), so passes never recompute def-use chains."""

    __slots__ = ("type", "name", "owner", "uid", "_uses")

    def __init__(self, type: Type | ViewType, name: str | None = None, owner: Op | None = None):
        self.type = type
        self.name = name
        self.owner = owner
        self.uid = next(_ids)
        self._uses: dict[Op, int] = {}  # user -> number of its operand slots holding self

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def rank(self) -> int:
        return len(self.type.shape)

    @property
    def users(self) -> list[Op]:
        """The ops that use this value, in the order they started using it."""
        return list(self._uses)

    @property
    def has_uses(self) -> bool:
        return bool(self._uses)

    def replace_all_uses_with(self, new: Value) -> None:
        """Make every user read ``new`` instead; linear in the number of uses."""
        if new is self:
            return
        for op in list(self._uses):
            op._substitute(self, new)

    def _add_use(self, op: Op) -> None:
        self._uses[op] = self._uses.get(op, 0) + 1

    def _drop_use(self, op: Op) -> None:
        count = self._uses.get(op, 0)
        if count <= 1:
            self._uses.pop(op, None)
        else:
            self._uses[op] = count - 1

    def __repr__(self) -> str:
        return f"Value({self.name or self.uid}: {self.type})"


@dataclass(eq=False)
class Block:
    """A region body: block arguments and ops in execution order."""

    args: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)

    def yielded(self) -> tuple[Value, ...]:
        """The values the region's terminator (its last op, a ``yield``) passes on."""
        return self.ops[-1].operands if self.ops and self.ops[-1].defn.terminator else ()


class Op:
    """One operation of a registered kind (``dsl.opdefs.OPS``).

    Operands are read by role (``op.mask``, ``op.value``, ``op.operand("index")``)
    through the kind's signature; ``operands`` is a read-only tuple and changes go
    through ``set_operands``/``set_operand`` so that use lists stay exact."""

    __slots__ = ("kind", "defn", "_operands", "_roles", "results", "attrs", "loc", "regions")

    def __init__(self, kind: str, operands: Sequence[Value], results: Sequence[Value] = (),
                 attrs: dict[str, Any] | None = None, loc: SourceLoc = UNKNOWN_LOC,
                 regions: Sequence[Block] = ()) -> None:
        self.defn: OpDef = lookup(kind)
        if not self.defn.signature.accepts(len(operands)):
            raise IRVerificationError(f"{kind} takes operands ({_describe(self.defn)}), "
                                      f"got {len(operands)}")
        self.kind = kind
        self._operands: tuple[Value, ...] = ()
        # role -> operand (None: an absent optional role), built on the first read by
        # role and dropped when the operands change: interpreters read roles per launch
        self._roles: dict[str, Value | None] | None = None
        self.results: list[Value] = list(results)
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.loc = loc
        self.regions: list[Block] = list(regions)
        self.set_operands(operands)

    @classmethod
    def create(cls, kind: str, operands: Sequence[Value], result_types: Sequence[Type],
               attrs: dict[str, Any] | None = None, loc: SourceLoc = UNKNOWN_LOC,
               regions: Sequence[Block] = ()) -> Op:
        """An op with fresh result values of ``result_types``."""
        op = cls(kind, operands, (), attrs, loc, regions)
        op.results = [Value(t, owner=op) for t in result_types]
        return op

    # -- operands

    @property
    def operands(self) -> tuple[Value, ...]:
        return self._operands

    def set_operands(self, operands: Sequence[Value]) -> None:
        if not self.defn.signature.accepts(len(operands)):
            raise IRVerificationError(f"{self.kind} takes operands ({_describe(self.defn)}), "
                                      f"got {len(operands)}")
        for old in self._operands:
            old._drop_use(self)
        self._operands = tuple(operands)
        self._roles = None
        for new in self._operands:
            new._add_use(self)

    def operand(self, role: str) -> Value | None:
        """The operand playing ``role`` (None for an absent optional role; KeyError for
        a role the kind does not have)."""
        roles = self._roles
        if roles is None:
            signature, operands = self.defn.signature, self._operands
            places = {role: signature.position(role, len(operands)) for role in signature.roles}
            roles = self._roles = {role: None if at is None else operands[at]
                                   for role, at in places.items()}
        return roles[role]

    def set_operand(self, role: str, value: Value) -> None:
        """Replace the operand playing ``role`` (which must be present)."""
        position = self.defn.signature.position(role, len(self._operands))
        if position is None:
            raise IRVerificationError(f"{self.kind} has no {role} operand to replace")
        operands = list(self._operands)
        operands[position] = value
        self.set_operands(operands)

    def drop_optional(self) -> None:
        """Remove the optional operand group (a load's mask and other, a store's mask)."""
        signature = self.defn.signature
        self.set_operands(self._operands[:len(signature.required)])

    def _substitute(self, old: Value, new: Value) -> None:
        self.set_operands([new if v is old else v for v in self._operands])

    def erase(self) -> None:
        """Detach this op (and its regions' ops) from the use lists of its operands;
        call when removing it from its block."""
        for region in self.regions:
            for op in region.ops:
                op.erase()
        for old in self._operands:
            old._drop_use(self)
        self._operands = ()
        self._roles = None

    # -- roles of the structural kinds (None when absent)

    def require(self, role: str) -> Value:
        """The operand playing ``role``; IRVerificationError when it is absent."""
        value = self.operand(role)
        if value is None:
            raise IRVerificationError(f"{self.kind} at line {self.loc.line} has no {role}")
        return value

    @property
    def view(self) -> Value:
        """The tensor a load or store accesses."""
        return self.require("view")

    @property
    def index(self) -> Value:
        """A load's or store's logical index (what bounds checks test)."""
        return self.require("index")

    @property
    def offset(self) -> Value:
        """A load's or store's physical element offset."""
        return self.require("offset")

    def _optional(self, role: str) -> Value | None:
        """An optional role: None when absent or when the kind has no such role."""
        return self.operand(role) if role in self.defn.signature.roles else None

    @property
    def mask(self) -> Value | None:
        """A memory op's mask (None: every lane is active)."""
        return self._optional("mask")

    @property
    def other(self) -> Value | None:
        """A masked load's value for masked-off lanes."""
        return self._optional("other")

    @property
    def value(self) -> Value:
        """The value a store writes."""
        return self.require("value")

    @property
    def source(self) -> Value:
        """The operand of a cast, broadcast, expand_dims or reduce."""
        return self.require("source")

    @property
    def lhs(self) -> Value:
        """The left operand of a binary elementwise op."""
        return self.require("lhs")

    @property
    def rhs(self) -> Value:
        """The right operand of a binary elementwise op."""
        return self.require("rhs")

    @property
    def compute_dtype(self) -> DType:
        """The dtype an elementwise op computes in: its operands' common dtype (for
        ``where``, that of the selected values, not of the int1 condition)."""
        roles = self.defn.signature.roles
        return self.require(roles[-1]).dtype

    @property
    def start(self) -> Value:
        return self.require("start")

    @property
    def end(self) -> Value:
        return self.require("end")

    @property
    def step(self) -> Value:
        return self.require("step")

    @property
    def offsets(self) -> tuple[Value, ...]:
        """extract_slice's and insert_slice's offsets, one scalar per dimension."""
        return self._operands[len(self.defn.signature.required):]

    @property
    def inits(self) -> tuple[Value, ...]:
        """A loop's initial carried values."""
        return self._operands[len(self.defn.signature.required):]

    @property
    def masked(self) -> bool:
        return self.mask is not None

    @property
    def tensor(self) -> str:
        """Name of the tensor argument a load or store accesses."""
        return self.view.name or ""

    @property
    def body(self) -> Block:
        return self.regions[0]

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"op {self.kind} has {len(self.results)} results")
        return self.results[0]

    @property
    def constant(self) -> object | None:
        """The value of a constant op, else None."""
        return self.attrs["value"] if self.defn.constant else None

    def __repr__(self) -> str:
        return f"Op({self.kind}, line {self.loc.line})"


def _describe(defn: OpDef) -> str:
    sig = defn.signature
    parts = list(sig.required) + ([f"[{' '.join(sig.optional)}]"] if sig.optional else []) \
        + ([f"*{sig.variadic}"] if sig.variadic else [])
    return " ".join(parts)


# The name of the hidden parameter that holds sub_vec_id() (reserved for kernels).
SUB_BLOCK_PARAM = "dsl_sub_vec_id"


@dataclass(frozen=True)
class Param:
    """A kernel parameter: the block argument plus how the launcher fills it.

    ``role`` is ``"tensor"`` or ``"scalar"`` for user arguments, and for hidden ones
    ``"size"``, ``"stride"`` or ``"base"`` of the coalesced view of tensor ``of``
    (dimension ``dim``), or ``"dim"``/``"dim_stride"``: the caller's own shape and stride
    of dimension ``dim`` (``x.shape[i]``, ``x.stride(i)``), or ``"sub_block"``: the
    int32 vector sub-block index ``sub_vec_id()`` reads, always the last parameter and
    set by the launcher, which runs the grid once per sub-block.
    """

    value: Value
    role: str
    user_name: str
    of: str | None = None
    dim: int | None = None

    @property
    def hidden(self) -> bool:
        return self.role not in ("tensor", "scalar")


@dataclass(eq=False)
class Function:
    """A specialized kernel: parameters and body."""

    name: str
    params: list[Param]
    body: Block
    source_file: str = "<unknown>"
    specialization: tuple = ()
    # "none": never asks which program it is; "tiled": only through tile_range;
    # "direct": reads program_id/num_programs (the grid decides what it covers)
    grid_use: str = "none"

    def walk(self) -> Iterator[Op]:
        """All ops, nested regions included, in program order."""
        yield from walk_block(self.body)

    def tensors_read(self) -> frozenset[str]:
        """Names of the tensor parameters some op reads through its view (loads at
        integer addresses, ``host_addresses``, may read any of them)."""
        return frozenset(op.tensor for op in self.walk()
                         if op.defn.reads_memory and not op.defn.host_address)

    def tensors_written(self) -> frozenset[str]:
        """Names of the tensor parameters some op writes through its view (stores and
        atomics; stores at integer addresses may write any of them)."""
        return frozenset(op.tensor for op in self.walk()
                         if op.defn.writes_memory and not op.defn.host_address)

    def tensors_observed(self) -> frozenset[str]:
        """Names of the tensor parameters whose memory the kernel may read: through
        their views, or every one when it accesses memory at integer addresses."""
        if self.host_addresses():
            return frozenset(p.user_name for p in self.params if p.role == "tensor")
        return self.tensors_read()

    def host_addresses(self) -> bool:
        """True when some op accesses memory at integer addresses (a Triton pointer
        cast from an integer), which may be any tensor's memory."""
        return any(op.defn.host_address for op in self.walk())

    @property
    def sub_blocks(self) -> bool:
        """True when the kernel reads ``sub_vec_id()``: its last parameter is the
        sub-block index, and a launch runs the grid once per sub-block."""
        return bool(self.params) and self.params[-1].role == "sub_block"

    def tensors_through_pointers(self) -> frozenset[str]:
        """Names of the tensor parameters some op addresses through a pointer."""
        return frozenset(op.tensor for op in self.walk() if op.attrs.get("pointer"))

    def __str__(self) -> str:
        return format_function(self)


def walk_block(block: Block) -> Iterator[Op]:
    """Ops of ``block`` and of every region nested in it, in program order."""
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


def _format_operands(op: Op, name: _Namer) -> str:
    """Operands, labelled by role for kinds whose registry record asks for it."""
    if not op.defn.labelled:
        return ", ".join(name(o) for o in op.operands)
    signature = op.defn.signature
    parts = []
    for i, operand in enumerate(op.operands):
        role = signature.label(i)
        parts.append(name(operand) if role == "view" else f"{role}={name(operand)}")
    return " ".join(parts)


def _format_block(block: Block, name: _Namer, lines: list[str], indent: int) -> None:
    pad = "  " * indent
    for op in block.ops:
        results = ", ".join(name(r) for r in op.results)
        lhs = f"{results} = " if results else ""
        operands = _format_operands(op, name)
        attrs = " ".join(f"{k}={_fmt_attr(v)}" for k, v in op.attrs.items())
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
    """Check the invariants backends rely on: every op is of a registered kind with
    its attributes and typing rule (``OpDef.check``); every operand is defined before
    use, in its block or an enclosing one; loads and stores access a tensor
    parameter; and every value's use list holds exactly the ops that read it."""
    tensors = {p.value.uid for p in fn.params if p.role == "tensor"}
    in_function: set[int] = set()

    def fail(op: Op, problem: str) -> IRVerificationError:
        return IRVerificationError(f"{op.kind} at line {op.loc.line}: {problem}")

    def check_block(block: Block, visible: set[int]) -> None:
        defined = set(visible) | {a.uid for a in block.args}
        for op in block.ops:
            in_function.add(id(op))
            for operand in op.operands:
                if operand.uid not in defined:
                    raise fail(op, f"uses {operand} before its definition")
            missing = [a for a in op.defn.attrs if a not in op.attrs]
            if missing:
                raise fail(op, f"lacks attribute(s) {missing}")
            if op.defn.results >= 0 and len(op.results) != op.defn.results:
                raise fail(op, f"has {len(op.results)} results, expected {op.defn.results}")
            if len(op.regions) != op.defn.regions:
                raise fail(op, f"has {len(op.regions)} regions, expected {op.defn.regions}")
            if "view" in op.defn.signature.roles and op.view.uid not in tensors:
                raise fail(op, f"accesses {op.view}, which is not a tensor parameter")
            problem = op.defn.check(op)
            if problem:
                raise fail(op, problem)
            for region in op.regions:  # an isolated region sees only its own values
                check_block(region, set() if op.defn.isolated_regions else defined)
            defined.update(r.uid for r in op.results)

    check_block(fn.body, set())
    for op in fn.walk():
        for operand in op.operands:
            if op not in operand._uses:
                raise fail(op, f"is missing from the use list of {operand}")
        for value in op.results + [a for r in op.regions for a in r.args]:
            for user in value._uses:
                if id(user) not in in_function or value not in user.operands:
                    raise fail(op, f"{value} lists a user that does not read it: {user}")
