"""The one chip table: every Ascend chip the project knows, with its facts.

Used by the launcher (default grid: one program per vector core), by lowering
(UB capacity, which chips bishengir lowers for) and by the operators' chip rules
(``ops.chips``: bf16 support, which products have an operator).

Sources, per row (``Target.source``):
- "bishengir": read off the ``hacc.target_device_spec`` that ``bishengir-compile
  --target=<chip>`` (ascendnpu-ir 1.2.0) writes into the HIVM module on this
  machine (AI_CORE_COUNT, VECTOR_CORE_COUNT, UB_SIZE in bits);
  ``tests/test_lowering.py::test_target_table_matches_bishengir`` re-reads them.
- "spec": ``../shared/spec/bce_ops.md`` (read off CANN's op_api sources; product
  families and bf16 support), not measured on hardware.
- "DESIGN.md": the design brief (Ascend950's 256 KiB UB), not measured.
Chips without measured numbers are not lowerable with this toolchain: bishengir
1.2.0 does not produce HIVM for them (Ascend950 needs the separate a5 pipeline,
Ascend910/310P are not triton-ascend targets).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """One chip: product family ("A2", "A3", "910", "310P", "950"), cores, UB size,
    bf16 support and whether this toolchain lowers for it."""

    name: str
    product: str
    ai_cores: int | None = None
    vector_cores: int | None = None
    ub_bytes: int | None = None
    lowerable: bool = False
    source: str = "spec"

    @property
    def supports_bf16(self) -> bool:
        """bf16 is accepted on Atlas A2/A3 and Ascend 950, not on Atlas training
        (910) or inference (310P) chips (spec)."""
        return self.product in ("A2", "A3", "950")

    @property
    def bf16(self) -> bool:
        return self.supports_bf16


_BISHENGIR = "bishengir-compile 1.2.0 target_device_spec (measured here)"


def _measured(name: str, product: str, ai: int, vector: int) -> Target:
    return Target(name, product, ai, vector, 196608, True, _BISHENGIR)


_ROWS = [
    _measured("Ascend910B1", "A2", 24, 48),
    _measured("Ascend910B2", "A2", 24, 48),
    _measured("Ascend910B3", "A2", 20, 40),
    _measured("Ascend910B4", "A2", 20, 40),
    _measured("Ascend910_9381", "A3", 24, 48),
    _measured("Ascend910_9391", "A3", 24, 48),
    Target("Ascend910B2C", "A2"), Target("Ascend910B4-1", "A2"),
    Target("Ascend910_9372", "A3"), Target("Ascend910_9362", "A3"), Target("Ascend910_93", "A3"),
    Target("Ascend910", "910"), Target("Ascend910A", "910"), Target("Ascend910B", "910"),
    Target("Ascend910ProA", "910"), Target("Ascend910ProB", "910"),
    Target("Ascend910PremiumA", "910"),
    Target("Ascend310P", "310P"), Target("Ascend310P1", "310P"), Target("Ascend310P3", "310P"),
    Target("Ascend950", "950", ub_bytes=262144, source="DESIGN.md (UB 256 KiB); not lowered: "
           "needs bishengir's a5 pipeline"),
    Target("Ascend950PR", "950", ub_bytes=262144, source="DESIGN.md (UB 256 KiB); not "
           "lowered: needs bishengir's a5 pipeline"),
    Target("Ascend950DT", "950", ub_bytes=262144, source="DESIGN.md (UB 256 KiB); not "
           "lowered: needs bishengir's a5 pipeline"),
]
TARGETS: dict[str, Target] = {t.name: t for t in _ROWS}
DEFAULT_TARGET = "Ascend910B4"

# The launcher's default grid: one program per vector core of the default target,
# as triton-ascend recommends.
DEFAULT_PROGRAMS = TARGETS[DEFAULT_TARGET].vector_cores or 1


def get_target(name: str | None = None) -> Target:
    """The chip called ``name`` (default Ascend910B4); ValueError for unknown names."""
    key = name or DEFAULT_TARGET
    try:
        return TARGETS[key]
    except KeyError:
        raise ValueError(f"unknown target {key!r}; known: {', '.join(TARGETS)}") from None
