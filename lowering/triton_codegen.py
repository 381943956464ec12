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
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from dsl.dtypes import DType
from dsl.errors import SourceLoc
from dsl.ir import Block, Function, Op, Value, ViewType
from dsl.opdefs import COMBINES, OPS, Effect

_SIGNATURE_TYPES = {"int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
                    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
                    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
                    "float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b8": "fp8e4b8",
                    "float8e5b16": "fp8e5b16"}

# What triton-ascend 3.2.0 answers for a kernel with any fp8 value (its dtype_to_ir
# refuses fp8 unless it compiles for Ascend 910_95, which this build never does):
# measured on the generated source of an fp8 kernel, for the NPU and the CPU targets.
FP8_REFUSAL = ("triton-ascend 3.2.0 refuses fp8 types ('unexpected type fp8.'): its "
               "front end takes them only when compiling for Ascend 910_95, which this "
               "build never does")


def fp8_use(fn: Function) -> str | None:
    """Where ``fn`` first holds an fp8 value (a parameter, or an op's line), which
    triton-ascend 3.2.0 cannot compile (``FP8_REFUSAL``); None when nowhere."""
    for param in fn.params:
        if param.value.dtype.is_fp8():
            return f"parameter '{param.user_name}' is {param.value.dtype.name}"
    for op in fn.walk():
        for value in (*op.operands, *op.results):
            if value.dtype.is_fp8():
                return f"line {op.loc.line} computes in {value.dtype.name}"
    return None


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


def _is_negative_zero(value: object) -> bool:
    return isinstance(value, float) and value == 0.0 and math.copysign(1.0, value) < 0


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class _Emitter:
    def __init__(self, fn: Function, tree_sums: bool = False,
                 masked_offsets_guarded: bool = False) -> None:
        self.fn = fn
        self.tree_sums = tree_sums
        self.masked_offsets_guarded = masked_offsets_guarded
        self.lines: list[str] = []
        self.line_map: dict[int, SourceLoc] = {}
        self.names: dict[int, str] = {}
        self.counter = 0
        self.last_line: tuple[str, int] | None = None
        # loaded blocks a scan with a combine function reads (an op whose registry
        # record says ``reads_operand_buffers``) -> the name of a second
        # load of the same block: triton-ascend 3.2.0's scan loop reads its operand's
        # buffer directly, unseen by bufferization, so an elementwise op on the loaded
        # block could run in place first (``w = v * 10`` then ``associative_scan(v)``
        # scanned ``v * 10``; found in session 20); the second load is the scan's alone
        self.scan_copies: dict[int, str] = {}
        self.reserved = {p.user_name for p in fn.params} | {"tl", "triton", "libdevice"}
        self.functions: list[list[str]] = []  # generated combine functions
        self.param_roles = {p.value.uid: p.role for p in fn.params}

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

    def temporary(self) -> str:
        """A fresh name for a value the IR does not have (a step of an expansion)."""
        name = f"t{self.counter}"
        self.counter += 1
        while name in self.reserved:
            name = f"t{self.counter}"
            self.counter += 1
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
            for use in v.users:
                if use.defn.effect is Effect.WRITE:
                    addressing = (use.require("address"), use.offset) \
                        if use.defn.host_address else \
                        (use.index, use.offset)
                    if not (use.value is v and use.mask is mask and v not in addressing):
                        return True
                elif use.defn.lanewise:
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
            EMITTERS[op.kind](self, op, indent)

    def elementwise(self, op: Op, indent: int) -> None:
        """Any elementwise kind, spelled by its registry record (``dsl.opdefs``)."""
        self.emit(f"{self.define(op.result)} = {self._elementwise_expr(op)}", indent, op.loc)

    def _elementwise_expr(self, op: Op) -> str:
        opdef = op.defn.elementwise
        assert opdef is not None
        args = [self.name(v) for v in op.operands]
        expr = opdef.triton.format(*args)
        dtype = op.result.dtype
        if opdef.fp32_math and dtype.bits < 32:
            inner = opdef.triton.format(*(f"{a}.to(tl.float32)" for a in args))
            expr = f"({inner}).to({dtype.triton_name})"
        return expr

    def extremum(self, op: Op, indent: int) -> None:
        """``maximum``/``minimum``: Triton's promote bfloat16 to float32, while the IR's
        result is bfloat16 (the same value, one of the operands): cast back."""
        expr = self._elementwise_expr(op)
        if op.result.dtype.name == "bfloat16":
            expr = f"({expr}).to(tl.bfloat16)"
        self.emit(f"{self.define(op.result)} = {expr}", indent, op.loc)

    def op_hint(self, op: Op, indent: int) -> None:
        values = op.attrs["values"]
        arg = values[0] if len(values) == 1 else list(values)
        self.emit(f"{self.define(op.result)} = tl.{op.attrs['hint']}({self.name(op.source)}, "
                  f"{arg})", indent, op.loc)

    def op_print(self, op: Op, indent: int) -> None:
        args = "".join(f", {self.name(v)}" for v in op.operands)
        hex_flag = ", hex=True" if op.attrs["hex"] else ""
        self.emit(f"tl.device_print({op.attrs['prefix']!r}{args}{hex_flag})", indent, op.loc)

    def op_device_assert(self, op: Op, indent: int) -> None:
        self.emit(f"tl.device_assert({self.name(op.require('condition'))}, "
                  f"{op.attrs['message']!r})", indent, op.loc)

    def _combine_function(self, op: Op) -> str:
        """A ``@triton.jit`` function for ``op``'s combine region; returns its name."""
        name = f"_combine{len(self.functions)}_{self.fn.name}"
        sub = _Emitter(self.fn, self.tree_sums)
        sub.counter = self.counter
        region = op.body
        args = [sub.define(a) for a in region.args]
        sub.block(region, 1)
        returned = ", ".join(sub.name(v) for v in region.yielded())
        lines = ["@triton.jit", f"def {name}({', '.join(args)}):", *sub.lines,
                 f"    return {returned}"]
        self.counter = sub.counter
        self.functions.extend(sub.functions)
        self.functions.append(lines)
        return name

    def op_reduce_fn(self, op: Op, indent: int) -> None:
        if not _scanned_reduce(op):
            self._combine_call(op, indent, "tl.reduce", "")
            return
        # triton-ascend 3.2.0 lowers any other combine to a linalg.reduce whose
        # accumulator is never initialised (garbage folded in) or starts from an
        # identity such as -inf (a maximum of NaNs gave -inf): the left fold is the
        # last element of the scan of the same combine, which it lowers as that loop
        (source,), axis = op.operands, op.attrs["axis"]  # (one: ``_scanned_reduce``)
        function = self._combine_function(op)
        scanned = self.temporary()
        self.emit(f"{scanned} = tl.associative_scan({self._scan_operand(source)}, {axis}, "
                  f"{function})", indent, op.loc)
        shape, rank = list(source.shape), source.rank
        offsets = [0] * rank
        offsets[axis] = shape[axis] - 1
        shape[axis] = 1
        last = f"tl.extract_slice({scanned}, {_shape(tuple(offsets))}, {_shape(tuple(shape))}, " \
            f"{_shape((1,) * rank)})"
        result = op.results[0]
        if result.shape:
            self.emit(f"{self.define(result)} = tl.reshape({last}, {_shape(result.shape)})",
                      indent, op.loc)
        else:  # Triton has no 0-d reshape: an xor reduce of the one element is its bits
            self.emit(f"{self.define(result)} = {_only_element(last, result.dtype)}", indent,
                      op.loc)

    def _scan_operand(self, v: Value) -> str:
        """The block a scan reads: a loaded block's own second load (``scan_copies``)."""
        return self.scan_copies.get(v.uid) or self.name(v)

    def op_scan_fn(self, op: Op, indent: int) -> None:
        self._combine_call(op, indent, "tl.associative_scan", f", reverse={op.attrs['reverse']}")

    def _combine_call(self, op: Op, indent: int, call: str, extra: str) -> None:
        function = self._combine_function(op)
        sources = [self._scan_operand(v) if _reads_operand_buffers(op) else self.name(v)
                   for v in op.operands]
        source = sources[0] if len(sources) == 1 else f"({', '.join(sources)},)"
        results = ", ".join(self.define(r) for r in op.results)
        if len(op.results) > 1:
            results = f"{results},"
        self.emit(f"{results} = {call}({source}, {op.attrs['axis']}, {function}{extra})",
                  indent, op.loc)

    def _provably_safe_divisor(self, v: Value) -> bool:
        """A divisor that is never 0 or -1: a positive constant, or a tensor's size
        (a hidden layout parameter), possibly cast or broadcast."""
        v = _through_casts(v)
        if v.owner is not None and v.owner.constant is not None:
            return self._positive_constant(v)
        return self.param_roles.get(v.uid) in ("size", "dim")

    def integer_division(self, op: Op, indent: int) -> None:
        """``//`` and ``%`` on integers as the interpreter defines them (``x // 0`` and
        ``x % 0`` give 0; ``MIN // -1`` wraps), without the hardware trap a plain
        division would hit; divisors that are provably positive stay plain."""
        opdef = op.defn.elementwise
        assert opdef is not None
        a, b = self.name(op.lhs), self.name(op.rhs)
        dtype = op.result.dtype
        if not dtype.is_int or dtype.is_bool or self._provably_safe_divisor(op.rhs):
            self.elementwise(op, indent)
            return
        symbol = opdef.symbol
        zero = f"tl.cast(0, {dtype.triton_name})"
        one = f"tl.cast(1, {dtype.triton_name})"
        owner = op.rhs.owner
        if not op.rhs.shape or (owner is not None and owner.defn is OPS["broadcast"] and
                                not owner.source.shape):
            # one divisor for every lane: the guards are scalars, and the block sees one
            # division (and, for //, one product by the scalar 1, 0 or -1) -- the
            # lane-wise guards below took 2.2x the UB of a plain division (triton-ascend's
            # test_cdiv refused XBLOCK_SUB=8192)
            d = self.name(op.rhs if not op.rhs.shape else owner.source)
            bad = f"({d} == 0)" if dtype.is_unsigned else f"(({d} == 0) | ({d} == -1))"
            safe = self.temporary()
            self.emit(f"{safe} = tl.where({bad}, {one}, {d})", indent, op.loc)
            if symbol == "%":  # x % 1 is 0, as x % 0 and x % -1 are
                self.emit(f"{self.define(op.result)} = {a} % {safe}", indent, op.loc)
                return
            minus = zero if dtype.is_unsigned else f"tl.cast(-1, {dtype.triton_name})"
            sign = self.temporary()
            self.emit(f"{sign} = tl.where({d} == 0, {zero}, tl.where({d} == {minus}, "
                      f"{minus}, {one}))" if not dtype.is_unsigned else
                      f"{sign} = tl.where({d} == 0, {zero}, {one})", indent, op.loc)
            self.emit(f"{self.define(op.result)} = ({a} // {safe}) * {sign}", indent, op.loc)
            return
        bad = f"({b} == 0)" if dtype.is_unsigned else f"(({b} == 0) | ({b} == -1))"
        safe = f"{a} {symbol} tl.where({bad}, {one}, {b})"
        if symbol == "%" or dtype.is_unsigned:
            expr = f"tl.where({bad}, {zero}, {safe})"
        else:  # x // -1 is -x (wrapping), x // 0 is 0
            expr = f"tl.where({b} == 0, {zero}, tl.where({b} == -1, -{a}, {safe}))"
        self.emit(f"{self.define(op.result)} = {expr}", indent, op.loc)

    @staticmethod
    def _constant(v: Value) -> object:
        """The constant ``v`` is (through casts and broadcasts), or None."""
        v = _through_casts(v)
        return v.owner.constant if v.owner is not None else None

    def _positive_constant(self, v: Value) -> bool:
        constant = self._constant(v)
        return constant is not None and not isinstance(constant, bool) and constant > 0

    def shift(self, op: Op, indent: int) -> None:
        """``<<`` and ``>>`` as the interpreter defines them for every shift amount: one
        outside [0, bits) gives 0 (``>>`` of a negative signed value: -1), which Triton
        leaves undefined (LLVM's shift is poison there; compiled x86 code masked the
        amount). An amount that is a constant inside the range stays plain."""
        dtype = op.result.dtype
        bits = dtype.bits
        constant = self._constant(op.rhs)
        if constant is not None and not isinstance(constant, bool) and 0 <= constant < bits:
            self.elementwise(op, indent)
            return
        a, b = self.name(op.lhs), self.name(op.rhs)
        symbol = op.defn.elementwise.symbol  # type: ignore[union-attr]
        name = dtype.triton_name
        # 0 <= b < bits, for a power-of-two width, as b >> log2(bits) == 0: one equality,
        # which bishengir lowers for every integer type (its HIVM mapping has no unsigned
        # ordered compare of 16-bit integers)
        inside = f"(({b} >> tl.cast({bits.bit_length() - 1}, {name})) == tl.cast(0, {name}))"
        shifted = f"{a} {symbol} tl.where({inside}, {b}, tl.cast(0, {name}))"
        fill = f"{a} >> tl.cast({bits - 1}, {name})" if symbol == ">>" and \
            not dtype.is_unsigned else f"tl.cast(0, {name})"
        self.emit(f"{self.define(op.result)} = tl.where({inside}, {shifted}, {fill})", indent,
                  op.loc)

    def op_yield(self, op: Op, indent: int) -> None:
        """Nothing here: ``op_for`` assigns the carried variables at the body's end."""

    def op_const(self, op: Op, indent: int) -> None:
        if all(_is_zero_offset_of(use, op.result) for use in op.result.users) and \
                op.result.has_uses:
            return  # only ever a uniform load's or store's zero offset: never named
        value, dtype = _literal(op.attrs["value"]), op.result.dtype.triton_name
        shape = op.result.shape
        expr = f"tl.full({_shape(shape)}, {value}, {dtype})" if shape else \
            f"tl.cast({value}, {dtype})"
        if _is_negative_zero(op.attrs["value"]):
            # Triton makes every scalar equal to 0 a +0.0 constant; a -0.0 folded from
            # constants is written as its bits
            bits = op.result.dtype.bits
            expr = f"tl.full({_shape(shape)}, {-(1 << (bits - 1))}, tl.int{bits})" \
                f".to({dtype}, bitcast=True)"
        self.emit(f"{self.define(op.result)} = {expr}", indent, op.loc)

    def op_arange(self, op: Op, indent: int) -> None:
        start, end = op.attrs["start"], op.attrs["end"]
        # from 0, then moved: triton-adapter-opt 3.2.0 drops the start of tl.arange(24,
        # 32) in a gathered load's offsets (triton-ascend's test_paged_kvcache_krope read
        # columns 0..7 instead of 24..31, its own front end alike)
        expr = f"tl.arange(0, {end - start})" + (f" + {start}" if start else "")
        self.emit(f"{self.define(op.result)} = {expr}", indent, op.loc)

    def op_program_id(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.program_id({op.attrs['axis']})", indent, op.loc)

    def op_num_programs(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.num_programs({op.attrs['axis']})", indent,
                  op.loc)

    def op_cast(self, op: Op, indent: int) -> None:
        source, target = op.source.dtype, op.result.dtype
        if source.is_float and target.is_int and not target.is_bool and \
                target.is_unsigned and target.bits >= 32:
            self._float_to_wide_unsigned(op, indent)
            return
        self.emit(f"{self.define(op.result)} = {self.name(op.source)}"
                  f".to({target.triton_name})", indent, op.loc)

    def _float_to_wide_unsigned(self, op: Op, indent: int) -> None:
        """Float -> uint32/uint64 as ``numerics.float_to_int`` defines it, in conversions
        that are defined for every value they meet: LLVM's fptoui of a value out of
        range is poison (compiled x86 code gave 0 where the definition wraps, and
        2**63 or 0 for an infinity, depending on the instructions picked)."""
        wide = self.temporary()  # float32 holds 16-bit floats exactly, float64 stays
        cast = "tl.float64" if op.source.dtype.bits == 64 else "tl.float32"
        self.emit(f"{wide} = {self.name(op.source)}.to({cast})", indent, op.loc)
        signed = self.temporary()  # inside int64: converted there, then wrapped
        self.emit(f"{signed} = ({wide} >= -9223372036854775808.0) & "
                  f"({wide} < 9223372036854775808.0)", indent, op.loc)
        low = f"tl.where({signed}, {wide}, 0.0).to(tl.int64)"
        result = self.define(op.result)
        if op.result.dtype.bits == 32:  # outside int64 (or NaN): INT64_MIN's low bits, 0
            self.emit(f"{result} = {low}.to(tl.uint32)", indent, op.loc)
            return
        upper = self.temporary()  # [2**63, 2**64): exact; anything else: 2**63
        self.emit(f"{upper} = ({wide} >= 9223372036854775808.0) & "
                  f"({wide} < 18446744073709551616.0)", indent, op.loc)
        high = (f"tl.where({upper}, {wide} - 9223372036854775808.0, 0.0).to(tl.int64)"
                f".to(tl.uint64) + 9223372036854775808")
        self.emit(f"{result} = tl.where({upper}, {high}, tl.where({signed}, "
                  f"{low}.to(tl.uint64), 9223372036854775808))", indent, op.loc)

    def op_bitcast(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = {self.name(op.source)}"
                  f".to({op.result.dtype.triton_name}, bitcast=True)", indent, op.loc)

    def op_broadcast(self, op: Op, indent: int) -> None:
        src = op.source
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
        self.emit(f"{self.define(op.result)} = tl.expand_dims({self.name(op.source)}, "
                  f"{op.attrs['axis']})", indent, op.loc)

    def op_reshape(self, op: Op, indent: int) -> None:
        source = self.name(op.source)
        if op.result.shape:
            expr = f"tl.reshape({source}, {_shape(op.result.shape)})"
        elif op.source.shape:
            # Triton has no 0-d block: the sum of the one element is that element
            expr = (f"tl.sum(tl.reshape({source}, (1,)), axis=0)"
                    f".to({op.result.dtype.triton_name})")
        else:
            expr = source
        self.emit(f"{self.define(op.result)} = {expr}", indent, op.loc)

    def op_permute(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.permute({self.name(op.source)}, "
                  f"{_shape(tuple(op.attrs['dims']))})", indent, op.loc)

    def op_cat(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.cat({self.name(op.lhs)}, "
                  f"{self.name(op.rhs)}, can_reorder=True)", indent, op.loc)

    def op_join(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.join({self.name(op.lhs)}, "
                  f"{self.name(op.rhs)})", indent, op.loc)

    def op_split(self, op: Op, indent: int) -> None:
        first, second = (self.define(r) for r in op.results)
        self.emit(f"{first}, {second} = tl.split({self.name(op.source)})", indent, op.loc)

    def _slice_tuples(self, op: Op, offsets: tuple[Value, ...]) -> str:
        names = "(" + ", ".join(self.name(v) for v in offsets) + ("," if len(offsets) == 1
                                                                   else "") + ")"
        return f"{names}, {_shape(op.attrs['sizes'])}, {_shape(op.attrs['strides'])}"

    def op_extract_slice(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.extract_slice({self.name(op.source)}, "
                  f"{self._slice_tuples(op, op.offsets)})", indent, op.loc)

    def op_insert_slice(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.insert_slice({self.name(op.require('dest'))}, "
                  f"{self.name(op.require('sub'))}, {self._slice_tuples(op, op.offsets)})",
                  indent, op.loc)

    def op_gather(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.gather({self.name(op.source)}, "
                  f"{self.name(op.require('index'))}, {op.attrs['axis']})", indent, op.loc)

    def op_inline_asm(self, op: Op, indent: int) -> None:
        args = ", ".join(self.name(v) for v in op.operands)
        self.emit(f"{self.define(op.result)} = tl.inline_asm_elementwise("
                  f"{op.attrs['asm']!r}, {op.attrs['constraints']!r}, [{args}], "
                  f"{op.result.dtype.triton_name}, {op.attrs['is_pure']}, 1)", indent, op.loc)

    def op_histogram(self, op: Op, indent: int) -> None:
        src, bins = self.name(op.source), op.attrs["num_bins"]
        if op.source.dtype.bits < 32:
            # triton-ascend's hfusion.histogram takes i32 or i64 values only ("input
            # element type must be i32 or i64"); the widened values are the same
            src = f"{src}.to(tl.int32)"
        if op.mask is None:
            self.emit(f"{self.define(op.result)} = tl.histogram({src}, {bins})", indent, op.loc)
            return
        # triton-ascend 3.2's histogram takes no mask: masked-off lanes are counted in
        # bin 0, then taken back out of it (as Triton's own interpreter does)
        mask = self.name(op.mask)
        self.emit(f"{self.define(op.result)} = tl.histogram(tl.where({mask}, {src}, 0), {bins}) "
                  f"- tl.where(tl.arange(0, {bins}) == 0, "
                  f"tl.sum(tl.where({mask}, 0, 1).to(tl.int32), 0), 0)", indent, op.loc)

    def op_sort(self, op: Op, indent: int) -> None:
        source, dtype = self.name(op.source), op.source.dtype
        wider = _SORTED_AS.get(dtype.name)
        if wider is not None:
            # triton-ascend 3.2.0's tt.sort takes signed integers, 16-bit and 32-bit floats
            # and fp8 only ("tt.sort only supports int8, int16, ..."): an unsigned or bool
            # block sorts as the next wider signed type, which keeps its order
            source = f"{source}.to({wider})"
        expr = f"tl.sort({source}, dim={op.attrs['axis']}, descending={op.attrs['descending']})"
        if wider is not None:
            expr = f"({expr}).to({dtype.triton_name})"
        self.emit(f"{self.define(op.result)} = {expr}", indent, op.loc)

    def op_flip(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = tl.flip({self.name(op.source)}, "
                  f"{op.attrs['axis']})", indent, op.loc)

    def op_random(self, op: Op, indent: int) -> None:
        names = ", ".join(self.define(r) for r in op.results)
        seed, offset = self.name(op.require("seed")), self.name(op.require("offset"))
        self.emit(f"{names} = tl.{op.kind}({seed}, {offset}, {op.attrs['n_rounds']})", indent,
                  op.loc)

    def op_dot(self, op: Op, indent: int) -> None:
        out, acc = op.result.dtype, self.name(op.require("acc"))
        precision = op.attrs["input_precision"]
        if precision == "hf32" and op.lhs.dtype.name != "float32":
            # hf32 is a float32 mode: newer triton-ascend ignores it for 16-bit operands
            # (its test_dot_2_ignore_tf32), the 3.2.0 wheel refuses it ("must be used
            # with f32 * f32 = f32"): the generated Triton leaves it out
            precision = "ieee"
        if out.is_float and out.bits < 32:
            # ``dot`` multiplies and sums in float32 and rounds a 16-bit accumulator
            # once (numerics.dot); a float16 out_dtype would make triton-ascend's CPU
            # lowering multiply and add in float16 (90000 overflows: inf - inf = NaN)
            self.emit(f"{self.define(op.result)} = tl.dot({self.name(op.lhs)}, "
                      f"{self.name(op.rhs)}, acc={acc}.to(tl.float32), "
                      f"input_precision={precision!r}, "
                      f"out_dtype=tl.float32).to({out.triton_name})", indent, op.loc)
            return
        self.emit(f"{self.define(op.result)} = tl.dot({self.name(op.lhs)}, {self.name(op.rhs)}, "
                  f"acc={acc}, input_precision={precision!r}, "
                  f"out_dtype={out.triton_name})", indent, op.loc)

    def op_arg_reduce(self, op: Op, indent: int) -> None:
        value, index = (self.define(r) for r in op.results)
        fn = "tl.max" if op.attrs["combine"] == "argmax" else "tl.min"
        self.emit(f"{value}, {index} = {fn}({self.name(op.source)}, axis={op.attrs['axis']}, "
                  f"return_indices=True, "
                  f"return_indices_tie_break_left={op.attrs['tie_break_left']})", indent, op.loc)

    def op_scan(self, op: Op, indent: int) -> None:
        fn = "tl.cumsum" if op.attrs["combine"] == "sum" else "tl.cumprod"
        self.emit(f"{self.define(op.result)} = {fn}({self.name(op.source)}, "
                  f"axis={op.attrs['axis']}, reverse={op.attrs['reverse']})", indent, op.loc)

    def op_reduce(self, op: Op, indent: int) -> None:
        source, axis = op.source, op.attrs["axis"]
        length = source.shape[axis]
        if (self.tree_sums and op.attrs["combine"] == "sum" and source.dtype.is_float
                and length & (length - 1) == 0):
            self._tree_sum(op, indent)
            return
        combine = COMBINES[op.attrs["combine"]].triton
        self.emit(f"{self.define(op.result)} = {combine}({self.name(source)}, "
                  f"axis={axis})", indent, op.loc)

    def _tree_sum(self, op: Op, indent: int) -> None:
        """A float sum in ``numerics.tree_sum``'s order, spelled out: the upper half of
        the axis is added to the lower half until one element is left, then the axis is
        dropped. ``tl.sum`` would leave the order to the lowering (a loop on the CPU
        route, the vector unit's own order on the NPU)."""
        source, axis = op.source, op.attrs["axis"]
        shape = list(source.shape)
        partial, rank = self.name(source), len(shape)
        strides = _shape((1,) * (rank + 1))
        while shape[axis] > 1:
            shape[axis] //= 2
            # the halves are taken from a reshape that splits the axis in two (2, n/2):
            # triton-ascend moves a slice of an elementwise result (a cast, a product)
            # above that op, level after level, until the tree is one scalar op per
            # element (a 1024-element bf16 sum compiled for 100 s); a reshape stops it
            split = shape[:axis] + [2] + shape[axis:]
            folded = self.temporary()
            self.emit(f"{folded} = tl.reshape({partial}, {_shape(tuple(split))})", indent,
                      op.loc)
            sizes = split[:axis] + [1] + split[axis + 1:]
            halves = []
            for half in (0, 1):
                offsets = [0] * (rank + 1)
                offsets[axis] = half
                halves.append(f"tl.reshape(tl.extract_slice({folded}, {_shape(tuple(offsets))}, "
                              f"{_shape(tuple(sizes))}, {strides}), {_shape(tuple(shape))})")
            partial = self.temporary()
            self.emit(f"{partial} = {halves[0]} + {halves[1]}", indent, op.loc)
        if op.result.shape:
            self.emit(f"{self.define(op.result)} = tl.reshape({partial}, "
                      f"{_shape(op.result.shape)})", indent, op.loc)
        else:  # Triton has no 0-d reshape; the sum of one element is that element
            self.emit(f"{self.define(op.result)} = tl.sum({partial}, axis=0)", indent, op.loc)

    def _address(self, op: Op) -> tuple[str, bool]:
        """``ptr + offset``, or just ``ptr`` when the offset is the constant 0; with
        ``masked_offsets_guarded``, a masked access's offset is 0 in its masked-off
        lanes (see ``generate``)."""
        pointer = f"{self.name(op.view)}_ptr"
        if _is_zero(op.offset):
            return pointer, True
        offset = self.name(op.offset)
        if self.masked_offsets_guarded and op.mask is not None and op.offset.shape:
            offset = f"tl.where({self.name(op.mask)}, {offset}, 0)"
        return f"{pointer} + {offset}", False

    def op_load(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = {self._load_expression(op)}", indent, op.loc)
        if any(_reads_operand_buffers(user) for user in op.result.users):
            # the scan's own copy (``scan_copies``); volatile, so that no pass merges
            # it with the load above
            copy = self.temporary()
            self.emit(f"{copy} = {self._load_expression(op, volatile=True)}", indent, op.loc)
            self.scan_copies[op.result.uid] = copy

    def _load_expression(self, op: Op, volatile: bool = False) -> str:
        """The load, as int1 for a bool tensor: triton-ascend 3.2.0 loads ``*i1`` as
        int8, which an ``if`` merging it with a Python bool refused (vLLM's
        causal_conv1d: "Mismatched type ... (int8) and else block (int1)")."""
        expr = self._plain_load_expression(op, volatile)
        return f"({expr}) != 0" if op.result.dtype.is_bool else expr

    def _plain_load_expression(self, op: Op, volatile: bool = False) -> str:
        address, uniform = self._address(op)
        shape = _shape(op.result.shape)
        mask, other = op.mask, op.other
        flags = ", volatile=True" if volatile else ""
        if uniform:
            # one element for every lane: a scalar load with no index arithmetic
            expr = f"tl.load({address}{flags})"
            if op.result.shape:
                expr = f"tl.broadcast_to({expr}, {shape})"
            if mask is not None and other is not None and self.lanes_observed(op.result, mask):
                expr = f"tl.where({self.name(mask)}, {expr}, {self.name(other)})"
            return expr
        narrow = self._broadcast_load(op, flags)
        if narrow is not None:
            return narrow
        if mask is not None and other is not None:
            if _one_value_for_every_lane(other):
                return f"tl.load({address}, mask={self.name(mask)}, other={self.name(other)}" \
                    f"{flags})"
            # a block ``other``: triton-adapter-opt 3.2.0 takes only a splat scalar ("other
            # value used in masked load produced by unsupported instruction"), so the
            # masked-off lanes are selected after the load
            expr = f"tl.load({address}, mask={self.name(mask)}{flags})"
            if not self.lanes_observed(op.result, mask):
                return expr
            return f"tl.where({self.name(mask)}, {expr}, {self.name(other)})"
        return f"tl.load({address}{flags})"

    def _broadcast_load(self, op: Op, flags: str) -> str | None:
        """A load whose offsets are a block broadcast along some axes (``x_ptr + r * 0 +
        c``), as the load of the smaller block, broadcast: triton-ascend 3.2.0's pointer
        analysis asserts "strides must not be zero" on the broadcast offsets, in its
        CPU and NPU lowerings alike. None unless the mask (if any) is a broadcast of a
        mask constant along the same axes."""
        owner = op.offset.owner
        if owner is None or owner.defn is not OPS["broadcast"] or \
                owner.source.rank != op.offset.rank:
            return None
        source = owner.source
        shape = _shape(op.result.shape)
        pointer = f"{self.name(op.view)}_ptr + {self.name(source)}"
        if op.mask is None:
            return f"tl.broadcast_to(tl.load({pointer}{flags}), {shape})"
        narrow = _broadcast_from(op.mask, source.shape)
        if narrow is None:
            return None
        mask = f"tl.broadcast_to({self.name(narrow)}, {_shape(source.shape)})"
        if self.masked_offsets_guarded:
            pointer = f"{self.name(op.view)}_ptr + tl.where({mask}, {self.name(source)}, 0)"
        expr = f"tl.broadcast_to(tl.load({pointer}, mask={mask}{flags}), {shape})"
        if op.other is None or not self.lanes_observed(op.result, op.mask):
            return expr
        return f"tl.where({self.name(op.mask)}, {expr}, {self.name(op.other)})"

    def _written_address(self, op: Op) -> str:
        """The address a store or atomic writes: with a constant-0 offset (a one-element
        tensor) and a block value, a block of pointers to that element (Triton takes
        no block value through a scalar pointer)."""
        address, uniform = self._address(op)
        if uniform and op.value.shape:
            return f"{address} + tl.zeros({_shape(op.value.shape)}, tl.int32)"
        return address

    def op_store(self, op: Op, indent: int) -> None:
        address = self._written_address(op)
        mask = f", mask={self.name(op.mask)}" if op.mask is not None else ""
        self.emit(f"tl.store({address}, {self.name(op.value)}{mask})", indent, op.loc)

    def _memory_semantics(self, op: Op) -> str:
        return "".join(f", {key}={op.attrs[key]!r}" for key in ("sem", "scope")
                       if op.attrs.get(key) is not None)

    def op_atomic(self, op: Op, indent: int) -> None:
        address = self._written_address(op)
        mask = f", mask={self.name(op.mask)}" if op.mask is not None else ""
        self.emit(f"{self.define(op.result)} = tl.atomic_{op.attrs['op']}({address}, "
                  f"{self.name(op.value)}{mask}{self._memory_semantics(op)})", indent, op.loc)

    def _host_pointer(self, op: Op, element: DType, indent: int) -> str:
        """The pointer block of a ``load_address``/``store_address``/atomic: the int64
        address cast back to a pointer plus the element offsets, as the kernel wrote
        it. A block of addresses (one per lane) is rebased first on their smallest
        active one, a scalar: triton-ascend 3.2.0 lowers a scalar address cast with
        offsets, and fails on a block of addresses ("tensor.extract op incorrect
        number of indices"). Lanes are aligned to the element size (the interpreter
        checks it), so the byte distances divide evenly."""
        address = op.require("address")
        # a constant-0 offset is never named (``op_const``): a block of zeros, or none
        offset = self.name(op.offset) if not _is_zero(op.offset) else \
            f"tl.zeros({_shape(op.offset.shape)}, tl.int32)" if op.offset.shape else "0"
        pointer_type = f"tl.pointer_type({element.triton_name})"
        if not address.shape:
            return f"{self.name(address)}.to({pointer_type}) + {offset}"
        # masked-off lanes count as the largest address (by maximum, not where: a
        # where before the reduction crashes triton-adapter-opt 3.2.0); addresses are
        # positive, so an active lane's own address is kept
        active = self.name(address) if op.mask is None else \
            f"tl.maximum({self.name(address)}, (1 - {self.name(op.mask)}.to(tl.int64)) * " \
            "0x7FFFFFFFFFFFFFFF)"
        base = active
        for axis in reversed(range(address.rank)):
            base = f"tl.min({base}, axis={axis})"
        base_name, moved = self.temporary(), self.temporary()
        self.emit(f"{base_name} = {base}", indent, op.loc)
        step = max(1, element.itemsize)
        moved_expr = f"({self.name(address)} - {base_name}) // {step} + {offset}"
        if op.mask is not None:  # (masked-off lanes may hold any address: offset 0)
            moved_expr = f"tl.where({self.name(op.mask)}, {moved_expr}, 0)"
        self.emit(f"{moved} = {moved_expr}", indent, op.loc)
        return f"{base_name}.to({pointer_type}) + {moved}"

    def op_load_address(self, op: Op, indent: int) -> None:
        pointer = self._host_pointer(op, op.result.dtype, indent)
        if op.mask is None:
            expr = f"tl.load({pointer})"
        elif _one_value_for_every_lane(op.other):
            expr = f"tl.load({pointer}, mask={self.name(op.mask)}, other={self.name(op.other)})"
        else:  # (a block ``other``: see ``_plain_load_expression``)
            expr = f"tl.where({self.name(op.mask)}, tl.load({pointer}, " \
                f"mask={self.name(op.mask)}), {self.name(op.other)})"
        if op.result.dtype.is_bool:  # (loaded as int8: see ``_load_expression``)
            expr = f"({expr}) != 0"
        self.emit(f"{self.define(op.result)} = {expr}", indent, op.loc)

    def op_store_address(self, op: Op, indent: int) -> None:
        pointer = self._host_pointer(op, op.value.dtype, indent)
        mask = f", mask={self.name(op.mask)}" if op.mask is not None else ""
        self.emit(f"tl.store({pointer}, {self.name(op.value)}{mask})", indent, op.loc)

    def op_tensor_address(self, op: Op, indent: int) -> None:
        self.emit(f"{self.define(op.result)} = {self.name(op.view)}_ptr.to(tl.int64)", indent,
                  op.loc)

    def op_atomic_address(self, op: Op, indent: int) -> None:
        pointer = self._host_pointer(op, op.value.dtype, indent)
        mask = f", mask={self.name(op.mask)}" if op.mask is not None else ""
        self.emit(f"{self.define(op.result)} = tl.atomic_{op.attrs['op']}({pointer}, "
                  f"{self.name(op.value)}{mask}{self._memory_semantics(op)})", indent, op.loc)

    def op_atomic_cas_address(self, op: Op, indent: int) -> None:
        pointer = self._host_pointer(op, op.value.dtype, indent)
        self.emit(f"{self.define(op.result)} = tl.atomic_cas({pointer}, "
                  f"{self.name(op.require('compare'))}, {self.name(op.value)}"
                  f"{self._memory_semantics(op)})", indent, op.loc)

    def op_atomic_cas(self, op: Op, indent: int) -> None:
        address = self._written_address(op)
        self.emit(f"{self.define(op.result)} = tl.atomic_cas({address}, "
                  f"{self.name(op.require('compare'))}, {self.name(op.value)}"
                  f"{self._memory_semantics(op)})", indent, op.loc)

    def op_if(self, op: Op, indent: int) -> None:
        names = [self.define(r) for r in op.results]
        self.emit(f"if {self.name(op.require('condition'))}:", indent, op.loc)
        for i, region in enumerate(op.regions):
            if i:
                self.emit("else:", indent, None)
            start = len(self.lines)
            self.block(region, indent + 1)
            for name, value in zip(names, region.ops[-1].operands):
                self.emit(f"{name} = {self.name(value)}", indent + 1, region.ops[-1].loc)
            if len(self.lines) == start:
                self.emit("pass", indent + 1, None)

    def op_while(self, op: Op, indent: int) -> None:
        condition, body = op.regions
        names = []
        for init, arg in zip(op.inits, body.args):
            name = self.define(arg)
            names.append(name)
            self.emit(f"{name} = {self.name(init)}", indent, op.loc)
        for arg, name in zip(condition.args, names):
            self.names[arg.uid] = name
        flag = f"go{self.counter}"  # the loop condition, a fresh name
        self.counter += 1
        self.block(condition, indent)
        (go,) = condition.yielded()
        self.emit(f"{flag} = {self.name(go)}", indent, op.loc)
        self.emit(f"while {flag}:", indent, op.loc)
        self.block(body, indent + 1)
        for name, value in zip(names, body.ops[-1].operands):
            self.emit(f"{name} = {self.name(value)}", indent + 1, body.ops[-1].loc)
        self.block(condition, indent + 1)  # the condition again, on the new values
        self.emit(f"{flag} = {self.name(go)}", indent + 1, op.loc)
        for result, name in zip(op.results, names):
            self.names[result.uid] = name

    def op_for(self, op: Op, indent: int) -> None:
        body = op.body
        lo, hi, step = (self.name(v) for v in (op.start, op.end, op.step))
        carried = []
        for init, arg in zip(op.inits, body.args[1:]):
            name = self.define(arg)
            carried.append(name)
            self.emit(f"{name} = {self.name(init)}", indent, op.loc)
        iv = self.define(body.args[0])
        if op.attrs.get("tiled") or self._positive_constant(op.step) or \
                body.args[0].dtype.is_unsigned:
            # (a tile_range loop steps by num_programs * block: positive)
            self.emit(f"for {iv} in range({lo}, {hi}, {step}):", indent, op.loc)
        else:
            # scf.for takes only a positive step (a negative one ran no iteration, while
            # Python's range counts down): count the trips, then step the counter
            # (counted in int64: hi - lo of int32 bounds does not overflow there)
            name = body.args[0].dtype.triton_name
            k = self.counter
            self.counter += 1
            lo64, hi64, step64 = f"lo{k}", f"hi{k}", f"step{k}"
            for wide, bound in ((lo64, lo), (hi64, hi), (step64, step)):
                self.emit(f"{wide} = {bound}.to(tl.int64)", indent, op.loc)
            # (the distance and the count in uint64, as the interpreter's
            # ``_trip_counts``: hi - lo + step - 1 overflowed int64, and ran no trip)
            zero, one = "tl.cast(0, tl.int64)", "tl.cast(1, tl.int64)"
            up, runs, dist, size = f"up{k}", f"runs{k}", f"dist{k}", f"size{k}"
            self.emit(f"{up} = {step64} > {zero}", indent, op.loc)
            self.emit(f"{runs} = tl.where({up}, {hi64} > {lo64}, ({hi64} < {lo64}) & "
                      f"({step64} < {zero}))", indent, op.loc)
            self.emit(f"{dist} = tl.where({runs}, tl.where({up}, {hi64} - {lo64}, {lo64} - "
                      f"{hi64}), {one}).to(tl.uint64, bitcast=True) - tl.cast(1, tl.uint64)",
                      indent, op.loc)
            self.emit(f"{size} = tl.where({up}, {step64}, tl.where({step64} < {zero}, {zero} - "
                      f"{step64}, {one})).to(tl.uint64, bitcast=True)", indent, op.loc)
            self.emit(f"trips{k} = tl.where({runs}, tl.minimum({dist} // {size}, "
                      f"tl.cast(0x7FFFFFFFFFFFFFFE, tl.uint64)).to(tl.int64, bitcast=True) + "
                      f"{one}, {zero})", indent, op.loc)
            self.emit(f"for trip{k} in range(0, trips{k}):", indent, op.loc)
            self.emit(f"{iv} = ({lo64} + trip{k} * {step64}).to({name})", indent + 1, op.loc)
        self.block(body, indent + 1)
        yield_op = body.ops[-1]
        for name, value in zip(carried, yield_op.operands):
            self.emit(f"{name} = {self.name(value)}", indent + 1, yield_op.loc)
        if not body.ops[:-1] and not carried:
            self.emit("pass", indent + 1, None)
        for result, name in zip(op.results, carried):
            self.names[result.uid] = name


def _through_casts(v: Value) -> Value:
    """``v`` before the casts and broadcasts that made it (lanewise ops that are not
    elementwise arithmetic)."""
    while v.owner is not None and v.owner.defn.lanewise and not v.owner.defn.is_elementwise:
        v = v.owner.source
    return v


def _is_zero(v: Value) -> bool:
    owner = v.owner
    return owner is not None and owner.constant == 0 and not isinstance(owner.constant, bool)


# combines that triton-ascend 3.2.0 lowers to a linalg.reduce from the right identity:
# one op of the two region arguments; float maximum/minimum are not among them (the
# identity is -inf/+inf, which a fold of NaNs does not give), nor float and/or/xor
_IDENTITY_COMBINES = {"int": ("add", "mul", "maximum", "minimum", "and", "or", "xor"),
                      "bool": ("and", "or", "xor", "maximum", "minimum"),
                      "float": ("add", "mul")}


def _scanned_reduce(op: Op) -> bool:
    """A ``reduce_fn`` that the generated Triton spells as the last element of a scan
    (see ``op_reduce_fn``): one operand, and a combine outside ``_IDENTITY_COMBINES``."""
    if op.defn is not OPS["reduce_fn"] or len(op.operands) != 1:
        return False
    region = op.body
    body = [o for o in region.ops if not o.defn.terminator]
    if len(body) == 1 and set(body[0].operands) == set(region.args) and \
            region.yielded() == tuple(body[0].results):
        (source,) = op.operands
        kinds = _IDENTITY_COMBINES[source.dtype.kind]
        if any(body[0].defn is OPS[kind] for kind in kinds):
            return False
    return True


def _reads_operand_buffers(op: Op) -> bool:
    """The op's lowering reads its operands' buffers directly: a scan, or a reduce
    spelled as one (``scan_copies``)."""
    return op.defn.reads_operand_buffers or _scanned_reduce(op)


def _only_element(block: str, dtype: DType) -> str:
    """The scalar of a one-element block, bit for bit: an xor reduce (identity 0) of
    its bits (``tl.sum`` would widen small integers and turn -0.0 into +0.0)."""
    if dtype.is_bool:
        return f"tl.xor_sum(({block}).to(tl.int8), axis=0) != 0"
    if dtype.is_int:
        return f"tl.xor_sum({block}, axis=0)"
    bits = f"tl.int{dtype.bits}"
    return f"tl.xor_sum(({block}).to({bits}, bitcast=True), axis=0).to({dtype.triton_name}, " \
        "bitcast=True)"


# the signed type an unsigned (or bool) block is sorted as (see ``op_sort``)
_SORTED_AS = {"int1": "tl.int8", "uint8": "tl.int16", "uint16": "tl.int32", "uint32": "tl.int64"}


def _broadcast_from(v: Value, shape: tuple[int, ...]) -> Value | None:
    """The value ``v`` is a broadcast of, when that value's shape broadcasts to
    ``shape`` (``v`` is constant along the axes ``shape`` has as 1); else None."""
    owner = v.owner
    if owner is None or owner.defn is not OPS["broadcast"]:
        return None
    source = owner.source
    if source.rank != len(shape) or any(a != 1 and a != b for a, b in zip(source.shape, shape)):
        return None
    return source


def _one_value_for_every_lane(v: Value) -> bool:
    """``v`` is a constant or a scalar broadcast to a block (a splat in Triton IR): the
    only ``other`` of a masked load that triton-adapter-opt 3.2.0 lowers."""
    owner = v.owner
    while owner is not None and owner.defn is OPS["broadcast"] and owner.source.shape:
        owner = owner.source.owner
    if owner is None or not v.shape:
        return True
    return owner.constant is not None or owner.defn is OPS["broadcast"]


def _is_zero_offset_of(use: Op, v: Value) -> bool:
    """``v`` is the constant-0 offset of memory op ``use`` and nothing else there."""
    return "offset" in use.defn.signature.roles and use.offset is v and _is_zero(v) and \
        sum(o is v for o in use.operands) == 1


# The code generator's emitter for every registered op kind (``dsl.opdefs.OPS``);
# tests/test_registry.py fails when one is missing.
EMITTERS: dict[str, Callable[[_Emitter, Op, int], None]] = {
    **{kind: _Emitter.elementwise for kind, d in OPS.items() if d.is_elementwise},
    "floordiv": _Emitter.integer_division,
    "mod": _Emitter.integer_division,
    "maximum": _Emitter.extremum,
    "minimum": _Emitter.extremum,
    "lshift": _Emitter.shift,
    "rshift": _Emitter.shift,
    "const": _Emitter.op_const,
    "arange": _Emitter.op_arange,
    "program_id": _Emitter.op_program_id,
    "num_programs": _Emitter.op_num_programs,
    "cast": _Emitter.op_cast,
    "bitcast": _Emitter.op_bitcast,
    "broadcast": _Emitter.op_broadcast,
    "expand_dims": _Emitter.op_expand_dims,
    "reshape": _Emitter.op_reshape,
    "permute": _Emitter.op_permute,
    "cat": _Emitter.op_cat,
    "join": _Emitter.op_join,
    "split": _Emitter.op_split,
    "flip": _Emitter.op_flip,
    "extract_slice": _Emitter.op_extract_slice,
    "insert_slice": _Emitter.op_insert_slice,
    "gather": _Emitter.op_gather,
    "histogram": _Emitter.op_histogram,
    "inline_asm": _Emitter.op_inline_asm,
    "sort": _Emitter.op_sort,
    "randint": _Emitter.op_random,
    "randint4x": _Emitter.op_random,
    "rand": _Emitter.op_random,
    "randn": _Emitter.op_random,
    "dot": _Emitter.op_dot,
    "arg_reduce": _Emitter.op_arg_reduce,
    "scan": _Emitter.op_scan,
    "reduce": _Emitter.op_reduce,
    "load": _Emitter.op_load,
    "store": _Emitter.op_store,
    "atomic": _Emitter.op_atomic,
    "atomic_cas": _Emitter.op_atomic_cas,
    "load_address": _Emitter.op_load_address,
    "store_address": _Emitter.op_store_address,
    "atomic_address": _Emitter.op_atomic_address,
    "tensor_address": _Emitter.op_tensor_address,
    "atomic_cas_address": _Emitter.op_atomic_cas_address,
    "for": _Emitter.op_for,
    "if": _Emitter.op_if,
    "reduce_fn": _Emitter.op_reduce_fn,
    "scan_fn": _Emitter.op_scan_fn,
    "hint": _Emitter.op_hint,
    "print": _Emitter.op_print,
    "device_assert": _Emitter.op_device_assert,
    "while": _Emitter.op_while,
    "yield": _Emitter.op_yield,
}


# triton-ascend's refusals of an access's offsets that guarded ones avoid (see
# ``generate``): offsets starting below zero, and a zero stride it cannot take out
# (``x + r * 0 + c`` under a mask that varies along r)
OFFSETS_REFUSED = ("expected offsets to be non-negative", "strides must not be zero")


def generate(fn: Function, *, tree_sums: bool = False,
             masked_offsets_guarded: bool = False) -> GeneratedKernel:
    """Deterministic triton-ascend source for a specialized kernel.

    ``tree_sums`` spells every float ``sum`` out in ``numerics.tree_sum``'s halving
    order (compiled-CPU mode, whose bits must equal the interpreter's). The NPU build
    leaves ``tl.sum`` to the vector unit: bishengir-compile ran past 600 s on the
    spelled-out tree of softmax's 8x1024 block (measured), so on the device a float
    sum is rounded in the hardware's order.

    ``masked_offsets_guarded`` writes every masked load's, store's and atomic's offset
    as ``tl.where(mask, offset, 0)``: triton-ascend's pointer analysis refuses an
    access whose offsets start below 0 ("expected offsets to be non-negative"), even
    in lanes the mask turns off (``x + (i - 3)`` under ``i >= 3``, a shifted halo).
    The guarded offsets are not affine, so the access becomes a gather; the stages
    that compile generated code retry with it only after that refusal, or after its
    assertion "strides must not be zero" on a block of offsets constant along an axis
    that the load's own mask is not (``OFFSETS_REFUSED``)."""
    em = _Emitter(fn, tree_sums=tree_sums, masked_offsets_guarded=masked_offsets_guarded)
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
    em.block(fn.body, 1)
    if not em.lines:
        em.lines.append("    pass")
    # combine functions (reduce/scan with a jit function) come before the kernel
    prefix = header[:-2] + [line for f in em.functions for line in (*f, "", "")] + header[-2:]
    def_line = len(prefix)  # 1-based line of the ``def``: Triton counts from here
    line_map = {line + len(prefix): loc for line, loc in em.line_map.items()}
    source = "\n".join(prefix + em.lines) + "\n"
    return GeneratedKernel(fn.name, source, signature, line_map, def_line)
