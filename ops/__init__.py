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

from ops.bce_backward import bce_backward_kernel, binary_cross_entropy_backward
from ops.bce_forward import bce_forward_kernel, binary_cross_entropy
from ops.bce_with_logits_backward import (
    bce_with_logits_backward_kernel,
    bce_with_logits_target_backward_kernel,
    binary_cross_entropy_with_logits_backward,
    binary_cross_entropy_with_logits_target_backward,
)
from ops.bce_with_logits_forward import (
    bce_with_logits_forward_kernel,
    binary_cross_entropy_with_logits,
)
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

__all__ = [
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
