"""The operator rules that depend on the chip, over the one chip table
(``dsl.targets``).

Facts from ``../shared/spec/bce_ops.md`` (read off CANN's op_api sources, not
measured on hardware): bf16 is accepted on Atlas A2/A3 (910B-class, 910_93) and on
Ascend 950, rejected on Atlas training (Ascend910) and Atlas inference (Ascend310P)
(``Target.supports_bf16``); aclnnBinaryCrossEntropyWithLogitsTargetBackward exists
on A2/A3 only.

The chip an operator call is checked for comes from the call's ``chip`` argument,
else from the NPU present (torch_npu), else ``DEFAULT_CHIP``. The NPU is asked once
per process: importing torch_npu on every call cost most of a small call's time.
"""

from __future__ import annotations

import functools

from dsl.targets import DEFAULT_TARGET, TARGETS, Target
from ops import status

Chip = Target
CHIPS = TARGETS
DEFAULT_CHIP = DEFAULT_TARGET


def has_logits_target_backward(chip: Chip) -> bool:
    """aclnnBinaryCrossEntropyWithLogitsTargetBackward exists on A2/A3 only (spec)."""
    return chip.product in ("A2", "A3")


@functools.lru_cache(maxsize=1)
def _detected_chip() -> str | None:
    """The SoC name of the NPU in this process, if torch_npu reports one."""
    try:
        import torch
        import torch_npu  # noqa: F401  (only on an Ascend host)
    except ImportError:
        return None
    try:
        if torch.npu.is_available():
            return str(torch.npu.get_device_name(0))
    except Exception:  # a broken driver must not break CPU use
        return None
    return None


def resolve_chip(name: str | None = None) -> Chip:
    """The chip for an operator call; unknown names raise AclnnError(161002)."""
    chosen = name or _detected_chip() or DEFAULT_CHIP
    chip = CHIPS.get(chosen)
    if chip is None:
        raise status.invalid(f"unknown chip {chosen!r}; known: {', '.join(sorted(CHIPS))}")
    return chip
