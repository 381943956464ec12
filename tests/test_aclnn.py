"""The aclnn two-phase API: planning without side effects, status codes instead of
exceptions, workspace and executor rules, per-chip dtype and availability rules."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from numerics import loss_sum_bound
from test_validation import BCE_CASES, LOGITS_CASES

import ops
from ops import aclnn
from ops import bce_forward as forward_module
from ops.chips import resolve_chip

F32, BF16 = np.float32, ml_dtypes.bfloat16
NULL, INVALID, RUNTIME = 161001, 161002, 361001


def arrays(shape=(4, 5), dtype=F32, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(dtype), rng.uniform(0.05, 0.95, shape).astype(dtype),
            rng.uniform(0, 1, shape).astype(dtype))


def test_phase1_plans_without_writing_and_phase2_runs_once():
    g, x, y = arrays()
    out = np.full((4, 5), 7.0, F32)
    status, size, executor = ops.binary_cross_entropy_backward_get_workspace_size(
        g, x, y, None, "mean", out)
    assert (status, size) == (0, 0)
    assert np.all(out == 7.0), "phase 1 must not write"
    assert executor.launches and executor.launches[0].startswith("bce_backward_kernel[grid=40]")
    assert "HAS_WEIGHT=False" in executor.launches[0]
    assert aclnn.binary_cross_entropy_backward(None, 0, executor) == 0
    np.testing.assert_array_equal(out, ops.binary_cross_entropy_backward(g, x, y, None, "mean"))
    out[:] = 7.0
    assert aclnn.binary_cross_entropy_backward(None, 0, executor) == INVALID  # used twice
    assert np.all(out == 7.0)


def test_phase2_through_the_top_level_name():
    g, x, y = arrays(seed=1)
    grad_target = np.zeros((4, 5), F32)
    status, size, executor = ops.binary_cross_entropy_with_logits_target_backward_get_workspace_size(
        g, x, y, None, None, "sum", grad_target)
    assert status == 0
    assert ops.binary_cross_entropy_with_logits_target_backward(None, size, executor) == 0
    np.testing.assert_array_equal(grad_target, -x * g)


@pytest.mark.parametrize("op", [ops.binary_cross_entropy_backward,
                                ops.binary_cross_entropy_with_logits_target_backward,
                                ops.binary_cross_entropy])
def test_phase2_with_a_null_executor_through_the_top_level_name_is_a_status(op):
    """A null executor is the null pointer (161001): under the top-level name it was
    taken for the Python API's arguments and raised (session 24's contract check)."""
    assert op(None, 0, None) == NULL
    assert op(np.zeros(4, np.uint8), np.int64(4), None, None) == NULL


@pytest.mark.parametrize("case", BCE_CASES, ids=[c[0] for c in BCE_CASES])
def test_bce_backward_statuses(case):
    _, args, kwargs, expected, _ = case
    args = args + (None,) * (4 - len(args))
    out = np.full((2, 3), 7.0, F32)
    status, size, executor = ops.binary_cross_entropy_backward_get_workspace_size(
        *args, kwargs.get("reduction", "mean"), out)
    assert (status, size, executor) == (expected, 0, None)
    assert np.all(out == 7.0)


@pytest.mark.parametrize("case", LOGITS_CASES, ids=[c[0] for c in LOGITS_CASES])
def test_logits_target_backward_statuses(case):
    _, args, kwargs, expected, _ = case
    args = args + (None,) * (5 - len(args))
    grad_target = np.full((2, 3), 7.0, F32)
    status, _, executor = ops.binary_cross_entropy_with_logits_target_backward_get_workspace_size(
        *args, kwargs.get("reduction", "mean"), grad_target)
    assert status == expected and executor is None
    assert np.all(grad_target == 7.0)


def test_out_is_a_required_tensor_here():
    g, x, y = arrays()
    assert ops.binary_cross_entropy_backward_get_workspace_size(g, x, y, None, 1, None)[0] == NULL
    assert ops.binary_cross_entropy_with_logits_target_backward_get_workspace_size(
        g, x, y, None, None, 1, None)[0] == NULL
    # null wins over every later check
    assert ops.binary_cross_entropy_backward_get_workspace_size(
        g, np.zeros((1,) * 9, F32), y, None, 9, None)[0] == NULL


def test_workspace_rules_for_a_reducing_loss():
    _, x, y = arrays((300, 1000), seed=2)
    out = np.zeros((), F32)
    status, size, executor = ops.binary_cross_entropy_get_workspace_size(x, y, None, "mean", out)
    tiles = -(-x.size // 1024)
    assert status == 0 and size == 4 * tiles
    assert len(executor.launches) == 2  # per-tile partials, then the fixed-order combine
    assert aclnn.binary_cross_entropy(np.zeros(size, np.uint8), size + 4, executor) == INVALID
    assert aclnn.binary_cross_entropy(None, size, executor) == NULL
    assert aclnn.binary_cross_entropy(np.zeros(size - 4, np.uint8), size, executor) == INVALID
    assert aclnn.binary_cross_entropy(np.zeros(size, np.uint8), size, None) == NULL
    assert aclnn.binary_cross_entropy_backward(np.zeros(size, np.uint8), size, executor) == INVALID
    assert out == 0, "rejected phase-2 calls must not run"
    assert aclnn.binary_cross_entropy(np.zeros(size // 4, np.float32), size, executor) == 0
    expected = ops.bce_forward_reference(x, y, None, "mean")
    assert abs(float(out) - float(expected)) <= loss_sum_bound(x.size) * abs(float(expected))


def test_reduction_is_deterministic_and_independent_of_the_grid():
    _, x, y = arrays((1000, 999), seed=3)
    w = np.random.default_rng(4).uniform(0.5, 2, (999,)).astype(F32)
    checked = forward_module.check(x, y, w, "sum", None)
    results = set()
    for grid in [(1,), (3,), (40,), (97,)]:
        for _ in range(2):
            out = np.zeros((), F32)
            workspace = np.empty(4 * (-(-x.size // 1024)), np.uint8)
            from dsl.views import as_view

            forward_module.run(checked, x, y, w, as_view(out), workspace, grid=grid)
            results.add(out.tobytes())
    assert len(results) == 1, "the loss must be bit-identical for every run and grid"


@pytest.mark.parametrize("chip,bf16_ok,target_backward_ok", [
    ("Ascend910B4", True, True), ("Ascend910B1", True, True), ("Ascend910_9391", True, True),
    ("Ascend950PR", True, False), ("Ascend910", False, False), ("Ascend310P", False, False),
])
def test_chip_rules(chip, bf16_ok, target_backward_ok):
    g, x, y = arrays(dtype=BF16)
    out = np.zeros((4, 5), BF16)
    status = ops.binary_cross_entropy_backward_get_workspace_size(g, x, y, None, 0, out,
                                                                  chip=chip)[0]
    assert status == (0 if bf16_ok else INVALID)
    g32, x32, y32 = arrays(dtype=F32)
    assert ops.binary_cross_entropy_backward_get_workspace_size(
        g32, x32, y32, None, 0, np.zeros((4, 5), F32), chip=chip)[0] == 0
    status = ops.binary_cross_entropy_with_logits_target_backward_get_workspace_size(
        g32, x32, y32, None, None, 0, np.zeros((4, 5), F32), chip=chip)[0]
    assert status == (0 if target_backward_ok else INVALID)


def test_unknown_chip_and_default_chip():
    g, x, y = arrays()
    assert ops.binary_cross_entropy_backward_get_workspace_size(
        g, x, y, None, 0, np.zeros((4, 5), F32), chip="Ascend9000")[0] == INVALID
    assert resolve_chip().name == "Ascend910B4"  # no NPU here: the default


def test_empty_input_plans_nothing():
    empty = np.zeros((0, 3), F32)
    out = np.zeros((0, 3), F32)
    status, size, executor = ops.binary_cross_entropy_backward_get_workspace_size(
        np.ones((), F32), empty, empty, None, "mean", out)
    assert (status, size, executor.launches) == (0, 0, ())
    assert aclnn.binary_cross_entropy_backward(None, 0, executor) == 0
    loss = np.zeros((), F32)
    status, size, executor = ops.binary_cross_entropy_get_workspace_size(empty, empty, None,
                                                                         "mean", loss)
    assert (status, size) == (0, 0) and aclnn.binary_cross_entropy(None, 0, executor) == 0
    assert np.isnan(loss)


def test_phase2_never_raises_on_garbage():
    for executor in ("nonsense", 42, object()):
        assert aclnn.binary_cross_entropy_backward(None, 0, executor) == INVALID
    g, x, y = arrays()
    _, _, executor = ops.binary_cross_entropy_backward_get_workspace_size(
        g, x, y, None, 0, np.zeros((4, 5), F32))
    assert aclnn.binary_cross_entropy_backward(None, "0", executor) == INVALID
    assert aclnn.binary_cross_entropy_backward(None, 0, executor) == 0


def test_tensors_torch_cannot_hand_over_as_dense_memory_are_a_status(torch):
    # a sparse or nested operand and a workspace on the meta device or sparse raised
    # torch's and NumPy's own errors out of the API, which returns statuses only
    g, t, out = torch.tensor(1.0), torch.full((6,), 0.5), torch.zeros(6)
    dense = torch.full((6,), 0.3)
    get = aclnn.binary_cross_entropy_backward_get_workspace_size
    assert get(g, dense.to_sparse(), t, None, 1, out)[0] == INVALID
    assert get(g, dense, t, torch.ones(6).to_sparse(), 1, out)[0] == INVALID
    nested = torch.nested.nested_tensor([torch.ones(3), torch.ones(3)])
    assert get(g, nested, t, None, 1, out)[0] == INVALID
    x, y = torch.full((1000,), 0.3), torch.full((1000,), 0.5)
    loss = torch.zeros(())
    for workspace in ("meta", "sparse"):
        status, size, executor = aclnn.binary_cross_entropy_get_workspace_size(x, y, None, 1,
                                                                               loss)
        assert status == 0 and size > 0
        bad = torch.empty(size, dtype=torch.uint8, device="meta") if workspace == "meta" else \
            torch.ones(size, dtype=torch.uint8).to_sparse()
        assert aclnn.binary_cross_entropy(bad, size, executor) == INVALID
    assert loss == 0


def test_an_out_that_requires_grad_is_refused_as_torch_refuses_it(torch):
    g, x, t = torch.tensor(1.0), torch.full((6,), 0.3), torch.full((6,), 0.5)
    out = torch.zeros(6, requires_grad=True)
    status, _, executor = aclnn.binary_cross_entropy_backward_get_workspace_size(
        g, x, t, None, 0, out)
    assert status == INVALID and executor is None
    with pytest.raises(ops.AclnnError, match="out requires grad"):
        ops.binary_cross_entropy_backward(g, x, t, None, "none", out=out)
    assert not out.detach().any()
    with torch.no_grad():  # as torch allows it
        assert aclnn.binary_cross_entropy_backward_get_workspace_size(
            g, x, t, None, 0, out)[0] == 0
