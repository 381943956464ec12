"""Target chips for lowering: core counts, Unified Buffer size, bf16 support.

Numbers marked "bishengir" were read off the ``hacc.target_device_spec`` that
``bishengir-compile --target=<chip>`` (ascendnpu-ir 1.2.0) writes into the HIVM
module on this machine (AI_CORE_COUNT, VECTOR_CORE_COUNT, UB_SIZE in bits); see
``tests/test_lowering.py::test_target_table_matches_bishengir``, which re-reads
them. Others come from ``../shared/DESIGN.md`` and ``../shared/spec/bce_ops.md``
and were not measured: bishengir 1.2.0 does not lower for those chips (Ascend950
needs the separate a5 pipeline, Ascend910/310P are not triton-ascend targets).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    ai_cores: int | None
    vector_cores: int | None
    ub_bytes: int | None
    bf16: bool
    lowerable: bool  # bishengir-compile 1.2.0 produces HIVM for it here
    source: str


_BISHENGIR = "bishengir-compile 1.2.0 target_device_spec (measured here)"
TARGETS: dict[str, Target] = {t.name: t for t in [
    Target("Ascend910B1", 24, 48, 196608, True, True, _BISHENGIR),
    Target("Ascend910B2", 24, 48, 196608, True, True, _BISHENGIR),
    Target("Ascend910B3", 20, 40, 196608, True, True, _BISHENGIR),
    Target("Ascend910B4", 20, 40, 196608, True, True, _BISHENGIR),
    Target("Ascend910_9381", 24, 48, 196608, True, True, _BISHENGIR),
    Target("Ascend910_9391", 24, 48, 196608, True, True, _BISHENGIR),
    Target("Ascend950PR", None, None, 262144, True, False,
           "DESIGN.md (UB 256 KiB); not lowered: needs bishengir's a5 pipeline"),
    Target("Ascend910", None, None, None, False, False,
           "spec: Atlas training, no bf16; not a triton-ascend target"),
    Target("Ascend310P", None, None, None, False, False,
           "spec: Atlas inference, no bf16; not a triton-ascend target"),
]}
DEFAULT_TARGET = "Ascend910B4"


def get_target(name: str | None) -> Target:
    """The target called ``name`` (default Ascend910B4); ValueError for unknown names."""
    key = name or DEFAULT_TARGET
    try:
        return TARGETS[key]
    except KeyError:
        raise ValueError(f"unknown target {key!r}; known: {', '.join(TARGETS)}") from None
