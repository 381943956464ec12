"""Target chips and the operator rules that depend on them.

Facts from ``../shared/spec/bce_ops.md`` (read off CANN's op_api sources, not
measured on hardware): bf16 is accepted on Atlas A2/A3 (910B-class, 910_93) and on
Ascend 950, rejected on Atlas training (Ascend910) and Atlas inference (Ascend310P);
aclnnBinaryCrossEntropyWithLogitsTargetBackward exists on A2/A3 only.

The chip an operator call is checked for comes from the call's ``chip`` argument,
else from the NPU present (torch_npu), else ``DEFAULT_CHIP``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ops import status


@dataclass(frozen=True)
class Chip:
    name: str
    product: str  # "A2", "A3", "910", "310P" or "950"

    @property
    def supports_bf16(self) -> bool:
        return self.product in ("A2", "A3", "950")

    @property
    def has_logits_target_backward(self) -> bool:
        return self.product in ("A2", "A3")


_PRODUCTS = {
    "A2": ("Ascend910B1", "Ascend910B2", "Ascend910B2C", "Ascend910B3", "Ascend910B4",
           "Ascend910B4-1"),
    "A3": ("Ascend910_9391", "Ascend910_9381", "Ascend910_9372", "Ascend910_9362",
           "Ascend910_93"),
    "910": ("Ascend910", "Ascend910A", "Ascend910B", "Ascend910ProA", "Ascend910ProB",
            "Ascend910PremiumA"),
    "310P": ("Ascend310P", "Ascend310P1", "Ascend310P3"),
    "950": ("Ascend950", "Ascend950PR", "Ascend950DT"),
}
CHIPS: dict[str, Chip] = {name: Chip(name, product)
                          for product, names in _PRODUCTS.items() for name in names}
DEFAULT_CHIP = "Ascend910B4"


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
