"""Helpers for comparing kernel results with float64 references in units of the
output dtype's ulp."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from dsl.views import to_numpy

# (explicit mantissa bits, minimum normal exponent) per output dtype
_FORMATS = {
    np.dtype(np.float32): (23, -126),
    np.dtype(np.float16): (10, -14),
    np.dtype(ml_dtypes.bfloat16): (7, -126),
}


def ulp(reference: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Spacing of ``dtype`` at each |reference| (the distance between neighbours)."""
    mant, emin = _FORMATS[np.dtype(dtype)]
    mag = np.abs(reference.astype(np.float64))
    with np.errstate(divide="ignore"):
        exp = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    return np.exp2(np.maximum(exp, emin) - mant)


def ulp_error(result: object, reference: np.ndarray) -> np.ndarray:
    """|result - reference| / ulp, elementwise; 0 where both are the same inf/NaN."""
    out = to_numpy(result)
    got = out.astype(np.float64)
    ref = np.broadcast_to(reference, got.shape)
    with np.errstate(over="ignore"):
        rounded = ref.astype(out.dtype).astype(np.float64)  # inf where the dtype overflows
    both_nan = np.isnan(got) & np.isnan(ref)
    same_inf = np.isinf(got) & (got == rounded)
    with np.errstate(invalid="ignore"):
        err = np.abs(got - ref) / ulp(ref, out.dtype)
    err = np.where(both_nan | same_inf, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def max_ulp_error(result: object, reference: np.ndarray) -> float:
    err = ulp_error(result, reference)
    return float(err.max()) if err.size else 0.0


# Bounds for fp32 outputs, from counting the fp32 roundings of each formula (each adds
# at most one ulp of relative error). 16-bit outputs are held to 1 ulp.
FP32_ROUNDINGS_BCE_BACKWARD = 7  # 1 - x, x(1-x), x - y, g*, /d, *w, *s
FP32_ROUNDINGS_LOGITS_NO_POS_WEIGHT = 3  # -x*g, *w, *s


def ulp_bound(dtype: np.dtype, fp32_roundings: int) -> float:
    return float(fp32_roundings) if np.dtype(dtype) == np.float32 else 1.0


def loss_sum_bound(n: int, per_element_roundings: int = 8) -> float:
    """Relative error bound of a reduced loss of ``n`` non-negative fp32 terms, as
    ``ops.reduction`` adds them: each term carries its own roundings, then chains of
    sequential additions of length <= 1024 (a tile), <= tiles/1024 (a lane) and
    1024 (the lanes), one rounding each; a mean adds a division."""
    tiles = -(-n // 1024)
    chain = min(n, 1024) + -(-tiles // 1024) + min(tiles, 1024)
    return 2.0**-24 * (per_element_roundings + chain + 2)
