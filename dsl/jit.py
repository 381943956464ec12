"""``@dsl.jit``: kernel objects, specialization, caching and launch.

Launch data flow: ``kernel[grid](*args)`` or ``kernel(*args)`` ->
``bind`` (arguments checked against the signature; tensors become ``TensorView``s
and are coalesced; every runtime argument gets an ``ArgSpec``; omitted
``dsl.block_size`` parameters are chosen) -> specialization key -> IR from the
in-memory cache or from ``dsl.frontend.build_ir`` and ``dsl.passes.optimize`` ->
launch checks (stored tensors are writeable and not broadcast) -> backend. Every
check happens before the backend runs, so an invalid launch writes nothing.

Backends: the NumPy interpreter (``lowering.interpreter``, the default for NumPy
arrays and CPU torch tensors; ``DSL_INTERPRET=1`` forces it), compiled-CPU mode
(``lowering.cpu``, chosen per call with ``kernel.launch(backend=...)`` or with
``DSL_BACKEND``), and, for torch_npu tensors on an Ascend host, triton-ascend's NPU
runtime (``lowering.npu``). ``kernel.lower()`` lowers a specialization to HIVM
(``lowering.blocking``).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsl import dtypes as dt
from dsl.errors import DSLCompileError, DSLLaunchError
from dsl.frontend import ArgSpec, ConstSpec, KernelSource, ScalarSpec, TensorSpec, build_ir
from dsl.ir import Function, Param
from dsl.passes import optimize
from dsl.views import TensorView, as_view, is_torch_tensor

# Ascend910B4 has 20 AI cores with 2 vector cores each (VECTOR_CORE_COUNT 40 in
# bishengir's device spec, see lowering.targets); the launcher's default grid is one
# program per vector core, as triton-ascend recommends.
DEFAULT_PROGRAMS = 40

Grid = int | Sequence[int] | Callable[[dict[str, Any]], Sequence[int]]


@dataclass(frozen=True)
class BoundTensor:
    """A tensor argument ready for a backend."""

    name: str
    view: TensorView
    buffer: np.ndarray  # flat, starting at the lowest address the view touches
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    base: int


@dataclass(frozen=True)
class Launch:
    """Everything a backend needs to run one launch."""

    function: Function
    args: tuple[Any, ...]  # one runtime value per ``function.params`` entry
    grid: tuple[int, int, int]
    tensors: dict[str, BoundTensor]


def _is_tensor(obj: Any) -> bool:
    return isinstance(obj, (np.ndarray, TensorView)) or is_torch_tensor(obj)


def _scalar_spec(value: Any) -> ScalarSpec | None:
    if isinstance(value, (bool, np.bool_)):
        return ScalarSpec(dt.int1)
    if isinstance(value, (int, np.integer)):
        if isinstance(value, np.integer):
            return ScalarSpec(dt.from_numpy(value.dtype))
        return ScalarSpec(dt.int32 if -(2**31) <= value < 2**31 else dt.int64)
    if isinstance(value, np.floating):
        return ScalarSpec(dt.from_numpy(value.dtype))
    if isinstance(value, float):
        return ScalarSpec(dt.float32)
    return None


def _next_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


class JITFunction:
    """A kernel written in the DSL. Call it, or index it with a grid first."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.source = KernelSource.parse(fn)
        self.source_text = inspect.getsource(fn)
        self._cache: dict[tuple, Function] = {}
        self.lowered: dict[tuple, Any] = {}  # lowering results, see lowering.blocking
        functools.update_wrapper(self, fn)

    @property
    def name(self) -> str:
        return self.source.name

    def __repr__(self) -> str:
        return f"<dsl.jit kernel {self.name}>"

    def __getitem__(self, grid: Grid) -> Callable[..., None]:
        return lambda *args, **kwargs: self._launch(args, kwargs, grid)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self._launch(args, kwargs, None)

    def launch(self, *args: Any, grid: Grid | None = None, backend: str | None = None,
               **kwargs: Any) -> None:
        """Launch with an explicit grid and execution mode: ``"interpreter"`` (the
        NumPy interpreter), ``"compiled-cpu"`` (the lowered kernel compiled for this
        CPU through triton-ascend's CPU target) or ``"compiled-cpu-hfusion"``
        (through bishengir's HFusion IR; see ``lowering.cpu``). The default comes from
        ``DSL_BACKEND``; ``DSL_INTERPRET=1`` forces the interpreter."""
        self._launch(args, kwargs, grid, backend)

    # -- specialization

    def _def_error(self, message: str) -> DSLLaunchError:
        return DSLLaunchError(message, self.source.loc(self.source.tree), self.name)

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]
             ) -> tuple[dict[str, ArgSpec], dict[str, Any]]:
        """Check arguments against the signature; return (specs, runtime values)."""
        specs, values, _ = self._bind(args, kwargs)
        return specs, values

    def signature_bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Arguments by parameter name (defaults applied; block sizes may be absent)."""
        sig = inspect.Signature(self.source.params)
        try:
            bound = sig.bind_partial(*args, **kwargs)
        except TypeError as exc:
            raise self._def_error(f"bad arguments for kernel {self.name}{sig}: {exc}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def scalar_spec(self, name: str, value: Any) -> ScalarSpec:
        """The specialization of a runtime scalar argument."""
        spec = _scalar_spec(value)
        if spec is None:
            raise self._def_error(
                f"argument {name!r}: expected a tensor, a number or None, got "
                f"{type(value).__name__} (mark the parameter dsl.constexpr to pass "
                "compile-time values)")
        return spec

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]
              ) -> tuple[dict[str, ArgSpec], dict[str, Any], set[str]]:
        """``bind``, plus the names of the block sizes the launcher chose."""
        sig = inspect.Signature(self.source.params)
        blocks = self.source.block_size_params
        arguments = self.signature_bind(args, kwargs)
        missing = [p.name for p in self.source.params
                   if p.name not in arguments and p.name not in blocks]
        if missing:
            raise self._def_error(f"kernel {self.name}{sig} is missing argument(s): "
                                  + ", ".join(missing))
        specs: dict[str, ArgSpec] = {}
        values: dict[str, Any] = {}
        for p in self.source.params:
            if p.name not in arguments:
                continue  # a block size, chosen below
            value = arguments[p.name]
            if p.name in self.source.constexpr_params:
                try:
                    hash(value)
                except TypeError:
                    raise self._def_error(f"constexpr argument {p.name!r} must be hashable, "
                                          f"got {type(value).__name__}") from None
                specs[p.name] = ConstSpec(value)
            elif value is None:
                specs[p.name] = ConstSpec(None)
            elif isinstance(value, (TensorSpec, ScalarSpec)):  # a placeholder: lower() only
                specs[p.name] = value
            elif _is_tensor(value):
                try:
                    view = as_view(value)
                except (TypeError, ValueError) as exc:
                    raise self._def_error(f"argument {p.name!r}: {exc}") from None
                specs[p.name] = TensorSpec(view.dtype, view.coalesced().layout)
                values[p.name] = view
            else:
                specs[p.name] = self.scalar_spec(p.name, value)
                values[p.name] = value
        largest = max((v.numel for v in values.values() if isinstance(v, TensorView)), default=1)
        chosen = {name for name in blocks if name not in specs}
        for name in chosen:
            specs[name] = ConstSpec(interpreter_block_size(largest))
        ordered = {p.name: specs[p.name] for p in self.source.params}
        return ordered, values, chosen

    def specialize(self, specs: dict[str, ArgSpec]) -> Function:
        """The IR of one specialization, built on first use and cached in memory."""
        key = tuple(specs.items())
        fn = self._cache.get(key)
        if fn is None:
            fn = optimize(build_ir(self.source, specs))
            self._cache[key] = fn
        return fn

    def ir(self, *args: Any, **kwargs: Any) -> Function:
        """The typed IR this kernel compiles to for these arguments (nothing runs)."""
        try:
            specs, _ = self.bind(args, kwargs)
            return self.specialize(specs)
        except DSLCompileError as err:
            raise _without_compiler_frames(err) from None

    def lower(self, *args: Any, target: str | None = None, **kwargs: Any) -> Any:
        """Lower one specialization to HIVM for ``target`` (default Ascend910B4).

        Arguments are given as for a launch: arrays, views or ``dsl.tensor_spec``
        placeholders for tensors, numbers for scalars, values for constexprs. A
        ``dsl.block_size`` parameter left out is chosen to fit the target's UB.
        Returns a ``lowering.compiler.LoweredKernel`` (Triton source, TTIR, Linalg,
        HIVM, stage timings, UB estimate and measured use)."""
        from lowering.blocking import lower_specialization
        from lowering.targets import get_target

        try:
            specs, _, chosen = self._bind(args, kwargs)
        except DSLCompileError as err:
            raise _without_compiler_frames(err) from None
        return lower_specialization(self, specs, chosen, get_target(target))

    # -- launch

    def _launch(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Grid | None,
                backend: str | None = None) -> None:
        from lowering import npu

        if not interpret_forced() and any(npu.is_npu_tensor(a)
                                           for a in (*args, *kwargs.values())):
            npu.launch(self, args, kwargs, grid)  # Ascend host only; see lowering.npu
            return
        try:
            launch = self.prepare(args, kwargs, grid)
        except DSLCompileError as err:
            raise _without_compiler_frames(err) from None
        plans = _PLANS.get()
        if plans is not None:  # inside planning(): record, do not run
            plans.append(launch)
            return
        mode = execution_mode(backend)
        if mode.startswith("compiled-cpu"):
            from lowering import cpu

            cpu.run(launch, route=2 if mode == "compiled-cpu-hfusion" else 1)
            return
        from lowering import interpreter

        interpreter.run(launch)

    def prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Grid | None) -> Launch:
        """Bind, specialize and check a launch; nothing executes."""
        specs, values = self.bind(args, kwargs)
        fn = self.specialize(specs)
        meta = {name: spec.value for name, spec in specs.items() if isinstance(spec, ConstSpec)}
        grid3 = self._grid(grid, meta)
        stored = {op.attrs["tensor"] for op in fn.walk() if op.kind == "store"}
        tensors: dict[str, BoundTensor] = {}
        for name, value in values.items():
            if not isinstance(value, TensorView):
                continue
            if name in stored:
                if value.is_broadcast:
                    raise self._def_error(f"argument {name!r} is stored to but is a broadcast "
                                          f"view (strides {list(value.strides)})")
                if not value.buffer.flags.writeable:
                    raise self._def_error(f"argument {name!r} is stored to but is read-only")
            c = value.coalesced()
            tensors[name] = BoundTensor(name, value, value.kernel_buffer(), c.sizes, c.strides,
                                        c.base)
        runtime: list[Any] = []
        for param in fn.params:
            if param.role == "tensor":
                runtime.append(tensors[param.user_name])
            elif param.role == "scalar":
                runtime.append(param.value.dtype.np.type(values[param.user_name]))
            else:
                runtime.append(param.value.dtype.np.type(hidden_value(tensors, param)))
        return Launch(fn, tuple(runtime), grid3, tensors)

    def _grid(self, grid: Grid | None, meta: dict[str, Any]) -> tuple[int, int, int]:
        if grid is None:
            grid = (DEFAULT_PROGRAMS,)
        if callable(grid):
            grid = grid(meta)
        if isinstance(grid, int):
            grid = (grid,)
        dims = tuple(grid)
        if not 1 <= len(dims) <= 3 or not all(isinstance(g, (int, np.integer)) and g >= 1
                                              for g in dims):
            raise self._def_error(f"grid must be 1 to 3 positive integers, got {grid!r}")
        dims = tuple(int(g) for g in dims) + (1,) * (3 - len(dims))
        return dims  # type: ignore[return-value]


def hidden_value(tensors: dict[str, Any], param: Param) -> int:
    """Runtime value of a hidden layout parameter (a size, stride or base offset) from
    the coalesced view of its tensor (anything with ``sizes``, ``strides``, ``base``)."""
    t = tensors[param.of or ""]
    if param.role == "size":
        return t.sizes[param.dim or 0]
    if param.role == "stride":
        return t.strides[param.dim or 0]
    return t.base


_PLANS: ContextVar[list[Launch] | None] = ContextVar("dsl_plans", default=None)


@contextmanager
def planning() -> Iterator[list[Launch]]:
    """Inside this context kernel launches are checked and specialized but not run;
    the prepared ``Launch`` records are collected in the yielded list. This is how
    the aclnn API plans work in phase 1 without computing or writing anything."""
    plans: list[Launch] = []
    token = _PLANS.set(plans)
    try:
        yield plans
    finally:
        _PLANS.reset(token)


def interpreter_block_size(largest_numel: int) -> int:
    """Block size the launcher picks for the interpreter: large enough that NumPy's
    per-call overhead vanishes, never much larger than the biggest tensor."""
    return int(min(1 << 16, max(16, _next_pow2(largest_numel))))


def _without_compiler_frames(err: DSLCompileError) -> DSLCompileError:
    err.__traceback__ = None
    err.__cause__ = None
    err.__suppress_context__ = True
    return err


def jit(fn: Callable[..., Any] | None = None) -> Any:
    """Decorator: turn a Python function written in the DSL into a kernel.

    Usable as ``@dsl.jit`` or ``@dsl.jit()``. The kernel compiles per
    specialization on first call; ``DSL_INTERPRET=1`` forces interpreter mode."""
    if fn is None:
        return jit
    return JITFunction(fn)


BACKENDS = ("interpreter", "compiled-cpu", "compiled-cpu-hfusion")


def execution_mode(requested: str | None = None) -> str:
    """The execution mode of a launch: ``DSL_INTERPRET=1`` forces the interpreter;
    otherwise the request, else ``DSL_BACKEND``, else the interpreter."""
    mode = requested or os.environ.get("DSL_BACKEND") or "interpreter"
    if mode not in BACKENDS:
        raise ValueError(f"unknown execution mode {mode!r}; choose from {', '.join(BACKENDS)}")
    return "interpreter" if interpret_forced() else mode


def interpret_forced() -> bool:
    """True when ``DSL_INTERPRET=1`` asks for the NumPy interpreter."""
    return os.environ.get("DSL_INTERPRET", "") not in ("", "0")
