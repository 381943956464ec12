"""UB-aware blocking and the lowering entry point of the JIT.

For a kernel with a ``dsl.block_size`` parameter, the UB need of a specialization
is calibrated from two small probe compiles (``lowering.ub.Calibration``), then:
- when the caller left the block size to the launcher, the largest power of two
  whose estimated use fits the target's UB is chosen;
- when the caller forced one whose estimate does not fit, ``UBOverflowError`` is
  raised (naming the live tile buffers) and that kernel is never sent to the
  backend.
Kernels without a block-size parameter are checked with the static estimate.

Every lowering goes through the on-disk cache (``lowering.cache``) and an
in-memory cache that the caller owns (the ``hivm`` backend's, in
``lowering.backends``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsl.frontend import ArgSpec, ConstSpec
from dsl.options import Options
from dsl.targets import Target
from lowering import cache, ub
from lowering.compiler import LoweredKernel, lower
from lowering.triton_codegen import generate

if TYPE_CHECKING:
    from dsl.jit import JITFunction

PROBE_BLOCKS = (256, 512)
MIN_BLOCK, MAX_BLOCK = 256, 1 << 16

MemoryCache = dict[str, LoweredKernel]


def _lower_cached(kernel: JITFunction, specs: dict[str, ArgSpec], target: Target,
                  estimate: int | None, root: Path, memory: MemoryCache,
                  options: Options) -> LoweredKernel:
    fn = kernel.specialize(specs, options)
    key = cache.cache_key(generate(fn).digest, kernel.source_text, repr(fn.specialization),
                          target.name, f"ub_estimate={estimate}")
    hit = memory.get(key)
    if hit is not None:
        return hit
    lowered, compiled = cache.load_or_compile(key, lambda: lower(fn, target, root, estimate),
                                              root)
    lowered.extra["compiled_now"] = compiled
    memory[key] = lowered
    return lowered


def calibrate(kernel: JITFunction, specs: dict[str, ArgSpec], block_param: str,
              target: Target, root: Path, memory: MemoryCache, options: Options
              ) -> ub.Calibration:
    """UB bytes as a function of the block size, from two probe compiles."""
    probes = []
    for block in PROBE_BLOCKS:
        probe = dict(specs, **{block_param: ConstSpec(block)})
        lowered = _lower_cached(kernel, probe, target, None, root, memory, options)
        probes.append((block, lowered.ub_measured_bytes))
    return ub.Calibration.fit(probes)


def lower_specialization(kernel: JITFunction, specs: dict[str, ArgSpec], open_blocks: Any,
                         target: Target, options: Options | None = None,
                         memory: MemoryCache | None = None) -> LoweredKernel:
    """Lower one specialization; ``open_blocks`` names the block sizes the caller
    left to be chosen (absent from ``specs`` or given as placeholders)."""
    options = options or Options.from_env()
    memory = {} if memory is None else memory
    root = options.cache_root
    blocks = sorted(kernel.source.block_size_params)
    if not blocks:
        return _lower_cached(kernel, specs, target, None, root, memory, options)
    if len(blocks) > 1:
        raise ValueError(f"kernel {kernel.name}: UB-aware blocking supports one "
                         f"dsl.block_size parameter, found {blocks}")
    name = blocks[0]
    capacity = target.ub_bytes or 0
    calibration = calibrate(kernel, specs, name, target, root, memory, options)
    if name in open_blocks:
        block = MIN_BLOCK
        while block * 2 <= MAX_BLOCK and calibration.bytes_at(block * 2) <= capacity:
            block *= 2
        specs = dict(specs, **{name: ConstSpec(block)})
    block = specs[name].value  # type: ignore[union-attr]
    needed = calibration.bytes_at(block)
    if capacity and needed > capacity:
        fn = kernel.specialize(specs, options)
        raise ub.UBOverflowError(fn.name, target, needed, block, ub.static_estimate(fn))
    lowered = _lower_cached(kernel, specs, target, needed, root, memory, options)
    lowered.extra["calibration"] = {"fixed": calibration.fixed,
                                    "per_element": calibration.per_element,
                                    "probes": [list(p) for p in calibration.probes]}
    lowered.extra["block"] = block
    return lowered


def describe(lowered: LoweredKernel) -> dict[str, Any]:
    return {"kernel": lowered.name, "target": lowered.target.name,
            "block": lowered.extra.get("block"), "ub_estimate": lowered.ub_estimate_bytes,
            "ub_measured": lowered.ub_measured_bytes, "ub_capacity": lowered.ub_capacity_bytes}
