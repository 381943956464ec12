"""Triton kernels whose meaning this project got wrong or refused until session 17,
each against what Triton gives: tensor member functions (``x.sum()``, ``x.exp()``),
``reduce`` over every axis, the promotion of an integer with bfloat16, the type of
``max``/``min`` of 16-bit floats, Python ints up to 2**64 as arguments, grids with no
programs, and programs that wait on one another through memory (spin locks, a chain
of flags), which the interpreter used to run in lockstep and never finish. Since
session 18 (a third hunt): tuples carried through loops, ``clamp``'s NaN policy,
f-strings (``tl.softmax``), a constexpr mask with ``other=``, float8 arguments,
``cast``'s rounding and overflow modes and more libdevice functions."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
import torch
from test_compiled_cpu import differential

import dsl
import dsl.triton_compat

triton = pytest.importorskip("triton") if not os.environ.get("CI") else __import__("triton")
tl = triton.language
libdevice = __import__("triton.language.extra.libdevice", fromlist=["libdevice"])

# Off the device, @triton.autotune needs the switch installed before it is applied.
dsl.triton_compat.install()


# ----------------------------------------------------------------------------- methods


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def member_functions(x_ptr, o_ptr, N: tl.constexpr, SCAN: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = x.exp() + x.abs().sqrt()
    if SCAN:  # (compiled-CPU mode refuses scans: triton-ascend lowers them to a library call)
        y += x.cumsum(0)
    tl.store(o_ptr + offs, y)
    tl.store(o_ptr + N, x.sum())
    tl.store(o_ptr + N + 1, x.max(axis=0))
    tl.store(o_ptr + N + 2, x.reshape(2, N // 2).sum(axis=1).ravel().reduce(0, _add))


def test_tensor_member_functions_call_their_builtins():
    x = np.random.default_rng(0).standard_normal(8).astype(np.float32)
    out = np.zeros(11, np.float32)
    dsl.from_triton(member_functions)[(1,)](x, out, N=8, SCAN=True)
    f64 = x.astype(np.float64)
    want = np.exp(f64) + np.cumsum(f64) + np.sqrt(np.abs(f64))
    np.testing.assert_allclose(out[:8], want, rtol=2e-6)
    np.testing.assert_allclose(out[8:], [x.sum(), x.max(), x.sum()], rtol=2e-6)
    assert out[9] == x.max()


def test_tensor_member_functions_compiled_cpu_bit_exact(cpu_toolchain):
    x = np.random.default_rng(1).standard_normal(8).astype(np.float32)
    differential(dsl.from_triton(member_functions), (x, np.zeros(11, np.float32)),
                 {"N": 8, "SCAN": False},
                 grid=(1,))


@triton.jit
def reduce_everything(x_ptr, o_ptr, k_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(o_ptr, tl.reduce(x, None, _add))
    kept = tl.reduce(x, None, _add, keep_dims=True)
    tl.static_assert(kept.shape == (1, 1))
    tl.store(k_ptr + tl.arange(0, 1)[:, None] + tl.arange(0, 1)[None, :], kept)


def test_reduce_with_a_combine_function_over_every_axis():
    """``axis=None``: Triton flattens the block and reduces it (an 'axis None out of
    range' error before)."""
    x = np.arange(32, dtype=np.int32).reshape(4, 8)
    out, kept = np.zeros(1, np.int32), np.zeros(1, np.int32)
    dsl.from_triton(reduce_everything)[(1,)](x, out, kept, M=4, N=8)
    assert out[0] == kept[0] == x.sum()


# ----------------------------------------------------------------------------- types


@triton.jit
def int_plus_bf16(a_ptr, b_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    c = tl.load(a_ptr + offs) + tl.load(b_ptr + offs)
    tl.static_assert(c.dtype == tl.float32)
    tl.store(o_ptr + offs, c)


def test_an_integer_with_bfloat16_computes_in_float32():
    """Triton keeps bfloat16 only when both operands are bfloat16 (rule 1): 100 + 100.5
    is 200.5, where a bfloat16 sum rounds it to 200."""
    a = torch.tensor([100, 1, 2, 3], dtype=torch.int32)
    b = torch.tensor([100.5, 0.25, 0.5, 1.0], dtype=torch.bfloat16)
    out = torch.empty(4, dtype=torch.float32)
    dsl.from_triton(int_plus_bf16)[(1,)](a, b, out, N=4)
    assert out.tolist() == [200.5, 1.25, 2.5, 4.0]


@triton.jit
def half_max(x_ptr, o_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    m = tl.max(x, axis=0)
    tl.static_assert(m.dtype == tl.float32)
    tl.store(o_ptr, m * 1000.0)
    tl.store(o_ptr + 1, x.min() * 1000.0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_max_and_min_of_16_bit_floats_are_float32(dtype):
    """Triton widens them before reducing, so ``max * 1000`` of 60000 is 6e7, not an
    fp16 infinity."""
    x = torch.tensor([1.0, 60000.0 if dtype == torch.float16 else 1e30, -2.0, 0.5],
                     dtype=dtype)
    out = torch.zeros(2, dtype=torch.float32)
    dsl.from_triton(half_max)[(1,)](x, out, N=4)
    assert out[0].item() == x.float().max().item() * np.float32(1000.0)
    assert out[1].item() == -2000.0


def test_half_max_compiled_cpu_bit_exact(cpu_toolchain):
    x = np.random.default_rng(2).standard_normal(16).astype(np.float16) * 1000
    differential(dsl.from_triton(half_max), (x, np.zeros(2, np.float32)), {"N": 16},
                 grid=(1,))


@triton.jit
def shifted(o_ptr, s, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, (s >> 60).to(tl.int64) + offs)


def test_python_ints_from_2_to_the_63_are_uint64_arguments():
    """As Triton's launcher types them (a bare OverflowError before)."""
    out = np.zeros(4, np.int64)
    kernel = dsl.from_triton(shifted)
    kernel[(1,)](out, 2**63 + 5, N=4)
    assert out.tolist() == [8, 9, 10, 11]
    kernel[(1,)](out, 2**62, N=4)  # int64 now: a new specialization
    assert out.tolist() == [4, 5, 6, 7]
    with pytest.raises(dsl.DSLLaunchError, match="argument 's': the integer 18446744073709551616 "
                                                 "does not fit a 64-bit scalar"):
        kernel[(1,)](out, 2**64, N=4)
    with pytest.raises(OverflowError):  # what Triton's launcher raises (its test_core asks)
        kernel[(1,)](out, -2**63 - 1, N=4)


@dsl.jit
def below_and_times(x, out, prod, n, N: dsl.constexpr):
    i = dsl.arange(0, N)
    inside = i < n
    dsl.store(out, i, dsl.load(x, i, inside), inside)
    dsl.store(prod, i, (i * n).to(dsl.float64))


@pytest.mark.parametrize("n", [2**63, 2**64 - 1])
def test_lanes_against_a_uint64_bound_from_2_to_the_63(cpu_toolchain, n):
    # the interpreter's lazy lane mask turned the bound negative (every lane false: a
    # masked kernel wrote nothing) and its lazy product raised a raw OverflowError
    x = np.arange(1, 9, dtype=np.float32)
    out, prod = np.zeros(8, np.float32), np.zeros(8, np.float64)
    below_and_times[(1,)](x, out, prod, n, N=8)
    np.testing.assert_array_equal(out, x)
    expected = (np.arange(8, dtype=np.uint64) * np.uint64(n)).astype(np.float64)
    np.testing.assert_array_equal(prod, expected)
    differential(below_and_times, (x, np.zeros(8, np.float32), np.zeros(8, np.float64), n),
                 {"N": 8}, grid=(1,))


# ----------------------------------------------------------------------------- grids


@triton.jit
def add_one(x_ptr, o_ptr, n, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


@pytest.mark.parametrize("grid", [(0,), (0, 3), (2, 0, 1)])
def test_a_grid_without_programs_launches_nothing(grid):
    """``cdiv(0, B)`` programs for an empty input: nothing runs, as in Triton (it was
    refused as 'grid must be positive')."""
    x = torch.empty(0)
    out = torch.empty(0)
    dsl.from_triton(add_one)[grid](x, out, 0, B=16)
    y, o = np.ones(4, np.float32), np.zeros(4, np.float32)
    dsl.from_triton(add_one)[grid](y, o, 4, B=16)
    assert not o.any()
    with pytest.raises(dsl.DSLLaunchError, match="grid must be 1 to 3 non-negative integers"):
        dsl.from_triton(add_one)[(-1,)](y, o, 4, B=16)


# ----------------------------------------------------------------------------- waiting


@triton.jit
def locked_accumulate(x_ptr, buf_ptr, lock_ptr, count_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + pid * N + offs)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(buf_ptr + offs, tl.load(buf_ptr + offs) + x)  # safe: the lock is held
    tl.atomic_add(count_ptr, 1)
    tl.atomic_xchg(lock_ptr, 0)


def test_a_spin_lock_serialises_the_programs():
    """Triton's layer-norm-backward lock: the programs run one at a time in program-id
    order (run side by side, the waiting programs' loop never let the holder reach its
    release: the launch hung)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 16)).astype(np.float32)
    buf, lock, count = np.zeros(16, np.float32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    dsl.from_triton(locked_accumulate)[(6,)](x, buf, lock, count, N=16)
    want = np.zeros(16, np.float32)
    for row in x:  # in program-id order
        want = want + row
    np.testing.assert_array_equal(buf, want)
    assert lock[0] == 0 and count[0] == 6


@triton.jit
def chained_prefix(flag_ptr, value_ptr, o_ptr):
    pid = tl.program_id(0)
    prev = 0
    if pid > 0:
        while tl.atomic_add(flag_ptr + pid - 1, 0) == 0:
            pass
        prev = tl.load(value_ptr + pid - 1, volatile=True)
    v = prev + pid + 1
    tl.store(value_ptr + pid, v)
    tl.atomic_xchg(flag_ptr + pid, 1)
    tl.store(o_ptr + pid, v)


def test_a_program_waits_for_the_flag_of_the_one_before():
    """A decoupled look-back: each program waits for its predecessor's flag."""
    flags, values, out = (np.zeros(5, np.int32) for _ in range(3))
    dsl.from_triton(chained_prefix)[(5,)](flags, values, out)
    assert out.tolist() == np.cumsum(np.arange(1, 6)).tolist()


@triton.jit
def waits_for_the_next(flag_ptr, o_ptr, G):
    pid = tl.program_id(0)
    if pid < G - 1:
        while tl.atomic_add(flag_ptr + pid + 1, 0) == 0:
            pass
    tl.atomic_xchg(flag_ptr + pid, 1)
    tl.store(o_ptr + pid, pid)


def test_a_program_that_waits_for_a_later_one_is_an_error_not_a_hang():
    """Programs run in program-id order, so program 0 would wait forever: after
    ``STUCK_CHECK_TRIPS`` trips that change neither values nor memory the launch stops
    with an error at the loop, and nothing is written."""
    flags, out = np.zeros(3, np.int32), np.full(3, -1, np.int32)
    with pytest.raises(dsl.DSLRuntimeError, match=r"program \(0, 0, 0\) of kernel "
                                                  r"'waits_for_the_next' waits forever") as info:
        dsl.from_triton(waits_for_the_next)[(3,)](flags, out, 3)
    assert "while tl.atomic_add(flag_ptr + pid + 1, 0) == 0:" in str(info.value)
    assert out.tolist() == [-1, -1, -1] and flags.tolist() == [0, 0, 0]


# ----------------------------------------------------------------------------- batched dot


@triton.jit
def batched_dot(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                K: tl.constexpr):
    bi = tl.arange(0, B)[:, None, None]
    a = tl.load(a_ptr + bi * M * K + tl.arange(0, M)[None, :, None] * K
                + tl.arange(0, K)[None, None, :])
    b = tl.load(b_ptr + bi * K * N + tl.arange(0, K)[None, :, None] * N
                + tl.arange(0, N)[None, None, :])
    c = tl.dot(a, b, tl.full((B, M, N), 1.0, tl.float32))
    tl.store(c_ptr + bi * M * N + tl.arange(0, M)[None, :, None] * N
             + tl.arange(0, N)[None, None, :], c)


def _batched_operands():
    rng = np.random.default_rng(4)
    return (rng.standard_normal((2, 16, 32)).astype(np.float16),
            rng.standard_normal((2, 32, 16)).astype(np.float16))


def test_a_dot_of_3d_blocks_multiplies_each_batch():
    """Triton's batched ``dot`` (it was refused: 'dot() multiplies 2-D blocks')."""
    a, b = _batched_operands()
    c = np.zeros((2, 16, 16), np.float32)
    dsl.from_triton(batched_dot)[(1,)](a, b, c, B=2, M=16, N=16, K=32)
    exact = 1.0 + np.matmul(a.astype(np.float64), b.astype(np.float64))
    bound = 2 * 32 * np.finfo(np.float32).eps * (1 + np.matmul(np.abs(a.astype(np.float64)),
                                                               np.abs(b.astype(np.float64))))
    assert (np.abs(c - exact) <= bound).all()


def test_a_batched_dot_compiled_cpu_and_lowered(cpu_toolchain):
    a, b = _batched_operands()
    kernel = dsl.from_triton(batched_dot)
    bound = 2 * 32 * np.finfo(np.float32).eps * (1 + np.matmul(np.abs(a.astype(np.float64)),
                                                               np.abs(b.astype(np.float64))))
    differential(kernel, (a, b, np.zeros((2, 16, 16), np.float32)),
                 {"B": 2, "M": 16, "N": 16, "K": 32}, grid=(1,),
                 within={"c_ptr": bound.reshape(-1)})
    f16, f32 = dsl.tensor_spec("float16"), dsl.tensor_spec("float32")
    lowered = kernel.lower(f16, f16, f32, B=2, M=16, N=16, K=32, target="Ascend910B4")
    assert lowered.hivm and "tl.dot(" in lowered.triton


@triton.jit
def dot_asking_float16(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    a = tl.load(a_ptr + i[:, None] * N + i[None, :])
    b = tl.load(b_ptr + i[:, None] * N + i[None, :])
    c = tl.dot(a, b, out_dtype=tl.float16)
    tl.store(c_ptr + i[:, None] * N + i[None, :], c + (c.dtype == tl.float32))


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_a_dot_of_32_bit_or_bfloat16_operands_ignores_a_float16_out_dtype(dtype):
    # Triton 3.2's semantic.dot: fp32 and bf16 operands give float32 whatever out_dtype
    # says (float16 was refused here)
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((16, 16)).astype(dtype) for _ in range(2))
    c = np.zeros((16, 16), np.float32)
    dsl.from_triton(dot_asking_float16)[(1,)](a, b, c, N=16)
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    bound = 2 * 16 * np.finfo(np.float32).eps * np.matmul(np.abs(a.astype(np.float64)),
                                                          np.abs(b.astype(np.float64)))
    assert (np.abs(c - 1.0 - exact) <= bound).all()  # (the + 1: the dot is float32)


@triton.jit
def hf32_dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    a = tl.load(a_ptr + i[:, None] * N + i[None, :])
    b = tl.load(b_ptr + i[:, None] * N + i[None, :])
    tl.store(c_ptr + i[:, None] * N + i[None, :], tl.dot(a, b, input_precision="hf32"))


def test_hf32_is_a_float32_mode_that_16_bit_operands_ignore(cpu_toolchain, toolchain):
    # newer triton-ascend ignores hf32 for bf16 operands (its test_dot_2_ignore_tf32);
    # the 3.2.0 wheel refused the generated Triton ("must be used with f32 * f32 = f32")
    a = np.eye(16, dtype=np.float32)
    half = a.astype(ml_dtypes.bfloat16)
    for operand in (a, half):
        c = np.zeros((16, 16), np.float32)
        dsl.from_triton(hf32_dot)[(1,)](operand, operand, c, N=16)
        np.testing.assert_array_equal(c, a)
        differential(dsl.from_triton(hf32_dot), (operand, operand, np.zeros((16, 16),
                                                                              np.float32)),
                     {"N": 16}, grid=(1,))
    lowered = dsl.from_triton(hf32_dot).lower(dsl.tensor_spec("bfloat16"),
                                              dsl.tensor_spec("bfloat16"),
                                              dsl.tensor_spec("float32"), N=16,
                                              target="Ascend910B4")
    assert "input_precision='ieee'" in lowered.triton and lowered.hivm


@triton.jit
def mismatched_batches(a_ptr, c_ptr):
    a = tl.load(a_ptr + tl.arange(0, 16)[:, None, None] * 0 + tl.arange(0, 16)[None, :, None] * 0
                + tl.arange(0, 16)[None, None, :] * 0)
    b = tl.reshape(a, (2, 8, 16, 16)).sum(axis=0)
    tl.store(c_ptr, tl.sum(tl.sum(tl.sum(tl.dot(a, b), 2), 1), 0))


def test_a_dot_of_blocks_with_different_batches_is_refused_at_its_line():
    with pytest.raises(dsl.DSLCompileError, match=r"dot\(\) batch dimensions differ: "
                                                  r"\[16, 16, 16\] @ \[8, 16, 16\]"):
        dsl.from_triton(mismatched_batches)[(1,)](np.zeros(1, np.float32),
                                                  np.zeros(1, np.float32))


@triton.jit
def count_to(counter_ptr, trips_ptr, LIMIT: tl.constexpr):
    trips = 0
    while tl.atomic_add(counter_ptr, 1) < LIMIT:
        trips += 1
    tl.store(trips_ptr + tl.program_id(0), trips)


def test_a_waiting_loop_runs_its_condition_once_a_trip():
    """The stuck-loop check (every ``STUCK_CHECK_TRIPS`` trips) compares with the next
    trip's own condition: a condition with an effect (an atomic add) is never run an
    extra time. One program counts to 21,000; the second finds the counter past it."""
    counter, trips = np.zeros(1, np.int32), np.full(2, -1, np.int32)
    dsl.from_triton(count_to)[(2,)](counter, trips, LIMIT=21_000)
    assert trips.tolist() == [21_000, 0] and counter[0] == 21_002


@triton.jit
def chain_through_two_arguments(flags_read, flags_written, out_ptr):
    pid = tl.program_id(0)
    if pid > 0:
        while tl.load(flags_read + pid - 1, volatile=True) == 0:
            pass
    tl.store(out_ptr + pid, pid)
    tl.atomic_xchg(flags_written + pid, 1)


def test_programs_wait_one_at_a_time_when_one_tensor_is_passed_as_two_arguments():
    """The loop reads ``flags_read``, the kernel writes ``flags_written``: the same
    memory in this launch (it hung: the choice looked at names only)."""
    flags, out = torch.zeros(3, dtype=torch.int32), torch.full((3,), -1, dtype=torch.int32)
    dsl.from_triton(chain_through_two_arguments)[(3,)](flags, flags, out)
    assert out.tolist() == [0, 1, 2] and flags.tolist() == [1, 1, 1]


@triton.jit
def waits_counting(flag_ptr, o_ptr, G):
    pid = tl.program_id(0)
    spins = 0
    if pid < G - 1:
        while tl.atomic_add(flag_ptr + pid + 1, 0) == 0:
            spins += 1
    tl.atomic_xchg(flag_ptr + pid, 1)
    tl.store(o_ptr + pid, spins)


def test_a_waiting_program_that_counts_its_trips_still_stops(monkeypatch):
    """Its values change every trip, but memory stays the same for ``QUIET_WINDOWS``
    checks: no other program can change it any more."""
    from lowering import interpreter

    monkeypatch.setattr(interpreter, "STUCK_CHECK_TRIPS", 500)
    flags, out = np.zeros(2, np.int32), np.full(2, -1, np.int32)
    with pytest.raises(dsl.DSLRuntimeError, match="memory has not changed in 5000 trips"):
        dsl.from_triton(waits_counting)[(2,)](flags, out, 2)
    assert out.tolist() == [-1, -1]


@triton.jit
def waits_for_nothing(flag_ptr, o_ptr):
    while tl.load(flag_ptr) == 0:
        pass
    tl.store(o_ptr + tl.program_id(0), 1)


def test_a_loop_that_changes_nothing_stops_in_lockstep_too():
    """The kernel writes nothing the loop reads, so its programs run side by side; a
    trip that changes nothing would repeat forever (on a device too)."""
    flag, out = np.zeros(1, np.int32), np.zeros(4, np.int32)
    with pytest.raises(dsl.DSLRuntimeError, match="waits forever in this loop: after 10000 "
                                                  "trips a trip changes neither"):
        dsl.from_triton(waits_for_nothing)[(4,)](flag, out)
    assert not out.any()


# ----------------------------------------------------------------------------- autotune


def _zero_out(nargs):
    nargs["out_ptr"].zero_()


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, pre_hook=_zero_out)], key=["n"])
@triton.jit
def sum_with_pre_hook(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), 0))


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
                 key=["n"], reset_to_zero=["out_ptr"])
@triton.jit
def sum_reset_to_zero(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), 0))


@pytest.mark.parametrize("kernel", [sum_with_pre_hook, sum_reset_to_zero])
def test_autotune_hooks_run_before_the_kernel(kernel):
    """A config's ``pre_hook`` runs before the launch, and with several configs the
    ``reset_to_zero`` tensors are zeroed, as Triton's ``Autotuner.run`` does (both
    were ignored: the sum landed on the buffer's stale 123)."""
    x, out = torch.ones(1000), torch.full((1,), 123.0)
    kernel[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, out, 1000)
    assert out.item() == 1000.0


def _keep_small_blocks(configs, nargs, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] <= nargs["n"]]


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 32})],
                 key=["n"], prune_configs_by={"early_config_prune": _keep_small_blocks})
@triton.jit
def copy_pruned(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


def test_autotune_runs_the_first_config_its_prune_keeps():
    """``prune_configs_by={'early_config_prune': f}`` removes BLOCK=128 for n=64: the
    launch runs BLOCK=32 (it ran the first config, a grid of 64 // 128 = 0 programs,
    and left the output as it was); a stated config is run as stated."""
    x, y = torch.arange(64, dtype=torch.float32), torch.zeros(64)
    copy_pruned[lambda meta: (64 // meta["BLOCK"],)](x, y, 64)
    assert torch.equal(y, x)
    kernel = dsl.from_triton(copy_pruned, config=1)
    y.zero_()
    kernel[lambda meta: (64 // meta["BLOCK"],)](x, y, 64)
    assert torch.equal(y, x)


# ----------------------------------------------------------------------------- float64 math


@dsl.jit
def math_f64(x, out, FN: dsl.constexpr):
    i = dsl.arange(0, 64)
    v = dsl.load(x, i)
    dsl.store(out, i, dsl.asin(v) if FN == "asin" else dsl.asinh(v))


def test_float32_accurate_libdevice_functions_refuse_float64():
    """``asin`` of float64 gave float32 accuracy (7e-8 relative) silently; now it is
    refused at its line, while a function whose formula holds in float64 (``asinh``)
    stays float64-accurate."""
    x = np.random.default_rng(5).uniform(-0.9, 0.9, 64)
    out = np.zeros(64)
    with pytest.raises(dsl.DSLCompileError, match=r"asin\(\) computes to float32 accuracy"):
        math_f64(x, out, FN="asin")
    math_f64(x, out, FN="asinh")
    np.testing.assert_allclose(out, np.arcsinh(x), rtol=1e-15)
    out32 = np.zeros(64, np.float32)
    math_f64(x.astype(np.float32), out32, FN="asin")
    np.testing.assert_allclose(out32, np.arcsin(x.astype(np.float32)), rtol=3e-7)


@triton.jit
def copy_kernel(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_a_tensor_of_an_unsupported_element_type_is_refused_by_name(dtype):
    """A complex tensor is refused: the argument, its element type and the types a
    kernel takes are named (float8 tensors bind since session 23: tests/test_fp8.py)."""
    x = torch.zeros(8, dtype=getattr(torch, dtype))
    with pytest.raises(dsl.DSLLaunchError,
                       match=rf"argument 'x_ptr': unsupported element type {dtype}; "
                       r"supported: int1"):
        dsl.from_triton(copy_kernel)[(1,)](x, x.clone(), N=8)


# ----------------------------------------------------------------------------- tuples in loops


@triton.jit
def tuple_through_a_loop(x_ptr, y_ptr, n, B: tl.constexpr, WHILE: tl.constexpr,
                         STAGED: tl.constexpr):
    offs = tl.arange(0, B)
    s = (tl.zeros([B], tl.float32), (tl.zeros([B], tl.float32), 0))
    if WHILE:
        while s[1][1] < n:
            s = (s[0] + tl.load(x_ptr + s[1][1] * B + offs), (s[1][0] + 1.0, s[1][1] + 1))
    elif STAGED:
        for i in tl.range(0, n, num_stages=2):
            s = (s[0] + tl.load(x_ptr + i * B + offs), (s[1][0] + 1.0, s[1][1] + 1))
    else:
        for i in range(0, n):
            s = (s[0] + tl.load(x_ptr + i * B + offs), (s[1][0] + 1.0, s[1][1] + 1))
    tl.store(y_ptr + offs, s[0] + s[1][0] * 100.0 + s[1][1] * 10000.0)


@pytest.mark.parametrize("loop", ["for", "tl.range", "while"])
def test_a_tuple_reassigned_in_a_loop_is_carried(loop):
    """A (nested) tuple reassigned in a runtime loop carries every element to the next
    iteration and out of the loop (it kept its value from before the loop, silently;
    in a ``while`` the condition never changed)."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.zeros(4, np.float32)
    dsl.from_triton(tuple_through_a_loop)[(1,)](x, y, 3, B=4, WHILE=loop == "while",
                                                STAGED=loop == "tl.range")
    np.testing.assert_array_equal(y, x.sum(0) + 300.0 + 30000.0)


def test_a_tuple_carried_through_a_loop_compiled_cpu_bit_exact(cpu_toolchain):
    x = np.random.default_rng(3).standard_normal(12).astype(np.float32)
    differential(dsl.from_triton(tuple_through_a_loop), (x, np.zeros(4, np.float32), 3),
                 {"B": 4, "WHILE": False, "STAGED": False}, grid=(1,))


@triton.jit
def none_then_a_block(x_ptr, y_ptr, n, B: tl.constexpr):
    acc = None
    for i in range(0, n):
        acc = tl.load(x_ptr + i * B + tl.arange(0, B))
    tl.store(y_ptr + tl.arange(0, B), acc)


@triton.jit
def tuple_changes_length(x_ptr, y_ptr, n, B: tl.constexpr):
    s = (tl.zeros([B], tl.float32),)
    for _ in range(0, n):
        s = (s[0], s[0])
    tl.store(y_ptr + tl.arange(0, B), s[0])


@pytest.mark.parametrize("kernel, message", [
    (none_then_a_block, "'acc' holds a NoneType before this loop and a Value after an "
                        "iteration"),
    (tuple_changes_length, "loop-carried variable 's' is a tuple of 1 and a tuple of 2 "
                           "before and after an iteration"),
])
def test_what_a_loop_cannot_carry_is_an_error(kernel, message):
    """A name the body reassigns to what cannot replace its value from before the loop
    is an error at the loop, not the old value after it."""
    x = np.zeros(8, np.float32)
    with pytest.raises(dsl.DSLCompileError, match=message):
        dsl.from_triton(kernel)[(1,)](x, np.zeros(4, np.float32), 2, B=4)


# ----------------------------------------------------------------------------- clamp


@triton.jit
def clamp_kernel(x_ptr, lo_ptr, hi_ptr, y_ptr, N: tl.constexpr, ALL: tl.constexpr):
    offs = tl.arange(0, N)
    x, lo, hi = tl.load(x_ptr + offs), tl.load(lo_ptr + offs), tl.load(hi_ptr + offs)
    if ALL:
        y = tl.clamp(x, lo, hi, propagate_nan=tl.PropagateNan.ALL)
    else:
        y = tl.clamp(x, lo, hi, propagate_nan=tl.PropagateNan.NONE)
    tl.store(y_ptr + offs, y)


_CLAMP_CASES = np.array([  # x, lo, hi
    [np.nan, -1, 1], [-5, -1, 1], [5, -1, 1], [0.3, -1, 1],
    [0.3, np.nan, 1], [0.3, -1, np.nan], [5, np.nan, 1], [-5, -1, np.nan]], np.float32).T


@pytest.mark.parametrize("propagate", ["ALL", "NONE"])
def test_clamp_propagates_nan_when_asked(propagate):
    """``propagate_nan=ALL`` gives NaN for a NaN in any operand (triton-ascend's
    minimumf/maximumf; it was ignored: a NaN ``x`` gave ``hi``); NONE keeps maxNum/minNum."""
    x, lo, hi = (np.ascontiguousarray(c) for c in _CLAMP_CASES)
    y = np.zeros(8, np.float32)
    dsl.from_triton(clamp_kernel)[(1,)](x, lo, hi, y, N=8, ALL=propagate == "ALL")
    if propagate == "ALL":
        want = torch.clamp(torch.from_numpy(x), torch.from_numpy(lo), torch.from_numpy(hi))
        want = torch.where(torch.from_numpy(np.isnan(lo) | np.isnan(hi)), torch.nan, want)
        np.testing.assert_array_equal(y, want.numpy())
    else:
        np.testing.assert_array_equal(y, np.fmax(np.fmin(x, hi), lo))


def test_clamp_propagating_nan_compiled_cpu_bit_exact(cpu_toolchain):
    x, lo, hi = (np.ascontiguousarray(c) for c in _CLAMP_CASES)
    differential(dsl.from_triton(clamp_kernel), (x, lo, hi, np.zeros(8, np.float32)),
                 {"N": 8, "ALL": True}, grid=(1,))


# ----------------------------------------------------------------------------- f-strings


@triton.jit
def checked_double(x_ptr, y_ptr, N: tl.constexpr, LIMIT: tl.constexpr):
    tl.static_assert(N <= LIMIT, f"N={N} is above {LIMIT:#x} ({'limit'!r})")
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)


def test_an_f_string_is_formatted_at_compile_time():
    """Triton formats f-strings of constexprs (``static_assert`` messages; triton-ascend's
    own ``tl.softmax`` has one): they were refused as "unsupported expression"."""
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    dsl.from_triton(checked_double)[(1,)](x, y, N=8, LIMIT=16)
    np.testing.assert_array_equal(y, x * 2)
    with pytest.raises(dsl.DSLCompileError, match=r"N=8 is above 0x4 \('limit'\)"):
        dsl.from_triton(checked_double)[(1,)](x, y, N=8, LIMIT=4)


@triton.jit
def formats_a_runtime_value(x_ptr, n):
    tl.static_assert(n > 0, f"n is {n}")


def test_an_f_string_of_a_runtime_value_is_an_error():
    with pytest.raises(dsl.DSLCompileError, match="an f-string can only format compile-time "
                                                  "values .* 'n'"):
        dsl.from_triton(formats_a_runtime_value)[(1,)](np.zeros(1, np.float32), 3)


@triton.jit
def softmax_row(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, tl.softmax(tl.load(x_ptr + offs)))


def test_triton_ascends_softmax_runs():
    x = np.array([-np.inf, 1, 2, 3, 0, 0.5, -1, 30], np.float32)
    y = np.zeros(8, np.float32)
    dsl.from_triton(softmax_row)[(1,)](x, y, N=8)
    np.testing.assert_allclose(y, torch.softmax(torch.from_numpy(x), 0).numpy(), rtol=1e-6,
                               atol=1e-7)


def test_triton_ascends_softmax_compiled_cpu_bit_exact(cpu_toolchain):
    x = np.random.default_rng(4).standard_normal(16).astype(np.float32)
    differential(dsl.from_triton(softmax_row), (x, np.zeros(16, np.float32)), {"N": 16},
                 grid=(1,))


@triton.jit
def load_under_a_constant_mask(x_ptr, y_ptr, B: tl.constexpr, M: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=M, other=-1.0))


@pytest.mark.parametrize("mask", [True, False])
def test_a_constexpr_mask_takes_other(mask):
    """``mask=True`` with ``other=`` was refused as "other= without mask="."""
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    dsl.from_triton(load_under_a_constant_mask)[(1,)](x, y, B=8, M=mask)
    np.testing.assert_array_equal(y, x if mask else np.full(8, -1.0, np.float32))


@triton.jit
def row_sums_and_scale(x_ptr, out_ptr, w_ptr, N: tl.constexpr):
    r = tl.program_id(0)
    x = tl.load(x_ptr + r * N + tl.arange(0, N))
    s = tl.sum(x, axis=0)
    tl.static_assert(s.dtype == x.dtype or x.dtype == tl.bfloat16)  # bf16 alone widens
    tl.store(out_ptr + r, s * tl.load(w_ptr))  # (float16 times float16: float16)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_float16_sum_is_float16_as_tritons(dtype):
    """Triton's ``tl.sum`` of float16 is float16 (only bfloat16 is widened); it was
    float32 here, so arithmetic after it ran in float32 (vLLM-Ascend's rms-norm quant
    kernel differed from Triton by one float16 step in 19% of its outputs). The sum
    still accumulates in float32: the float32 tree sum, rounded."""
    from dsl import numerics

    x = (np.random.default_rng(3).standard_normal((4, 256)) * 30).astype(dtype)
    w = np.array([3.3], dtype)
    out = np.zeros(4, dtype)
    dsl.from_triton(row_sums_and_scale)[(4,)](x, out, w, N=256)
    sums = numerics.tree_sum(x.astype(np.float32), 1, np.dtype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(out, sums * w[0])  # the product rounded in dtype
    differential(dsl.from_triton(row_sums_and_scale), (x, np.zeros(4, dtype), w), {"N": 256},
                 grid=(4,))


# ----------------------------------------------------------------------------- cast modes


@triton.jit
def cast_modes(x_ptr, y_ptr, N: tl.constexpr, DST: tl.constexpr, ROUNDING: tl.constexpr,
               OVERFLOW: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.cast(x, DST, fp_downcast_rounding=ROUNDING,
                                   overflow_mode=OVERFLOW))


_TL = {"float16": tl.float16, "bfloat16": tl.bfloat16, "float32": tl.float32,
       "int8": tl.int8, "uint8": tl.uint8, "int32": tl.int32, "int64": tl.int64}


def _toward_zero(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    """Round-toward-zero by NumPy: the nearest result, one step toward zero where
    its magnitude grew."""
    nearest = x.astype(dst)
    with np.errstate(invalid="ignore"):
        away = np.abs(nearest.astype(x.dtype)) > np.abs(x)
    stepped = np.nextafter(nearest, np.zeros_like(nearest))
    return np.where(away, stepped, nearest)


_FLOATS = np.array([1.0, -1.0, 1 / 3, -2 / 3, 65519.0, 65520.0, 1e6, -1e6, 1e-8, -1e-8,
                    6.1e-5, 3.0e38, np.inf, -np.inf, np.nan, 0.0, -0.0, 1.00048828125,
                    1.0009765625, 2.5, -2.5, 1e-45, 300.7, -300.7, 127.9, -128.9, 4e9,
                    -4e9, 255.5, 1e19, -1e19, 2.0], np.float32)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy references of overflows
@pytest.mark.parametrize("src, dst", [("float32", "float16"), ("float32", "bfloat16"),
                                      ("float64", "float32"), ("float64", "float16")])
def test_round_toward_zero_downcast(src, dst):
    """``fp_downcast_rounding="rtz"`` rounds toward zero (it was refused), an overflow
    giving the largest finite value; "rtne" is the default rounding."""
    x = _FLOATS.astype(src)
    if src == "float64":
        x = np.concatenate([x, np.random.default_rng(5).standard_normal(32) * 1e3])
    np_dst = np.dtype(ml_dtypes.bfloat16) if dst == "bfloat16" else np.dtype(dst)
    for rounding, want in (("rtz", _toward_zero(x, np_dst)), ("rtne", x.astype(np_dst))):
        y = np.zeros(x.size, np_dst)
        dsl.from_triton(cast_modes)[(1,)](x, y, N=x.size, DST=_TL[dst], ROUNDING=rounding,
                                          OVERFLOW=None)
        np.testing.assert_array_equal(y.view(np.uint8), want.view(np.uint8))


def _saturated(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    """What overflow_mode="saturate" gives, by NumPy: the nearest value of ``dst``."""
    if np.issubdtype(dst, np.integer):
        info = np.iinfo(dst)
        if x.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                clipped = np.clip(np.nan_to_num(x, nan=0.0, posinf=np.inf, neginf=-np.inf),
                                  info.min, info.max)
            return np.where(clipped >= float(info.max), info.max,
                            np.where(clipped <= float(info.min), info.min,
                                     np.trunc(np.clip(clipped, -2**62, 2**62)).astype(dst)))\
                .astype(dst)
        return np.clip(x.astype(np.int64) if x.dtype != np.uint64 else x, info.min,
                       info.max).astype(dst)
    largest = ml_dtypes.finfo(dst).max
    with np.errstate(over="ignore"):
        nearest = x.astype(dst)
    finite = np.isfinite(x) if x.dtype.kind == "f" else np.ones(x.shape, bool)
    return np.where(finite & np.isinf(nearest), np.copysign(largest, nearest.astype(np.float64))
                    .astype(dst), nearest)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy references of overflows
@pytest.mark.parametrize("src, dst", [("int32", "int8"), ("int32", "uint8"), ("int64", "int32"),
                                      ("uint32", "int32"), ("int8", "uint8"),
                                      ("float32", "int8"), ("float32", "uint8"),
                                      ("float32", "int32"), ("float32", "int64"),
                                      ("float32", "float16"), ("int64", "float16")])
def test_saturating_cast(src, dst):
    """``overflow_mode="saturate"`` (triton-ascend) clamps to the target's range, a NaN
    becoming 0 (it was refused); "trunc" wraps as a plain cast does."""
    if src.startswith("float"):
        x = _FLOATS.astype(src)
    else:
        info = np.iinfo(src)
        x = np.array([0, 1, -1, 127, 128, -128, -129, 255, 256, 300, -300, 70000, -70000,
                      2**31 - 1, -2**31, 2**40, -2**40, info.max, info.min], np.int64)
        x = x[(x >= info.min) & (x <= info.max)].astype(src)
    np_dst = np.dtype(dst)
    y = np.zeros(x.size, np_dst)
    dsl.from_triton(cast_modes)[(1,)](x, y, N=x.size, DST=_TL[dst], ROUNDING=None,
                                      OVERFLOW="saturate")
    np.testing.assert_array_equal(y, _saturated(x, np_dst))
    if not src.startswith("float"):
        dsl.from_triton(cast_modes)[(1,)](x, y, N=x.size, DST=_TL[dst], ROUNDING=None,
                                          OVERFLOW="trunc")
        np.testing.assert_array_equal(y, x.astype(np_dst))


@pytest.mark.parametrize("rounding, overflow, message", [
    ("rtz", None, "fp_downcast_rounding is only for a narrowing float conversion, not "
                  "float32 to int32"),
    ("rtn", None, "fp_downcast_rounding must be 'rtne' or 'rtz', got 'rtn'"),
    (None, "wrap", "overflow_mode must be 'trunc' or 'saturate', got 'wrap'"),
])
def test_a_cast_mode_that_does_not_apply_is_an_error(rounding, overflow, message):
    x = np.zeros(4, np.float32)
    with pytest.raises(dsl.DSLCompileError, match=message):
        dsl.from_triton(cast_modes)[(1,)](x, np.zeros(4, np.int32), N=4, DST=tl.int32,
                                          ROUNDING=rounding, OVERFLOW=overflow)


def test_a_cast_with_modes_to_the_same_type_is_no_op():
    """``x.to(float32, fp_downcast_rounding="rtne")`` on float32 (fla's kernels cast to
    ``y_ptr.dtype.element_ty``, which may be the input's type) was refused; Triton
    returns the input before it reads the modes."""
    x = np.float32([1 / 3, -2.5, 1e-45, np.inf])
    for rounding in ("rtne", "rtz"):
        y = np.zeros(4, np.float32)
        dsl.from_triton(cast_modes)[(1,)](x, y, N=4, DST=tl.float32, ROUNDING=rounding,
                                          OVERFLOW=None)
        np.testing.assert_array_equal(y, x)


def test_cast_modes_compiled_cpu_bit_exact_and_lowered(cpu_toolchain):
    x = np.random.default_rng(6).standard_normal(32).astype(np.float32) * 1e5
    kernel = dsl.from_triton(cast_modes)
    differential(kernel, (x, np.zeros(32, np.float16)),
                 {"N": 32, "DST": tl.float16, "ROUNDING": "rtz", "OVERFLOW": "saturate"},
                 grid=(1,))
    differential(kernel, (x, np.zeros(32, np.int8)),
                 {"N": 32, "DST": tl.int8, "ROUNDING": None, "OVERFLOW": "saturate"}, grid=(1,))
    f32, f16 = dsl.tensor_spec("float32"), dsl.tensor_spec("float16")
    lowered = kernel.lower(f32, f16, N=32, DST=tl.float16, ROUNDING="rtz", OVERFLOW="saturate",
                           target="Ascend910B4")
    assert lowered.hivm


# ----------------------------------------------------------------------------- libdevice


@triton.jit
def more_libdevice(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(o_ptr + offs, libdevice.tan(x) + libdevice.expm1(x) + libdevice.round(x))
    tl.store(o_ptr + N + offs, libdevice.reciprocal(y) + libdevice.ilogb(y) +
             libdevice.isinf(x / y).to(tl.float32))
    tl.store(o_ptr + 2 * N + offs, libdevice.fmod(x, y) + libdevice.ldexp(x, y) +
             libdevice.div_rz(x, y))


def test_the_libdevice_functions_added_in_session_18_by_their_triton_names():
    """libdevice's tan, expm1, round, reciprocal, ilogb, isinf, fmod, ldexp and div_rz
    (refused before) from a Triton kernel, against NumPy."""
    x = np.array([0.5, -2.5, 1e-8, 3.0, -0.0, 1.5, 2.5, -7.25], np.float32)
    y = np.array([3.0, 2.0, -3.0, 0.0, 1.0, -4.0, 5.0, 2.0], np.float32)
    out = np.zeros(24, np.float32)
    dsl.from_triton(more_libdevice)[(1,)](x, y, out, N=8)
    with np.errstate(all="ignore"):
        rounded = np.copysign(np.floor(np.abs(x) + 0.5), x)  # exact for these inputs
        first = np.tan(x) + np.expm1(x) + rounded
        exponent = np.where(y == 0, -2.0**31, np.frexp(y)[1] - 1)
        second = 1 / y + exponent + np.isinf(x / y)
        q = x.astype(np.float64) / y
        third = np.fmod(x, y) + np.ldexp(x, y.astype(np.int32)) + \
            _toward_zero(q, np.dtype(np.float32))
    np.testing.assert_allclose(out[:8], first, rtol=2e-7)
    np.testing.assert_array_equal(out[8:16], second.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(out[16:]), np.isnan(third))
    finite = ~np.isnan(third)
    np.testing.assert_allclose(out[16:][finite], third[finite], rtol=1e-7)


@triton.jit
def element_at(x_ptr, y_ptr, i, B: tl.constexpr):
    tl.store(y_ptr, tl.get_element(tl.load(x_ptr + tl.arange(0, B)), (i,)))


def test_get_element_outside_the_block_names_get_element():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(1, np.float32)
    dsl.from_triton(element_at)[(1,)](x, y, 5, B=8)
    assert y[0] == 5.0
    with pytest.raises(dsl.DSLRuntimeError, match="get_element in kernel 'element_at': offset 8"):
        dsl.from_triton(element_at)[(1,)](x, y, 8, B=8)


# ----------------------------------------------------------------------------- returns


@triton.jit
def _scaled(x, t):
    if t > 1:
        return x * 3.0, t
    elif t > 0:
        return x * 2.0, t + 10
    else:
        return x, t + 20


@triton.jit
def _shifted(x, t):
    if t > 0:
        return x * 2.0
    return x - 1.0


@triton.jit
def returns_under_a_runtime_if(x_ptr, y_ptr, t, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    a, b = _scaled(x, t)
    tl.store(y_ptr + offs, a + b + _shifted(x, t) * 1000.0)


@pytest.mark.parametrize("t", [-1, 0, 1, 2])
def test_a_helper_returns_a_value_under_a_runtime_if(t):
    """A helper's ``return value`` under a runtime ``if`` (refused: "cannot return a
    value") merges the value of each path, tuples and ``elif`` chains included."""
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, np.float32)
    dsl.from_triton(returns_under_a_runtime_if)[(1,)](x, y, t, N=4)
    a, b = _scaled.fn(x, t)
    np.testing.assert_array_equal(y, a + np.float32(b) + _shifted.fn(x, t) * 1000.0)


@triton.jit
def scalar_returned_under_a_runtime_if(x_ptr, y_ptr, t, N: tl.constexpr):
    offs = tl.arange(0, N)
    s, u = _scaled(tl.load(x_ptr), t)  # scalars: compiled-CPU mode takes no 'if' of blocks
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * s + u)


@pytest.mark.parametrize("t", [0, 1, 2])
def test_a_value_returned_under_a_runtime_if_compiled_cpu_bit_exact_and_lowered(
        cpu_toolchain, t):
    x = np.random.default_rng(12).standard_normal(8).astype(np.float32)
    kernel = dsl.from_triton(scalar_returned_under_a_runtime_if)
    differential(kernel, (x, np.zeros(8, np.float32), t), {"N": 8}, grid=(1,))
    f32 = dsl.tensor_spec("float32")
    blocks = dsl.from_triton(returns_under_a_runtime_if)
    assert blocks.lower(f32, f32, dsl.ScalarSpec(dsl.int32), N=8, target="Ascend910B4").hivm


@triton.jit
def _value_on_one_path(x, t):
    if t > 0:
        return x * 2.0


@triton.jit
def returns_on_one_path_only(x_ptr, y_ptr, t, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y_ptr + offs, _value_on_one_path(tl.load(x_ptr + offs), t))


def test_a_value_returned_on_one_path_only_is_an_error():
    with pytest.raises(dsl.DSLCompileError, match="must return one on every path"):
        dsl.from_triton(returns_on_one_path_only)[(1,)](np.zeros(4, np.float32),
                                                        np.zeros(4, np.float32), 1, N=4)


# ----------------------------------------------------------------------------- promotion


@triton.jit
def bf16_extremes(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a, b = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(o_ptr + offs, tl.maximum(a, b) * b)
    tl.store(o_ptr + N + offs, tl.clamp(a, b, b + 1.0) * b)


def test_bfloat16_maximum_promotes_to_float32_as_triton():
    """Triton's maximum/minimum/clamp promote bfloat16 to float32, so the product after
    them is a float32 one (it was rounded to bfloat16 here)."""
    bf = ml_dtypes.bfloat16
    a = np.array([0.769531, 1.1, 3.3, -2.7], np.float32).astype(bf)
    b = np.array([1.539062, 1.3, 1.7, 5.3], np.float32).astype(bf)
    out = np.zeros(8, np.float32)
    dsl.from_triton(bf16_extremes)[(1,)](a, b, out, N=4)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    np.testing.assert_array_equal(out[:4], np.maximum(a32, b32) * b32)
    np.testing.assert_array_equal(out[4:], np.clip(a32, b32, (b32 + 1).astype(np.float32)) * b32)


@triton.jit
def signed_shift_right(x_ptr, s_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs) >> tl.load(s_ptr + offs))


@pytest.mark.parametrize("signed, unsigned", [(np.int8, np.uint8), (np.int32, np.uint32)])
def test_a_signed_value_shifted_by_an_unsigned_amount_shifts_arithmetically(signed, unsigned):
    """Triton's ``>>`` is arithmetic when the left operand is signed, even when promotion
    to the unsigned amount's type makes the result unsigned (it was logical here)."""
    x = np.array([-119, -8, 56, -1], signed)
    s = np.array([4, 1, 4, 3], unsigned)
    out = np.zeros(4, unsigned)
    dsl.from_triton(signed_shift_right)[(1,)](x, s, out, N=4)
    np.testing.assert_array_equal(out, (x >> s.astype(signed)).view(unsigned))


def test_expand_dims_refuses_an_axis_out_of_range():
    """``tl.expand_dims`` of a 1-d block at axis 3, 7, -3 or -9 silently gave an
    (8, 1) block (the axis was taken modulo the rank; found in session 19); Triton
    raises "invalid axis". Repeated axes are refused too."""
    @triton.jit
    def expand(x_ptr, out_ptr, AXIS: tl.constexpr):
        r = tl.arange(0, 8)
        v = tl.expand_dims(tl.load(x_ptr + r), AXIS)
        tl.store(out_ptr + r[:, None] + r[None, :] * 0, tl.broadcast_to(v.reshape(8, 1), (8, 1)))

    kernel = dsl.from_triton(expand)
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    for axis in (3, 7, -3, -9, 2):
        with pytest.raises(dsl.DSLCompileError, match=f"axis {axis} out of range: expected "
                                                      "-2 <= axis < 2"):
            kernel[(1,)](x, out, AXIS=axis)
    for axis in (0, 1, -1, -2):
        kernel[(1,)](x, out, AXIS=axis)
        np.testing.assert_array_equal(out, x)

    @triton.jit
    def twice(x_ptr, out_ptr):
        r = tl.arange(0, 8)
        v = tl.expand_dims(tl.load(x_ptr + r), (0, -3))
        tl.store(out_ptr + r, tl.reshape(v, (8,)))

    with pytest.raises(dsl.DSLCompileError, match="name one axis twice"):
        dsl.from_triton(twice)[(1,)](x, out)


# ----------------------------------------------------------------------------- scalar typing
# Found in session 20 by a random-program differential fuzzer against Triton's interpreter.


@triton.jit
def extremes_of_scalars(i8_ptr, h_ptr, u_ptr, o_ptr, o16_ptr, ou_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    relu_int = tl.maximum(tl.load(i8_ptr + offs), 0)  # int32 in Triton: the 0 is a tensor
    tl.static_assert(relu_int.dtype == tl.int32)
    tl.store(o_ptr + offs, relu_int * 2)
    relu = tl.maximum(tl.load(h_ptr + offs), 0.0)  # float32 in Triton
    tl.static_assert(relu.dtype == tl.float32)
    clamped = tl.clamp(tl.load(h_ptr + offs), 0.0, 60000.0)
    tl.static_assert(clamped.dtype == tl.float32)
    tl.store(o16_ptr + offs, relu * 4.0 + clamped * 2.0)
    tl.store(ou_ptr + offs, tl.minimum(tl.load(u_ptr + offs), -128))  # -128 as uint32


def test_maximum_minimum_clamp_type_python_scalars_as_tensors_as_triton():
    """Triton's ``maximum``/``minimum``/``clamp`` make a Python scalar a tensor of its
    own dtype first, so it takes part in promotion: ``maximum(x_int8, 0)`` is int32 and
    ``maximum(x_fp16, 0.0)`` float32. Here they kept int8 / float16, so ``* 2`` wrapped
    (200 -> -56) and ``* 4.0`` overflowed to inf; ``minimum(x_uint32, -128)`` was
    refused ("-128 does not fit uint32"), where Triton wraps it to 2**32 - 128."""
    i8 = np.array([100, -5, 127, 3], np.int8)
    h = np.array([60000, -1, 2, 30000], np.float16)
    u = np.array([5, 2**32 - 1, 2**32 - 200, 0], np.uint32)
    out, out16, outu = np.zeros(4, np.int32), np.zeros(4, np.float32), np.zeros(4, np.uint32)
    dsl.from_triton(extremes_of_scalars)[(1,)](i8, h, u, out, out16, outu, N=4)
    np.testing.assert_array_equal(out, np.maximum(i8.astype(np.int64), 0) * 2)
    h64 = h.astype(np.float64)
    np.testing.assert_array_equal(out16, np.maximum(h64, 0) * 4 + np.clip(h64, 0, 60000) * 2)
    np.testing.assert_array_equal(outu, np.minimum(u, np.uint32(2**32 - 128)))


def test_maximum_of_python_scalars_compiled_cpu_bit_exact(cpu_toolchain):
    i8 = np.array([100, -5, 127, 3], np.int8)
    h = np.array([60000, -1, 2, 30000], np.float16)
    u = np.array([5, 2**32 - 1, 2**32 - 200, 0], np.uint32)
    differential(dsl.from_triton(extremes_of_scalars),
                 (i8, h, u, np.zeros(4, np.int32), np.zeros(4, np.float32),
                  np.zeros(4, np.uint32)), {"N": 4}, grid=(1,))


@triton.jit
def negative_zero_scalars(x_ptr, o_ptr, N: tl.constexpr, Z: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, 1.0 / (x * -0.0))  # x * +0.0 in Triton
    tl.store(o_ptr + N + offs, 1.0 / tl.full((N,), Z, tl.float32))  # +0.0 too
    folded = tl.full((N,), -1.0, tl.float32) * 0.0  # a computed -0.0 keeps its sign
    tl.store(o_ptr + 2 * N + offs, 1.0 / folded + x * 0)


def test_a_python_negative_zero_is_positive_zero_as_in_triton():
    """Triton makes every Python scalar equal to 0 the type's null value, +0.0
    (``semantic.full``): ``x * -0.0`` is ``x * +0.0`` and ``tl.full(shape, -0.0)``
    is +0.0. Here -0.0 kept its sign, so ``1 / (x * -0.0)`` had the opposite infinity;
    compiled-CPU mode (through Triton's front end) gave Triton's answer. A -0.0
    computed from constants is a real -0.0 in Triton too (MLIR folds it)."""
    x = np.array([1, 2, -1, 3], np.float32)
    out = np.zeros(12, np.float32)
    dsl.from_triton(negative_zero_scalars)[(1,)](x, out, N=4, Z=-0.0)
    np.testing.assert_array_equal(out[:4], np.copysign(np.inf, x))
    np.testing.assert_array_equal(out[4:8], np.full(4, np.inf, np.float32))
    np.testing.assert_array_equal(out[8:], np.full(4, -np.inf, np.float32))


def test_negative_zero_scalars_compiled_cpu_bit_exact(cpu_toolchain):
    """The generated Triton spells a folded -0.0 constant by its bits (a -0.0 literal
    would be +0.0 there)."""
    x = np.array([1, 2, -1, 3], np.float32)
    differential(dsl.from_triton(negative_zero_scalars), (x, np.zeros(12, np.float32)),
                 {"N": 4, "Z": -0.0}, grid=(1,))


@triton.jit
def huge_literal(x_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.load(x_ptr + offs) + 1e39  # float64 in Triton: beyond float32's range
    tl.static_assert(y.dtype == tl.float64)
    tl.store(o_ptr + offs, y - 1e39)
    tiny = tl.load(x_ptr + offs).to(tl.float32) * 1e-40  # against float32: weak, float32
    tl.static_assert((tl.load(x_ptr + offs) * 1e-40).dtype == tl.float64)
    tl.static_assert(tiny.dtype == tl.float32)
    tl.store(o_ptr + N + offs, tl.full((N,), 1e-300, tl.float64) * 0 + tiny)


def test_a_float_literal_beyond_float32_is_float64_as_in_triton():
    """Triton types a Python float above float32's largest value or below 2**-126 in
    magnitude as float64 (``semantic.to_tensor``); here every float literal was
    float32, so ``x_int32 + 1e39`` became inf and ``(x + 1e39) - 1e39`` NaN."""
    x = np.array([1, 2, 3, 4], np.int32)
    out = np.zeros(8, np.float64)
    dsl.from_triton(huge_literal)[(1,)](x, out, N=4)
    np.testing.assert_array_equal(out[:4], (x + 1e39) - 1e39)
    np.testing.assert_array_equal(out[4:], (x.astype(np.float32) * np.float32(1e-40)))


@triton.jit
def stores_each_unrolled_trip(s_ptr, o_ptr):
    offs = tl.arange(0, 4)
    a = offs + 1
    s = tl.load(s_ptr)
    if s < 1:  # runtime conditions: the launch's stores are queued until it ends
        if s > 5:
            a = a + 100
        for i in tl.static_range(3):
            a = a * 3
            tl.store(o_ptr + i * 4 + offs, a)


def test_a_block_stored_then_updated_keeps_the_stored_values():
    """A launch whose stores are queued until it ends (accesses not proved in bounds
    ahead) queues each stored block by reference; the update after a store reused the
    stored block's memory in place, so every unrolled trip stored the last trip's
    values ([27, 54, 81, 108] three times; found in session 20 by a fuzzer)."""
    s, out = np.zeros(1, np.int32), np.zeros(12, np.int32)
    dsl.from_triton(stores_each_unrolled_trip)[(1,)](s, out)
    a = np.arange(1, 5)
    np.testing.assert_array_equal(out.reshape(3, 4), [a * 3, a * 9, a * 27])


@triton.jit
def _running_max(a, b):
    return tl.maximum(a, b)


@triton.jit
def _pair_sum(a0, b0, a1, b1):
    return a0 + a1, b0 + b1


@triton.jit
def scans_of_a_block_used_before(x_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    v = tl.load(x_ptr + offs)
    w = v * 10  # an elementwise op on the loaded block before the scans
    tl.store(o_ptr + offs, tl.associative_scan(v, 0, _running_max))
    tl.store(o_ptr + N + offs, w)
    ya, yb = tl.associative_scan((v, v * 10), 0, _pair_sum)
    tl.store(o_ptr + 2 * N + offs, ya)
    tl.store(o_ptr + 3 * N + offs, yb)


def test_a_scan_of_a_loaded_block_used_before_it_compiled_cpu(cpu_toolchain):
    """triton-ascend 3.2.0's scan loop reads its operand's buffer directly, unseen by
    bufferization, so ``v * 10`` ran in place in the loaded block first and compiled
    code scanned ``v * 10`` (found in session 20). The generated Triton gives the scan
    a second, volatile load of the block (the first would be merged with it)."""
    x = np.array([1, 3, 2, 4, -5, 7, 0, 6], np.int32)
    out = np.zeros(32, np.int32)
    kernel = dsl.from_triton(scans_of_a_block_used_before)
    kernel[(1,)](x, out, N=8)
    np.testing.assert_array_equal(out, np.concatenate(
        [np.maximum.accumulate(x), x * 10, np.cumsum(x), np.cumsum(x * 10)]))
    differential(kernel, (x, np.zeros(32, np.int32)), {"N": 8}, grid=(1,))


@triton.jit
def masked_with_a_wrapping_other(x_ptr, o_ptr, n, OTHER: tl.constexpr):
    offs = tl.arange(0, 8)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=OTHER))


@pytest.mark.parametrize("dtype, other", [(np.uint8, -1), (np.int8, 200), (np.uint16, -3),
                                          (np.uint32, -1)])
def test_a_load_other_outside_the_type_wraps_as_triton_casts_it(dtype, other):
    """Triton types ``other=-1`` (int32) and casts it to the element type, so masked-off
    uint8 lanes read 255; it was refused here ("constant -1 does not fit uint8")."""
    x = np.arange(1, 9).astype(dtype)
    out = np.zeros(8, dtype)
    dsl.from_triton(masked_with_a_wrapping_other)[(1,)](x, out, 3, OTHER=other)
    want = np.concatenate([x[:3], np.full(5, np.array(other).astype(dtype))])
    np.testing.assert_array_equal(out, want)


def test_a_load_other_outside_the_type_compiled_cpu(cpu_toolchain):
    x = np.arange(1, 9).astype(np.uint8)
    differential(dsl.from_triton(masked_with_a_wrapping_other), (x, np.zeros(8, np.uint8), 3),
                 {"OTHER": -1}, grid=(1,))


# ------------------------------------------- session 23: flash-attn, DeepSpeed, xformers


@triton.jit
def doubled_unless_past_the_end(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """flash-attn's rotary kernel: an early return, then a pointer argument rebound
    to a block of pointers (a scalar pointer in the returning branch)."""
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    x_ptr = x_ptr + pid * BLOCK + tl.arange(0, BLOCK)
    mask = pid * BLOCK + tl.arange(0, BLOCK) < n
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), tl.load(x_ptr, mask=mask) * 2,
             mask=mask)


@triton.jit
def masked_first_tile(x_ptr, out_ptr, MASK: tl.constexpr, BLOCK: tl.constexpr):
    """DeepSpeed's matmul_4d_kernel: a name the returning branch made float16 is
    float32 on the other path (``c += where(..., 0, 2.0)``)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if MASK:  # noqa: SIM102  (a constexpr 'if' around a runtime one, as DeepSpeed's)
        if pid == 0:
            c = tl.zeros((BLOCK,), dtype=out_ptr.dtype.element_ty) - 1.0
            tl.store(out_ptr + offs, c)
            return
    c = tl.load(x_ptr + offs)
    c += tl.where(offs > 5, 0, 2.0)
    tl.store(out_ptr + offs, c)


@triton.jit
def count_past_a_loaded_bound(n_ptr, out_ptr, BLOCK: tl.constexpr):
    """xformers' split-K attention: ``tl.constexpr`` wrapped around a runtime block."""
    offs = tl.arange(0, BLOCK)
    shifted = tl.constexpr(offs - 3 + tl.load(n_ptr))
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, 4):
        acc += tl.where(shifted >= i, 1.0, 0.0)
    tl.store(out_ptr + offs, acc)


def test_names_a_returning_branch_leaves_different_and_constexpr_of_a_runtime_value():
    """Refused before ("'x_ptr' is a pointer of shape [] in one branch and of shape [4]
    in the other", "'c' is float16[4] in one branch and float32[4] in the other",
    "constexpr() wraps one compile-time value"): after an 'if' one of whose branches
    returns, nothing reads the names it assigned, so they need not agree."""
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    kernel = dsl.from_triton(doubled_unless_past_the_end)
    kernel[(4,)](x, out, 10, BLOCK=4)  # program 3 returns at once
    np.testing.assert_array_equal(out, x * 2)
    differential(kernel, (x, np.zeros(10, np.float32), 10), {"BLOCK": 4}, grid=(4,))
    h = np.arange(8, dtype=np.float16)
    out16 = np.zeros(8, np.float16)
    kernel = dsl.from_triton(masked_first_tile)
    kernel[(2,)](h, out16, MASK=True, BLOCK=4)
    np.testing.assert_array_equal(out16, [-1, -1, -1, -1, 6, 7, 6, 7])
    differential(kernel, (h, np.zeros(8, np.float16)), {"MASK": True, "BLOCK": 4}, grid=(2,))
    counts = np.zeros(8, np.float32)
    kernel = dsl.from_triton(count_past_a_loaded_bound)
    kernel[(1,)](np.array([2], np.int32), counts, BLOCK=8)
    np.testing.assert_array_equal(counts, [sum(j - 1 >= i for i in range(4)) for j in range(8)])
    differential(kernel, (np.array([2], np.int32), np.zeros(8, np.float32)), {"BLOCK": 8},
                 grid=(1,))


@triton.jit
def scale_rows_by_a_scalar(s_ptr, v_ptr, out_ptr, N: tl.constexpr):
    """SGLang's and vLLM's fp8 fused MoE with swapped operands: a loaded scalar scale
    indexed ``[:, None]`` (Triton's one-element block) times a block."""
    offs = tl.arange(0, N)
    s = tl.load(s_ptr)
    tl.store(out_ptr + offs, tl.reshape(s[:, None] * tl.load(v_ptr + offs)[None, :], (N,)))


def test_a_scalar_indexed_colon_none_is_a_one_element_block():
    """It crashed the interpreter (NumPy's "axis 2 is out of bounds")."""
    v = np.array([2, 4, 6, 8], np.float32)
    out = np.zeros(4, np.float32)
    kernel = dsl.from_triton(scale_rows_by_a_scalar)
    kernel[(1,)](np.array([1.5], np.float32), v, out, N=4)
    np.testing.assert_array_equal(out, v * 1.5)
    differential(kernel, (np.array([1.5], np.float32), v, np.zeros(4, np.float32)), {"N": 4},
                 grid=(1,))
