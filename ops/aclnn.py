"""The aclnn two-phase API, as Python functions that return status codes.

Phase 1, ``<op>_get_workspace_size(..., out, *, chip=None) -> (status, workspace_size,
executor)``, validates in the spec's order and plans the launch: every kernel the
operator will run is bound and specialized (``dsl.jit.planning``), but nothing is
computed or written. Phase 2, ``<op>(workspace, workspace_size, executor,
stream=None) -> status``, runs the plan once.

Status codes: 0 success; 161001 a required tensor (``out`` included) or the
executor is None, or a needed workspace is missing; 161002 invalid arguments, a
workspace size other than the one phase 1 returned, an executor of another
operator or one already used; 361001 a failure while running. Nothing raises.

Workspace: 0 bytes for the fused elementwise operators; for the losses with
reduction mean/sum, one fp32 partial per tile (``ops.reduction``). ``workspace`` is
any NumPy array (or torch CPU tensor) of at least that many bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsl.errors import DSLError
from dsl.jit import Launch, planning
from dsl.views import is_torch_tensor, to_numpy
from ops import bce_backward, bce_forward, bce_with_logits_backward, bce_with_logits_forward, status
from ops import reduction as red
from ops.chips import resolve_chip
from ops.launch import mark_written, result
from ops.validation import (
    BCE_BACKWARD,
    BCE_FORWARD,
    BCE_WITH_LOGITS_BACKWARD,
    BCE_WITH_LOGITS_FORWARD,
    BCE_WITH_LOGITS_TARGET_BACKWARD,
    Checked,
    OperatorRules,
    validate,
)


@dataclass(eq=False)
class AclnnExecutor:
    """A planned operator call; phase 2 runs it once."""

    op: str
    chip: str
    workspace_size: int
    launches: tuple[str, ...]  # what will run: kernel, grid and specialization
    run: Callable[[np.ndarray | None], None] = field(repr=False)
    used: bool = False
    output: Any = field(default=None, repr=False)  # the tensor phase 2 writes


def is_executor(obj: Any) -> bool:
    return isinstance(obj, AclnnExecutor)


def _describe(launch: Launch) -> str:
    fn = launch.function
    spec = ", ".join(f"{name}{text}" if text.startswith("=") else f"{name}:{text}"
                     for name, text in fn.specialization)
    return f"{fn.name}[grid={launch.grid[0]}]({spec})"


def _phase1(rules: OperatorRules, tensors: dict[str, Any], reduction: Any, chip: str | None,
            out_name: str, plan: Callable[[Checked], tuple[int, Callable[[Any], None]]]
            ) -> tuple[int, int, AclnnExecutor | None]:
    """Validate (``out`` is required here), plan, and package the executor."""
    try:
        for name in (*rules.required, "out"):  # step 1, in the spec's order
            if tensors.get(name) is None:
                raise status.nullptr(f"{out_name if name == 'out' else name} is a required "
                                     "tensor and must not be None")
        chosen = resolve_chip(chip)
        checked = validate(rules, tensors, reduction, chosen)
        result(tensors["out"], tensors["input"], checked)  # out writeable, not broadcast
        workspace_size, run = plan(checked)
        launches: list[Launch] = []
        if checked.numel:
            with planning() as launches:
                run(np.empty(workspace_size, np.uint8))
    except status.AclnnError as err:
        return err.status, 0, None
    except DSLError:
        return status.ACLNN_ERR_INNER_CREATE_EXECUTOR, 0, None
    executor = AclnnExecutor(rules.name, chosen.name, workspace_size,
                             tuple(_describe(launch) for launch in launches), run,
                             output=tensors["out"])
    return status.ACLNN_SUCCESS, workspace_size, executor


def _phase2(op: str, workspace: Any, workspace_size: Any, executor: Any) -> int:
    """Check the executor and the workspace, then run the plan once."""
    if executor is None:
        return status.ACLNN_ERR_PARAM_NULLPTR
    if not is_executor(executor) or executor.op != op:
        return status.ACLNN_ERR_PARAM_INVALID
    if executor.used:
        return status.ACLNN_ERR_PARAM_INVALID
    if not isinstance(workspace_size, (int, np.integer)) or isinstance(workspace_size, bool) \
            or int(workspace_size) != executor.workspace_size:
        return status.ACLNN_ERR_PARAM_INVALID
    buffer = None
    if executor.workspace_size:
        if workspace is None:
            return status.ACLNN_ERR_PARAM_NULLPTR
        if not (isinstance(workspace, np.ndarray) or is_torch_tensor(workspace)):
            return status.ACLNN_ERR_PARAM_INVALID
        try:
            raw = to_numpy(workspace)
        except (TypeError, ValueError, RuntimeError):  # another device, a sparse layout
            return status.ACLNN_ERR_PARAM_INVALID
        if raw.nbytes < executor.workspace_size or not raw.flags.c_contiguous \
                or not raw.flags.writeable:
            return status.ACLNN_ERR_PARAM_INVALID
        buffer = raw.reshape(-1).view(np.uint8)[: executor.workspace_size]
    executor.used = True
    try:
        executor.run(buffer)
    except (DSLError, status.AclnnError):
        return status.ACLNN_ERR_RUNTIME_ERROR
    mark_written(executor.output)
    return status.ACLNN_SUCCESS


def _no_workspace(run: Callable[[], None]) -> tuple[int, Callable[[Any], None]]:
    return 0, lambda _workspace: run()


# ----------------------------------------------------------------------------- BCE backward


def binary_cross_entropy_backward_get_workspace_size(grad_output: Any, self: Any, target: Any,
                                                     weight: Any, reduction: Any, out: Any, *,
                                                     chip: str | None = None
                                                     ) -> tuple[int, int, AclnnExecutor | None]:
    """Phase 1 of aclnnBinaryCrossEntropyBackward."""
    tensors = {"grad_output": grad_output, "input": self, "target": target, "weight": weight,
               "out": out}

    def plan(checked: Checked) -> tuple[int, Callable[[Any], None]]:
        out_view = result(out, self, checked)[1]
        return _no_workspace(lambda: bce_backward.run(checked, grad_output, self, target,
                                                      weight, out_view))

    return _phase1(BCE_BACKWARD, tensors, reduction, chip, "out", plan)


def binary_cross_entropy_backward(workspace: Any, workspace_size: int, executor: Any,
                                  stream: Any = None) -> int:
    """Phase 2 of aclnnBinaryCrossEntropyBackward (``stream`` is unused on the CPU)."""
    return _phase2(BCE_BACKWARD.name, workspace, workspace_size, executor)


# ------------------------------------------------- BCE with logits, gradient w.r.t. target


def binary_cross_entropy_with_logits_target_backward_get_workspace_size(
        grad_output: Any, self: Any, target: Any, weight: Any, pos_weight: Any, reduction: Any,
        grad_target: Any, *, chip: str | None = None) -> tuple[int, int, AclnnExecutor | None]:
    """Phase 1 of aclnnBinaryCrossEntropyWithLogitsTargetBackward."""
    tensors = {"grad_output": grad_output, "input": self, "target": target, "weight": weight,
               "pos_weight": pos_weight, "out": grad_target}

    def plan(checked: Checked) -> tuple[int, Callable[[Any], None]]:
        out_view = result(grad_target, self, checked)[1]
        return _no_workspace(lambda: bce_with_logits_backward.run_target_backward(
            checked, grad_output, self, weight, pos_weight, out_view))

    return _phase1(BCE_WITH_LOGITS_TARGET_BACKWARD, tensors, reduction, chip, "grad_target",
                   plan)


def binary_cross_entropy_with_logits_target_backward(workspace: Any, workspace_size: int,
                                                     executor: Any, stream: Any = None) -> int:
    """Phase 2 of aclnnBinaryCrossEntropyWithLogitsTargetBackward."""
    return _phase2(BCE_WITH_LOGITS_TARGET_BACKWARD.name, workspace, workspace_size, executor)


# ----------------------------------------------------------------------------- companions


def binary_cross_entropy_get_workspace_size(self: Any, target: Any, weight: Any, reduction: Any,
                                            out: Any, *, chip: str | None = None
                                            ) -> tuple[int, int, AclnnExecutor | None]:
    """Phase 1 of aclnnBinaryCrossEntropy (``out`` is 0-d for mean/sum)."""
    tensors = {"input": self, "target": target, "weight": weight, "out": out}

    def plan(checked: Checked) -> tuple[int, Callable[[Any], None]]:
        out_view = result(out, self, checked)[1]
        return red.workspace_bytes(checked.numel, checked.reduction), \
            lambda ws: bce_forward.run(checked, self, target, weight, out_view, ws)

    return _phase1(BCE_FORWARD, tensors, reduction, chip, "out", plan)


def binary_cross_entropy(workspace: Any, workspace_size: int, executor: Any,
                         stream: Any = None) -> int:
    """Phase 2 of aclnnBinaryCrossEntropy."""
    return _phase2(BCE_FORWARD.name, workspace, workspace_size, executor)


def binary_cross_entropy_with_logits_get_workspace_size(
        self: Any, target: Any, weight: Any, pos_weight: Any, reduction: Any, out: Any, *,
        chip: str | None = None) -> tuple[int, int, AclnnExecutor | None]:
    """Phase 1 of aclnnBinaryCrossEntropyWithLogits."""
    tensors = {"input": self, "target": target, "weight": weight, "pos_weight": pos_weight,
               "out": out}

    def plan(checked: Checked) -> tuple[int, Callable[[Any], None]]:
        out_view = result(out, self, checked)[1]
        return red.workspace_bytes(checked.numel, checked.reduction), \
            lambda ws: bce_with_logits_forward.run(checked, self, target, weight, pos_weight,
                                                   out_view, ws)

    return _phase1(BCE_WITH_LOGITS_FORWARD, tensors, reduction, chip, "out", plan)


def binary_cross_entropy_with_logits(workspace: Any, workspace_size: int, executor: Any,
                                     stream: Any = None) -> int:
    """Phase 2 of aclnnBinaryCrossEntropyWithLogits."""
    return _phase2(BCE_WITH_LOGITS_FORWARD.name, workspace, workspace_size, executor)


def binary_cross_entropy_with_logits_backward_get_workspace_size(
        grad_output: Any, self: Any, target: Any, weight: Any, pos_weight: Any, reduction: Any,
        out: Any, *, chip: str | None = None) -> tuple[int, int, AclnnExecutor | None]:
    """Phase 1 of aclnnBinaryCrossEntropyWithLogitsBackward (gradient w.r.t. self)."""
    tensors = {"grad_output": grad_output, "input": self, "target": target, "weight": weight,
               "pos_weight": pos_weight, "out": out}

    def plan(checked: Checked) -> tuple[int, Callable[[Any], None]]:
        out_view = result(out, self, checked)[1]
        return _no_workspace(lambda: bce_with_logits_backward.run_input_backward(
            checked, grad_output, self, target, weight, pos_weight, out_view))

    return _phase1(BCE_WITH_LOGITS_BACKWARD, tensors, reduction, chip, "out", plan)


def binary_cross_entropy_with_logits_backward(workspace: Any, workspace_size: int,
                                              executor: Any, stream: Any = None) -> int:
    """Phase 2 of aclnnBinaryCrossEntropyWithLogitsBackward."""
    return _phase2(BCE_WITH_LOGITS_BACKWARD.name, workspace, workspace_size, executor)
