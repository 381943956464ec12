"""Host behaviours of torch_npu that torch on the CPU refuses, emulated for the peer suite.

triton-ascend's tests build their data and references with torch on the NPU. A few of
those host calls are refused by torch's CPU kernels, although the NPU's accept them.
Such a test then fails on the CPU before or after its kernel runs, and our kernel is
never checked. This module owns the short list of those calls that have one obvious
meaning. ``NpuToCpuMode`` (in ``__init__``) runs the rule ``RULES`` holds for a torch
call, if any, before the call.

Each rule is narrow. It fires only where torch on the CPU raises, and leaves every call
torch accepts untouched:

* ``isclose-dtypes``: ``isclose``/``allclose`` of two tensors of different dtypes (a
  float32 result against a float64 reference). Both are compared in their promoted
  dtype (``torch.promote_types``).
* ``bool-floor-division``: floor division of bool tensors. It is computed on uint8
  copies and converted back to bool (``x // True`` is ``x``). A False divisor stays an
  error, as it is for integers.
* ``integer-scalar-wrap``: a Python number written into an integer tensor
  (``t[i] = v``, ``t.fill_(v)``, ``t.masked_fill(m, v)``) outside the dtype's range.
  Torch's CPU kernels raise "value cannot be converted ... without overflow". The
  emulation converts like a C cast:
  - an int wraps around (two's complement: int32's max + 1 becomes its min);
  - a float (NaN, inf, out of range) takes the value torch's own float64 -> dtype
    conversion gives on this CPU.
  What an NPU writes there was not checked on one (there is none here). The tests that
  do this only need the write to succeed; their checks do not read the value.

A rule that fires is reported once per process: a line ``<rule>`` appended to the file
named by ``DSL_SUITE_HOST_RULES_LOG`` (the suite sets it per child and prints the
rules next to the file's status), or a note on stderr when that is not set.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import torch

LOG_VARIABLE = "DSL_SUITE_HOST_RULES_LOG"
_reported: set[str] = set()

# A rule answers ``UNCHANGED`` to let the call through as it is, or the call's result
# (which may be None: ``__setitem__`` returns nothing).
UNCHANGED = object()
Rule = Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]


def report(rule: str) -> None:
    """Note, once per process, that ``rule`` changed a torch call's outcome."""
    if rule in _reported:
        return
    _reported.add(rule)
    path = os.environ.get(LOG_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(rule + "\n")
    else:
        print(f"torch_npu shim: emulated an NPU host behaviour torch CPU refuses: {rule}", file=sys.stderr)


# --- isclose-dtypes -------------------------------------------------------------------


def _isclose_dtypes(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if len(args) < 2:
        return UNCHANGED
    a, b = args[0], args[1]
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.dtype == b.dtype:
        return UNCHANGED
    common = torch.promote_types(a.dtype, b.dtype)
    report("isclose-dtypes")
    return func(a.to(common), b.to(common), *args[2:], **kwargs)


# --- bool-floor-division --------------------------------------------------------------


def _all_bool(values: tuple[Any, ...]) -> bool:
    return all(isinstance(v, torch.Tensor) and v.dtype == torch.bool for v in values)


def _bool_floor_division(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if func in _DIVISIONS and kwargs.get("rounding_mode") != "floor":
        return UNCHANGED
    if len(args) != 2 or not _all_bool(args) or kwargs.get("out") is not None:
        return UNCHANGED
    report("bool-floor-division")
    rest = {k: v for k, v in kwargs.items() if k != "rounding_mode"}
    quotient = torch.floor_divide(args[0].to(torch.uint8), args[1].to(torch.uint8), **rest)
    return quotient.to(torch.bool)


# --- integer-scalar-wrap --------------------------------------------------------------


def _wrapped(value: Any, dtype: torch.dtype) -> Any:
    """``value`` as a C cast writes it into ``dtype``, or None when torch accepts it as is."""
    if dtype == torch.bool or dtype.is_floating_point or dtype.is_complex or isinstance(value, bool):
        return None
    info = torch.iinfo(dtype)
    if isinstance(value, int):
        if info.min <= value <= info.max:
            return None
        span = 1 << info.bits
        return (value - info.min) % span + info.min
    if isinstance(value, float):
        if value == value and info.min <= value <= info.max:  # finite and in range (NaN fails)
            return None
        return torch.tensor(value, dtype=torch.float64).to(dtype).item()
    return None


def _integer_scalar_wrap(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    position = _VALUE_POSITION[func]
    if len(args) <= position or not isinstance(args[0], torch.Tensor):
        return UNCHANGED
    value = _wrapped(args[position], args[0].dtype)
    if value is None:
        return UNCHANGED
    report("integer-scalar-wrap")
    return func(*args[:position], value, *args[position + 1:], **kwargs)


# --- the table ------------------------------------------------------------------------

_DIVISIONS = {torch.div, torch.Tensor.div, torch.divide, torch.Tensor.divide}
_FLOOR_DIVISIONS = {torch.floor_divide, torch.Tensor.floor_divide, torch.Tensor.__floordiv__}
# where the scalar sits among the positional arguments (the tensor is first)
_VALUE_POSITION = {torch.Tensor.__setitem__: 2, torch.Tensor.fill_: 1, torch.fill: 1,
                   torch.Tensor.masked_fill: 2, torch.Tensor.masked_fill_: 2, torch.masked_fill: 2}

RULES: dict[Any, Rule] = {
    torch.isclose: _isclose_dtypes, torch.Tensor.isclose: _isclose_dtypes,
    torch.allclose: _isclose_dtypes, torch.Tensor.allclose: _isclose_dtypes,
    **dict.fromkeys(_FLOOR_DIVISIONS | _DIVISIONS, _bool_floor_division),
    **dict.fromkeys(_VALUE_POSITION, _integer_scalar_wrap),
}
