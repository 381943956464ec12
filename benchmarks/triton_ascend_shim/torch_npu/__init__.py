"""A fake ``torch_npu`` that maps the Ascend NPU onto the CPU, for running triton-ascend's
tutorials and unit tests on a machine without an NPU (benchmarks/triton_ascend_suite.py).

It owns three things, all installed on import (idempotent):

* ``torch.npu`` (also ``torch_npu.npu``): the device-module API triton-ascend's tests,
  tutorials and Python code call -- device count/selection, synchronize, seeding,
  wall-clock ``Event``s, no-op ``Stream``s, device name/properties of an Ascend910B4,
  memory statistics (all zero) and ``matmul.allow_hf32``.
* The device mapping: ``npu`` becomes PyTorch's renamed PrivateUse1 backend, so
  ``torch.device("npu")`` parses, and a global ``TorchFunctionMode`` rewrites every
  ``device=`` keyword naming the NPU (``"npu"``, ``"npu:0"``, ``torch.device("npu")``,
  a bare device index) and the device argument of ``Tensor.to(...)`` to the CPU;
  ``torch.set_default_device("npu")`` sets the CPU. ``Tensor.npu()`` and
  ``Module.npu()`` return their receiver.
* ``torch_npu.npu_*`` functions with an obvious CPU meaning: ``npu_fusion_attention``
  (forward only, as a reference).

The same mode also applies ``host_rules``: the few host calls torch_npu accepts and
torch's CPU kernels refuse, each with one obvious meaning (mixed-dtype ``isclose``, floor
division of bools, out-of-range scalars written into integer tensors). Each rule that
fires is reported, and the suite prints it next to the file's status.

Host tensors: a tensor a call made with the CPU named as a string device
(``torch.rand(n, device="cpu")``) is marked as host memory (``is_host_tensor``); any
``.to(...)`` and ``.npu()`` clears the mark. A ``torch.device`` argument marks nothing:
here every tensor's ``.device`` is the CPU, so ``device=x.device`` (the tests' way of
allocating beside an NPU tensor) cannot tell host from device. The suite's ``dsl`` runner
refuses a Triton launch given a marked tensor with triton-ascend's driver error
(``Pointer argument (at i) cannot be accessed from Triton (cpu tensor?)``, a
``ValueError``). Results computed from a host tensor are not marked: a launch the
device would refuse may still run here, never the other way round.

Limitations: tensors really live on the CPU, so ``t.device`` is ``cpu``,
``t.device.type == "npu"`` is false and there is no ``Tensor.is_npu``; the function
mode is thread-local
(threads started later do not map ``device="npu"``); memory statistics are zero. Anything else
(``torch_npu.profiler``, ``torch_npu._inductor``, other ``npu_*`` kernels) raises an
``AttributeError`` whose message starts with ``torch_npu shim:``, which the suite
reports as unsupported.
"""

from __future__ import annotations

import os
import sys
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from torch_npu import host_rules

__version__ = "2.6.0+cpu.shim"

SHIM_PREFIX = "torch_npu shim:"
DEVICE_NAME = "Ascend910B4"
CUBE_CORES = 20
VECTOR_CORES = 40
TOTAL_MEMORY = 32 * 1024**3
L2_CACHE_SIZE = 96 * 1024**2

_CPU = torch.device("cpu")


def _unsupported(qualname: str) -> AttributeError:
    return AttributeError(f"{SHIM_PREFIX} {qualname} is not supported on the CPU (no NPU here)")


# --- the device mapping -------------------------------------------------------------


def _is_npu(device: Any) -> bool:
    """Whether a ``device`` argument names the NPU (a bare index means the current NPU)."""
    if isinstance(device, torch.device):
        return device.type == "npu"
    if isinstance(device, str):
        return device == "npu" or device.startswith("npu:")
    return isinstance(device, int) and not isinstance(device, bool)


HOST_MARK = "_npu_shim_host_memory"  # set on tensors created on the CPU explicitly


def _names_cpu(device: Any) -> bool:
    """Whether a ``device`` argument is a string naming the CPU (a ``torch.device``
    may be an NPU tensor's ``.device``, which is the CPU here)."""
    return isinstance(device, str) and (device == "cpu" or device.startswith("cpu:"))


def is_host_tensor(value: Any) -> bool:
    """Whether ``value`` is a tensor created with an explicit CPU device (see the module
    doc) and not moved to the NPU since."""
    return isinstance(value, torch.Tensor) and getattr(value, HOST_MARK, False)


def _unmark(tensor: Any) -> None:
    if isinstance(tensor, torch.Tensor):
        tensor.__dict__.pop(HOST_MARK, None)


class NpuToCpuMode(TorchFunctionMode):
    """Rewrites NPU device arguments of every torch call to the CPU, and marks the
    tensors a call creates on the CPU named as a string as host memory."""

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        host = False
        if kwargs and "device" in kwargs:
            if _is_npu(kwargs["device"]):
                kwargs = {**kwargs, "device": _CPU}
            else:
                host = _names_cpu(kwargs["device"])
        if func is torch.Tensor.to and len(args) > 1 and _is_npu(args[1]):
            args = (args[0], _CPU, *args[2:])
        kwargs = kwargs or {}
        result = host_rules.UNCHANGED
        rule = host_rules.RULES.get(func)
        if rule is not None:
            result = rule(func, args, kwargs)
        if result is host_rules.UNCHANGED:
            result = func(*args, **kwargs)
        if func is torch.Tensor.to:
            # possibly to an NPU tensor's ``.device`` (the CPU here): the shim's copy is
            # the tensor itself, which may now be the NPU's
            _unmark(result)
        elif host and isinstance(result, torch.Tensor) and not any(result is a for a in args):
            setattr(result, HOST_MARK, True)  # a new tensor in host memory
        return result


_set_default_device = torch.set_default_device


def _set_default_device_npu_to_cpu(device: Any) -> None:
    """``torch.set_default_device("npu")`` makes the CPU the default (factory calls with
    no ``device=`` would otherwise reach the empty PrivateUse1 backend)."""
    _set_default_device(_CPU if _is_npu(device) else device)


def _tensor_npu(self: torch.Tensor, device: Any = None, non_blocking: bool = False, **_: Any) -> torch.Tensor:
    _unmark(self)  # on the NPU now (the shim's copy is the tensor itself)
    return self


def _module_npu(self: torch.nn.Module, device: Any = None) -> torch.nn.Module:
    return self


# --- torch.npu ----------------------------------------------------------------------


class Event:
    """A wall-clock stand-in for ``torch.npu.Event`` (work is synchronous on the CPU)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        self._time = time.perf_counter()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event to ``end_event``."""
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Stream | None = None) -> None:
        pass

    def query(self) -> bool:
        return True


class Stream:
    """A no-op ``torch.npu.Stream``: everything on the CPU is already in order."""

    npu_stream = 0

    def __init__(self, device: Any = None, priority: int = 0, **_: Any):
        self.device = _CPU
        self.priority = priority

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def wait_event(self, event: Event) -> None:
        pass

    def wait_stream(self, stream: Stream) -> None:
        pass

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@dataclass(frozen=True)
class NPUDeviceProperties:
    """What ``torch.npu.get_device_properties`` reports (an Ascend910B4)."""

    name: str = DEVICE_NAME
    total_memory: int = TOTAL_MEMORY
    cube_core_num: int = CUBE_CORES
    vector_core_num: int = VECTOR_CORES
    L2_cache_size: int = L2_CACHE_SIZE
    multi_processor_count: int = CUBE_CORES


class _MatmulConfig:
    allow_hf32 = False
    allow_tf32 = False


class _ConvConfig:
    allow_hf32 = True


_DEFAULT_STREAM = Stream()
_state = {"device": 0}


def _check_device(device: Any) -> int:
    index = device.index if isinstance(device, torch.device) else device
    if isinstance(index, str):
        index = torch.device(index).index
    if index not in (None, 0, -1):
        raise RuntimeError(f"{SHIM_PREFIX} only device 0 exists (asked for {device!r})")
    return 0


def _build_npu_module() -> types.ModuleType:
    npu = types.ModuleType("torch.npu", "torch.npu mapped onto the CPU by the torch_npu shim.")

    def set_device(device: Any) -> None:
        _state["device"] = _check_device(device)

    @contextmanager
    def device(device: Any) -> Iterator[None]:
        _check_device(device)
        yield

    @contextmanager
    def stream(stream: Stream | None) -> Iterator[Stream | None]:
        yield stream

    def manual_seed(seed: int) -> None:
        torch.default_generator.manual_seed(int(seed))

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError):
            free = TOTAL_MEMORY
        return min(free, TOTAL_MEMORY), TOTAL_MEMORY

    def zero(device: Any = None) -> int:
        return 0

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    functions: dict[str, Any] = {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "init": nothing,
        "_lazy_init": nothing,
        "_is_in_bad_fork": lambda: False,
        "device_count": lambda: 1,
        "current_device": lambda: _state["device"],
        "set_device": set_device,
        "device": device,
        "synchronize": nothing,
        "empty_cache": nothing,
        "manual_seed": manual_seed,
        "manual_seed_all": manual_seed,
        "seed": lambda: torch.seed(),
        "seed_all": lambda: torch.seed(),
        "initial_seed": lambda: torch.initial_seed(),
        "get_rng_state": lambda device="npu": torch.get_rng_state(),
        "set_rng_state": lambda new_state, device="npu": torch.set_rng_state(new_state),
        "Event": Event,
        "Stream": Stream,
        "stream": stream,
        "current_stream": lambda device=None: _DEFAULT_STREAM,
        "default_stream": lambda device=None: _DEFAULT_STREAM,
        "set_stream": nothing,
        "get_device_name": lambda device=None: DEVICE_NAME,
        "get_device_properties": lambda device=None: NPUDeviceProperties(),
        "get_device_capability": lambda device=None: None,
        "is_bf16_supported": lambda: True,
        "utilization": zero,
        "mem_get_info": mem_get_info,
        "memory_allocated": zero,
        "memory_reserved": zero,
        "max_memory_allocated": zero,
        "max_memory_reserved": zero,
        "memory_stats": lambda device=None: {},
        "reset_peak_memory_stats": nothing,
        "reset_max_memory_allocated": nothing,
        "set_compile_mode": nothing,
        "matmul": _MatmulConfig,
        "conv": _ConvConfig,
        "NPUDeviceProperties": NPUDeviceProperties,
    }
    for name, value in functions.items():
        setattr(npu, name, value)
    npu.utils = npu  # torch_npu.npu.utils.set_device(...) and friends

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _unsupported(f"torch.npu.{name}")

    npu.__getattr__ = __getattr__
    return npu


# --- torch_npu.npu_* ----------------------------------------------------------------

_LAYOUTS = ("BNSD", "BSND", "BSH", "SBH")
_SCORE_ELEMENTS = 1 << 22  # attention scores computed at once (16 MiB of float32)


def _to_bnsd(x: torch.Tensor, layout: str, heads: int) -> torch.Tensor:
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(1, 2)
    if layout == "SBH":
        x = x.transpose(0, 1)
    b, s, h = x.shape
    return x.reshape(b, s, heads, h // heads).transpose(1, 2)


def _from_bnsd(x: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(1, 2)
    b, n, s, d = x.shape
    x = x.transpose(1, 2).reshape(b, s, n * d)
    return x.transpose(0, 1) if layout == "SBH" else x


@torch.no_grad()
def npu_fusion_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    head_num: int,
    input_layout: str,
    pse: torch.Tensor | None = None,
    padding_mask: torch.Tensor | None = None,
    atten_mask: torch.Tensor | None = None,
    scale: float = 1.0,
    keep_prob: float = 1.0,
    pre_tockens: int = 2147483647,
    next_tockens: int = 2147483647,
    inner_precise: int = 0,
    prefix: Any = None,
    actual_seq_qlen: Any = None,
    actual_seq_kvlen: Any = None,
    sparse_mode: int = 0,
    gen_mask_parallel: bool = True,
    sync: bool = False,
) -> tuple[Any, ...]:
    """Scaled dot-product attention in float32 (``atten_mask`` True = masked out).

    Returns ``(attention_out, softmax_max, softmax_sum, softmax_out, seed, offset,
    numels)`` like torch_npu; max and sum are per query row, repeated 8 times.
    Dropout, ``pse``, padding masks, variable sequence lengths and sparse modes other
    than 0 have no CPU implementation here, and no gradient flows back (a reference:
    recording the blockwise computation for autograd would keep every block alive).
    """
    if input_layout not in _LAYOUTS:
        raise _unsupported(f"npu_fusion_attention(input_layout={input_layout!r})")
    if keep_prob != 1.0 or pse is not None or padding_mask is not None or sparse_mode != 0:
        raise _unsupported("npu_fusion_attention with dropout, pse, padding_mask or sparse_mode != 0")
    if prefix is not None or actual_seq_qlen is not None or actual_seq_kvlen is not None:
        raise _unsupported("npu_fusion_attention with prefix or actual sequence lengths")
    q = _to_bnsd(query, input_layout, head_num).float()
    kv_heads = head_num if input_layout in ("BNSD", "BSND") else None
    if kv_heads is None:
        kv_heads = key.shape[-1] // (query.shape[-1] // head_num)
    k = _to_bnsd(key, input_layout, kv_heads).float()
    v = _to_bnsd(value, input_layout, kv_heads).float()
    if k.shape[1] != q.shape[1]:
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    (b, n, sq, d), skv = q.shape, k.shape[-2]
    rows = torch.arange(sq)[:, None]
    cols = torch.arange(skv)[None, :]
    band = ((cols - rows) > next_tockens) | ((rows - cols) > pre_tockens)
    mask = None if atten_mask is None else torch.broadcast_to(atten_mask.to(torch.bool), (b, n, sq, skv))
    out = torch.empty((b, n, sq, d), dtype=torch.float32)
    row_max = torch.empty((b, n, sq, 1), dtype=torch.float32)
    row_sum = torch.empty((b, n, sq, 1), dtype=torch.float32)
    chunk = max(1, _SCORE_ELEMENTS // skv)  # query rows per step: bounded memory at any size
    for i, h in ((i, h) for i in range(b) for h in range(n)):
        for start in range(0, sq, chunk):
            stop = min(start + chunk, sq)
            masked = band[start:stop] if mask is None else band[start:stop] | mask[i, h, start:stop]
            scores = torch.matmul(q[i, h, start:stop], k[i, h].transpose(0, 1)) * scale
            scores = scores.masked_fill(masked, float("-inf"))
            peak = scores.amax(dim=-1, keepdim=True)
            probs = torch.exp(scores - peak)
            total = probs.sum(dim=-1, keepdim=True)
            out[i, h, start:stop] = torch.matmul(probs / total, v[i, h])
            row_max[i, h, start:stop], row_sum[i, h, start:stop] = peak, total
    softmax_max = row_max.expand(b, n, sq, 8).contiguous()
    softmax_sum = row_sum.expand(b, n, sq, 8).contiguous()
    out = out.to(query.dtype)
    return _from_bnsd(out, input_layout), softmax_max, softmax_sum, torch.empty(0), 0, 0, 0


# --- installation -------------------------------------------------------------------

version = types.SimpleNamespace(__version__=__version__, git_version="shim", cann="shim")
npu: types.ModuleType
_mode: NpuToCpuMode | None = None


def install() -> None:
    """Register ``torch.npu``, ``Tensor.npu()`` and enter the NPU-to-CPU mode (idempotent)."""
    global npu, _mode
    if _mode is not None:
        return
    if torch._C._get_privateuse1_backend_name() != "npu":
        torch.utils.rename_privateuse1_backend("npu")
    existing = getattr(torch, "npu", None)
    if existing is None:
        npu = _build_npu_module()
        torch._register_device_module("npu", npu)
    else:
        npu = existing
    sys.modules.setdefault("torch_npu.npu", npu)
    sys.modules.setdefault("torch_npu.npu.utils", npu)
    torch.Tensor.npu = _tensor_npu
    torch.nn.Module.npu = _module_npu
    torch.set_default_device = _set_default_device_npu_to_cpu
    _mode = NpuToCpuMode()
    _mode.__enter__()


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise _unsupported(f"torch_npu.{name}")


install()
