"""``inline_asm_elementwise`` on a CPU: a small, explicit subset of Ascend scalar
assembly, parsed when the kernel is compiled and evaluated lane by lane.

The NPU build hands the assembly text to triton-ascend unchanged (the device
assembles it). The interpreter cannot run device code, so it evaluates the
instructions it knows, and a kernel whose assembly uses any other instruction is
refused at compile time, at its line, naming the instruction. Known here:

- ``MOV $d, $s`` (copy) and ``MOV $d, SYS_CNT`` (the system counter: on a CPU, a
  monotonic nanosecond count, the same for every lane of one evaluation);
- ``ADD``, ``SUB`` and ``MUL`` with a type suffix (``.s8`` ... ``.s64``, ``.u8`` ...
  ``.u64``, ``.f16``, ``.f32``): ``$d = $a op $b`` in that type, integers wrapping.

Operands ``$0``... follow LLVM's numbering: the outputs first (one here), then the
inputs in ``args`` order; the constraint string says how many of each (``"=l,l,l"``).
Instructions are separated by newlines or ``;``. One output and ``pack=1`` only: the
evaluator works on one element per instruction.

Data flow: ``dsl.semantic.inline_asm`` calls :func:`parse` and stores the program (a
tuple of :class:`Instruction`) in the op's attributes; the interpreter calls
:func:`evaluate` on the argument arrays; the code generator re-emits the text.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np

SYSTEM_COUNTER = "SYS_CNT"
ARITHMETIC = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}
SUFFIX_TYPES = {f"s{b}": np.dtype(f"int{b}") for b in (8, 16, 32, 64)} | \
    {f"u{b}": np.dtype(f"uint{b}") for b in (8, 16, 32, 64)} | \
    {"f16": np.dtype(np.float16), "f32": np.dtype(np.float32)}
KNOWN = "MOV, and ADD/SUB/MUL with a type suffix (.s8-.s64, .u8-.u64, .f16, .f32)"

_INSTRUCTION = re.compile(r"^([A-Za-z]+)(?:\.(\w+))?\s+(.+)$")
_REGISTER = re.compile(r"^\$(\d+)$")


class AsmError(ValueError):
    """The assembly uses something this evaluator does not know (the message says what)."""


@dataclass(frozen=True)
class Instruction:
    """One parsed instruction: ``operands`` are register numbers, or ``SYS_CNT``."""

    opcode: str
    suffix: str | None
    dest: int
    operands: tuple[int | str, ...]


def _operand(text: str, registers: int, where: str) -> int | str:
    if text == SYSTEM_COUNTER:
        return text
    match = _REGISTER.match(text)
    if not match or int(match[1]) >= registers:
        raise AsmError(f"operand {text!r} of {where!r} is not a register $0..${registers - 1} "
                       f"or {SYSTEM_COUNTER}")
    return int(match[1])


def operand_counts(constraints: str) -> tuple[int, int]:
    """(outputs, inputs) of an LLVM constraint string such as ``"=l,l,l"``."""
    parts = [p.strip() for p in constraints.split(",") if p.strip()]
    outputs = sum(p.startswith("=") for p in parts)
    if any(p.startswith("=") for p in parts[outputs:]):
        raise AsmError(f"constraints {constraints!r}: the outputs ('=...') must come first")
    return outputs, len(parts) - outputs


def parse(asm: str, constraints: str, inputs: int) -> tuple[Instruction, ...]:
    """The program of ``asm`` for one output and ``inputs`` inputs, or AsmError."""
    outputs, declared = operand_counts(constraints)
    if outputs != 1:
        raise AsmError(f"constraints {constraints!r} declare {outputs} outputs; one is supported")
    if declared != inputs:
        raise AsmError(f"constraints {constraints!r} declare {declared} inputs, but {inputs} "
                       "args are given")
    registers = 1 + inputs
    written = set(range(1, registers))
    program = []
    for text in (t.strip() for t in re.split(r"[;\n]", asm)):
        if not text:
            continue
        match = _INSTRUCTION.match(text)
        if not match:
            raise AsmError(f"cannot read the instruction {text!r}")
        opcode, suffix = match[1].upper(), match[2]
        operands = tuple(_operand(o.strip(), registers, text) for o in match[3].split(","))
        move = opcode == "MOV" and suffix is None and len(operands) == 2
        arithmetic = opcode in ARITHMETIC and suffix in SUFFIX_TYPES and \
            len(operands) == 3 and SYSTEM_COUNTER not in operands
        if not (move or arithmetic):
            raise AsmError(f"instruction {text!r} is not one the interpreter can evaluate "
                           f"(it knows {KNOWN})")
        if not isinstance(operands[0], int):
            raise AsmError(f"instruction {text!r} writes {operands[0]}, not a register")
        unset = [o for o in operands[1:] if isinstance(o, int) and o not in written]
        if unset:
            raise AsmError(f"instruction {text!r} reads ${unset[0]} before it is written")
        written.add(operands[0])
        program.append(Instruction(opcode, suffix, operands[0], operands[1:]))
    if not any(i.dest == 0 for i in program):
        raise AsmError(f"the assembly {asm.strip()!r} never writes its output $0")
    return tuple(program)


def evaluate(program: tuple[Instruction, ...], args: list[np.ndarray], shape: tuple[int, ...],
             dtype: np.dtype) -> np.ndarray:
    """Run ``program`` on every lane: ``args`` are the inputs broadcast to ``shape``;
    the result is ``$0`` converted to ``dtype``."""
    registers: dict[int, np.ndarray] = {i + 1: a for i, a in enumerate(args)}
    counter = None
    for ins in program:
        values = []
        for operand in ins.operands:
            if operand == SYSTEM_COUNTER:
                counter = np.int64(time.monotonic_ns()) if counter is None else counter
                values.append(np.full(shape, counter, np.int64))
            else:  # parse() saw every register written before it is read
                values.append(registers[operand])
        if ins.opcode == "MOV":
            registers[ins.dest] = values[0]
            continue
        kind = SUFFIX_TYPES[ins.suffix]
        with np.errstate(over="ignore", invalid="ignore"):
            registers[ins.dest] = ARITHMETIC[ins.opcode](
                *(np.asarray(v).astype(kind) for v in values)).astype(kind)
    return np.broadcast_to(registers[0], shape).astype(dtype)
