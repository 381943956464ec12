"""aclnn status codes and the error the public operator functions raise."""

from __future__ import annotations

ACLNN_SUCCESS = 0
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002
ACLNN_ERR_RUNTIME_ERROR = 361001
ACLNN_ERR_INNER_CREATE_EXECUTOR = 561101
ACLNN_ERR_INNER_NULLPTR = 561103


class AclnnError(ValueError):
    """An operator rejected its arguments; ``status`` is the aclnn status code."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(f"[{status}] {message}")


def nullptr(message: str) -> AclnnError:
    return AclnnError(ACLNN_ERR_PARAM_NULLPTR, message)


def invalid(message: str) -> AclnnError:
    return AclnnError(ACLNN_ERR_PARAM_INVALID, message)
