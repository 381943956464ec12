"""Backend B, first step: the typed IR -> triton-ascend Python source.

The generator walks the IR once and emits one statement per op, in order, from
fixed templates (the op table's Triton spellings, ``dsl.opdefs``); nothing is
patched after generation. Each group of statements that comes from one line of
the user's kernel is preceded by a comment quoting that line, and
``GeneratedKernel.line_map`` maps generated lines back to the user's source so
toolchain errors can point at the kernel author's code.

Conventions:
- tensor parameters become pointers ``<name>_ptr``; loads and stores address
  ``<name>_ptr + offset`` with the offset the IR derived from the layout; an offset
  that is the constant 0 (a broadcast scalar) becomes a scalar load, broadcast;
- every constant is typed explicitly (``tl.cast(literal, dtype)``) and every IR
  cast and broadcast is an explicit call, so Triton's own promotion never decides
  a type the IR did not;
- transcendental functions on 16-bit floats compute in fp32 and round back, as the
  interpreter does;
- loop-carried values are plain variables reassigned at the end of the loop body.

The output is deterministic: the same IR gives the same text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from dsl.dtypes import DType
from dsl.errors import SourceLoc
from dsl.ir import Block, Function, Op, Value, ViewType
from dsl.opdefs import OPS

_FLOAT_MATH = {"exp", "log", "log1p", "sqrt", "sigmoid"}
_SIGNATURE_TYPES = {"int1": "i1", "int32": "i32", "int64": "i64", "float16": "fp16",
                    "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}


@dataclass(frozen=True)
class GeneratedKernel:
    """Triton source for one specialization, and what the compile driver needs."""

    name: str
    source: str
    signature: dict[str, str]  # parameter -> Triton signature type ("*fp32", "i32", ...)
    line_map: dict[int, SourceLoc] = field(hash=False, compare=False)
    def_line: int = 0  # line of the ``def`` in the generated file

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()


def signature_type(dtype: DType, pointer: bool = False) -> str:
    return ("*" if pointer else "") + _SIGNATURE_TYPES[dtype.name]


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        if value != value:
            return 'float("nan")'
        if value in (float("inf"), float("-inf")):
            return f'float("{value}")'
    return repr(value)


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class _Emitter:
    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.lines: list[str] = []
        self.line_map: dict[int, SourceLoc] = {}
        self.names: dict[int, str] = {}
        self.counter = 0
        self.last_line: tuple[str, int] | None = None
        self.reserved = {p.user_name for p in fn.params} | {"tl", "triton", "libdevice"}
        self.uses: dict[int, list[Op]] = {}
        for op in fn.walk():
            for v in op.operands:
                self.uses.setdefault(v.uid, []).append(op)

    # -- names

    def name(self, v: Value) -> str:
        return self.names[v.uid]

    def define(self, v: Value) -> str:
        name = f"v{self.counter}"
        self.counter += 1
        while name in self.reserved:  # a user parameter already has this name
            name = f"v{self.counter}"
            self.counter += 1
        self.names[v.uid] = name
        return name

    def lanes_observed(self, value: Value, mask: Value) -> bool:
        """False when the lanes ``mask`` turns off can never be seen: every use of
        ``value``, followed through elementwise ops, casts and broadcasts, ends in
        the stored value of a store under the same mask. Then a masked load's
        ``other`` needs no select."""
        work, seen = [value], set()
        while work:
            v = work.pop()
            if v.uid in seen:
                continue
            seen.add(v.uid)
            for use in self.uses.get(v.uid, []):
                if use.kind == "store":
                    stored_value = use.operands[3] is v
                    if not (stored_value and use.attrs["masked"] and use.operands[4] is mask):
                        return True
                elif (use.kind in OPS and use.kind != "where") or use.kind in ("cast",
                                                                               "broadcast"):
                    work.extend(use.results)
                else:
                    return True
        return False

    # -- output

    def emit(self, text: str, indent: int, loc: SourceLoc | None) -> None:
        if loc is not None and loc.line and (loc.file, loc.line) != self.last_line:
            self.last_line = (loc.file, loc.line)
            excerpt = loc.source_line.strip()
            self.lines.append("    " * indent + f"# {loc.file.rsplit('/', 1)[-1]}:{loc.line}: "
                              f"{excerpt}")
        self.lines.append("    " * indent + text)
        if loc is not None and loc.line:
            self.line_map[len(self.lines)] = loc

    # -- ops

    def block(self, block: Block, indent: int) -> None:
        for op in block.ops:
            if op.kind == "yield":
                continue
            self.op(op, indent)

    def op(self, op: Op, indent: int) -> None:
        handler = getattr(self, f"op_{op.kind}", None)
        if handler is not None:
            handler(op, indent)
            return
        opdef = OPS[op.kind]
        args = [self.name(v) for v in op.operands]
        expr = opdef.triton.format(*args)
        dtype = op.result.dtype
        if op.kind in _FLOAT_MATH and dtype.bits < 32:
            inner = opdef.triton.format(f"{args[0]}.to(tl.float32)")
            expr = f"({inner}).to({dtype.triton_name})"
        self.emit(f"{self.define(op.result)} = {expr}", indent, op.loc)

    def op_const(self, op: Op, indent: int) -> None:
        value, dtype = _literal(op.attrs["value"]), op.result.dtype.triton_name
        shape = op.result.shape
        expr = f"tl.full({_shape(shape)}, {value}, {dtype})" if shape else \
            f"tl.cast({value}, {dtype})"
        self.emit(f"{self.define(op.result)} = {expr}", indent, op.loc)

    def op_arange(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.arange({op.attrs['start']}, {op.attrs['end']})",
                  indent, op.loc)

    def op_program_id(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.program_id({op.attrs['axis']})", indent, op.loc)

    def op_num_programs(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.num_programs({op.attrs['axis']})", indent,
                  op.loc)

    def op_cast(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = {self.name(op.operands[0])}"
                  f".to({op.result.dtype.triton_name})", indent, op.loc)

    def op_broadcast(self, op: Op, indent: int) -> None:
        src = op.operands[0]
        expr = self.name(src)
        if not src.shape:
            # typed explicitly: Triton's interpreter runs loops in Python, so a loop
            # variable is a plain int there (a no-op cast when compiled)
            expr = f"tl.cast({expr}, {src.dtype.triton_name})"
        extra = op.result.type.rank - src.type.rank
        if src.type.rank and extra:
            expr = f"{expr}[{', '.join(['None'] * extra + [':'] * src.type.rank)}]"
        self.emit(f"{self.define(op.result)} = tl.broadcast_to({expr}, "
                  f"{_shape(op.result.shape)})", indent, op.loc)

    def op_expand_dims(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.expand_dims({self.name(op.operands[0])}, "
                  f"{op.attrs['axis']})", indent, op.loc)

    def op_where(self, op: Op, indent: int) -> None:
        c, a, b = (self.name(v) for v in op.operands)
        self.emit(f"{self.define(op.result)} = tl.where({c}, {a}, {b})", indent, op.loc)

    def op_reduce(self, op: Op, indent: int) -> None:
        combine = {"sum": "tl.sum", "max": "tl.max", "min": "tl.min"}[op.attrs["combine"]]
        self.emit(f"{self.define(op.result)} = {combine}({self.name(op.operands[0])}, "
                  f"axis={op.attrs['axis']})", indent, op.loc)

    def _address(self, view: Value, offset: Value) -> tuple[str, bool]:
        """``ptr + offset``, or just ``ptr`` when the offset is the constant 0."""
        pointer = f"{self.name(view)}_ptr"
        owner = offset.owner
        if owner is not None and owner.kind == "const" and owner.attrs["value"] == 0:
            return pointer, True
        return f"{pointer} + {self.name(offset)}", False

    def op_load(self, op: Op, indent: int) -> None:
        view, _index, offset = op.operands[:3]
        address, uniform = self._address(view, offset)
        result = self.define(op.result)
        shape = _shape(op.result.shape)
        if uniform:
            # one element for every lane: a scalar load with no index arithmetic
            expr = f"tl.load({address})"
            if op.result.shape:
                expr = f"tl.broadcast_to({expr}, {shape})"
            if op.attrs["masked"] and self.lanes_observed(op.result, op.operands[3]):
                mask, other = (self.name(v) for v in op.operands[3:5])
                expr = f"tl.where({mask}, {expr}, {other})"
        elif op.attrs["masked"]:
            mask, other = (self.name(v) for v in op.operands[3:5])
            expr = f"tl.load({address}, mask={mask}, other={other})"
        else:
            expr = f"tl.load({address})"
        self.emit(f"{result} = {expr}", indent, op.loc)

    def op_store(self, op: Op, indent: int) -> None:
        view, _index, offset, value = op.operands[:4]
        address, _ = self._address(view, offset)
        mask = f", mask={self.name(op.operands[4])}" if op.attrs["masked"] else ""
        self.emit(f"tl.store({address}, {self.name(value)}{mask})", indent, op.loc)

    def op_for(self, op: Op, indent: int) -> None:
        body = op.regions[0]
        lo, hi, step = (self.name(v) for v in op.operands[:3])
        carried = []
        for init, arg in zip(op.operands[3:], body.args[1:]):
            name = self.define(arg)
            carried.append(name)
            self.emit(f"{name} = {self.name(init)}", indent, op.loc)
        iv = self.define(body.args[0])
        self.emit(f"for {iv} in range({lo}, {hi}, {step}):", indent, op.loc)
        self.block(body, indent + 1)
        yield_op = body.ops[-1]
        for name, value in zip(carried, yield_op.operands):
            self.emit(f"{name} = {self.name(value)}", indent + 1, yield_op.loc)
        if not body.ops[:-1] and not carried:
            self.emit("pass", indent + 1, None)
        for result, name in zip(op.results, carried):
            self.names[result.uid] = name


def generate(fn: Function) -> GeneratedKernel:
    """Deterministic triton-ascend source for a specialized kernel."""
    em = _Emitter(fn)
    signature: dict[str, str] = {}
    params: list[str] = []
    for param in fn.params:
        v = param.value
        if isinstance(v.type, ViewType):
            em.names[v.uid] = param.user_name
            params.append(f"{param.user_name}_ptr")
            signature[f"{param.user_name}_ptr"] = signature_type(v.type.dtype, pointer=True)
        else:
            em.names[v.uid] = param.user_name
            params.append(param.user_name)
            signature[param.user_name] = signature_type(v.type.dtype)
    spec = ", ".join(f"{k}{t}" if t.startswith("=") else f"{k}: {t}"
                     for k, t in fn.specialization)
    header = [
        f'"""Generated by ascend-dsl from {fn.source_file.rsplit("/", 1)[-1]}: kernel '
        f'{fn.name}."""',
        f"# specialization: {spec}",
        "import triton",
        "import triton.language as tl",
        "from triton.language.extra.ascend import libdevice",
        "",
        "",
        "@triton.jit",
        f"def {fn.name}({', '.join(params)}):",
    ]
    em.lines.extend(header)
    def_line = len(em.lines)  # 1-based line of the ``def``: Triton counts from here
    body_start = len(em.lines)
    em.block(fn.body, 1)
    if len(em.lines) == body_start:
        em.lines.append("    pass")
    source = "\n".join(em.lines) + "\n"
    return GeneratedKernel(fn.name, source, signature, em.line_map, def_line)
