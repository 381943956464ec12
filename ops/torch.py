"""PyTorch integration: ``torch.library`` custom operators and drop-in losses.

Custom operators (namespace ``ascend_dsl``), each with a fake implementation so
``torch.compile`` can trace them without running the kernels:

    ascend_dsl::binary_cross_entropy(input, target, weight?, reduction)
    ascend_dsl::binary_cross_entropy_backward(grad_output, input, target, weight?, reduction)
    ascend_dsl::binary_cross_entropy_with_logits(input, target, weight?, pos_weight?, reduction)
    ascend_dsl::binary_cross_entropy_with_logits_backward(grad_output, input, target,
                                                          weight?, pos_weight?, reduction)
    ascend_dsl::binary_cross_entropy_with_logits_target_backward(grad_output, input, target,
                                                                 weight?, pos_weight?, reduction)

``reduction`` is 0 (none), 1 (mean) or 2 (sum). The two loss operators carry
autograd formulas (``torch.library.register_autograd``) that call this project's
backward kernels, the with-logits loss's target gradient included (torch_npu does
not expose that one). The drop-in functions ``binary_cross_entropy`` and
``binary_cross_entropy_with_logits`` take PyTorch's arguments. Here they run on CPU
tensors through the interpreter; gradients w.r.t. ``weight``/``pos_weight`` are not
provided (an error says so), and BCE's target gradient, ``-logit(x) * g * w * s`` as
in PyTorch, is computed with torch operations.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ops import bce_backward, bce_forward, bce_with_logits_backward, bce_with_logits_forward
from ops.validation import parse_reduction

NAMESPACE = "ascend_dsl"


def _loss_shape(input: Tensor, reduction: int) -> list[int]:
    return list(input.shape) if reduction == 0 else []


# ----------------------------------------------------------------------------- operators


@torch.library.custom_op(f"{NAMESPACE}::binary_cross_entropy_backward", mutates_args=())
def bce_backward_op(grad_output: Tensor, input: Tensor, target: Tensor, weight: Tensor | None,
                    reduction: int) -> Tensor:
    return bce_backward.binary_cross_entropy_backward(grad_output, input, target, weight,
                                                      reduction)


@bce_backward_op.register_fake
def _(grad_output, input, target, weight, reduction):
    return input.new_empty(input.shape)


@torch.library.custom_op(f"{NAMESPACE}::binary_cross_entropy_with_logits_target_backward",
                         mutates_args=())
def bce_with_logits_target_backward_op(grad_output: Tensor, input: Tensor, target: Tensor,
                                       weight: Tensor | None, pos_weight: Tensor | None,
                                       reduction: int) -> Tensor:
    return bce_with_logits_backward.binary_cross_entropy_with_logits_target_backward(
        grad_output, input, target, weight, pos_weight, reduction)


@bce_with_logits_target_backward_op.register_fake
def _(grad_output, input, target, weight, pos_weight, reduction):
    return target.new_empty(input.shape)


@torch.library.custom_op(f"{NAMESPACE}::binary_cross_entropy_with_logits_backward",
                         mutates_args=())
def bce_with_logits_backward_op(grad_output: Tensor, input: Tensor, target: Tensor,
                                weight: Tensor | None, pos_weight: Tensor | None,
                                reduction: int) -> Tensor:
    return bce_with_logits_backward.binary_cross_entropy_with_logits_backward(
        grad_output, input, target, weight, pos_weight, reduction)


@bce_with_logits_backward_op.register_fake
def _(grad_output, input, target, weight, pos_weight, reduction):
    return target.new_empty(input.shape)


@torch.library.custom_op(f"{NAMESPACE}::binary_cross_entropy", mutates_args=())
def bce_op(input: Tensor, target: Tensor, weight: Tensor | None, reduction: int) -> Tensor:
    return bce_forward.binary_cross_entropy(input, target, weight, reduction)


@bce_op.register_fake
def _(input, target, weight, reduction):
    return input.new_empty(_loss_shape(input, reduction))


@torch.library.custom_op(f"{NAMESPACE}::binary_cross_entropy_with_logits", mutates_args=())
def bce_with_logits_op(input: Tensor, target: Tensor, weight: Tensor | None,
                       pos_weight: Tensor | None, reduction: int) -> Tensor:
    return bce_with_logits_forward.binary_cross_entropy_with_logits(input, target, weight,
                                                                    pos_weight, reduction)


@bce_with_logits_op.register_fake
def _(input, target, weight, pos_weight, reduction):
    return input.new_empty(_loss_shape(input, reduction))


# ----------------------------------------------------------------------------- autograd


def _no_weight_grads(ctx: Any, names: tuple[str, ...]) -> None:
    for name, needed in zip(names, ctx.needs_input_grad[2:2 + len(names)]):
        if needed:
            raise RuntimeError(f"ops.torch: the gradient w.r.t. {name} is not provided")


def _setup_bce(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    input, target, weight, reduction = inputs
    ctx.save_for_backward(input, target, weight)
    ctx.reduction = reduction


def _backward_bce(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
    input, target, weight = ctx.saved_tensors
    _no_weight_grads(ctx, ("weight",))
    grad_input = grad_target = None
    if ctx.needs_input_grad[0]:
        grad_input = bce_backward_op(grad, input, target, weight, ctx.reduction)
    if ctx.needs_input_grad[1]:
        grad_target = -torch.logit(input.float()) * grad
        if weight is not None:
            grad_target = grad_target * weight
        if ctx.reduction == 1:
            grad_target = grad_target / input.numel()
        grad_target = grad_target.expand(target.shape).to(target.dtype)
    return grad_input, grad_target, None, None


def _setup_logits(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    input, target, weight, pos_weight, reduction = inputs
    ctx.save_for_backward(input, target, weight, pos_weight)
    ctx.reduction = reduction


def _backward_logits(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
    input, target, weight, pos_weight = ctx.saved_tensors
    _no_weight_grads(ctx, ("weight", "pos_weight"))
    grad_input = grad_target = None
    if ctx.needs_input_grad[0]:
        grad_input = bce_with_logits_backward_op(grad, input, target, weight, pos_weight,
                                                 ctx.reduction).to(input.dtype)
    if ctx.needs_input_grad[1]:
        grad_target = bce_with_logits_target_backward_op(grad, input, target, weight,
                                                         pos_weight, ctx.reduction)
    return grad_input, grad_target, None, None, None


torch.library.register_autograd(f"{NAMESPACE}::binary_cross_entropy", _backward_bce,
                                setup_context=_setup_bce)
torch.library.register_autograd(f"{NAMESPACE}::binary_cross_entropy_with_logits",
                                _backward_logits, setup_context=_setup_logits)


# ----------------------------------------------------------------------------- drop-ins


def _refuse_forward_mode(*tensors: Tensor | None) -> None:
    """Forward-mode AD (``torch.func.jvp``, dual tensors) has no formula here: raise
    instead of letting torch return a zero tangent."""
    if torch.compiler.is_compiling():
        return  # traced by torch.compile: no transform is active
    from torch._C._functorch import TransformType, peek_interpreter_stack

    interpreter = peek_interpreter_stack()
    dual = any(t is not None and torch.autograd.forward_ad.unpack_dual(t).tangent is not None
               for t in tensors)
    if dual or (interpreter is not None and interpreter.key() == TransformType.Jvp):
        raise NotImplementedError(
            "forward-mode AD (torch.func.jvp, dual tensors) is not supported by the "
            "ascend_dsl losses: only reverse-mode gradients are (use torch.nn.functional "
            "for jvp)")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         reduction: str = "mean") -> Tensor:
    """Drop-in for ``torch.nn.functional.binary_cross_entropy`` (CPU tensors here).
    Like torch's CPU kernel it refuses probabilities outside [0, 1] (NaN included).
    Forward-mode AD raises ``NotImplementedError``."""
    _refuse_forward_mode(input, target, weight)
    with torch.no_grad():
        if not bool(((input >= 0) & (input <= 1)).all()):
            raise RuntimeError("all elements of input should be between 0 and 1")
    return bce_op(input, target, weight, parse_reduction(reduction))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Drop-in for ``torch.nn.functional.binary_cross_entropy_with_logits``; its
    gradient w.r.t. ``target`` comes from this project's kernel too. Forward-mode AD
    raises ``NotImplementedError``."""
    _refuse_forward_mode(input, target, weight, pos_weight)
    return bce_with_logits_op(input, target, weight, pos_weight, parse_reduction(reduction))
