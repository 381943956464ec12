"""Idioms of machine-written Triton: the kernels PyTorch Inductor emits (found by
session 24's hunt, which ran ~320 Inductor graphs through this project with
``torch._inductor.config.cpu_backend = "triton"``). The helpers below are written
here in the way Inductor's ``triton_helpers`` works, not imported from it: a plain
function of Triton's called at compile time (``tl.core._unwrap_if_constexpr``),
helpers marked Triton builtins (``fn.__triton_builtin__ = True``), which Triton's code
generator calls with ``tl.constexpr`` objects and runtime tensors as they are, and a
``device_assert`` on an index's range on the line before the load it guards."""

from __future__ import annotations

import os

import numpy as np
import pytest

import dsl
import dsl.triton_compat

triton = pytest.importorskip("triton") if not os.environ.get("CI") else __import__("triton")
tl = triton.language


def next_power_of_2_builtin(n, *, _builder=None):
    """Inductor's ``constexpr_next_power_of_2``: it insists on a ``tl.constexpr``."""
    assert isinstance(n, tl.constexpr), f"got {type(n).__name__}"
    return tl.constexpr(triton.next_power_of_2(n.value))


def other_if_masked(mask, value, *, _builder=None):
    """Inductor's ``if_mask``: ``other=`` only where there is a mask (a constexpr None
    mask makes it a constexpr None)."""
    if isinstance(mask, tl.constexpr) and mask.value is None:
        return tl.constexpr(None)
    return value


next_power_of_2_builtin.__triton_builtin__ = True
other_if_masked.__triton_builtin__ = True


@triton.jit
def padded_row_sum_kernel(x_ptr, out_ptr, n, WIDTH: tl.constexpr):
    BLOCK: tl.constexpr = next_power_of_2_builtin(WIDTH)
    offs = tl.arange(0, BLOCK)
    if BLOCK == WIDTH:
        mask: tl.constexpr = None
    else:
        mask = offs < n
    v = tl.load(x_ptr + offs, mask, other=other_if_masked(mask, 0.0))
    tl.store(out_ptr, tl.sum(v, 0))


@pytest.mark.parametrize("width", [8, 5])
def test_triton_builtin_helpers_get_constexpr_objects_and_tensors(width):
    """They were called with plain ints (the assert failed), a constexpr None became a
    plain None (``other=`` without ``mask=``), and a runtime mask was refused ("is not
    a DSL builtin"): every cooperative reduction of Inductor stopped there."""
    x = np.arange(1.0, 9.0, dtype=np.float32)
    out = np.zeros(1, np.float32)
    dsl.from_triton(padded_row_sum_kernel)[(1,)](x, out, width, WIDTH=width)
    assert out[0] == x[:width].sum()


@triton.jit
def packed_flag_kernel(x_ptr, out_ptr, BITS_TYPE: tl.constexpr, N: tl.constexpr):
    # Inductor's split scan packs a value's bits beside a flag in one wider word
    bits_type = tl.core._unwrap_if_constexpr(BITS_TYPE)
    offs = tl.arange(0, N)
    word = tl.load(x_ptr + offs).to(bits_type, bitcast=True).to(tl.uint64)
    tl.store(out_ptr + offs, (word << bits_type.primitive_bitwidth) | 1)


def test_unwrap_if_constexpr_runs_at_compile_time():
    """``tl.core._unwrap_if_constexpr`` was refused as "not supported yet"."""
    x = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    out = np.zeros(4, np.uint64)
    dsl.from_triton(packed_flag_kernel)[(1,)](x, out, BITS_TYPE=tl.uint32, N=4)
    expected = (x.view(np.uint32).astype(np.uint64) << np.uint64(32)) | np.uint64(1)
    np.testing.assert_array_equal(out, expected)


def pick(first, second, take_first):
    """A plain helper choosing between runtime tensors at compile time."""
    return first if take_first else second


@triton.jit
def picked_kernel(x_ptr, out_ptr, N: tl.constexpr, FIRST: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, pick(x * 2, x + 1, FIRST))


def test_a_plain_function_may_take_and_return_runtime_tensors():
    """Triton's code generator passes tensors to any Python function; this project
    refused the call when an argument was not a constexpr."""
    x = np.arange(4, dtype=np.float32)
    for first, expected in ((True, x * 2), (False, x + 1)):
        out = np.zeros(4, np.float32)
        dsl.from_triton(picked_kernel)[(1,)](x, out, N=4, FIRST=first)
        np.testing.assert_array_equal(out, expected)


def scaled(x):
    return x * 2  # (computing on a tensor needs a builtin or @triton.jit, in Triton too)


@triton.jit
def computing_helper_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, scaled(tl.load(x_ptr + offs)))


def test_a_plain_function_computing_on_a_tensor_fails_at_its_call():
    with pytest.raises(dsl.DSLCompileError, match=r"scaled\(\) failed at compile time"):
        dsl.from_triton(computing_helper_kernel)[(1,)](np.zeros(4, np.float32),
                                                       np.zeros(4, np.float32), N=4)


@triton.jit
def asserted_gather_kernel(idx_ptr, table_ptr, out_ptr, n, table_size, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    index = tl.load(idx_ptr + offs, mask)
    tl.device_assert(((index >= 0) & (index < table_size)) | ~mask, "index out of bounds")
    tl.store(out_ptr + offs, tl.load(table_ptr + index, mask), mask)


@pytest.mark.parametrize("backend", ["interpreter", "compiled-cpu"])
def test_an_assert_before_an_out_of_bounds_load_fails_first(request, backend):
    """The bounds pre-pass, which runs only the ops that compute addresses, reported
    the load on the next line instead of the assert that runs first."""
    if backend == "compiled-cpu":
        request.getfixturevalue("cpu_toolchain")
    table = np.arange(10, dtype=np.float32)
    out = np.zeros(3, np.float32)
    kernel = dsl.from_triton(asserted_gather_kernel)
    with pytest.raises(dsl.DeviceAssertionError, match=r"index out of bounds.*lane 1"):
        kernel.launch(np.array([1, 10, 3], np.int32), table, out, 3, 10, BLOCK=4, grid=(1,),
                      backend=backend)
    assert not out.any()  # nothing written
    kernel.launch(np.array([1, 9, 3], np.int32), table, out, 3, 10, BLOCK=4, grid=(1,),
                  backend=backend)
    np.testing.assert_array_equal(out, [1.0, 9.0, 3.0])


@triton.jit
def unasserted_gather_kernel(idx_ptr, table_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.device_assert(offs < BLOCK, "always true")
    tl.store(out_ptr + offs, tl.load(table_ptr + tl.load(idx_ptr + offs, mask), mask), mask)


def test_an_out_of_bounds_load_after_a_passing_assert_is_still_reported():
    out = np.zeros(3, np.float32)
    with pytest.raises(dsl.OutOfBoundsError, match="table_ptr"):
        dsl.from_triton(unasserted_gather_kernel)[(1,)](
            np.array([1, 10, 3], np.int32), np.arange(10, dtype=np.float32), out, 3, BLOCK=4)
    assert not out.any()
