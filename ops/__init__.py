"""The operators, written once as DSL kernels, with the aclnn argument contract.

- ``binary_cross_entropy_backward``: gradient of BCE w.r.t. the probabilities.
- ``binary_cross_entropy_with_logits_target_backward``: gradient of BCE-with-logits
  w.r.t. the target.
- Companions: ``binary_cross_entropy`` and ``binary_cross_entropy_with_logits``
  (losses with a deterministic reduction) and
  ``binary_cross_entropy_with_logits_backward`` (gradient w.r.t. the logits).

All validate in the spec's order and raise ``AclnnError`` (a ``ValueError``
carrying ``.status``) before computing or writing anything. ``ops.aclnn`` has the
two-phase aclnn API with status codes; ``ops.torch`` the PyTorch integration.
"""

import functools
import numbers
from collections.abc import Callable
from typing import Any

from ops import aclnn
from ops import bce_backward as _bce_backward
from ops import bce_forward as _bce_forward
from ops import bce_with_logits_backward as _logits_backward
from ops import bce_with_logits_forward as _logits_forward
from ops.aclnn import (
    AclnnExecutor,
    binary_cross_entropy_backward_get_workspace_size,
    binary_cross_entropy_get_workspace_size,
    binary_cross_entropy_with_logits_backward_get_workspace_size,
    binary_cross_entropy_with_logits_get_workspace_size,
    binary_cross_entropy_with_logits_target_backward_get_workspace_size,
)
from ops.bce_backward import bce_backward_kernel
from ops.bce_forward import bce_forward_kernel
from ops.bce_with_logits_backward import (
    bce_with_logits_backward_kernel,
    bce_with_logits_target_backward_kernel,
)
from ops.bce_with_logits_forward import bce_with_logits_forward_kernel
from ops.reference import (
    bce_backward_reference,
    bce_forward_reference,
    bce_with_logits_backward_reference,
    bce_with_logits_forward_reference,
    bce_with_logits_target_backward_reference,
)
from ops.status import (
    ACLNN_ERR_INNER_CREATE_EXECUTOR,
    ACLNN_ERR_INNER_NULLPTR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_ERR_RUNTIME_ERROR,
    ACLNN_SUCCESS,
    AclnnError,
)


def _python_or_phase2(python_api: Callable[..., Any], phase2: Callable[..., int]) -> Callable[..., Any]:
    """The Python API, which doubles as phase 2 of the aclnn API of the same name:
    called as ``op(workspace, workspace_size, executor[, stream])`` -- with an
    ``AclnnExecutor``, or an integer workspace size second (where the Python API
    takes a tensor), so a null executor gets its status too -- it runs that executor
    and returns a status code."""

    @functools.wraps(python_api)
    def op(*args: Any, **kwargs: Any) -> Any:
        executor = args[2] if len(args) > 2 else kwargs.get("executor")
        size_second = len(args) > 1 and isinstance(args[1], numbers.Integral) and \
            not isinstance(args[1], bool)
        if aclnn.is_executor(executor) or size_second or \
                (set(kwargs) & {"executor", "workspace_size"}):
            return phase2(*args, **kwargs)
        return python_api(*args, **kwargs)

    return op


binary_cross_entropy_backward = _python_or_phase2(
    _bce_backward.binary_cross_entropy_backward, aclnn.binary_cross_entropy_backward)
binary_cross_entropy_with_logits_target_backward = _python_or_phase2(
    _logits_backward.binary_cross_entropy_with_logits_target_backward,
    aclnn.binary_cross_entropy_with_logits_target_backward)
binary_cross_entropy = _python_or_phase2(_bce_forward.binary_cross_entropy,
                                         aclnn.binary_cross_entropy)
binary_cross_entropy_with_logits = _python_or_phase2(
    _logits_forward.binary_cross_entropy_with_logits, aclnn.binary_cross_entropy_with_logits)
binary_cross_entropy_with_logits_backward = _python_or_phase2(
    _logits_backward.binary_cross_entropy_with_logits_backward,
    aclnn.binary_cross_entropy_with_logits_backward)

__all__ = [
    "AclnnExecutor", "aclnn",
    "binary_cross_entropy_backward_get_workspace_size",
    "binary_cross_entropy_with_logits_target_backward_get_workspace_size",
    "binary_cross_entropy_get_workspace_size",
    "binary_cross_entropy_with_logits_get_workspace_size",
    "binary_cross_entropy_with_logits_backward_get_workspace_size",
    "binary_cross_entropy_backward", "binary_cross_entropy_with_logits_target_backward",
    "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "binary_cross_entropy_with_logits_backward",
    "bce_backward_kernel", "bce_with_logits_target_backward_kernel", "bce_forward_kernel",
    "bce_with_logits_forward_kernel", "bce_with_logits_backward_kernel",
    "bce_backward_reference", "bce_with_logits_target_backward_reference",
    "bce_forward_reference", "bce_with_logits_forward_reference",
    "bce_with_logits_backward_reference",
    "AclnnError", "ACLNN_SUCCESS", "ACLNN_ERR_PARAM_NULLPTR", "ACLNN_ERR_PARAM_INVALID",
    "ACLNN_ERR_RUNTIME_ERROR", "ACLNN_ERR_INNER_CREATE_EXECUTOR", "ACLNN_ERR_INNER_NULLPTR",
]
