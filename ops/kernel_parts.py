"""DSL helpers shared by the operator kernels (inlined where they are called).

``store_gradient`` ends every backward kernel: optional weight, optional mean
scale, masked store. ``store_loss`` ends every forward loss: optional weight, then
either the elementwise store (reduction none) or the tile's partial sum into the
workspace (mean/sum, see ``ops.reduction``).
"""

import dsl


@dsl.jit
def store_gradient(out, idx, mask, r, w, scale, HAS_WEIGHT: dsl.constexpr,
                   APPLY_SCALE: dsl.constexpr):
    if HAS_WEIGHT:
        r = r * dsl.load(w, idx, mask).to(dsl.float32)
    if APPLY_SCALE:
        r = r * scale
    dsl.store(out, idx, r, mask)


@dsl.jit
def store_loss(out, partials, start, idx, mask, loss, w, HAS_WEIGHT: dsl.constexpr,
               REDUCE: dsl.constexpr, BLOCK: dsl.constexpr):
    if HAS_WEIGHT:
        loss = loss * dsl.load(w, idx, mask).to(dsl.float32)
    if REDUCE:
        dsl.store(partials, start // BLOCK, dsl.sum(dsl.where(mask, loss, 0.0), axis=0))
    else:
        dsl.store(out, idx, loss, mask)
