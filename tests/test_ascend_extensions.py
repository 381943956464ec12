"""triton-ascend's cube/vector extensions: ``sub_vec_id``, ``sub_vec_num`` and the
``sync_block_*`` calls with their ``PIPE`` enum, in every backend."""

from __future__ import annotations

import numpy as np
import pytest

import dsl
from dsl.ir import SUB_BLOCK_PARAM


@dsl.jit
def halves_exp(x, out, M: dsl.constexpr, N: dsl.constexpr):
    # each vector sub-block handles its half of the rows, as the 1:2 mixed kernels
    # of triton-ascend's tests do after their cube part
    half = M // dsl.sub_vec_num()
    rows = dsl.sub_vec_id() * half + dsl.arange(0, half)
    idx = rows[:, None] * N + dsl.arange(0, N)[None, :]
    dsl.sync_block_set("cube", "vector", 5, dsl.PIPE.PIPE_MTE1, dsl.PIPE.PIPE_MTE3)
    dsl.sync_block_wait("cube", "vector", 5, dsl.PIPE.PIPE_MTE1, dsl.PIPE.PIPE_MTE3)
    dsl.sync_block_all("all_sub_vector", 0)
    dsl.store(out, idx, dsl.exp(dsl.load(x, idx)))


def _inputs(m: int = 4, n: int = 8) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(3).standard_normal((m, n)).astype(np.float32)
    return x, np.zeros_like(x)


def test_sub_vec_num_is_the_a2_a3_ratio_and_a_constexpr():
    @dsl.jit
    def count(out):
        dsl.store(out, dsl.arange(0, dsl.sub_vec_num()), dsl.sub_vec_num())

    out = np.zeros(2, np.int32)
    count[(1,)](out)
    np.testing.assert_array_equal(out, [2, 2])


def test_every_sub_block_runs_its_half():
    x, out = _inputs()
    halves_exp[(1,)](x, out, 4, 8)
    # one pass alone would leave the second half of the rows at zero
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)), rtol=2e-7)


def test_sub_block_index_per_program_and_sub_block():
    @dsl.jit
    def which(out):
        pid = dsl.program_id(0)
        dsl.store(out, pid * 2 + dsl.sub_vec_id() + dsl.arange(0, 1), pid * 10 + dsl.sub_vec_id()
                  + dsl.zeros((1,), dsl.int32))

    out = np.full(6, -1, np.int32)
    which[(3,)](out)
    np.testing.assert_array_equal(out, [0, 1, 10, 11, 20, 21])
    which[(3,)](out)  # a cached launch runs both passes too (no one-pass replay)
    np.testing.assert_array_equal(out, [0, 1, 10, 11, 20, 21])


def test_a_failing_pass_leaves_every_tensor_as_it_was():
    @dsl.jit
    def second_half_oob(x, out, n):
        idx = dsl.sub_vec_id() * n + dsl.arange(0, 8)  # sub-block 1 starts past the end
        dsl.store(out, idx, dsl.load(x, idx, idx < n) + 1.0, idx < 8)
        dsl.store(out, dsl.sub_vec_id() * 100 + dsl.arange(0, 1), dsl.full((1,), 5.0, dsl.float32))

    x = np.arange(8, dtype=np.float32)
    out = np.full(8, -3.0, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="out"):
        second_half_oob[(1,)](x, out, 8)
    np.testing.assert_array_equal(out, -3.0)  # sub-block 0's writes were undone


def test_generated_code_takes_the_index_as_a_hidden_parameter():
    x, out = _inputs()
    fn = halves_exp.specialize(*halves_exp.bind((x, out, 4, 8), {}))
    assert fn.sub_blocks and fn.params[-1].user_name == SUB_BLOCK_PARAM
    from lowering.triton_codegen import generate

    generated = generate(fn)
    assert f"{SUB_BLOCK_PARAM}):" in generated.source
    assert generated.signature[SUB_BLOCK_PARAM] == "i32"
    assert "sync_block" not in generated.source  # checked, then dropped


def test_compiled_cpu_runs_every_sub_block(cpu_toolchain):
    x, interpreted = _inputs()
    halves_exp[(1,)](x, interpreted, 4, 8)
    compiled = np.zeros_like(x)
    halves_exp.launch(x, compiled, 4, 8, grid=(1,), backend="compiled-cpu")
    np.testing.assert_array_equal(compiled.view(np.uint32), interpreted.view(np.uint32))


def test_lowers_to_hivm_within_ub(toolchain):
    x, out = _inputs()
    lowered = halves_exp.lower(x, out, 4, 8, target="Ascend910B4")
    assert lowered.hivm and 0 < lowered.ub_measured_bytes <= lowered.ub_capacity_bytes


@pytest.mark.parametrize("call, message", [
    ("dsl.sync_block_set('cube', 'scalar', 1)", "receiver must be 'cube' or 'vector'"),
    ("dsl.sync_block_wait('gpu', 'vector', 1)", "sender must be 'cube' or 'vector'"),
    ("dsl.sync_block_set('cube', 'vector', 16)", "event_id must be a constexpr int from 0 to 15"),
    ("dsl.sync_block_set('cube', 'vector', 1, 3)", "sender_pipe must be a PIPE member"),
    ("dsl.sync_block_all('everything', 1)", "mode must be one of"),
    ("dsl.sync_block_all('all', -1)", "event_id must be a constexpr int"),
])
def test_sync_block_arguments_are_checked(kernel_from_source, call, message):
    bad, _ = kernel_from_source("bad", f"import dsl\n\n@dsl.jit\ndef bad(out):\n    {call}\n"
                                "    dsl.store(out, dsl.arange(0, 2), 1.0)\n")
    with pytest.raises(dsl.DSLCompileError, match=message):
        bad[(1,)](np.zeros(2, np.float32))


def test_the_hidden_parameter_name_is_reserved():
    def dsl_sub_vec_id_kernel(out, dsl_sub_vec_id):
        dsl.store(out, dsl.arange(0, 2), dsl_sub_vec_id)

    kernel = dsl.jit(dsl_sub_vec_id_kernel)
    with pytest.raises(dsl.DSLCompileError, match="reserved"):
        kernel[(1,)](np.zeros(2, np.int32), 1)
