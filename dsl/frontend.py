"""The AST frontend: a kernel's Python source plus a specialization -> typed IR.

Data flow: ``KernelSource`` (parsed once per kernel) + ``Specialization`` (the
constexpr values and the dtype/layout of each runtime argument) -> ``build_ir`` ->
``dsl.ir.Function``. The visitor walks the restricted Python subset below and
evaluates every expression either to a Python value (a constexpr: literals,
constexpr parameters and arithmetic over them, folded at compile time) or to an IR
``Value`` built through ``dsl.semantic``, which owns all typing rules.

Accepted: assignments (also tuple unpacking and augmented), expressions built from
arithmetic, comparisons and calls to DSL builtins, ``x.to(dtype)``, ``x[:, None]``,
``if``/``else`` on constexpr conditions, ``for`` over ``range``/``dsl.range``
(dynamic, with loop-carried values), ``dsl.static_range`` (unrolled) and
``dsl.tile_range`` (tile loop spread over programs), calls of other ``@dsl.jit``
functions (inlined), and a final bare ``return``. Everything else is rejected with
an error at the offending node: file, line, column, excerpt, caret.
"""

from __future__ import annotations

import ast
import builtins as pybuiltins
import dataclasses
import enum
import functools
import inspect
import linecache
import math
import textwrap
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsl import dtypes as dt
from dsl import language as lang
from dsl import mathlib
from dsl import pointers as ptrs
from dsl import semantic as sem
from dsl import semantic as sem_  # for handlers whose Triton signature has a ``sem`` argument
from dsl.dtypes import DType
from dsl.errors import DSLCompileError, SourceLoc
from dsl.ir import SUB_BLOCK_PARAM, Block, Function, Param, Type, Value, ViewType, verify
from dsl.layout import Layout
from dsl.opdefs import elementwise
from dsl.pointers import AddressPointer, BlockPointer, Pointer, PointerChoice
from dsl.semantic import Builder, ViewArg
from dsl.views import broadcast_to as host_broadcast_to

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
           ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.BitAnd: "and", ast.BitOr: "or",
           ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift", ast.Pow: "pow"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
           ast.NotEq: "ne"}
_PY_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
    ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b,
    ast.Pow: lambda a, b: a**b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b}
_PY_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b}
# Python builtins a kernel may call on constexpr values.
_PY_FUNCS = {pybuiltins.min, pybuiltins.max, pybuiltins.abs, pybuiltins.int, pybuiltins.float,
             pybuiltins.bool, pybuiltins.len}


# ----------------------------------------------------------------------------- sources


class Unresolved(LookupError):
    """A name or attribute a kernel reads from outside it that does not exist."""


@dataclass
class KernelSource:
    """A kernel function's parsed source, with what is needed to locate its nodes."""

    fn: Callable[..., Any]
    tree: ast.FunctionDef
    file: str
    line_offset: int  # file line of the source's first line, minus one
    col_offset: int  # columns removed by dedenting
    params: list[inspect.Parameter]
    constexpr_params: frozenset[str]
    block_size_params: frozenset[str]
    # Set for a kernel written against triton.language (``dsl.triton_compat``): maps each
    # object the kernel names (tl.load, tl.float32, a @triton.jit helper) to the DSL's;
    # tensor arguments are then always pointers.
    translate: Callable[[Any], Any] | None = None
    text: str = ""  # the source as written (``inspect.getsource``'s text)
    read_only_params: frozenset[str] = frozenset()  # annotated ``const`` (tl.const)

    @property
    def triton(self) -> bool:
        return self.translate is not None

    @property
    def name(self) -> str:
        return self.fn.__name__

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        """The signature calls of this function (inlined helpers) bind to."""
        return inspect.Signature(self.params)

    def loc(self, node: ast.AST) -> SourceLoc:
        # every visit of a node asks (a loop body once per specialization): the
        # answer is kept on the node, which belongs to this source alone
        found = node.__dict__.get("_dsl_loc")
        if found is None:
            line = self.line_offset + getattr(node, "lineno", 1)
            col = getattr(node, "col_offset", 0) + self.col_offset
            found = SourceLoc(self.file, line, col, linecache.getline(self.file, line))
            node._dsl_loc = found  # type: ignore[attr-defined]
        return found

    def foreign(self, obj: Any) -> Any:
        """An object from outside the kernel as the DSL sees it (Triton's mapped)."""
        return obj if self.translate is None else self.translate(obj)

    def resolve_name(self, name: str) -> Any:
        """What ``name``, not a local of the kernel, means now: the function's closure
        cell, then its globals, then builtins. The one rule the front end and
        ``dsl.ir_cache`` (which re-checks a cached build's reads) share.
        Raises ``Unresolved`` naming the problem."""
        fn = self.fn
        if fn.__closure__:
            for var, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                if var == name:
                    try:
                        contents = cell.cell_contents
                    except ValueError:  # an empty cell: assigned after the function
                        raise Unresolved(f"'{name}' is not assigned yet where "
                                         f"{fn.__name__} is defined") from None
                    return self.foreign(contents)
        if name in fn.__globals__:
            return self.foreign(fn.__globals__[name])
        if hasattr(pybuiltins, name):
            return getattr(pybuiltins, name)
        raise Unresolved(f"unknown name '{name}'")

    def resolve_attribute(self, base: Any, attr: str) -> Any:
        """``base.attr`` for a module, class or dtype ``base`` (``tl.float32``,
        ``settings.SHIFT``): a Triton kernel may also name a ``triton.language``
        attribute this wheel lacks but the DSL defines. Raises ``Unresolved``."""
        if not hasattr(base, attr):
            if self.triton and inspect.ismodule(base):
                from dsl.triton_compat import missing_attribute  # imports this module

                builtin = missing_attribute(base, attr)
                if builtin is not None:
                    return builtin
            raise Unresolved(f"'{getattr(base, '__name__', base)}' has no attribute '{attr}'")
        found = getattr(base, attr)
        return self.foreign(found) if inspect.ismodule(base) else found

    @staticmethod
    def parse(fn: Callable[..., Any], translate: Callable[[Any], Any] | None = None,
              text: str | None = None) -> KernelSource:
        """``fn``'s definition, read from its file, or from ``text`` when given (a Triton
        kernel whose ``src`` a script replaced: errors then name the lines of ``text``
        counted from ``fn``'s first line)."""
        found = _function_source(fn) if text is None else None
        if text is not None:
            raw = text
            text = textwrap.dedent(raw)
            first = fn.__code__.co_firstlineno
            try:
                tree = ast.parse(text).body[0]
            except (SyntaxError, IndexError) as exc:
                line = getattr(exc, "text", None) or ""
                raise DSLCompileError(f"the source given for {fn.__name__} does not parse: "
                                      f"{exc}\n    {line.strip()}") from None
            if not isinstance(tree, ast.FunctionDef):
                raise DSLCompileError(f"the source given for {fn.__name__} is not one "
                                      "function definition")
        elif found is None:  # the slow, general reader
            try:
                lines, first = inspect.getsourcelines(fn)
            except (OSError, TypeError) as exc:
                raise DSLCompileError(f"cannot read the source of {fn.__name__}: {exc}") \
                    from None
            raw = "".join(lines)
            text = textwrap.dedent(raw)
            tree = ast.parse(text).body[0]
        else:
            raw, text, first, tree = found
        col_offset = len(raw.splitlines()[0]) - len(text.splitlines()[0])
        if not isinstance(tree, ast.FunctionDef):  # (a lambda's source is its whole line)
            raise DSLCompileError(f"{fn.__name__}: a kernel is a function defined with def "
                                  "(a lambda or an expression has no kernel body)")
        file = inspect.getsourcefile(fn) or "<unknown>"
        sig = inspect.signature(fn)
        constexpr, blocks, read_only = set(), set(), set()
        for p in sig.parameters.values():
            ann = _resolve_annotation(fn, p.annotation)
            if translate is not None:
                ann = translate(ann)
            if ann is lang.const:
                read_only.add(p.name)
            if isinstance(ann, type) and issubclass(ann, lang.constexpr):
                constexpr.add(p.name)
                if issubclass(ann, lang.block_size):
                    blocks.add(p.name)
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise DSLCompileError(f"{file}:{first}: kernel {fn.__name__} parameter "
                                      f"{p.name!r}: *args, **kwargs and keyword-only "
                                      "parameters are not supported")
        return KernelSource(fn, tree, file, first - 1, col_offset, list(sig.parameters.values()),
                            frozenset(constexpr), frozenset(blocks), translate, raw,
                            frozenset(read_only))


def _function_source(fn: Callable[..., Any]) -> tuple[str, str, int, ast.FunctionDef] | None:
    """(source, dedented source, first line, parsed definition) of ``fn``, found from
    its code object instead of by tokenizing the file as ``inspect.getsourcelines``
    does (1.5 ms for an 18-line kernel, more than parsing it): the lines from
    ``co_firstlineno`` (its first decorator) to the last line any of its instructions
    spans, then on while lines are blank or indented deeper than the definition.
    None when that text is not exactly one definition of ``fn``'s name (the caller
    then asks ``inspect``)."""
    code = getattr(fn, "__code__", None)
    file = getattr(code, "co_filename", None)
    if code is None or not file:
        return None
    lines = linecache.getlines(file, getattr(fn, "__globals__", None))
    first = code.co_firstlineno
    if not 0 < first <= len(lines):
        return None
    end = min(_last_line(code), len(lines))
    indent = len(lines[first - 1]) - len(lines[first - 1].lstrip())
    while end < len(lines):
        line = lines[end]
        stripped = line.lstrip()
        if stripped and len(line) - len(stripped) <= indent:
            break
        end += 1
    while not lines[end - 1].strip():  # trailing blank lines belong to no one
        end -= 1
    raw = "".join(lines[first - 1:end])
    text = textwrap.dedent(raw)
    try:
        body = ast.parse(text).body
    except SyntaxError:
        return None
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef) or \
            body[0].name != fn.__name__:
        return None
    return raw, text, first, body[0]


def _last_line(code: types.CodeType) -> int:
    """The last source line any instruction of ``code`` or of a function nested in it
    spans."""
    last = code.co_firstlineno
    for _, end, _, _ in code.co_positions():
        if end is not None and end > last:
            last = end
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            last = max(last, _last_line(const))
    return last


def _resolve_annotation(fn: Callable[..., Any], ann: Any) -> Any:
    if isinstance(ann, str):
        try:
            return eval(ann, fn.__globals__)  # noqa: S307 - the kernel author's own annotation
        except Exception:
            return None
    return ann


class InlinableKernel:
    """Base of kernel objects (``dsl.jit.JITFunction``) whose ``source`` a kernel
    may call: the call is inlined."""

    source: KernelSource


@dataclass(frozen=True)
class Unsupported:
    """A name a kernel may mention but not call (a Triton feature this project does
    not have): calling it is a compile error at the call naming the feature."""

    feature: str
    reason: str = "is not supported yet"

    def message(self) -> str:
        return f"{self.feature} {self.reason} (missing feature: {self.feature})"


def constexpr_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a plain Python function a kernel may call on constexpr arguments (e.g.
    ``triton.next_power_of_2``); it runs at compile time."""
    fn.__dsl_constexpr_fn__ = True  # type: ignore[attr-defined]
    return fn


# ----------------------------------------------------------------------------- specialization


@dataclass(frozen=True)
class TensorSpec:
    """Specialization of a tensor argument."""

    dtype: DType
    layout: Layout
    rank: int | None = None  # the caller's rank (x.shape, x.stride); None: not known

    def __str__(self) -> str:
        return f"{self.dtype}:{self.layout}"


@dataclass(frozen=True)
class ScalarSpec:
    """Specialization of a runtime scalar argument."""

    dtype: DType

    def __str__(self) -> str:
        return str(self.dtype)


@dataclass(frozen=True, eq=False)
class ConstSpec:
    """A constexpr (or None) argument, folded into the kernel. Two are equal when
    their values are equal *and of the same types* (recursively through tuples):
    ``128.0 == 128`` and ``True == 1``, but a kernel may build for one and refuse the
    other (``arange(0, 128.0)``), so specializations keyed by them must not mix."""

    value: Any

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConstSpec) and _typed(self.value) == _typed(other.value)

    def __hash__(self) -> int:
        return hash(_typed(self.value))

    def __str__(self) -> str:
        return f"={self.value!r}"


def _typed(value: Any) -> Any:
    """``value`` with the type of each part beside it (a tuple's element-wise; a list
    stays unhashable, as the launch path expects of it)."""
    if type(value) is tuple:
        return (tuple, tuple(_typed(v) for v in value))
    return (type(value), value)


ArgSpec = TensorSpec | ScalarSpec | ConstSpec


def tensor_spec(dtype: DType | str, layout: str = "contiguous", index_bits: int = 32,
                rank: int | None = None) -> TensorSpec:
    """A placeholder for a tensor argument, to lower a kernel without data:
    ``layout`` is "contiguous", "scalar" or "strided[<s>,...]" where each entry is
    0, 1 or ``s`` (a runtime stride), optionally followed by "+base". ``rank`` is the
    caller's number of dimensions, needed by kernels that read ``x.shape``."""
    if isinstance(dtype, str):
        try:
            dtype = dt.by_name(dtype)
        except KeyError:
            raise ValueError(f"tensor_spec: unknown dtype {dtype!r}; the element types are "
                             f"{', '.join(d.name for d in dt.ALL_DTYPES)}") from None
    elif not isinstance(dtype, DType):
        raise TypeError(f"tensor_spec takes a dtype or its name, got {type(dtype).__name__}")
    if layout in ("contiguous", "scalar"):
        return TensorSpec(dtype, Layout(layout, index_bits=index_bits), rank)
    body = layout.removeprefix("strided[")
    if body == layout or "]" not in body:
        raise ValueError(f"bad layout {layout!r}")
    pattern, _, rest = body.partition("]")
    strides = tuple(None if s.strip() == "s" else int(s) for s in pattern.split(","))
    return TensorSpec(dtype, Layout("strided", strides, rest == "+base", index_bits), rank)


# ----------------------------------------------------------------------------- helpers


@dataclass
class _Method:
    """A method of an IR value, e.g. ``x.to``."""

    target: Value
    name: str


def _loop_binding(tree: ast.FunctionDef, name: str) -> ast.For | ast.While | None:
    """The first loop of ``tree`` whose target or body binds ``name`` (a name that,
    not set before it, has no value after it), or None."""
    for loop in ast.walk(tree):
        if isinstance(loop, (ast.For, ast.While)):
            targets = [loop.target] if isinstance(loop, ast.For) else []
            targets += [t for stmt in loop.body for inner in ast.walk(stmt)
                        for t in getattr(inner, "targets", [getattr(inner, "target", None)])]
            if any(isinstance(n, ast.Name) and n.id == name
                   for t in targets if t is not None for n in ast.walk(t)):
                return loop
    return None


def _is_constant(value: Any) -> bool:
    """A compile-time constant (what Triton holds as a ``tl.constexpr``)."""
    return value is None or isinstance(value, (bool, int, float, str, DType))


def _as_triton(value: Any) -> Any:
    """A compile-time argument as a plain Python function called from a Triton kernel
    sees it: a dtype is Triton's (whose ``is_int`` is a method: ``dtype.is_int()``)."""
    if isinstance(value, DType):
        import triton.language as tl  # (a Triton kernel: Triton is installed)

        return getattr(tl, value.triton_name.removeprefix("tl."), value)
    return value


@dataclass(frozen=True)
class _BlockType:
    """A tensor's ``.type`` in a Triton kernel (Triton's ``block_type``): its element
    type (``.scalar``, ``.element_ty``) and shape; compile-time, like a dtype."""

    scalar: DType
    shape: tuple[int, ...]

    @property
    def element_ty(self) -> DType:
        return self.scalar

    def is_block(self) -> bool:
        return bool(self.shape)

    def is_ptr(self) -> bool:
        return False

    def get_block_shapes(self) -> tuple[int, ...]:
        return self.shape


@dataclass
class _ViewStride:
    """``x.stride`` of a tensor argument, awaiting its dimension."""

    view: ViewArg


@dataclass
class _Scope:
    names: dict[str, Any] = field(default_factory=dict)


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _carriable(x: Any) -> bool:
    """Whether a name holding ``x`` before a loop is carried through it: IR values,
    Python scalars, pointers (a tensor argument reassigned in a loop becomes one) and
    tuples of those (carried element by element)."""
    if type(x) is tuple:
        return all(_carriable(e) for e in x)
    return _is_value(x) or sem.is_pyscalar(x) or isinstance(x, (Pointer, BlockPointer,
                                                                  ViewArg, PointerChoice,
                                                                  AddressPointer))


def _flatten(b: Builder, x: Any, like: list[Value] | None = None
             ) -> tuple[list[Value], Callable[[list[Value]], Any]]:
    """The IR values a carried object consists of (typed like ``like``'s, for Python
    scalars) and the function that rebuilds the object from new values."""
    if type(x) is tuple:
        return _flatten_tuple(b, x, like)
    if isinstance(x, ViewArg):
        x = ptrs.as_pointer(b, x)
    if isinstance(x, Pointer):
        pointer = x
        return [x.offset], lambda vs: dataclasses.replace(pointer, offset=vs[0])
    if isinstance(x, PointerChoice):
        views = x.views
        return [x.which, x.offset], lambda vs: PointerChoice(views, vs[0], vs[1])
    if isinstance(x, AddressPointer):
        element = x.element
        return [x.address, x.offset], lambda vs: AddressPointer(vs[0], vs[1], element)
    if isinstance(x, BlockPointer):
        return _flatten_block_pointer(b, x, like)
    if not _is_value(x):
        x = sem.as_value(b, x, like[0].dtype if like else None)
    return [x], lambda vs: vs[0]


def _flatten_block_pointer(b: Builder, bp: BlockPointer, like: list[Value] | None
                           ) -> tuple[list[Value], Callable[[list[Value]], Any]]:
    """``_flatten`` of a block pointer: its origin's values, its offsets, then the shape
    and stride entries it carries (``BlockPointer.carried``)."""
    origin_values, rebuild_origin = _flatten(b, bp.origin)
    n = len(origin_values)
    operands = list(bp.offsets) + [getattr(bp, entry)[dim] for entry, dim in bp.carried]
    values = origin_values + [sem.as_value(b, o, like[n + i].dtype if like else None)
                              for i, o in enumerate(operands)]
    rank = len(bp.offsets)

    def rebuild(vs: list[Value]) -> BlockPointer:
        entries = {"shape": list(bp.shape), "strides": list(bp.strides)}
        for (entry, dim), v in zip(bp.carried, vs[n + rank:]):
            entries[entry][dim] = v
        return dataclasses.replace(bp, origin=rebuild_origin(vs[:n]),
                                   offsets=tuple(vs[n:n + rank]),
                                   shape=tuple(entries["shape"]),
                                   strides=tuple(entries["strides"]))

    return values, rebuild


def _same_expression(a: Any, b: Any) -> bool:
    """Whether two operands (Python numbers or IR values) provably hold the same
    number: equal constants, one value, or results of one side-effect-free op kind with
    equal attributes over operands that are themselves the same expression (a block
    pointer's shape remade from the same arguments in each branch or iteration)."""
    if sem.is_pyscalar(a) or sem.is_pyscalar(b):
        return sem.is_pyscalar(a) and sem.is_pyscalar(b) and a == b
    if a is b:
        return True
    op_a, op_b = a.owner, b.owner
    if op_a is None or op_b is None or op_a.kind != op_b.kind or op_a.regions or \
            op_a.defn.reads_memory or op_a.defn.writes_memory or \
            op_a.results.index(a) != op_b.results.index(b) or \
            len(op_a.operands) != len(op_b.operands) or not _same_constant(op_a.attrs, op_b.attrs):
        return False
    return all(_same_expression(x, y) for x, y in zip(op_a.operands, op_b.operands))


def _differing_entries(a: BlockPointer, b: BlockPointer) -> tuple[tuple[str, int], ...]:
    """The (field, dimension) of the shape and stride entries two block pointers of one
    rank may hold different numbers in."""
    return tuple((entry, dim) for entry in ("shape", "strides")
                 for dim, (x, y) in enumerate(zip(getattr(a, entry), getattr(b, entry)))
                 if not _same_expression(x, y))


def _flatten_tuple(b: Builder, x: tuple[Any, ...], like: list[Value] | None
                   ) -> tuple[list[Value], Callable[[list[Value]], Any]]:
    """``_flatten`` of a tuple: its elements' values one after another (each typed
    like the values of ``like`` at the same place)."""
    values: list[Value] = []
    rebuilds, sizes = [], []
    for element in x:
        got, rebuild = _flatten(b, element, like[len(values):] or None if like else None)
        values += got
        rebuilds.append(rebuild)
        sizes.append(len(got))

    def rebuild_tuple(vs: list[Value]) -> tuple[Any, ...]:
        out, i = [], 0
        for rebuild, size in zip(rebuilds, sizes):
            out.append(rebuild(vs[i:i + size]))
            i += size
        return tuple(out)

    return values, rebuild_tuple


def _only_none_and_colons(node: ast.Subscript) -> bool:
    """``x[None, :]``-style indexing: every item None or a bare ':'."""
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return all((isinstance(i, ast.Constant) and i.value is None) or (
        isinstance(i, ast.Slice) and i.lower is None and i.upper is None and i.step is None)
        for i in items)


def _kind(x: Any) -> str:
    if type(x) is tuple:
        return f"tuple of {len(x)}"
    if isinstance(x, (Pointer, ViewArg, PointerChoice, AddressPointer)):
        return "pointer"
    return "block pointer" if isinstance(x, BlockPointer) else "value"


def _structure_mismatch(a: Any, b: Any) -> str | None:
    """Why ``b`` cannot take ``a``'s place through a loop or out of an ``if`` (None: it
    can). Their IR values are merged, so both must be plain values, or pointers into
    one tensor argument -- block pointers also with one block shape and order, and
    shape and stride entries that are the same expressions, but for those an ``if``
    carries (``_carry_entries``): a loop carries only the offsets and those."""
    if _kind(a) != _kind(b):
        return f"a {_kind(a)} and a {_kind(b)}"
    if type(a) is tuple:
        return next((f"{why} (in a tuple)" for x, y in zip(a, b)
                     if (why := _structure_mismatch(x, y)) is not None), None)
    if _kind(a) == "value":
        return None
    into_a, into_b = (", ".join(f"'{v.name}'" for v in ptrs.views_of(x)) for x in (a, b))
    if into_a != into_b:
        return f"a pointer into {into_a} and a pointer into {into_b}"
    if a.dtype != b.dtype:  # (one cast to another element type)
        return f"a pointer to {a.dtype.name} and a pointer to {b.dtype.name}"
    if isinstance(a, BlockPointer) and (
            a.block_shape != b.block_shape or a.order != b.order or a.carried != b.carried
            or set(_differing_entries(a, b)) - set(a.carried)):
        # (an 'if' carries the entries its branches set differently, _carry_entries;
        # a loop needs them the same expression before and after an iteration)
        return "two block pointers of different shapes, strides, block shapes or orders"
    return None


def _carry_entries(a: Any, b: Any) -> tuple[Any, Any]:
    """Two objects a name holds in the branches of an ``if``, block pointers among them
    (in tuples too) made to carry the shape and stride entries the branches set
    differently, so that the merged block pointer has each branch's own."""
    if type(a) is tuple and type(b) is tuple and len(a) == len(b):
        pairs = [_carry_entries(x, y) for x, y in zip(a, b)]
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    if isinstance(a, BlockPointer) and isinstance(b, BlockPointer) and \
            len(a.shape) == len(b.shape) and len(a.strides) == len(b.strides):
        entries = tuple(sorted(set(a.carried) | set(b.carried) | set(_differing_entries(a, b))))
        return (dataclasses.replace(a, carried=entries), dataclasses.replace(b, carried=entries))
    return a, b


@dataclass(frozen=True)
class _Unmerged:
    """A name a runtime ``if`` reassigned to something that cannot flow out of it (a
    tuple, a constexpr...): using it after the ``if`` is an error, not the old value."""

    name: str
    what: str


def _same_constant(a: Any, b: Any) -> bool:
    """Whether two objects that are not IR values are equal constants."""
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001  (an object whose == is not a plain truth value)
        return False


# The hidden name a 'return v' under a runtime 'if' assigns (not a Python identifier).
_RETURNED = "<returned>"


def _return_assignment(ret: ast.stmt) -> ast.stmt:
    """``return v`` as an assignment of ``v`` to the hidden ``_RETURNED`` name (where the
    'return' was)."""
    assert isinstance(ret, ast.Return) and ret.value is not None
    node = ast.Assign(targets=[ast.Name(_RETURNED, ast.Store())], value=ret.value)
    return ast.copy_location(node, ret)


def _returns(stmts: list[ast.stmt]) -> bool:
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


def _returns_in_loops(node: ast.stmt) -> bool:
    """Whether a 'return' under ``node`` is inside a loop (Triton refuses those)."""
    return any(isinstance(inner, ast.Return) for loop in ast.walk(node)
               if isinstance(loop, (ast.For, ast.While)) for inner in ast.walk(loop))


def _not_set(flag: str) -> ast.expr:
    """``flag == 0``: a constexpr test while no runtime 'return' set it, else an int1
    one (``not`` would need a constexpr in a DSL kernel)."""
    return ast.Compare(left=ast.Name(flag, ast.Load()), ops=[ast.Eq()],
                       comparators=[ast.Constant(0)])


def _set_flag(stmts: list[ast.stmt], flag: str) -> list[ast.stmt]:
    """``stmts`` with each (valueless) 'return' made ``flag = True``, and the statements
    after one that may have returned run only if it did not (``if flag == 0:``)."""
    out: list[ast.stmt] = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Return):
            done = ast.Assign(targets=[ast.Name(flag, ast.Store())], value=ast.Constant(True))
            out.append(ast.fix_missing_locations(ast.copy_location(done, stmt)))
            return out  # the rest is unreachable
        if not any(isinstance(inner, ast.Return) for inner in ast.walk(stmt)):
            out.append(stmt)
            continue
        assert isinstance(stmt, ast.If)  # (loops and definitions holding one: refused)
        out.append(ast.copy_location(ast.If(test=stmt.test, body=_set_flag(stmt.body, flag),
                                            orelse=_set_flag(stmt.orelse, flag)), stmt))
        if stmts[i + 1:]:
            rest = ast.If(test=_not_set(flag), body=_set_flag(stmts[i + 1:], flag), orelse=[])
            out.append(ast.fix_missing_locations(ast.copy_location(rest, stmts[i + 1])))
        return out
    return out


def _is_value(x: Any) -> bool:
    return isinstance(x, Value)


# Triton's loop tuning keywords (tl.range(..., num_stages=2)): accepted, no effect here.
_LOOP_HINTS = frozenset({"num_stages", "loop_unroll_factor", "disallow_acc_multi_buffer",
                         "flatten", "warp_specialize", "disable_licm", "bind_sub_block"})

# Triton's parameters after the pointer, in order, of the memory builtins whose DSL
# signature has an ``index`` there (for positional calls in Triton kernels).
_TRITON_ATOMIC_PARAMS = ("val", "mask", "sem", "scope")
_TRITON_MEMORY_PARAMS = {
    "load": ("mask", "other", "boundary_check", "padding_option", "cache_modifier",
             "eviction_policy", "volatile"),
    "store": ("value", "mask", "boundary_check", "cache_modifier", "eviction_policy"),
    "atomic_cas": ("cmp", "val", "sem", "scope"),
    **{f"atomic_{op}": _TRITON_ATOMIC_PARAMS
       for op in ("add", "max", "min", "xchg", "and", "or", "xor")},
}

# Builtins whose ``input`` may be a pointer block: they apply to its offsets.
_OFFSET_BUILTINS = frozenset({"reshape", "view", "permute", "trans", "expand_dims",
                              "broadcast_to", "multiple_of", "max_contiguous",
                              "max_constancy"})

# Builtins a block also offers as methods (``x.reshape(4, 8)``, ``x.sum(axis=1)``,
# ``x.exp()``): Triton's tensor member functions (``triton.language.core.tensor``).
_VALUE_METHODS = ("reshape", "view", "permute", "trans", "expand_dims", "broadcast_to",
                  "split", "flip", "ravel", "abs", "argmax", "argmin", "associative_scan",
                  "atan2", "cdiv", "ceil", "cos", "cumprod", "cumsum", "erf", "exp", "exp2",
                  "extract_slice", "finitef", "floor", "gather", "get_element", "histogram",
                  "insert_slice", "isfinited", "log", "log2", "max", "min", "reduce", "rint",
                  "rsqrt", "sigmoid", "sin", "softmax", "sort", "sqrt", "sqrt_rn", "sum",
                  "tanh", "xor_sum")


# ----------------------------------------------------------------------------- visitor



class _Visitor:
    def __init__(self, src: KernelSource, builder: Builder, scope: dict[str, Any]) -> None:
        self.src = src
        self.b = builder
        self.scope = scope
        if builder.reads is not None:
            builder.reads.enter(src)
        # Nothing runs after the statements being compiled: a 'return' among them ends
        # the function, so a runtime 'if' may nest one anywhere in its branches.
        self.at_tail = True

    # -- errors and locations

    def error(self, node: ast.AST, message: str) -> DSLCompileError:
        return DSLCompileError(message, self.src.loc(node), self.b.kernel_name)

    def at(self, node: ast.AST) -> None:
        self.b.loc = self.src.loc(node)

    # -- statements

    def run_body(self, stmts: list[ast.stmt]) -> None:
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                if i != len(stmts) - 1:
                    raise self.error(stmt, "statements after 'return' are not supported")
                self.at(stmt)
                raise _Return(self.expr(stmt.value) if stmt.value is not None else None)
            if isinstance(stmt, ast.If):
                # the if compiles the statements after it too: a branch that returns
                # early takes them into the other branch
                self.at(stmt)
                self.stmt_If(stmt, rest=stmts[i + 1:])
                return
            self.stmt(stmt)

    def stmt(self, node: ast.stmt) -> None:
        self.at(node)
        handler = getattr(self, f"stmt_{type(node).__name__}", None)
        if handler is None:
            raise self.error(node, f"unsupported statement: {type(node).__name__} "
                                   f"('{ast.unparse(node).splitlines()[0]}')")
        if not isinstance(node, (ast.For, ast.While)):
            handler(node)
            return
        was_tail, self.at_tail = self.at_tail, False  # the next iteration runs after
        try:
            handler(node)
        finally:
            self.at_tail = was_tail

    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Assert(self, node: ast.Assert) -> None:
        """``assert cond, msg`` is ``device_assert(cond, msg)``, as Triton compiles it."""
        message = self.expr(node.msg) if node.msg is not None else ""
        if not isinstance(message, str):
            raise self.error(node.msg, "an assert message must be a string known at "
                                       f"compile time, got {type(message).__name__}")
        sem.device_assert(self.b, self.expr(node.test), message)

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr(node.value)

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise self.error(node, "a declaration without a value is not supported")
        self.assign(node.target, self.expr(node.value))

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "augmented assignment needs a plain name")
        current = self.lookup(node.target)
        self.assign(node.target, self.binop(node, node.op, current, self.expr(node.value)))

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if self.src.triton and isinstance(value, (tuple, list)) and \
                    len(value) > len(target.elts):
                # Triton's code generator zips the names with the values, so the extra
                # values are dropped (``x, y = a, b if c else d, e`` is three values)
                loc = self.src.loc(target)
                warnings.warn_explicit(f"{len(value)} values assigned to {len(target.elts)} "
                                       "names; the extra values are dropped, as Triton does",
                                       SyntaxWarning, loc.file, loc.line)
                value = tuple(value)[:len(target.elts)]
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise self.error(target, "cannot unpack: the value is not a tuple of "
                                         f"{len(target.elts)} items")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        else:
            raise self.error(target, "only names can be assigned (no subscripts or attributes)")

    def stmt_If(self, node: ast.If, rest: list[ast.stmt] | None = None) -> None:
        cond = self.expr(node.test)
        if isinstance(cond, (ViewArg, Pointer, PointerChoice)) and self.src.triton:
            cond = True  # a pointer argument given (None would be a constexpr None)
        if isinstance(cond, ViewArg):
            raise self.error(node.test, "a tensor argument is not a condition")
        if not _is_value(cond):  # constexpr: only the taken branch is compiled
            taken = node.body if cond else node.orelse
            # a return ends it here; otherwise the statements after the if follow the
            # branch in one list, so an 'if' in the branch sees them as its own rest
            self.run_body(taken if _returns(taken) else taken + (rest or []))
            return
        self.runtime_if(node, cond, rest or [])

    def runtime_if(self, node: ast.If, cond: Value, rest: list[ast.stmt]) -> None:
        """``if`` on a runtime scalar: both branches become regions of an ``if`` op whose
        results are the names either branch assigns. A branch ending in ``return``
        takes the statements after the ``if`` into the other branch."""
        if cond.shape:
            raise self.error(node.test, "'if' needs a scalar condition; use dsl.where() or a "
                                        "mask for a block")
        cond = sem.cast(self.b, cond, dt.int1) if not cond.dtype.is_bool else cond
        after = rest  # (the rearranging below may move it into a branch)
        then_stmts, else_stmts = list(node.body), list(node.orelse)
        if _returns(then_stmts) and _returns(else_stmts):
            then_stmts, else_stmts = then_stmts[:-1], else_stmts[:-1]
            rest = []  # unreachable
        elif _returns(then_stmts):
            then_stmts, else_stmts, rest = then_stmts[:-1], else_stmts + rest, []
        elif _returns(else_stmts):
            then_stmts, else_stmts, rest = then_stmts + rest, else_stmts[:-1], []
        tail = self.at_tail and not rest
        nested = [inner for branch in (node.body, node.orelse)
                  for stmt in (branch[:-1] if _returns(branch) else branch)
                  if not (tail and isinstance(stmt, ast.If))  # (its rest comes with it)
                  for inner in ast.walk(stmt) if isinstance(inner, ast.Return)]
        if nested and all(r.value is None for r in nested) and not _returns_in_loops(node):
            # an early 'return' deeper in: a flag the 'return's set, testing what follows
            flag = f"<returned {node.lineno}:{node.col_offset}>"
            self.scope[flag] = False
            guarded = ast.copy_location(ast.If(test=_not_set(flag), body=after or [ast.Pass()],
                                               orelse=[]), node)
            rewritten = ast.copy_location(ast.If(test=node.test,
                                                 body=_set_flag(node.body, flag),
                                                 orelse=_set_flag(node.orelse, flag)), node)
            ast.fix_missing_locations(guarded)
            self.runtime_if(rewritten, cond, [guarded] if after else [])
            return
        for inner in nested:
            raise self.error(inner, "a 'return' under a runtime 'if' must be the last "
                                    "statement of its branch, or inside an 'if' with "
                                    "nothing after the outer 'if'")
        if not tail:
            for branch in (node.body, node.orelse):
                if _returns(branch) and branch[-1].value is not None:  # type: ignore[attr-defined]
                    raise self.error(branch[-1], "a 'return' of a value under a runtime 'if' "
                                                 "can only end the function")
        # A branch's 'return v' becomes an assignment of a hidden name, merged out of the
        # 'if' like any other; the function then returns the merged value.
        then_stmts, else_stmts = (stmts + [_return_assignment(branch[-1])]
                                  if _returns(branch) and branch[-1].value is not None
                                  else stmts
                                  for stmts, branch in ((then_stmts, node.body),
                                                        (else_stmts, node.orelse)))
        outer = dict(self.scope)
        blocks, scopes = [], []
        was_tail, self.at_tail = self.at_tail, tail
        for stmts in (then_stmts, else_stmts):
            block = Block()
            self.scope.clear()
            self.scope.update(outer)
            self.b.blocks.append(block)
            try:
                self.run_body(stmts)
            except _Return as ret:  # a nested 'return' ended this branch
                if not tail:
                    raise self.error(node, "a 'return' under a runtime 'if' can only end "
                                           "the function") from None
                if ret.value is not None:
                    self.scope[_RETURNED] = ret.value
            finally:
                self.b.blocks.pop()
            blocks.append(block)
            scopes.append(dict(self.scope))
        self.at_tail = was_tail
        returned = [_RETURNED in s for s in scopes]
        if any(returned) and not all(returned):
            raise self.error(node, "a function that returns a value under a runtime 'if' "
                                   "must return one on every path")
        assigned = _assigned_names(then_stmts + else_stmts) | (
            {_RETURNED} if all(returned) else set())
        names, rebuilds, unmerged, merged = [], [], {}, []
        for n in sorted(assigned):
            if not all(n in s for s in scopes) or all(s[n] is outer.get(n) for s in scopes):
                continue
            if tail and n != _RETURNED:
                # nothing runs after this 'if' (a branch that returned took the rest of
                # the function into the other one): a name it assigns is never read, so
                # the branches may leave it different, as Triton lets them
                continue
            objects = [s[n] for s in scopes]
            if not all(_carriable(o) for o in objects):
                kinds = sorted({type(o).__name__ for o in objects if not _carriable(o)})
                unmerged[n] = _Unmerged(n, " or ".join(kinds))
                continue
            objects = _carry_entries(*self._unify_pointers(node, blocks, *objects))
            why = _structure_mismatch(objects[0], objects[1])
            if why is not None:
                raise self.error(node, f"'{n}' is {why} in the two branches of this 'if'")
            if _kind(objects[0]) == "pointer":
                shapes = [[] if isinstance(o, ViewArg) else list(o.shape) for o in objects]
                if shapes[0] != shapes[1]:
                    raise self.error(node, f"'{n}' is a pointer of shape {shapes[0]} in one "
                                           f"branch and of shape {shapes[1]} in the other; "
                                           "give both one shape")
            typed = [o for o in objects if _is_value(o)]
            first, rebuild = _flatten(self.b, objects[0], typed[:1] or None)
            second, _ = _flatten(self.b, objects[1], first)
            if _kind(objects[0]) in ("pointer", "block pointer"):
                # offsets of one pointer: one integer type
                first, second = self._widen_offsets(blocks, first, second)
            if [v.type for v in first] != [v.type for v in second]:
                one = ", ".join(str(v.type) for v in first)
                other = ", ".join(str(v.type) for v in second)
                raise self.error(node, f"'{n}' is {one} in one branch and {other} in the "
                                       "other; give both one type")
            names.append(n)
            rebuilds.append((first, rebuild))
            merged.extend(zip(first, second))
        self.at(node)
        for block, i in zip(blocks, (0, 1)):
            self.b.blocks.append(block)
            self.b.emit("yield", [vals[i] for vals in merged], [])
            self.b.blocks.pop()
        op = self.b.emit("if", [cond], [vals[0].type for vals in merged], regions=blocks)
        self.scope.clear()
        self.scope.update(outer)
        self.scope.update(unmerged)
        self._bind_carried(names, rebuilds, op.results)
        if all(returned):
            raise _Return(self.scope.pop(_RETURNED))
        self.run_body(rest)

    def _unify_pointers(self, node: ast.If, blocks: list[Block], a: Any, b: Any
                        ) -> tuple[Any, Any]:
        """The objects a name holds in the two branches of an ``if``, with pointers into
        different arguments made choices among them (``dsl.pointers.PointerChoice``),
        each emitted in its branch; anything else as it is."""
        if type(a) is tuple and type(b) is tuple and len(a) == len(b):
            pairs = [self._unify_pointers(node, blocks, x, y) for x, y in zip(a, b)]
            return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        if isinstance(a, BlockPointer) and isinstance(b, BlockPointer) and \
                a.block_shape == b.block_shape and a.order == b.order:
            # block pointers over different arguments: their origins become a choice
            origins = self._unify_pointers(node, blocks, a.origin, b.origin)
            return (dataclasses.replace(a, origin=origins[0]),
                    dataclasses.replace(b, origin=origins[1]))
        if not (ptrs.is_pointer(a) and ptrs.is_pointer(b)):
            return a, b
        self.at(node)
        views = ptrs.merged_views(self.b, a, b)
        if views is None:
            return a, b
        out = []
        for block, p in zip(blocks, (a, b)):
            self.b.blocks.append(block)
            try:
                out.append(ptrs.choice_over(self.b, p, views))
            finally:
                self.b.blocks.pop()
        return out[0], out[1]

    def _widen_offsets(self, blocks: list[Block], first: list[Value], second: list[Value]
                       ) -> tuple[list[Value], list[Value]]:
        """A pointer's offsets from the two branches of an ``if``, each pair cast (in its
        branch) to the wider of its two integer types: a pointer moved by an int64
        stride in one branch only is still one pointer."""
        out: tuple[list[Value], list[Value]] = ([], [])
        for a, b in zip(first, second):
            if a.type != b.type and a.shape == b.shape and a.dtype.is_int and b.dtype.is_int:
                wide = sem.promote(a.dtype, b.dtype)
                for i, v in enumerate((a, b)):
                    self.b.blocks.append(blocks[i])
                    out[i].append(sem.cast(self.b, v, wide))
                    self.b.blocks.pop()
            else:
                out[0].append(a)
                out[1].append(b)
        return out

    def stmt_While(self, node: ast.While) -> None:
        """``while`` on a runtime condition: the names the body assigns are carried; the
        condition is a region evaluated on them before each iteration."""
        if node.orelse:
            raise self.error(node, "while ... else is not supported")
        assigned = _assigned_names(node.body)
        carried = [n for n in sorted(assigned) if n in self.scope and _carriable(self.scope[n])]
        parts = [_flatten(self.b, self.scope[n]) for n in carried]
        inits = [v for values, _ in parts for v in values]
        outer = dict(self.scope)
        regions = []
        for part in ("condition", "body"):
            block = Block([Value(v.type, name=n) for n, (values, _) in zip(carried, parts)
                           for v in values])
            self.scope.clear()
            self.scope.update(outer)
            self._bind_carried(carried, parts, block.args)
            self.b.blocks.append(block)
            if part == "condition":
                cond = self.expr(node.test)
                if not _is_value(cond):
                    raise self.error(node.test, "'while' needs a runtime condition (a loop over "
                                                "constexprs is dsl.static_range)")
                if cond.shape:
                    raise self.error(node.test, "'while' needs a scalar condition")
                self.at(node)
                yielded = [sem.cast(self.b, cond, dt.int1)]
            else:
                self.run_body(node.body)
                self._check_uncarried(node, assigned, carried, outer)
                yielded = self._carried_yields(node, carried, parts)
                self.at(node)
            self.b.emit("yield", yielded, [])
            self.b.blocks.pop()
            regions.append(block)
        op = self.b.emit("while", inits, [v.type for v in inits], regions=regions)
        self.scope.clear()
        self.scope.update(outer)
        self._bind_carried(carried, parts, op.results)

    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(node, "for ... else is not supported")
        call = node.iter
        fn = self.expr(call.func) if isinstance(call, ast.Call) else None
        if fn not in (pybuiltins.range, lang.range, lang.static_range, lang.tile_range):
            raise self.error(node.iter, "a for loop must iterate over range(), dsl.range(), "
                                        "dsl.static_range() or dsl.tile_range()")
        assert isinstance(call, ast.Call)
        args = [self.expr(a) for a in call.args]
        step = [k for k in call.keywords if k.arg == "step"]
        if step and fn is not lang.tile_range:  # range(0, n, step=4), as Triton accepts it
            if len(args) != 2:
                raise self.error(call, "range(start, end, step=) needs start and end")
            args.append(self.expr(step[0].value))
        unknown = [k.arg for k in call.keywords if k.arg not in _LOOP_HINTS and k.arg != "step"]
        if unknown:
            raise self.error(call, f"loop ranges take positional bounds (and Triton's tuning "
                                   f"hints {', '.join(sorted(_LOOP_HINTS))}); got {unknown}")
        if fn is lang.static_range:
            self.static_for(node, args)
        elif fn is lang.tile_range:
            if len(args) != 3:
                raise self.error(call, f"tile_range() takes 3 arguments (start, end, block), "
                                       f"got {len(args)}")
            self.tile_for(node, *args)
        else:
            if not 1 <= len(args) <= 3:
                raise self.error(call, f"range() takes 1 to 3 arguments, got {len(args)}")
            start, end, step = (0, args[0], 1) if len(args) == 1 else \
                (args[0], args[1], 1) if len(args) == 2 else tuple(args)
            self.dynamic_for(node, start, end, step, tiled=False)

    def static_for(self, node: ast.For, args: list[Any]) -> None:
        if not all(isinstance(a, int) for a in args):
            raise self.error(node.iter, "static_range() bounds must be constexpr integers")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a plain name")
        if not 1 <= len(args) <= 3 or (len(args) == 3 and args[2] == 0):
            raise self.error(node.iter, "static_range() takes 1 to 3 bounds and a nonzero "
                                        f"step, got {tuple(args)}")
        for i in pybuiltins.range(*args):
            self.scope[node.target.id] = i
            self.run_body(node.body)

    def tile_for(self, node: ast.For, start: Any, end: Any, block: Any) -> None:
        if not isinstance(block, int) or block <= 0:
            raise self.error(node.iter, "tile_range() block must be a positive constexpr integer")
        self.at(node.iter)
        pid = sem.program_index(self.b, "program_id", 0)
        nprog = sem.program_index(self.b, "num_programs", 0)
        if self.b.grid_use == "none":
            self.b.grid_use = "tiled"  # spread over the programs, whatever the grid
        first = sem.binary(self.b, "add", start, sem.binary(self.b, "mul", pid, block))
        step = sem.binary(self.b, "mul", nprog, block)
        self.dynamic_for(node, first, end, step, tiled=True)

    def dynamic_for(self, node: ast.For, start: Any, end: Any, step: Any, tiled: bool) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a plain name")
        self.at(node.iter)
        bounds = [start, end, step]
        for x in bounds:
            if isinstance(x, Value) and (x.shape or not x.dtype.is_int or x.dtype.is_bool):
                raise self.error(node.iter, "loop bounds must be integer scalars")
            if not _is_value(x) and not (isinstance(x, int) and not isinstance(x, bool)):
                raise self.error(node.iter, "loop bounds must be integers")
        if isinstance(step, int) and step == 0:
            raise self.error(node.iter, "range() step must not be zero")
        iv_dtype = dt.int32
        for x in bounds:
            iv_dtype = sem.promote(iv_dtype, x.dtype if _is_value(x) else sem.scalar_dtype(x))
        lo, hi, st = (sem.as_value(self.b, x, iv_dtype) for x in bounds)

        # Loop-carried values: names the body assigns that hold an IR value (or a
        # pointer, flattened into its offsets) before the loop.
        assigned = _assigned_names(node.body)
        carried = [n for n in sorted(assigned) if n in self.scope and _carriable(self.scope[n])]
        parts = [_flatten(self.b, self.scope[n]) for n in carried]
        inits = [v for values, _ in parts for v in values]
        iv = Value(Type(iv_dtype), name=node.target.id)
        body = Block([iv] + [Value(v.type, name=n) for n, (values, _) in zip(carried, parts)
                             for v in values])
        outer = dict(self.scope)
        self.scope[node.target.id] = iv
        self._bind_carried(carried, parts, body.args[1:])
        self.b.blocks.append(body)
        self.run_body(node.body)
        self._check_uncarried(node, assigned, carried, outer)
        yields = self._carried_yields(node, carried, parts)
        self.at(node)
        self.b.emit("yield", yields, [])
        self.b.blocks.pop()
        self.at(node)
        op = self.b.emit("for", [lo, hi, st, *inits], [v.type for v in inits],
                         attrs={"tiled": tiled}, regions=[body])
        # After the loop: carried names hold the results; loop-local names vanish.
        self.scope.clear()
        self.scope.update(outer)
        for res in op.results:
            res.name = None
        self._bind_carried(carried, parts, op.results)

    def _bind_carried(self, names: list[str], parts: list[tuple[list[Value], Any]],
                      values: list[Value]) -> None:
        """Bind each carried name to its object rebuilt from ``values`` (in order)."""
        i = 0
        for n, (init, rebuild) in zip(names, parts):
            self.scope[n] = rebuild(list(values[i:i + len(init)]))
            i += len(init)

    def _check_uncarried(self, node: ast.stmt, assigned: set[str], carried: list[str],
                         outer: dict[str, Any]) -> None:
        """A name the loop body reassigns that held something before the loop that is
        not carried (``None``, a string, a dtype...) must come out of the body as it
        went in: the body was traced once, with the value from before the loop, so
        a later iteration would not see the change."""
        for n in sorted(assigned):
            if n in carried or n not in outer or n not in self.scope:
                continue
            before, after = outer[n], self.scope[n]
            if after is before or _same_constant(before, after):
                continue
            what = after.what if isinstance(after, _Unmerged) else type(after).__name__
            raise self.error(node, f"'{n}' holds a {type(before).__name__} before this loop "
                                   f"and a {what} after an iteration; only IR values, Python "
                                   "scalars, pointers and tuples of them are carried from "
                                   "one iteration to the next")

    def _carried_yields(self, node: ast.stmt, names: list[str],
                        parts: list[tuple[list[Value], Any]]) -> list[Value]:
        """The values an iteration hands to the next one, checked against the types
        they had before the loop."""
        yields: list[Value] = []
        for n, (init, rebuild) in zip(names, parts):
            why = _structure_mismatch(rebuild(init), self.scope[n])
            if why is not None:
                raise self.error(node, f"loop-carried variable '{n}' is {why} before and "
                                       "after an iteration")
            new, _ = _flatten(self.b, self.scope[n], init)
            if len(new) != len(init) or any(a.type != b.type for a, b in zip(new, init)):
                before = ", ".join(str(v.type) for v in init)
                after = ", ".join(str(v.type) for v in new)
                raise self.error(node, f"loop-carried variable '{n}' is {before} before the "
                                       f"loop but {after} after an iteration; give it its "
                                       "final type before the loop")
            yields.extend(new)
        return yields

    # -- expressions

    def expr(self, node: ast.expr) -> Any:
        saved = self.b.loc
        self.at(node)
        handler = getattr(self, f"expr_{type(node).__name__}", None)
        if handler is None:
            raise self.error(node, f"unsupported expression: {type(node).__name__} "
                                   f"('{ast.unparse(node)}')")
        result = handler(node)
        self.b.loc = saved
        return result

    def expr_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def expr_Name(self, node: ast.Name) -> Any:
        return self.lookup(node)

    def lookup(self, node: ast.Name) -> Any:
        name = node.id
        if name in self.scope:
            found = self.scope[name]
            if isinstance(found, _Unmerged):
                raise self.error(node, f"'{name}' was reassigned under a runtime 'if' to a "
                                       f"{found.what}, which cannot flow out of it (only IR "
                                       "values, Python scalars and pointers can)")
            return found
        try:
            found = self.src.resolve_name(name)
        except Unresolved as exc:
            loop = _loop_binding(self.src.tree, name)
            if loop is not None:
                own = isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and \
                    loop.target.id == name
                raise self.error(node, f"'{name}' is bound only inside the loop at line "
                                       f"{self.src.loc(loop).line} and has no value after it "
                                       + ("(Triton compiles a loop variable read after its "
                                          "loop to an undefined value, ub.poison)" if own else
                                          "(Triton: not defined)")
                                       + "; set a variable before the loop") from None
            raise self.error(node, str(exc)) from None
        if self.b.reads is not None:
            self.b.reads.record(self.src, (name,), found)
        if isinstance(found, (np.integer, np.floating, np.bool_)):
            # a NumPy scalar (``S = np.float32(2.0)``): a constant of its own type
            return sem.constant(self.b, found.item(), dt.from_numpy(found.dtype))
        return found

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        return self.attribute(node, self.expr(node.value), node.attr)

    def attribute(self, node: ast.Attribute | ast.Call, base: Any, attr: str) -> Any:
        """``base.attr`` (``node`` is the attribute, or a ``getattr(base, "attr")``
        call: Triton's ``getattr(tl, FUNC)`` with a constexpr name)."""
        if self.src.triton and attr == "value" and (
                base is None or isinstance(base, (DType, str, tuple)) or sem.is_pyscalar(base)):
            # Triton passes constexpr arguments as tl.constexpr objects, whose ``.value``
            # is what they hold (FlagGems: ``dtype.value.is_floating()``); here a
            # compile-time value is itself
            return base
        if self.src.triton and sem.is_pyscalar(base) and (
                attr in ("to", "cast", "dtype") or attr in _VALUE_METHODS):
            # Triton's code generator makes a number assigned to a name a scalar tensor,
            # so ``base_idx = 0; base_idx.to(index.dtype.element_ty)`` is valid there
            base = sem.as_value(self.b, base)
        if _is_value(base):
            if attr in ("to", "cast"):
                return _Method(base, "to")
            if attr == "dtype":
                return base.dtype
            if attr == "shape":
                return base.shape
            if attr == "T":
                return sem.permute(self.b, base, tuple(reversed(range(base.rank))))
            if attr in _VALUE_METHODS:
                return _Method(base, attr)
            if self.src.triton and attr in ("logical_and", "logical_or"):
                return _Method(base, attr)
            if self.src.triton and attr == "numel":
                return math.prod(base.shape)
            if self.src.triton and attr == "type":  # x.type.scalar.is_int()
                return _BlockType(base.dtype, base.shape)
            raise self.error(node, f"a tensor has no attribute '{attr}' (has .to, .dtype, "
                                   ".shape, .T and Triton's tensor methods: "
                                   f"{', '.join('.' + m for m in sorted(_VALUE_METHODS))})")
        if isinstance(base, ptrs.TensorDescriptor):
            if attr in ("load", "store"):
                return _Method(base, f"{attr}_tensor_descriptor")
            if attr == "block_shape":
                return base.block_shape
            if attr in ("dtype", "type"):
                return base.dtype
            raise self.error(node, f"a tensor descriptor has no attribute '{attr}' (has "
                                   ".load, .store, .block_shape, .dtype)")
        if self.src.triton and attr in ("to", "cast") and isinstance(
                base, (Pointer, ViewArg, AddressPointer)):
            return _Method(base, "to")  # x_ptr.to(tl.pointer_type(tl.int32))
        if isinstance(base, (Pointer, BlockPointer, PointerChoice, AddressPointer)):
            if attr in ("dtype", "type"):
                return base.dtype
            raise self.error(node, f"a pointer has no attribute '{attr}' (has .dtype)")
        if isinstance(base, ViewArg):
            if attr in ("dtype", "type"):
                return base.dtype
            if attr in ("shape", "stride"):
                if base.rank is None:
                    raise self.error(node, f"the rank of tensor '{base.name}' is not known "
                                           "(give dsl.tensor_spec(..., rank=) to lower it)")
                return base.dims if attr == "shape" else _ViewStride(base)
            raise self.error(node, f"a tensor argument has no attribute '{attr}' (has .dtype, "
                                   ".shape, .stride(i))")
        if isinstance(base, DType) and attr in ("is_int", "is_bool") and self.src.triton:
            # methods of Triton's dtype (``x.dtype.is_int()``) that are properties here
            return types.MethodType(lambda dtype, name=attr: getattr(dtype, name), base)
        if isinstance(base, _BlockType):
            if attr.startswith("_") or not hasattr(base, attr):
                raise self.error(node, f"a tensor's type has no attribute '{attr}' (has "
                                       ".scalar, .element_ty, .shape, .is_block(), "
                                       ".get_block_shapes())")
            return getattr(base, attr)
        if inspect.ismodule(base) or isinstance(base, (DType, type)):
            try:
                found = self.src.resolve_attribute(base, attr)
            except Unresolved as exc:
                raise self.error(node, str(exc)) from None
            if isinstance(node, ast.Attribute):
                self._record_chain(node, found)
            elif isinstance(node.args[0], ast.Name) and node.args[0].id not in self.scope \
                    and self.b.reads is not None:
                self.b.reads.record(self.src, (node.args[0].id, attr), found)
            return found
        raise self.error(node, f"attribute access on {type(base).__name__} is not supported")

    def _record_chain(self, node: ast.Attribute, found: Any) -> None:
        """Record ``a.b.c`` read from a name outside the kernel (``dsl.ir_cache``)."""
        if self.b.reads is None:
            return
        path: list[str] = []
        part: ast.expr = node
        while isinstance(part, ast.Attribute):
            path.append(part.attr)
            part = part.value
        if isinstance(part, ast.Name) and part.id not in self.scope:
            self.b.reads.record(self.src, (part.id, *reversed(path)), found)

    def expr_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.expr(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_JoinedStr(self, node: ast.JoinedStr) -> str:
        """An f-string (a ``static_assert`` message, say), formatted at compile time:
        each field must be a compile-time value, as in Triton."""
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
                continue
            assert isinstance(part, ast.FormattedValue)
            value = self.expr(part.value)
            if _is_value(value) or isinstance(value, (Pointer, BlockPointer, ViewArg)):
                raise self.error(part.value, "an f-string can only format compile-time values "
                                             f"(constexprs), not the runtime value "
                                             f"'{ast.unparse(part.value)}'")
            if part.conversion != -1:
                value = {"s": str, "r": repr, "a": ascii}[chr(part.conversion)](value)
            spec = self.expr(part.format_spec) if part.format_spec is not None else ""
            parts.append(format(value, spec))
        return "".join(parts)

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.expr(node.test)
        if not _is_value(cond):
            return self.expr(node.body if cond else node.orelse)
        if not self.src.triton:
            raise self.error(node.test, "a conditional expression needs a constexpr condition; "
                                        "use dsl.where() for a runtime condition")
        if not cond.shape and any(isinstance(n, ast.Call) for side in (node.body, node.orelse)
                                  for n in ast.walk(side)):
            return self.if_expression(node, cond)
        # sides without calls have no effects: both are evaluated and selected
        x, y = self.expr(node.body), self.expr(node.orelse)
        if ptrs.is_pointer(x) and ptrs.is_pointer(y):
            return ptrs.select(self.b, cond, x, y)
        if ptrs.is_pointer(x) or ptrs.is_pointer(y):
            raise self.error(node, "a conditional expression of a pointer and a "
                                   f"{type(y if ptrs.is_pointer(x) else x).__name__}")
        return sem.where(self.b, cond, x, y)

    def if_expression(self, node: ast.IfExp, cond: Value) -> Any:
        """``a if cond else b`` on a runtime scalar whose sides call something: an ``if``
        whose branches each evaluate one side, as Triton compiles it, so the side not
        taken does not run (``tl.load(p) if i < n else 0.0`` loads only below n)."""
        name = ast.unparse(node)  # (the merged name errors mention)
        branches = [[ast.copy_location(ast.Assign(
            targets=[ast.copy_location(ast.Name(name, ast.Store()), side)], value=side), side)]
            for side in (node.body, node.orelse)]
        stmt = ast.copy_location(ast.If(test=node.test, body=branches[0],
                                        orelse=branches[1]), node)
        was_tail, self.at_tail = self.at_tail, False
        try:
            self.runtime_if(stmt, cond, [])
        finally:
            self.at_tail = was_tail
        return self.scope.pop(name, None)  # (None: both sides gave nothing, a store say)

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        return self.binop(node, node.op, self.expr(node.left), self.expr(node.right))

    def binop(self, node: ast.AST, op: ast.operator, lhs: Any, rhs: Any) -> Any:
        if (ptrs.is_pointer(lhs) or ptrs.is_pointer(rhs)) and type(op) in _BINOPS:
            return self.pointer_arithmetic(node, _BINOPS[type(op)], lhs, rhs)
        if not _is_value(lhs) and not _is_value(rhs):
            fn = _PY_BINOPS.get(type(op))
            if fn is None:
                raise self.error(node, f"unsupported operator {type(op).__name__}")
            try:
                return fn(lhs, rhs)  # rule 6: constexpr folding
            except Exception as exc:
                raise self.error(node, f"constexpr arithmetic failed: {exc}") from None
        name = _BINOPS.get(type(op))
        if name is None:
            raise self.error(node, f"operator {type(op).__name__} is not supported on tensors")
        for side in (lhs, rhs):
            if not _is_value(side) and not sem.is_pyscalar(side):
                # (a NumPy scalar given as a constexpr: Triton refuses it too)
                hint = f" (a NumPy scalar, {side!r}: pass a Python int, float or bool)" \
                    if isinstance(side, np.generic) else ""
                raise self.error(node, f"cannot apply an operator to {type(side).__name__}{hint}")
        return sem.binary(self.b, name, lhs, rhs)

    def pointer_arithmetic(self, node: ast.AST, name: str, lhs: Any, rhs: Any) -> Any:
        """``ptr + offsets``, ``offsets + ptr``, ``ptr - offsets`` and ``ptr - ptr``."""
        if name == "add" and ptrs.is_pointer(lhs) and not ptrs.is_pointer(rhs):
            return ptrs.offset_by(self.b, lhs, rhs)
        if name == "add" and ptrs.is_pointer(rhs) and not ptrs.is_pointer(lhs):
            return ptrs.offset_by(self.b, rhs, lhs)
        if name == "sub" and ptrs.is_pointer(lhs):
            if ptrs.is_pointer(rhs):
                return ptrs.difference(self.b, lhs, rhs)
            return ptrs.offset_by(self.b, lhs, rhs, subtract=True)
        raise self.error(node, f"operator '{elementwise(name).symbol}' is not defined on pointers (a "
                               "pointer moves by + and - of integer offsets)")

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        x = self.expr(node.operand)
        if not _is_value(x):
            ops = {ast.USub: lambda a: -a, ast.UAdd: lambda a: +a, ast.Not: lambda a: not a,
                   ast.Invert: lambda a: ~a}
            return ops[type(node.op)](x)
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(node.op, ast.Not):
            if self.src.triton:  # Triton's tensor.__not__ is ~ (bitwise; logical on int1)
                return sem.unary(self.b, "invert", x)
            raise self.error(node, "'not' needs a constexpr; use ~ to invert a mask")
        return sem.unary(self.b, "neg" if isinstance(node.op, ast.USub) else "invert", x)

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        values = []
        for operand in node.values:
            value = self.expr(operand)
            if not values and not _is_value(value) and not ptrs.is_pointer(value):
                # a leading constexpr decides as in Python (and in Triton, whose
                # constexpr and/or short-circuits): ``if HAS_INIT and (v != 0)`` with
                # HAS_INIT false is a constexpr false, its branch never compiled
                if bool(value) != isinstance(node.op, ast.And):
                    return value
                continue
            values.append(value)
        if not values:
            return value  # (every operand a constexpr that did not decide: the last)
        if any(_is_value(v) for v in values) and self.src.triton:
            # Triton's frontend reads and/or of tensors as logical_and/logical_or
            name = "and" if isinstance(node.op, ast.And) else "or"
            bools = [sem.binary(self.b, "ne", v, 0) if not (_is_value(v) and v.dtype.is_bool)
                     else v for v in values]
            result = bools[0]
            for v in bools[1:]:
                result = sem.binary(self.b, name, result, v)
            return result
        if any(_is_value(v) for v in values):
            raise self.error(node, "'and'/'or' need constexpr operands; use & and | on masks")
        result = values[0]
        for v in values[1:]:
            result = (result and v) if isinstance(node.op, ast.And) else (result or v)
        return result

    def expr_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise self.error(node, "chained comparisons are not supported; combine with &")
        lhs, rhs = self.expr(node.left), self.expr(node.comparators[0])
        op = node.ops[0]
        if ptrs.is_pointer(lhs) or ptrs.is_pointer(rhs):
            return self.pointer_comparison(node, op, lhs, rhs)
        if not _is_value(lhs) and not _is_value(rhs):
            fn = _PY_CMPOPS.get(type(op))
            if fn is None:
                raise self.error(node, f"unsupported comparison {type(op).__name__}")
            return fn(lhs, rhs)
        name = _CMPOPS.get(type(op))
        if name is None:
            raise self.error(node, f"comparison {type(op).__name__} is not supported on tensors")
        return sem.binary(self.b, name, lhs, rhs)

    def pointer_comparison(self, node: ast.AST, op: ast.cmpop, lhs: Any, rhs: Any) -> Any:
        if isinstance(op, (ast.Is, ast.IsNot)) and (lhs is None or rhs is None):
            return (lhs is None) == (rhs is None) if isinstance(op, ast.Is) else \
                (lhs is None) != (rhs is None)  # ``x_ptr is None``: a constexpr test
        name = _CMPOPS.get(type(op))
        if name is None or not (ptrs.is_pointer(lhs) and ptrs.is_pointer(rhs)):
            raise self.error(node, "a pointer compares only with another pointer (==, !=, <, "
                                   "<=, >, >=)")
        return ptrs.compare(self.b, name, lhs, rhs)

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        if isinstance(base, ViewArg) and self.src.triton and _only_none_and_colons(node):
            base = ptrs.as_pointer(self.b, base)  # Z[None, :]: a scalar pointer's block
        if isinstance(base, (Pointer, PointerChoice, AddressPointer)):  # ptrs[:, None]: offsets
            return ptrs.map_offsets(self.b, base, lambda off: self.subscript(node, off))
        if isinstance(base, ViewArg):
            raise self.error(node, f"a tensor argument is not indexed: load it "
                                   f"(dsl.load({ast.unparse(node.value)}, index), or "
                                   f"tl.load({ast.unparse(node.value)} + offsets) in Triton)")
        if not _is_value(base):
            index = self.expr(node.slice)
            try:
                return base[index]
            except Exception as exc:
                raise self.error(node, f"constexpr indexing failed: {exc}") from None
        return self.subscript(node, base)

    def subscript(self, node: ast.Subscript, base: Value) -> Value:
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        out, dim = base, 0
        for item in items:
            if isinstance(item, ast.Constant) and item.value is None:
                # (a ':' past the last axis passed in a Triton kernel: a scalar's
                # s[:, None] is Triton's one-element block, as s[None] is)
                out = sem.expand_dims(self.b, out, min(dim, out.type.rank))
                dim += 1
            elif isinstance(item, ast.Slice) and item.lower is None and item.upper is None \
                    and item.step is None:
                dim += 1
            else:
                raise self.error(item, "block indexing supports only ':' and None "
                                       "(e.g. x[:, None])")
        if dim > out.type.rank and not self.src.triton:
            # fewer: the trailing axes are kept whole (x[None, :]); more: Triton lets a
            # ':' past the last axis pass (test_core's Z[None, None, :] of a scalar)
            nones = sum(isinstance(i, ast.Constant) and i.value is None for i in items)
            raise self.error(node, f"too many indices: {dim - nones} ':' for a block of "
                                   f"{out.type.rank - nones} dimensions")
        return out

    def expr_Call(self, node: ast.Call) -> Any:
        fn = self.expr(node.func)
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            raise self.error(node, "*args and **kwargs are not supported in calls")
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        self.at(node)
        if isinstance(fn, _ViewStride):
            if len(args) != 1 or kwargs or not isinstance(args[0], int) or \
                    not -len(fn.view.dim_strides) <= args[0] < len(fn.view.dim_strides):
                raise self.error(node, f"{fn.view.name}.stride() takes one constexpr dimension "
                                       f"in [0, {len(fn.view.dim_strides)})")
            return fn.view.dim_strides[args[0]]
        if isinstance(fn, _Method) and fn.name in ("logical_and", "logical_or"):
            if len(args) != 1 or kwargs:
                raise self.error(node, f"{fn.name}() takes one other tensor")
            pair = [sem.binary(self.b, "ne", x, 0) for x in (fn.target, args[0])]
            return sem.binary(self.b, "and" if fn.name == "logical_and" else "or", *pair)
        if fn is lang.constexpr:  # tl.constexpr(value) inside a Triton kernel
            if len(args) != 1 or kwargs or (_is_value(args[0]) and not self.src.triton):
                raise self.error(node, "constexpr() wraps one compile-time value")
            # (Triton's constexpr() holds a runtime value too, which its operators unwrap:
            # xformers' split-K attention wraps a loaded bound)
            return args[0]
        if isinstance(fn, _Method):
            method = self.member_function(node, fn.name)
            if getattr(method, "__dsl_builtin__", False):
                return self.call_builtin(node, method, [fn.target, *args], kwargs)
            fn, args = method, [fn.target, *args]  # (a helper kernel, say: called below)
        if fn is host_broadcast_to:  # inside a kernel, dsl.broadcast_to is the builtin
            fn = lang.broadcast_to
        if getattr(fn, "__dsl_builtin__", False):
            return self.call_builtin(node, fn, args, kwargs)
        if isinstance(fn, InlinableKernel):
            return self.inline_call(node, fn, args, kwargs)
        if isinstance(fn, Unsupported):
            raise self.error(node, fn.message())
        if fn is DType and len(args) == 1 and isinstance(args[0], str) and not kwargs:
            # tl.dtype(f"uint{bits}"): Triton's dtype by its name, at compile time
            try:
                return dt.by_name(args[0])
            except (KeyError, ValueError):
                raise self.error(node, f"tl.dtype({args[0]!r}): not an element type of this "
                                       "project") from None
        if inspect.ismethod(fn) and isinstance(fn.__self__, (DType, _BlockType)):
            # x.dtype.is_floating(), x.type.is_block()
            return fn(*args, **kwargs)
        if getattr(fn, "__dsl_constexpr_fn__", False):
            if any(_is_value(a) for a in args) or any(_is_value(a) for a in kwargs.values()):
                raise self.error(node, f"{fn.__name__}() takes constexpr arguments only")
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                raise self.error(node, f"{fn.__name__}() failed: {exc}") from None
        if fn is pybuiltins.isinstance and len(args) == 2 and not kwargs:
            return self.is_instance(node, *args)
        if fn is pybuiltins.getattr and len(args) == 2 and not kwargs and \
                isinstance(args[1], str):  # getattr(tl, FUNC): a constexpr attribute name
            return self.attribute(node, args[0], args[1])
        if fn in _PY_FUNCS:
            if fn is pybuiltins.abs and args and _is_value(args[0]):
                return self.call_builtin(node, lang.abs, args, kwargs)
            if self.src.triton and fn in (pybuiltins.min, pybuiltins.max) and len(args) == 2 \
                    and not kwargs and any(_is_value(a) for a in args):
                # Triton's frontend reads min/max of tensors as minimum/maximum
                return self.call_builtin(node, lang.minimum if fn is pybuiltins.min else
                                         lang.maximum, args, {})
            if any(_is_value(a) for a in args):
                raise self.error(node, f"{fn.__name__}() is for constexprs; use "
                                       f"dsl.{'maximum' if fn is pybuiltins.max else 'minimum'}"
                                       "() on tensors" if fn in (pybuiltins.max, pybuiltins.min)
                                 else f"{fn.__name__}() is for constexprs; use .to() on tensors")
            return fn(*args, **kwargs)
        if isinstance(fn, type) and issubclass(fn, Exception):
            raise self.error(node, "raising exceptions is not supported in kernels")
        if self.src.triton and isinstance(fn, types.FunctionType):
            return self.call_python_function(node, fn, args, kwargs)
        raise self.error(node.func, f"'{ast.unparse(node.func)}' is not a DSL builtin or a "
                                    "@dsl.jit function")

    def call_python_function(self, node: ast.Call, fn: Callable[..., Any], args: list[Any],
                             kwargs: dict[str, Any]) -> Any:
        """A plain Python function a Triton kernel calls: Triton's code generator runs
        it at compile time (FlagGems' ``@tl.constexpr def get_scan_accum_type(dtype)``).
        A function marked a builtin (``fn.__triton_builtin__``: PyTorch Inductor's
        ``@triton_builtin`` helpers) gets constexprs as ``tl.constexpr`` objects and a
        ``_builder``, any other gets them unwrapped; runtime values are passed as
        they are (a helper may test or return them, not compute with them)."""
        if getattr(fn, "__triton_builtin__", False):
            import triton.language as tl  # (a Triton kernel: Triton is installed)

            def convert(a: Any) -> Any:
                return tl.constexpr(_as_triton(a)) if _is_constant(a) else a

            takes = inspect.signature(fn).parameters
            extra = {name: None for name in ("_builder", "_semantic") if name in takes}
        else:
            convert, extra = _as_triton, {}
        try:
            result = fn(*map(convert, args), **{k: convert(a) for k, a in kwargs.items()},
                        **extra)
        except Exception as exc:
            raise self.error(node, f"{fn.__name__}() failed at compile time: "
                                   f"{type(exc).__name__}: {exc}") from None
        return self.src.foreign(result)

    def is_instance(self, node: ast.Call, obj: Any, classes: Any) -> bool:
        """``isinstance(obj, classes)`` at compile time: ``tl.tensor`` is any runtime
        value or pointer, ``tl.constexpr`` any compile-time one, a Python class is
        itself (a runtime value is no ``int``)."""
        runtime = _is_value(obj) or ptrs.is_pointer(obj)
        answer = False
        for cls in classes if isinstance(classes, tuple) else (classes,):
            if cls is lang.tensor:
                answer |= runtime
            elif cls is lang.constexpr:
                answer |= not runtime
            elif isinstance(cls, type):
                answer |= not runtime and pybuiltins.isinstance(obj, cls)
            elif isinstance(cls, Unsupported):
                raise self.error(node, cls.message())
            else:
                raise self.error(node, f"isinstance() takes classes, got {cls!r}")
        return answer

    def call_builtin(self, node: ast.Call, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        triton_names = _TRITON_MEMORY_PARAMS.get(fn.__name__) if self.src.triton else None
        if triton_names is not None and len(args) > 1:
            # Triton's memory ops take everything after the pointer positionally in their
            # own order (``atomic_cas(ptr, cmp, val, sem)``); the DSL's have an index there
            if len(args) - 1 > len(triton_names):
                raise self.error(node, f"{fn.__name__}() takes at most {len(triton_names) + 1} "
                                       f"positional arguments ({len(args)} given)")
            for name, value in zip(triton_names, args[1:]):
                if name in kwargs:
                    raise self.error(node, f"{fn.__name__}() got multiple values for "
                                           f"argument '{name}'")
                kwargs[name] = value
            args = args[:1]
        try:
            bound = _signature(fn).bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(node, f"{fn.__name__}(): {exc}") from None
        bound.apply_defaults()
        handler = _BUILTINS.get(fn.__name__)
        if handler is None:
            raise self.error(node, f"dsl.{fn.__name__}() cannot be called here")
        arguments = bound.arguments
        if fn.__name__ in _OFFSET_BUILTINS and isinstance(
                arguments.get("input"), (Pointer, PointerChoice, AddressPointer)):
            # a shape op or hint on a pointer block applies to its offsets
            return ptrs.map_offsets(self.b, arguments["input"], lambda offset: handler(
                self, node, **{**arguments, "input": offset}))
        if fn.__name__ == "where" and (ptrs.is_pointer(arguments["x"]) or
                                       ptrs.is_pointer(arguments["y"])):
            return ptrs.select(self.b, arguments["condition"], arguments["x"], arguments["y"])
        return handler(self, node, **arguments)

    def combine(self, node: ast.Call, kind: str, input: Any, axis: Any, combine_fn: Any,
                attrs: dict[str, Any]) -> Any:
        """``reduce``/``associative_scan`` with a ``@dsl.jit`` combine function: the
        function is inlined once on scalars into an isolated region (accumulators,
        then elements) that yields the new accumulators."""
        what = "reduce" if kind == "reduce_fn" else "associative_scan"
        single = not isinstance(input, (tuple, list))
        values = [sem.as_value(self.b, x) for x in ((input,) if single else input)]
        if not values or any(not v.shape or v.shape != values[0].shape for v in values):
            raise self.error(node, f"{what}() needs one block, or a tuple of blocks of one "
                                   "shape")
        if not isinstance(combine_fn, InlinableKernel):
            raise self.error(node, f"{what}() combine_fn must be a @dsl.jit function")
        if not isinstance(axis, int) or isinstance(axis, bool) or \
                not -values[0].rank <= axis < values[0].rank:
            raise self.error(node, f"{what}() axis {axis!r} out of range for shape "
                                   f"{list(values[0].shape)}")
        axis %= values[0].rank
        elements = [Type(v.dtype) for v in values]
        region = Block([Value(t, name=f"acc{i}") for i, t in enumerate(elements)] +
                       [Value(t, name=f"x{i}") for i, t in enumerate(elements)])
        self.b.blocks.append(region)
        returned = self.inline_call(node, combine_fn, list(region.args), {})
        returned = (returned,) if not isinstance(returned, (tuple, list)) else tuple(returned)
        if len(returned) != len(values):
            raise self.error(node, f"{what}() combine_fn returns {len(returned)} value(s) for "
                                   f"{len(values)} input(s)")
        yielded = [sem.as_value(self.b, r, t.dtype) for r, t in zip(returned, elements)]
        if any(y.shape for y in yielded):
            raise self.error(node, f"{what}() combine_fn must return scalars")
        self.at(node)
        self.b.emit("yield", yielded, [])
        self.b.blocks.pop()
        shapes = [v.shape[:axis] + v.shape[axis + 1:] if kind == "reduce_fn" else v.shape
                  for v in values]
        op = self.b.emit(kind, values, [Type(v.dtype, s) for v, s in zip(values, shapes)],
                         attrs={"axis": axis, **attrs}, regions=[region])
        return op.results[0] if single else tuple(op.results)

    def member_function(self, node: ast.AST, name: str) -> Any:
        """What ``x.name(...)`` of a block calls, with ``x`` first: the builtin of that
        name, or in a Triton kernel whatever ``tl.name`` is mapped to."""
        if name == "to":
            return lang.cast
        if self.src.triton:
            import triton.language as tl  # a Triton kernel: triton is installed

            try:
                return self.src.resolve_attribute(tl, name)
            except Unresolved as exc:
                raise self.error(node, str(exc)) from None
        method = getattr(lang, name, None)
        if method is None:
            raise self.error(node, f"a tensor has no method '{name}' in this language")
        return method

    def inline_call(self, node: ast.Call, callee: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        src = callee.source
        try:
            bound = src.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(node, f"{src.name}(): {exc}") from None
        bound.apply_defaults()
        for name in src.constexpr_params if not src.triton else ():
            # (Triton passes a tensor given for a helper's constexpr parameter through)
            if _is_value(bound.arguments[name]):
                raise self.error(node, f"{src.name}(): argument '{name}' must be constexpr")
        if any(source is src for source, _ in self.b.inlining):
            chain = " -> ".join([*(name for _, name in self.b.inlining), src.name])
            raise self.error(node, f"{src.name}() calls itself ({chain}): jit functions are "
                                   "inlined, so recursion cannot end (Triton refuses it too)")
        visitor = _Visitor(src, self.b, dict(bound.arguments))
        self.b.inlining.append((src, src.name))
        try:
            visitor.run_body(src.tree.body)
        except _Return as ret:
            return ret.value
        finally:
            self.b.inlining.pop()
        return None


def _assigned_names(stmts: list[ast.stmt]) -> set[str]:
    """The names ``stmts`` assign to (a fresh set). Each statement's own names are
    found once and kept on its node: a loop body is asked again by every
    specialization and by the loops around it."""
    names: set[str] = set()
    for stmt in stmts:
        own = getattr(stmt, "_dsl_assigned", None)
        if own is None:
            own = frozenset(node.id for node in ast.walk(stmt)
                            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))
            stmt._dsl_assigned = own  # type: ignore[attr-defined]
        names |= own
    return names


_SIGNATURES: dict[Any, inspect.Signature] = {}


def _signature(fn: Any) -> inspect.Signature:
    """``inspect.signature`` of a builtin, computed once (~50 us each, dozens of calls
    per kernel)."""
    sig = _SIGNATURES.get(fn)
    if sig is None:
        sig = _SIGNATURES[fn] = inspect.signature(fn)
    return sig


# ----------------------------------------------------------------------------- builtins


def _const_int(v: _Visitor, node: ast.AST, value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise v.error(node, f"{what} must be a constexpr integer")
    return value


def _dtype_arg(v: _Visitor, node: ast.AST, value: Any) -> DType:
    if isinstance(value, Unsupported):  # a Triton dtype this project lacks (fp8)
        raise v.error(node, value.message())
    if not isinstance(value, DType):
        raise v.error(node, f"expected a dtype such as dsl.float32, got {value!r}")
    return value


def _view_arg(v: _Visitor, node: ast.AST, value: Any, fn: str) -> ViewArg:
    if not isinstance(value, ViewArg):
        what = "None" if value is None else type(value).__name__
        raise v.error(node, f"{fn}() needs a tensor argument, got {what}")
    return value


def _math(name: str) -> Callable[..., Any]:
    return lambda v, node, x: sem.unary(v.b, name, x)


def _rounding(name: str) -> Callable[..., Any]:
    """``floor``/``ceil``: in Triton kernels an integer operand is returned as it is
    (triton-ascend rounds integers to themselves); DSL kernels ask for a float."""
    def handler(v: _Visitor, node: ast.AST, x: Any) -> Any:
        if v.b.triton_rules and _is_value(x) and not x.dtype.is_float:
            return x
        return sem.unary(v.b, name, x)

    return handler


def _composed_unary(build: Callable[..., Any]) -> Callable[..., Any]:
    """A ``dsl.mathlib`` function of one operand as a builtin handler."""
    return lambda v, node, x: build(v.b, x)


def _composed_binary(build: Callable[..., Any]) -> Callable[..., Any]:
    """A ``dsl.mathlib`` function of two operands as a builtin handler (the operands
    in the order of the builtin's stub: ``atan2(y, x)``, ``hypot(x, y)``)."""
    return lambda v, node, **operands: build(v.b, *operands.values())


def _binary_builtin(name: str) -> Callable[..., Any]:
    return lambda v, node, x, y: sem.binary(v.b, name, x, y)


def _reduce(name: str) -> Callable[..., Any]:
    def handler(v: _Visitor, node: ast.AST, input: Any, axis: Any, keep_dims: Any,
                return_indices: Any = False, return_indices_tie_break_left: Any = True,
                propagate_nan: Any = None) -> Any:
        if axis is not None:
            axis = _const_int(v, node, axis, f"{name}() axis")
        if return_indices:
            return sem.arg_reduce(v.b, "argmax" if name == "max" else "argmin", input, axis,
                                  bool(return_indices_tie_break_left), bool(keep_dims))
        if propagate_nan:
            return sem.reduce_propagating_nan(v.b, name, input, axis, bool(keep_dims))
        return sem.reduce(v.b, name, input, axis, bool(keep_dims))
    return handler


def _arg_reduce(name: str) -> Callable[..., Any]:
    def handler(v: _Visitor, node: ast.AST, input: Any, axis: Any, tie_break_left: Any,
                keep_dims: Any) -> Any:
        if axis is not None:
            axis = _const_int(v, node, axis, f"{name}() axis")
        return sem.arg_reduce(v.b, name, input, axis, bool(tie_break_left), bool(keep_dims))[1]
    return handler


def _shape_arg(shape: Any) -> Any:
    """``f(x, 4, 8)`` and ``f(x, (4, 8))`` both name the shape (4, 8), as in Triton."""
    if isinstance(shape, tuple) and len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def _expand_dims(v: _Visitor, node: ast.AST, x: Any, axis: Any) -> Any:
    value = sem.as_value(v.b, x)
    axes = [axis] if isinstance(axis, int) else list(axis)
    rank = value.rank + len(axes)
    given = [_const_int(v, node, a, "expand_dims() axis") for a in axes]
    for a in given:
        if not -rank <= a < rank:
            raise v.b.error(f"expand_dims() axis {a} out of range: expected {-rank} <= axis "
                            f"< {rank} for a {value.rank}-d block and {len(axes)} new axes")
    if len({a % rank for a in given}) != len(given):
        raise v.b.error(f"expand_dims() axes {given} name one axis twice")
    for a in sorted(a % rank for a in given):
        value = sem.expand_dims(v.b, value, a)
    return value


def _pointer_form(v: _Visitor, target: Any, index: Any) -> bool:
    """True when a memory builtin addresses through a pointer (Triton's form): a
    pointer block, or a bare tensor argument with no index (or in a Triton kernel,
    where every tensor argument is a pointer)."""
    if isinstance(target, (Pointer, PointerChoice, AddressPointer)):
        return True
    return isinstance(target, ViewArg) and (index is None or v.src.triton)


def _shifted(v: _Visitor, node: ast.AST, what: str, first: Any, second: Any, third: Any
             ) -> tuple[Any, Any]:
    """Triton's positional order after a pointer: the argument the logical form
    calls ``index`` is the next one (``load(ptrs, mask, other)``, ``store(ptrs,
    value, mask)``), so ``(index, a, b)`` becomes ``(index, a or b)``."""
    if first is None:
        return second, third
    if second is not None and third is not None:
        raise v.error(node, f"{what}() through a pointer got one positional argument too many")
    return first, second if second is not None else third


def _index_select(v: _Visitor, *args: Any) -> Value:
    addr, mask = ptrs.index_select(v.b, *args)
    return sem.load(v.b, addr, None, mask, 0 if mask is not None else None)


def _embedding_gather(v: _Visitor, *args: Any) -> Value:
    addr, mask = ptrs.embedding_gather(v.b, *args)
    return sem.load(v.b, addr, None, mask, 0)


def _descriptor_access(v: _Visitor, node: ast.AST, desc: Any, offsets: Any, value: Any
                       ) -> Value | None:
    """A tensor descriptor's block at ``offsets``: loaded (``value`` None, 0 outside the
    parent) or stored, every dimension bounds-checked."""
    bp, every_dim = ptrs.descriptor_block(v.b, desc, offsets)
    if value is None:
        return _load(v, node, bp, None, None, None, every_dim, "zero")
    return _store(v, node, bp, None, value, None, every_dim)


def _load(v: _Visitor, node: ast.AST, pointer: Any, index: Any, mask: Any, other: Any,
          boundary_check: Any, padding_option: Any) -> Value:
    if isinstance(pointer, BlockPointer):
        if index is not None or mask is not None or other is not None:
            raise v.error(node, "load() of a block pointer takes boundary_check= and "
                                "padding_option=, not a mask or other=")
        addr, m, fill = ptrs.block_access(v.b, pointer, boundary_check, padding_option)
        if isinstance(addr, AddressPointer):  # (a parent tensor cast from an integer)
            return sem.load_address(v.b, addr.address, addr.offset, addr.element, m, fill)
        if isinstance(addr, PointerChoice):  # (parent tensors an ``if`` chose between)
            return ptrs.through_choice(v.b, addr, m, lambda at, narrowed: sem.load(
                v.b, at, None, narrowed, fill))
        return sem.load(v.b, addr, None, m, fill)
    _no_boundary_check(v, node, "load", boundary_check)
    if _pointer_form(v, pointer, index):
        mask, other = _shifted(v, node, "load", index, mask, other)
        if isinstance(pointer, AddressPointer):
            return sem.load_address(v.b, pointer.address, pointer.offset, pointer.element, mask,
                                    other)
        if isinstance(pointer, PointerChoice):
            if other is not None and mask is None:
                raise v.error(node, "load() got other= without mask=")
            return ptrs.through_choice(v.b, pointer, mask, lambda addr, narrowed: sem.load(
                v.b, addr, None, narrowed, other))
        if isinstance(pointer, Pointer) and pointer.element is not None:
            # the argument's own elements, read as the cast's type (same size)
            own = pointer.view.dtype
            if other is not None:
                other = sem.bitcast(v.b, sem.as_value(v.b, other, pointer.element), own)
            loaded = sem.load(v.b, ptrs.element_address(v.b, pointer), None, mask, other)
            return sem.bitcast(v.b, loaded, pointer.element)
        return sem.load(v.b, ptrs.address(v.b, pointer), None, mask, other)
    return sem.load(v.b, _view_arg(v, node, pointer, "load"), index, mask, other)


def _pointer_cast(v: _Visitor, node: ast.AST, x: Any, dtype: Any) -> Any:
    """``x.to(tl.pointer_type(T))``: a pointer argument read as another element type of
    its size (``dsl.pointers.cast``), or a 64-bit integer (an address) as a pointer
    (``dsl.pointers.AddressPointer``, which casts to another pointer type or back to a
    64-bit integer)."""
    if isinstance(x, AddressPointer):
        v.at(node)
        if isinstance(dtype, lang.PointerType):
            return ptrs.retarget(v.b, x, _pointee(v, node, dtype))
        return ptrs.address_as_integer(v.b, x, _dtype_arg(v, node, dtype))
    if not isinstance(dtype, lang.PointerType):
        if isinstance(x, (Pointer, ViewArg)) and isinstance(dtype, DType) and \
                dtype.is_int and not dtype.is_bool and dtype.bits == 64:
            v.at(node)  # x_ptr.to(tl.int64): the address it points to
            return sem.cast(v.b, ptrs.pointer_as_integer(v.b, x), dtype)
        raise v.error(node, f"a pointer cast to {dtype!r}: a pointer into an argument casts "
                            "only to a pointer type (pointer_type) or a 64-bit integer")
    if not isinstance(x, (Pointer, ViewArg)):
        v.at(node)
        return ptrs.from_integer(v.b, x, _pointee(v, node, dtype))
    return ptrs.cast(v.b, x, dtype.element)


def _pointee(v: _Visitor, node: ast.AST, dtype: lang.PointerType) -> DType:
    if not isinstance(dtype.element, DType):
        raise v.error(node, f"a pointer to {dtype.element!r}: pointers to pointers are not "
                            "supported")
    return dtype.element


def _writable(v: _Visitor, node: ast.AST, pointer: Any) -> None:
    """A store or atomic through an argument annotated ``const`` is an error (Triton:
    "Cannot store to a constant pointer")."""
    if not v.src.read_only_params:
        return
    if isinstance(pointer, (ViewArg, Pointer, PointerChoice, BlockPointer)):
        for view in ptrs.views_of(pointer):
            if view.name in v.src.read_only_params:
                raise v.error(node, f"cannot store to a constant pointer: '{view.name}' is "
                                    "annotated const")


def _store(v: _Visitor, node: ast.AST, pointer: Any, index: Any, value: Any, mask: Any,
           boundary_check: Any) -> None:
    _writable(v, node, pointer)
    if isinstance(pointer, BlockPointer):
        if mask is not None or (index is not None and value is not None):
            raise v.error(node, "store() of a block pointer takes a value and "
                                "boundary_check=, not a mask")
        addr, m, _ = ptrs.block_access(v.b, pointer, boundary_check, "")
        stored = index if value is None else value
        if isinstance(addr, AddressPointer):
            return sem.store_address(v.b, addr.address, addr.offset, addr.element, stored, m)
        if isinstance(addr, PointerChoice):
            return ptrs.through_choice(v.b, addr, m, lambda at, narrowed: sem.store(
                v.b, at, None, stored, narrowed))
        return sem.store(v.b, addr, None, stored, m)
    _no_boundary_check(v, node, "store", boundary_check)
    if _pointer_form(v, pointer, index):
        value, mask = _shifted(v, node, "store", index, value, mask)
        if isinstance(pointer, AddressPointer) and value is not None:
            return sem.store_address(v.b, pointer.address, pointer.offset, pointer.element,
                                     value, mask)
        if isinstance(pointer, PointerChoice) and value is not None:
            return ptrs.through_choice(v.b, pointer, mask, lambda addr, narrowed: sem.store(
                v.b, addr, None, value, narrowed))
        if isinstance(pointer, Pointer) and pointer.element is not None and value is not None:
            value = sem.bitcast(v.b, sem.as_value(v.b, value, pointer.element),
                                pointer.view.dtype)
            return sem.store(v.b, ptrs.element_address(v.b, pointer), None, value, mask)
        target: Any = ptrs.address(v.b, pointer)
    else:
        target = _view_arg(v, node, pointer, "store")
    if value is None:
        raise v.error(node, "store() needs a value")
    return sem.store(v.b, target, None if isinstance(target, sem.Address) else index, value,
                     mask)


def _no_boundary_check(v: _Visitor, node: ast.AST, what: str, boundary_check: Any) -> None:
    if boundary_check not in ((), [], None):
        raise v.error(node, f"{what}(): boundary_check= needs a block pointer (make_block_ptr)")


def _memory_target(v: _Visitor, node: ast.AST, what: str, pointer: Any, index: Any
                   ) -> tuple[Any, bool]:
    """The address base of an atomic: (pointer address or view, pointer form?)."""
    if _pointer_form(v, pointer, index):
        return ptrs.address(v.b, pointer), True
    return _view_arg(v, node, pointer, what), False


def _atomic(op: str) -> Callable[..., Any]:
    def handler(v: _Visitor, node: ast.AST, pointer: Any, index: Any, val: Any, mask: Any,
                sem: Any, scope: Any) -> Any:
        what = f"atomic_{op}"
        _writable(v, node, pointer)
        if isinstance(pointer, PointerChoice):
            val, mask = _shifted(v, node, what, index, val, mask)
            if val is None:
                raise v.error(node, f"{what}() needs a value")
            return ptrs.through_choice(v.b, pointer, mask, lambda addr, narrowed: sem_.atomic(
                v.b, op, addr, None, val, narrowed, sem, scope))
        if isinstance(pointer, AddressPointer):
            val, mask = _shifted(v, node, what, index, val, mask)
            if val is None:
                raise v.error(node, f"{what}() needs a value")
            return sem_.atomic_address(v.b, op, pointer.address, pointer.offset,
                                       pointer.element, val, mask, sem, scope)
        target, pointer_form = _memory_target(v, node, what, pointer, index)
        if pointer_form:
            val, mask = _shifted(v, node, what, index, val, mask)
            index = None
        if val is None:
            raise v.error(node, f"{what}() needs a value")
        return sem_.atomic(v.b, op, target, index, val, mask, sem, scope)
    return handler


def _atomic_cas(v: _Visitor, node: ast.AST, pointer: Any, index: Any, cmp: Any, val: Any,
                sem: Any, scope: Any) -> Any:
    _writable(v, node, pointer)
    if isinstance(pointer, AddressPointer):
        cmp, val = _shifted(v, node, "atomic_cas", index, cmp, val)
        if cmp is None or val is None:
            raise v.error(node, "atomic_cas() needs cmp and val")
        return sem_.atomic_cas_address(v.b, pointer.address, pointer.offset, pointer.element,
                                       cmp, val, sem, scope)
    target, pointer_form = _memory_target(v, node, "atomic_cas", pointer, index)
    if pointer_form:
        cmp, val = _shifted(v, node, "atomic_cas", index, cmp, val)
        index = None
    if cmp is None or val is None:
        raise v.error(node, "atomic_cas() needs cmp and val")
    return sem_.atomic_cas(v.b, target, index, cmp, val, sem, scope)


def _program_index(v: _Visitor, node: ast.AST, kind: str, axis: Any) -> Value:
    """The kernel asks which program it is: the grid decides what it covers."""
    v.b.grid_use = "direct"
    return sem.program_index(v.b, kind, _const_int(v, node, axis, "axis"))


def _sub_vec_id(v: _Visitor) -> Value:
    """The vector sub-block's index: a hidden parameter the launcher sets per pass."""
    if v.b.sub_block is None:
        v.b.sub_block = Value(Type(dt.int32), name=SUB_BLOCK_PARAM)
    return v.b.sub_block


_CUBE_VECTOR = ("cube", "vector")
_SYNC_ALL_MODES = ("all_cube", "all_vector", "all", "all_sub_vector")


def _event_id(v: _Visitor, node: ast.AST, kind: str, event_id: Any) -> None:
    if isinstance(event_id, bool) or not isinstance(event_id, int) or not 0 <= event_id < 16:
        raise v.error(node, f"{kind}() event_id must be a constexpr int from 0 to 15, "
                            f"got {event_id!r}")


def _sync_block(v: _Visitor, node: ast.AST, kind: str, sender: Any, receiver: Any,
                event_id: Any, sender_pipe: Any, receiver_pipe: Any) -> None:
    """``sync_block_set``/``sync_block_wait``: checked as triton-ascend checks them, then
    dropped (a program's ops run in order here)."""
    for role, unit in (("sender", sender), ("receiver", receiver)):
        if unit not in _CUBE_VECTOR:
            raise v.error(node, f"{kind}() {role} must be 'cube' or 'vector', got {unit!r}")
    _event_id(v, node, kind, event_id)
    for role, pipe in (("sender_pipe", sender_pipe), ("receiver_pipe", receiver_pipe)):
        # triton-ascend's own PIPE enum is accepted as well as dsl.PIPE
        if pipe is not None and not (isinstance(pipe, enum.Enum) and
                                     pipe.name in lang.PIPE.__members__):
            raise v.error(node, f"{kind}() {role} must be a PIPE member such as "
                                f"PIPE.PIPE_MTE3, got {pipe!r}")


def _sync_block_all(v: _Visitor, node: ast.AST, mode: Any, event_id: Any) -> None:
    if mode not in _SYNC_ALL_MODES:
        raise v.error(node, f"sync_block_all() mode must be one of "
                            f"{', '.join(map(repr, _SYNC_ALL_MODES))}, got {mode!r}")
    _event_id(v, node, "sync_block_all", event_id)


def _keep_dims(v: _Visitor, result: Any, axis: int, keep_dims: Any) -> Any:
    if not keep_dims:
        return result
    if isinstance(result, tuple):
        return tuple(sem.expand_dims(v.b, r, axis % (r.rank + 1)) for r in result)
    return sem.expand_dims(v.b, result, axis % (result.rank + 1))


def _reduce_fn(v: _Visitor, node: ast.Call, input: Any, axis: Any, combine_fn: Any,
               keep_dims: Any) -> Any:
    """``reduce(input, axis, combine_fn)``; with ``axis=None`` every axis: the blocks are
    flattened (row-major) and reduced along the one axis left, as Triton's ``reduce``
    does; ``keep_dims`` then keeps one size-1 axis per axis of the input."""
    if axis is not None:
        return _keep_dims(v, v.combine(node, "reduce_fn", input, axis, combine_fn, {}), axis,
                          keep_dims)
    single = not isinstance(input, (tuple, list))
    blocks = [sem.as_value(v.b, x) for x in ((input,) if single else input)]
    rank = blocks[0].rank if blocks else 0
    if rank == 0 or any(b.rank != rank for b in blocks):
        return v.combine(node, "reduce_fn", input, axis, combine_fn, {})  # (its error)
    flat = [sem.reshape(v.b, b, (math.prod(b.shape),)) for b in blocks]
    result = v.combine(node, "reduce_fn", flat[0] if single else tuple(flat), 0, combine_fn, {})
    if not keep_dims:
        return result

    def kept(value: Any) -> Any:
        for _ in range(rank):
            value = sem.expand_dims(v.b, value, 0)
        return value

    return kept(result) if single else tuple(kept(r) for r in result)


def _random(kind: str) -> Callable[..., Any]:
    return lambda v, node, seed, offset, n_rounds: sem.random(v.b, kind, seed, offset, n_rounds)


def _static_assert(v: _Visitor, node: ast.AST, condition: Any, message: str) -> None:
    if _is_value(condition):
        raise v.error(node, "static_assert() needs a constexpr condition")
    if not condition:
        raise v.error(node, f"static_assert failed: {message}" if message else "static_assert failed")


def _loop_only(v: _Visitor, node: ast.AST, **_: Any) -> None:
    raise v.error(node, "range(), static_range() and tile_range() can only drive a for loop")


_BUILTINS: dict[str, Callable[..., Any]] = {
    "program_id": lambda v, node, axis: _program_index(v, node, "program_id", axis),
    "num_programs": lambda v, node, axis: _program_index(v, node, "num_programs", axis),
    "arange": lambda v, node, start, end: sem.arange(v.b, start, end),
    "zeros": lambda v, node, shape, dtype: sem.full(v.b, shape, 0, _dtype_arg(v, node, dtype)),
    "full": lambda v, node, shape, value, dtype: sem.full(
        v.b, shape, value, _dtype_arg(v, node, dtype)),
    "load": lambda v, node, pointer, index, mask, other, boundary_check, padding_option,
    cache_modifier, eviction_policy, volatile: _load(v, node, pointer, index, mask, other,
                                                     boundary_check, padding_option),
    "store": lambda v, node, pointer, index, value, mask, boundary_check, cache_modifier,
    eviction_policy: _store(v, node, pointer, index, value, mask, boundary_check),
    "make_block_ptr": lambda v, node, base, shape, strides, offsets, block_shape, order:
    ptrs.make_block_ptr(v.b, base, shape, strides, offsets, block_shape, order),
    "advance": lambda v, node, base, offsets: ptrs.advance(v.b, base, offsets),
    "index_select_simd": lambda v, node, src, dim, index, src_shape, src_offset, read_shape:
    _index_select(v, src, dim, index, src_shape, src_offset, read_shape),
    "index_select": lambda v, node, src, idx, bound, lstdim_blksiz, offsets, numels:
    _embedding_gather(v, src, idx, bound, lstdim_blksiz, offsets, numels),
    "make_tensor_descriptor": lambda v, node, base, shape, strides, block_shape:
    ptrs.make_tensor_descriptor(v.b, base, shape, strides, block_shape),
    "load_tensor_descriptor": lambda v, node, desc, offsets: _descriptor_access(
        v, node, desc, offsets, None),
    "store_tensor_descriptor": lambda v, node, desc, offsets, value: _descriptor_access(
        v, node, desc, offsets, value),
    "where": lambda v, node, condition, x, y: sem.where(v.b, condition, x, y),
    "maximum": lambda v, node, x, y, propagate_nan: sem.extremum(v.b, "maximum", x, y,
                                                                 propagate_nan),
    "minimum": lambda v, node, x, y, propagate_nan: sem.extremum(v.b, "minimum", x, y,
                                                                 propagate_nan),
    "exp": _math("exp"), "log": _math("log"), "log1p": _math("log1p"), "abs": _math("abs"),
    "sigmoid": _math("sigmoid"), "sqrt": _math("sqrt"),
    "tanh": _math("tanh"), "exp2": _math("exp2"), "log2": _math("log2"),
    "rsqrt": _math("rsqrt"), "sin": _math("sin"), "cos": _math("cos"), "erf": _math("erf"),
    "floor": _rounding("floor"), "ceil": _rounding("ceil"),
    **{name: _composed_unary(f) for name, f in mathlib.UNARY.items()},
    **{name: _composed_binary(f) for name, f in mathlib.BINARY.items()},
    "pow": _binary_builtin("pow"),
    "div_rn": _binary_builtin("truediv"),
    "mul_rn": _binary_builtin("mul"),
    "add_rn": _binary_builtin("add"),
    "sub_rn": _binary_builtin("sub"),
    "fast_dividef": _binary_builtin("truediv"),
    "fast_expf": _math("exp"),
    "fdiv": lambda v, node, x, y, ieee_rounding: sem.binary(v.b, "truediv", x, y),
    "fma": lambda v, node, x, y, z: sem.ternary(v.b, "fma", x, y, z),
    "umulhi": lambda v, node, x, y: sem.umulhi(v.b, x, y),
    "clamp": lambda v, node, x, min, max, propagate_nan: sem.clamp(v.b, x, min, max,
                                                                   propagate_nan),
    "cdiv": lambda v, node, x, div: sem.cdiv(v.b, x, div),
    "reshape": lambda v, node, input, shape, can_reorder: sem.reshape(
        v.b, input, _shape_arg(shape)),
    "view": lambda v, node, input, shape: sem.reshape(v.b, input, _shape_arg(shape)),
    "permute": lambda v, node, input, dims: sem.permute(v.b, input, _shape_arg(dims)),
    "trans": lambda v, node, input, dims: sem.permute(
        v.b, input, _shape_arg(dims) if dims else (1, 0)),
    "expand_dims": lambda v, node, input, axis: _expand_dims(v, node, input, axis),
    "broadcast_to": lambda v, node, input, shape: sem.broadcast_block(
        v.b, input, _shape_arg(shape)),
    "broadcast": lambda v, node, input, other: sem.broadcast_pair(v.b, input, other),
    "cat": lambda v, node, input, other, can_reorder: sem.cat(v.b, input, other),
    "join": lambda v, node, a, b: sem.join(v.b, a, b),
    "split": lambda v, node, a: sem.split(v.b, a),
    "interleave": lambda v, node, a, b: sem.interleave(v.b, a, b),
    "flip": lambda v, node, x, dim: sem.flip(v.b, x, dim),
    **{kind: _random(kind) for kind in ("randint", "randint4x", "rand", "randn")},
    "philox": lambda v, node, seed, c0, c1, c2, c3, n_rounds: sem.philox(
        v.b, seed, (c0, c1, c2, c3), n_rounds),
    "dot": lambda v, node, input, other, acc, input_precision, allow_tf32,
    max_num_imprecise_acc, out_dtype: sem.dot(
        v.b, input, other, acc, input_precision if allow_tf32 is None else
        ("tf32" if allow_tf32 else "ieee"), out_dtype),
    "dot_scaled": lambda v, node, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc,
    out_dtype, lhs_k_pack, rhs_k_pack: sem.dot_scaled(
        v.b, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc, out_dtype, lhs_k_pack,
        rhs_k_pack),
    "sum": _reduce("sum"), "max": _reduce("max"), "min": _reduce("min"),
    "xor_sum": _reduce("xor_sum"), "argmax": _arg_reduce("argmax"),
    "argmin": _arg_reduce("argmin"),
    **{f"atomic_{op}": _atomic(op) for op in ("add", "max", "min", "xchg", "and", "or", "xor")},
    "atomic_cas": _atomic_cas,
    "multiple_of": lambda v, node, input, values: sem.hint(v.b, "multiple_of", input, values),
    "max_contiguous": lambda v, node, input, values: sem.hint(v.b, "max_contiguous", input,
                                                               values),
    "max_constancy": lambda v, node, input, values: sem.hint(v.b, "max_constancy", input,
                                                              values),
    "device_print": lambda v, node, prefix, args, hex: sem.device_print(v.b, prefix, args, hex),
    "device_assert": lambda v, node, cond, msg: sem.device_assert(v.b, cond, msg),
    "static_print": lambda v, node, values, sep, end: print(
        *(str(x.type) if _is_value(x) else x for x in values), sep=sep, end=end),
    "reduce": lambda v, node, input, axis, combine_fn, keep_dims: _reduce_fn(
        v, node, input, axis, combine_fn, keep_dims),
    "associative_scan": lambda v, node, input, axis, combine_fn, reverse: v.combine(
        node, "scan_fn", input, axis, combine_fn, {"reverse": bool(reverse)}),
    "cumsum": lambda v, node, input, axis, reverse: sem.scan(v.b, "sum", input, axis, reverse),
    "cumprod": lambda v, node, input, axis, reverse: sem.scan(v.b, "prod", input, axis,
                                                             reverse),
    "cast": lambda v, node, x, dtype, bitcast, fp_downcast_rounding, overflow_mode: (
        _pointer_cast(v, node, x, dtype) if isinstance(dtype, lang.PointerType) or
        ptrs.is_pointer(x) else
        sem.bitcast(v.b, sem.as_value(v.b, x), _dtype_arg(v, node, dtype)) if bitcast else
        sem.cast_with_modes(v.b, sem.as_value(v.b, x), _dtype_arg(v, node, dtype),
                            fp_downcast_rounding, overflow_mode)),
    "static_assert": _static_assert,
    "extract_slice": lambda v, node, ful, offsets, sizes, strides: sem.extract_slice(
        v.b, ful, offsets, sizes, strides),
    "insert_slice": lambda v, node, ful, sub, offsets, sizes, strides: sem.insert_slice(
        v.b, ful, sub, offsets, sizes, strides),
    "get_element": lambda v, node, src, indice: sem.get_element(v.b, src, indice),
    "gather": lambda v, node, src, index, axis: sem.gather(v.b, src, index, axis),
    "inline_asm_elementwise": lambda v, node, asm, constraints, args, dtype, is_pure, pack:
    sem.inline_asm(v.b, asm, constraints, args, dtype, is_pure, pack),
    "histogram": lambda v, node, input, num_bins, mask: sem.histogram(v.b, input, num_bins,
                                                                      mask),
    "sort": lambda v, node, ptr, dim, descending: sem.sort(v.b, ptr, dim, descending),
    "topk": lambda v, node, input, k, dim: sem.topk(v.b, input, k, dim),
    "debug_barrier": lambda v, node: None,
    "sub_vec_id": lambda v, node: _sub_vec_id(v),
    "sub_vec_num": lambda v, node: lang.SUB_VECTOR_BLOCKS,
    "sync_block_set": lambda v, node, **args: _sync_block(v, node, "sync_block_set", **args),
    "sync_block_wait": lambda v, node, **args: _sync_block(v, node, "sync_block_wait", **args),
    "sync_block_all": lambda v, node, mode, event_id: _sync_block_all(v, node, mode, event_id),
    "multibuffer": lambda v, node, src, size: None,
    "assume": lambda v, node, cond: None,
    "compile_hint": lambda v, node, ptr, hint_name, hint_val: None,
    "range": _loop_only, "static_range": _loop_only, "tile_range": _loop_only,
}


# ----------------------------------------------------------------------------- entry point


def build_ir(src: KernelSource, specs: dict[str, ArgSpec], verify_ir: bool = True,
             reads: Any = None) -> Function:
    """Trace ``src`` under a specialization (one ``ArgSpec`` per parameter) into IR,
    verified unless ``verify_ir`` is False (``dsl.passes.optimize`` verifies its
    result in any case). ``reads`` (a ``dsl.ir_cache.Reads``) records each value
    the trace reads from outside the kernel."""
    builder = Builder(src.name)
    builder.triton_rules = src.triton
    builder.reads = reads
    scope: dict[str, Any] = {}
    user_params: list[Param] = []
    hidden: list[Param] = []
    for p in src.params:
        spec = specs[p.name]
        if isinstance(spec, ConstSpec):  # (a Triton dtype passed as a constexpr: the DSL's)
            scope[p.name] = src.foreign(spec.value)
        elif isinstance(spec, ScalarSpec):
            value = Value(Type(spec.dtype), name=p.name)
            user_params.append(Param(value, "scalar", p.name))
            scope[p.name] = value
        else:
            view, extra = _view_param(p.name, spec)
            user_params.append(Param(view.value, "tensor", p.name))
            hidden.extend(extra)
            scope[p.name] = view
    params = user_params + hidden
    if any(p.user_name == SUB_BLOCK_PARAM for p in params):
        raise DSLCompileError(f"parameter name {SUB_BLOCK_PARAM!r} is reserved (the hidden "
                              "parameter sub_vec_id() reads)", src.loc(src.tree), src.name)
    body = builder.block
    body.args = [p.value for p in params]
    visitor = _Visitor(src, builder, scope)
    try:
        visitor.run_body(src.tree.body)
    except _Return as ret:
        if ret.value is not None:
            raise DSLCompileError("a kernel cannot return a value; store it instead",
                                  builder.loc, src.name) from None
    if builder.sub_block is not None:  # the last parameter, set per pass by the launcher
        params.append(Param(builder.sub_block, "sub_block", SUB_BLOCK_PARAM))
        body.args.append(builder.sub_block)
    key = tuple((name, str(spec)) for name, spec in specs.items())
    fn = Function(src.name, params, body, src.file, key, builder.grid_use)
    if verify_ir:
        verify(fn)
    _check_addressing(fn)
    return fn


def _check_addressing(fn: Function) -> None:
    """A tensor read both through pointers and by logical index must be contiguous:
    only then are the element offset and the logical index the same number, which
    the bounds and race checks rely on."""
    forms: dict[str, set[bool]] = {}
    first: dict[str, Any] = {}
    for op in fn.walk():
        if (op.defn.reads_memory or op.defn.writes_memory) and not op.defn.host_address:
            forms.setdefault(op.tensor, set()).add(bool(op.attrs.get("pointer")))
            first.setdefault(op.tensor, op)
    for p in fn.params:
        if p.role == "tensor" and len(forms.get(p.user_name, ())) == 2 and \
                p.value.type.layout.kind != "contiguous":
            raise DSLCompileError(
                f"tensor '{p.user_name}' is accessed both through pointers and by logical index, "
                f"which needs a contiguous tensor (its layout is {p.value.type.layout}); "
                "use one form for it", first[p.user_name].loc, fn.name)


def _view_param(name: str, spec: TensorSpec) -> tuple[ViewArg, list[Param]]:
    layout = spec.layout
    value = Value(ViewType(spec.dtype, layout), name=name)
    index_dt = dt.int64 if layout.index_bits == 64 else dt.int32
    hidden: list[Param] = []
    sizes: list[Value] = []
    strides: list[Value | int] = []
    for d, stride in enumerate(layout.strides):
        size = Value(Type(index_dt), name=f"{name}_size{d}")
        hidden.append(Param(size, "size", size.name or "", of=name, dim=d))
        sizes.append(size)
        if stride is None:
            sv = Value(Type(index_dt), name=f"{name}_stride{d}")
            hidden.append(Param(sv, "stride", sv.name or "", of=name, dim=d))
            strides.append(sv)
        else:
            strides.append(stride)
    base = None
    if layout.has_base:
        base = Value(Type(index_dt), name=f"{name}_base")
        hidden.append(Param(base, "base", base.name or "", of=name))
    # the caller's own shape and strides (x.shape[i], x.stride(i)); the passes drop
    # the ones the kernel does not read
    dims: list[Value] = []
    dim_strides: list[Value] = []
    for d in range(spec.rank or 0):
        for role, values, label in (("dim", dims, "shape"), ("dim_stride", dim_strides,
                                                              "stride_of_dim")):
            v = Value(Type(index_dt), name=f"{name}_{label}{d}")
            hidden.append(Param(v, role, v.name or "", of=name, dim=d))
            values.append(v)
    return ViewArg(name, value, tuple(sizes), tuple(strides), base, tuple(dims),
                   tuple(dim_strides), spec.rank), hidden
