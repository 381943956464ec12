"""``inline_asm_elementwise``: the interpreter's evaluator of Ascend scalar assembly
(``dsl.inline_asm``), the NPU build that keeps the text, compiled-CPU mode's refusal,
and the compile-time errors that name what the evaluator does not know."""

from __future__ import annotations

import numpy as np
import pytest
import triton
import triton.language as tl

import dsl


@triton.jit
def asm_binary(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, ASM: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    y = tl.load(y_ptr + offs, mask=inside)
    out = tl.inline_asm_elementwise(asm=ASM, constraints="=l,l,l", args=[x, y],
                                    dtype=tl.int64, is_pure=True, pack=1)
    tl.store(out_ptr + offs, out, mask=inside)


def _run_binary(asm: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.zeros(x.shape, np.int64)
    dsl.from_triton(asm_binary)[(-(-x.size // 128),)](x, y, out, x.size, BLOCK=128, ASM=asm)
    return out


@pytest.mark.parametrize("asm, expected", [
    ("ADD.s64 $0, $1, $2", np.add),
    ("\n    SUB.s64 $0, $1, $2\n", np.subtract),
    ("MUL.s64 $0, $1, $2", np.multiply),
    ("ADD.s64 $0, $1, $2; MUL.s64 $0, $0, $1", lambda x, y: (x + y) * x),
    ("MOV $0, $2", lambda x, y: y),
])
def test_scalar_instructions_evaluate_per_lane_with_wraparound(asm, expected):
    rng = np.random.default_rng(0)
    x = rng.integers(-2**62, 2**62, 300)
    y = rng.integers(-2**62, 2**62, 300)
    with np.errstate(over="ignore"):
        want = expected(x, y)
    np.testing.assert_array_equal(_run_binary(asm, x, y), want)


def test_a_narrower_type_suffix_wraps_in_that_type():
    x = np.array([2**31 - 1, 5], np.int64)
    y = np.array([1, 7], np.int64)
    # s32 arithmetic: 2**31 - 1 + 1 wraps to -2**31, then widens to int64
    np.testing.assert_array_equal(_run_binary("ADD.s32 $0, $1, $2", x, y), [-2**31, 12])


@triton.jit
def system_counter(out_ptr):
    first = tl.inline_asm_elementwise("MOV $0, SYS_CNT", "=l", [], tl.int64, False, 1)
    second = tl.inline_asm_elementwise("MOV $0, SYS_CNT", "=l", [], tl.int64, False, 1)
    tl.store(out_ptr, first)
    tl.store(out_ptr + 1, second)


def test_system_counter_is_a_monotonic_count_and_impure_calls_are_not_merged():
    out = np.zeros(2, np.int64)
    dsl.from_triton(system_counter)[(1,)](out)
    assert 0 < out[0] < out[1]  # two reads, in program order


@pytest.mark.parametrize("asm, match", [
    ("FMA.f32 $0, $1, $2", r"'FMA.f32 \$0, \$1, \$2' is not one the interpreter can evaluate"),
    ("ADD.s64 $0, $1, $3", r"operand '\$3' .* is not a register \$0..\$2"),
    ("ADD.s64 $1, $1, $2", "never writes its output"),
])
def test_unknown_assembly_is_refused_at_its_line(asm, match):
    x = np.zeros(4, np.int64)
    with pytest.raises(dsl.DSLCompileError, match=match) as info:
        _run_binary(asm, x, x)
    assert "tl.inline_asm_elementwise(" in str(info.value)


def test_npu_build_keeps_the_assembly_text(toolchain):
    lowered = dsl.from_triton(asm_binary).lower(
        dsl.tensor_spec("int64"), dsl.tensor_spec("int64"), dsl.tensor_spec("int64"), 1000,
        target="Ascend910B4", BLOCK=256, ASM="ADD.s64 $0, $1, $2")
    assert "tl.inline_asm_elementwise('ADD.s64 $0, $1, $2', '=l,l,l'" in lowered.triton
    assert "llvm.inline_asm" in lowered.hivm and "ADD.s64" in lowered.hivm
    assert 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


def test_compiled_cpu_mode_refuses_device_assembly(cpu_toolchain):
    x = np.zeros(256, np.int64)
    launch = dsl.from_triton(asm_binary).prepare((x, x, np.zeros_like(x), 256),
                                                 {"BLOCK": 256, "ASM": "ADD.s64 $0, $1, $2"},
                                                 (1,))
    with pytest.raises(cpu_toolchain.CompiledCPUError, match="no x86 assembler"):
        cpu_toolchain.run(launch)
