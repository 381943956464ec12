"""torch.library custom operators, drop-in losses with autograd, torch.compile."""

from __future__ import annotations

import pytest

import dsl


@pytest.fixture(scope="module")
def ot(torch):
    import ops.torch as module

    return module


def _inputs(torch, dtype=None, seed=0):
    dtype = dtype or torch.float32
    gen = torch.Generator().manual_seed(seed)
    logits = (torch.randn(16, 6, generator=gen) * 3).to(dtype)
    probs = torch.rand(16, 6, generator=gen).clamp(0.02, 0.98).to(dtype)
    target = torch.rand(16, 6, generator=gen).to(dtype)
    weight = (torch.rand(6, generator=gen) + 0.5).to(dtype)
    pos_weight = (torch.rand(6, generator=gen) * 4).to(dtype)
    return logits, probs, target, weight, pos_weight


def test_opcheck_every_custom_operator(torch, ot):
    logits, probs, target, weight, pos_weight = _inputs(torch)
    grad = torch.randn(16, 6)
    cases = [
        (torch.ops.ascend_dsl.binary_cross_entropy, (probs, target, weight, 1)),
        (torch.ops.ascend_dsl.binary_cross_entropy, (probs, target, None, 0)),
        (torch.ops.ascend_dsl.binary_cross_entropy_backward, (grad, probs, target, weight, 0)),
        (torch.ops.ascend_dsl.binary_cross_entropy_with_logits,
         (logits, target, weight, pos_weight, 2)),
        (torch.ops.ascend_dsl.binary_cross_entropy_with_logits_backward,
         (grad, logits, target, None, pos_weight, 0)),
        (torch.ops.ascend_dsl.binary_cross_entropy_with_logits_target_backward,
         (grad, logits, target, weight, None, 0)),
    ]
    for op, args in cases:
        torch.library.opcheck(op, args)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_with_logits_loss_and_both_gradients_match_torch(torch, ot, reduction):
    logits, _, target, weight, pos_weight = _inputs(torch, seed=1)
    ours_x, ours_t = logits.clone().requires_grad_(), target.clone().requires_grad_()
    ref_x, ref_t = logits.double().requires_grad_(), target.double().requires_grad_()
    loss = ot.binary_cross_entropy_with_logits(ours_x, ours_t, weight, reduction, pos_weight)
    ref = torch.nn.functional.binary_cross_entropy_with_logits(
        ref_x, ref_t, weight.double(), reduction=reduction, pos_weight=pos_weight.double())
    torch.testing.assert_close(loss.double(), ref, rtol=2e-6, atol=1e-6)
    upstream = torch.randn(loss.shape)
    loss.backward(upstream)
    ref.backward(upstream.double())
    torch.testing.assert_close(ours_x.grad.double(), ref_x.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ours_t.grad.double(), ref_t.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_bce_loss_and_gradients_match_torch(torch, ot, reduction):
    _, probs, target, weight, _ = _inputs(torch, seed=2)
    ours_x, ours_t = probs.clone().requires_grad_(), target.clone().requires_grad_()
    ref_x, ref_t = probs.double().requires_grad_(), target.double().requires_grad_()
    loss = ot.binary_cross_entropy(ours_x, ours_t, weight, reduction)
    ref = torch.nn.functional.binary_cross_entropy(ref_x, ref_t, weight.double(),
                                                   reduction=reduction)
    torch.testing.assert_close(loss.double(), ref, rtol=2e-6, atol=1e-6)
    upstream = torch.randn(loss.shape)
    loss.backward(upstream)
    ref.backward(upstream.double())
    torch.testing.assert_close(ours_x.grad.double(), ref_x.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ours_t.grad.double(), ref_t.grad, rtol=1e-5, atol=1e-6)


def test_bf16_loss_computes_in_fp32(torch, ot):
    logits, _, target, _, pos_weight = _inputs(torch, torch.bfloat16, seed=3)
    x = logits.clone().requires_grad_()
    loss = ot.binary_cross_entropy_with_logits(x, target, pos_weight=pos_weight)
    assert loss.dtype == torch.bfloat16
    ref = torch.nn.functional.binary_cross_entropy_with_logits(
        logits.double(), target.double(), pos_weight=pos_weight.double())
    torch.testing.assert_close(loss.double(), ref, rtol=2**-8, atol=0)
    loss.backward()
    assert x.grad.dtype == torch.bfloat16


def test_torch_compile_traces_the_custom_operators(torch, ot):
    logits, _, target, weight, pos_weight = _inputs(torch, seed=4)

    def step(x, t):
        loss = ot.binary_cross_entropy_with_logits(x, t, weight, "mean", pos_weight)
        return loss * 2

    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    x1, t1 = logits.clone().requires_grad_(), target.clone().requires_grad_()
    x2, t2 = logits.clone().requires_grad_(), target.clone().requires_grad_()
    eager_loss = step(x1, t1)
    compiled_loss = compiled(x2, t2)
    torch.testing.assert_close(compiled_loss, eager_loss, rtol=0, atol=0)
    eager_loss.backward()
    compiled_loss.backward()
    torch.testing.assert_close(x2.grad, x1.grad, rtol=0, atol=0)
    torch.testing.assert_close(t2.grad, t1.grad, rtol=0, atol=0)


def test_fake_tensors_get_shapes_without_running(torch, ot):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(3, 4, dtype=torch.float16)
        t = torch.empty(3, 4, dtype=torch.bfloat16)
        loss = torch.ops.ascend_dsl.binary_cross_entropy_with_logits(x, t, None, None, 1)
        grad_t = torch.ops.ascend_dsl.binary_cross_entropy_with_logits_target_backward(
            torch.empty(()), x, t, None, None, 1)
    assert loss.shape == () and loss.dtype == torch.float16
    assert grad_t.shape == (3, 4) and grad_t.dtype == torch.bfloat16


def test_weight_gradients_are_refused_clearly(torch, ot):
    logits, _, target, weight, _ = _inputs(torch, seed=5)
    w = weight.clone().requires_grad_()
    loss = ot.binary_cross_entropy_with_logits(logits.requires_grad_(), target, w)
    with pytest.raises(RuntimeError, match="gradient w.r.t. weight is not provided"):
        loss.backward()


def test_invalid_arguments_raise_aclnn_errors(torch, ot):
    from ops import AclnnError

    x = torch.rand(2, 3)
    with pytest.raises(AclnnError) as info:
        ot.binary_cross_entropy_with_logits(x, torch.rand(3, 2))
    assert info.value.status == 161002


def test_a_leaf_tensor_that_requires_grad_is_refused_as_an_output(torch):
    """torch refuses to write a leaf that requires grad in place; a launch stored into
    one (found in session 19), on every launch path: the first call, and after a
    plain tensor made the launch cached (recipe, replay, hot launcher)."""
    from test_launch_plan import scaled_copy

    import dsl

    x = torch.arange(4, dtype=torch.float32)
    leaf = torch.zeros(4, requires_grad=True)
    with pytest.raises(dsl.DSLLaunchError, match="'out' is stored to but is a torch leaf "
                                                 "tensor that requires grad"):
        scaled_copy[(1,)](x, leaf, 2.0, N=4)
    for _ in range(4):  # the cached paths
        plain = torch.zeros(4)
        scaled_copy[(1,)](x, plain, 2.0, N=4)
        assert plain.tolist() == [0.0, 2.0, 4.0, 6.0]
        with pytest.raises(dsl.DSLLaunchError, match="requires grad"):
            scaled_copy[(1,)](x, leaf, 2.0, N=4)
    assert not leaf.detach().any()
    inner = torch.zeros(4, requires_grad=True) * 1.0  # not a leaf: written, autograd told
    with torch.no_grad():
        scaled_copy[(1,)](x, inner, 2.0, N=4)
    assert inner.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_a_leaf_tensor_that_requires_grad_is_written_with_grad_mode_off(torch):
    """Under ``torch.no_grad()`` and in an ``autograd.Function``'s backward torch writes
    a leaf that requires grad in place, and so does a launch, on every launch path
    (found in session 20: Liger-Kernel's swiglu/geglu backward kernels write gradients
    into the saved inputs, and the refusal stopped them)."""
    from test_launch_plan import scaled_copy

    x = torch.arange(4, dtype=torch.float32)
    leaf = torch.zeros(4, requires_grad=True)
    for scale in range(1, 6):  # the first call, then the cached paths
        with torch.no_grad():
            scaled_copy[(1,)](x, leaf, float(scale), N=4)
        assert leaf.tolist() == [0.0, scale, 2.0 * scale, 3.0 * scale]

    class Doubled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, grad):
            (saved,) = ctx.saved_tensors  # the leaf itself
            scaled_copy[(1,)](grad, saved, 2.0, N=4)  # its buffer reused for the result
            return saved

    a = torch.ones(4, requires_grad=True)
    Doubled.apply(a).sum().backward()
    assert a.grad.tolist() == [2.0] * 4


def _negated_view(torch, values):
    """A real tensor with torch's negative bit set (``z.conj().imag``) whose values
    are ``values``: its memory holds them negated."""
    z = torch.complex(torch.zeros(len(values)), -torch.tensor(values, dtype=torch.float32))
    view = z.conj().imag
    assert view.is_neg() and view.tolist() == pytest.approx(values)
    return view


def test_operators_read_a_negated_view_by_its_values_and_refuse_one_as_out(torch):
    """torch's lazy negation (found in session 26: torch's raw "Can't call numpy() on
    Tensor that has negative bit set"): an operand is read by its values, as torch's
    own operator reads it; an ``out`` with the bit is refused (161002): the result
    would land negated."""
    import ops
    from ops import AclnnError

    grad, x = torch.tensor(0.5), torch.tensor([0.2, 0.4, 0.6, 0.8])
    target = _negated_view(torch, [0.3, 0.6, 0.2, 0.9])
    for args in ((grad, x, target), (grad, target, x)):
        want = torch.ops.aten.binary_cross_entropy_backward(
            *(a.resolve_neg() for a in args), None, 1)
        assert torch.equal(ops.binary_cross_entropy_backward(*args, None, "mean"), want)
    out = _negated_view(torch, [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(AclnnError, match="negative bit") as info:
        ops.binary_cross_entropy_backward(grad, x, x, None, "mean", out=out)
    assert info.value.status == 161002
    assert out.tolist() == [1.0, 2.0, 3.0, 4.0]


def _scale_by_two(x, out, n, BLOCK: dsl.constexpr):
    i = dsl.arange(0, BLOCK)
    dsl.store(out, i, dsl.load(x, i, i < n) * 2.0, i < n)


@pytest.mark.parametrize("plain_calls", [0, 1, 2, 3])
def test_a_kernel_refuses_a_negated_view_by_name(torch, plain_calls):
    """Whatever the launch caches hold: after 1, 2 or 3 calls with a plain tensor of
    the same dtype, shape and strides (``z.real``), the recipe, the exact-key replay and
    the hot launcher fell to a bare TypeError or torch's raw RuntimeError (the helper
    hunt of session 26)."""
    scale = dsl.jit(_scale_by_two)  # a new kernel per case: its caches start empty
    negated = _negated_view(torch, [1.0, 2.0, 3.0, 4.0])
    plain = torch.complex(torch.ones(4), torch.ones(4)).real  # stride 2, as the view's
    for x, out in ((negated, plain), (plain, negated)):
        for _ in range(plain_calls):
            scale[(1,)](plain if x is negated else x, plain if out is negated else out, 4,
                        BLOCK=4)
        with pytest.raises(dsl.DSLLaunchError, match=r"argument '(x|out)': a tensor with "
                                                     r"torch's negative bit set .*resolve_neg"):
            scale[(1,)](x, out, 4, BLOCK=4)
    assert negated.tolist() == [1.0, 2.0, 3.0, 4.0]
