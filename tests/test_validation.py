"""Every validation failure of the spec gives its status code, in the spec's order,
and leaves ``out`` untouched."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ops
from ops import AclnnError

F32, F16, F64 = np.float32, np.float16, np.float64
BF16 = ml_dtypes.bfloat16
NULL, INVALID = 161001, 161002


def t(shape=(2, 3), dtype=F32, fill=0.5):
    return np.full(shape, fill, dtype)


def rank9(dtype=F32):
    return np.full((1,) * 9, 0.5, dtype)


def expect(status: int, fn, *args, match: str | None = None, out=None, **kwargs):
    before = None if out is None else out.copy()
    with pytest.raises(AclnnError) as info:
        fn(*args, out=out, **kwargs)
    assert info.value.status == status, str(info.value)
    assert isinstance(info.value, ValueError)
    if match:
        assert match in str(info.value), str(info.value)
    if out is not None:
        np.testing.assert_array_equal(out, before)


BCE = ops.binary_cross_entropy_backward
LOGITS = ops.binary_cross_entropy_with_logits_target_backward

# (description, args, kwargs, status, message fragment) for op 1
BCE_CASES = [
    ("grad_output null", (None, t(), t()), {}, NULL, "grad_output"),
    ("input null", (t(), None, t()), {}, NULL, "input"),
    ("target null", (t(), t(), None), {}, NULL, "target"),
    ("null wins over rank", (None, rank9(), t()), {}, NULL, "grad_output"),
    ("input rank 9", (t(), rank9(), t()), {}, INVALID, "rank 9"),
    ("weight rank 9", (t(), t(), t(), rank9()), {}, INVALID, "weight has rank 9"),
    ("rank before dtype", (t(dtype=F64), t(), rank9()), {}, INVALID, "rank 9"),
    ("input float64", (t(), t(dtype=F64), t()), {}, INVALID, "dtype float64"),
    ("target int32", (t(), t(), t(dtype=np.int32)), {}, INVALID, "dtype int32"),
    ("weight float64", (t(), t(), t(), t(dtype=F64)), {}, INVALID, "weight has dtype"),
    ("not a tensor", (t(), [[0.5]], t()), {}, INVALID, "input must be"),
    ("dtype before shape", (t((5,)), t(), t(dtype=F64)), {}, INVALID, "dtype float64"),
    ("target too large", (t(), t(), t((3, 2, 3))), {}, INVALID, "target of shape"),
    ("target not broadcastable", (t(), t(), t((2, 2))), {}, INVALID, "target of shape"),
    ("weight not broadcastable", (t(), t(), t(), t((4,))), {}, INVALID, "weight of shape"),
    ("grad not broadcastable", (t((2,)), t(), t()), {}, INVALID, "grad_output of shape"),
    ("shape before reduction", (t((2,)), t(), t()), {"reduction": 7}, INVALID, "grad_output"),
    ("reduction 3", (t(), t(), t()), {"reduction": 3}, INVALID, "reduction"),
    ("reduction -1", (t(), t(), t()), {"reduction": -1}, INVALID, "reduction"),
    ("reduction name", (t(), t(), t()), {"reduction": "avg"}, INVALID, "reduction"),
    ("reduction bool", (t(), t(), t()), {"reduction": True}, INVALID, "reduction"),
    ("reduction None", (t(), t(), t()), {"reduction": None}, INVALID, "reduction"),
]


@pytest.mark.parametrize("case", BCE_CASES, ids=[c[0] for c in BCE_CASES])
def test_bce_backward_failures(case):
    _, args, kwargs, status, fragment = case
    out = np.full((2, 3), 7.0, F32)
    expect(status, BCE, *args, match=fragment, out=out, **kwargs)
    expect(status, BCE, *args, match=fragment, **kwargs)  # and without out


def test_bce_out_shape_and_out_rank():
    out = np.full((3, 2), 7.0, F32)
    expect(INVALID, BCE, t(), t(), t(), match="out has shape", out=out)
    expect(INVALID, BCE, t(), t(), t(), match="out has rank 9", out=rank9())
    expect(INVALID, BCE, t(), t(), t(), match="out has dtype", out=np.zeros((2, 3), F64))


def test_bce_out_must_be_writeable_and_not_broadcast():
    read_only = np.zeros((2, 3), F32)
    read_only.flags.writeable = False
    expect(INVALID, BCE, t(), t(), t(), match="writeable", out=read_only)
    expect(INVALID, BCE, t(), t(), t(), match="broadcast",
           out=np.lib.stride_tricks.as_strided(np.zeros(3, F32), (2, 3), (0, 4)))


def test_empty_input_skips_shape_checks_but_not_reduction_or_dtype():
    empty = np.zeros((0, 3), F32)
    # a mismatched target shape is not checked for an empty input ...
    assert BCE(t(), empty, t((5, 5))).shape == (0, 3)
    assert LOGITS(t(), empty, t((7,))).shape == (0, 3)
    # ... but dtype, rank and reduction are
    expect(INVALID, BCE, t(), empty, t(), match="reduction", reduction=5)
    expect(INVALID, BCE, t(), empty, t(dtype=F64), match="dtype")
    expect(INVALID, LOGITS, t(), empty, t(), match="reduction", reduction="avg")
    expect(NULL, LOGITS, t(), empty, None)


def test_bf16_is_accepted_on_the_default_chip():
    out = BCE(t(dtype=BF16), t(dtype=BF16), t(dtype=BF16), reduction="none")
    assert out.dtype == BF16


LOGITS_CASES = [
    ("grad_output null", (None, t(), t()), {}, NULL, "grad_output"),
    ("input null", (t(), None, t()), {}, NULL, "input"),
    ("target null", (t(), t(), None), {}, NULL, "target"),
    ("pos_weight rank 9", (t(), t(), t(), None, rank9()), {}, INVALID, "pos_weight has rank"),
    ("pos_weight float64", (t(), t(), t(), None, t(dtype=F64)), {}, INVALID, "pos_weight has dtype"),
    ("target shape differs", (t(), t(), t((3,))), {}, INVALID, "target has shape"),
    ("target broadcastable is not enough", (t(), t(), t((1, 3))), {}, INVALID, "target has shape"),
    ("pos_weight not broadcastable", (t(), t(), t(), None, t((2,))), {}, INVALID, "pos_weight of"),
    ("weight not broadcastable", (t(), t(), t(), t((4, 3))), {}, INVALID, "weight of shape"),
    ("reduction", (t(), t(), t()), {"reduction": "average"}, INVALID, "reduction"),
]


@pytest.mark.parametrize("case", LOGITS_CASES, ids=[c[0] for c in LOGITS_CASES])
def test_logits_target_backward_failures(case):
    _, args, kwargs, status, fragment = case
    out = np.full((2, 3), 7.0, F32)
    expect(status, LOGITS, *args, match=fragment, out=out, **kwargs)


def test_logits_out_dtype_must_equal_target_dtype_and_is_checked_before_shapes():
    out = np.full((2, 3), 7.0, F16)
    expect(INVALID, LOGITS, t(), t(), t(), match="target's dtype", out=out)
    # the dtype rule (step 3) wins over a shape error (step 4)
    expect(INVALID, LOGITS, t(), t(), t((5,)), match="target's dtype", out=out)
    # a matching dtype with the wrong shape is a step-4 error
    expect(INVALID, LOGITS, t(), t(), t(), match="out has shape", out=np.zeros((3, 2), F32))


def test_reduction_spellings_agree():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 0.9, (4, 5)).astype(F32)
    y = rng.uniform(0, 1, (4, 5)).astype(F32)
    for name, code in (("none", 0), ("mean", 1), ("sum", 2)):
        np.testing.assert_array_equal(BCE(t(()), x, y, reduction=name),
                                      BCE(t(()), x, y, reduction=np.int64(code)))


def test_torch_device_tensor_is_rejected_clearly(torch):
    meta = torch.zeros(2, 3, device="meta")
    expect(INVALID, BCE, t(), meta, t(), match="device")


@pytest.mark.parametrize("make", [
    lambda torch: torch.rand(2, 3).to(torch.float8_e4m3fn),  # NumPy has no such dtype
    lambda torch: torch.rand(2, 3, dtype=torch.complex64).conj(),  # a conjugate-bit view
], ids=["float8", "conjugate-view"])
def test_torch_tensors_numpy_cannot_hold_get_the_dtype_error(torch, make):
    # the operators validate CPU torch tensors as the NumPy arrays over their memory;
    # one NumPy cannot hold is validated as a tensor, and its dtype is named
    bad = make(torch)
    name = str(bad.dtype).replace("torch.", "")
    for op in (BCE, LOGITS):
        expect(INVALID, op, torch.ones(2, 3), bad, torch.rand(2, 3), match=f"dtype {name}")


def test_torch_operands_give_torch_results_of_their_dtype(torch):
    x = torch.rand(2, 3, requires_grad=True)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        xs = x.detach().to(dtype).clamp(0.05, 0.95)
        res = BCE(torch.ones((), dtype=dtype), xs, torch.rand(2, 3).to(dtype))
        assert isinstance(res, torch.Tensor) and res.dtype == dtype and res.shape == (2, 3)
    assert isinstance(BCE(torch.ones(()), x, torch.rand(2, 3)), torch.Tensor)
