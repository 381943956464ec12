"""``@dsl.jit``: kernel objects, specialization, caching and launch.

Launch data flow: ``kernel[grid](*args)``, ``kernel(*args)`` or
``kernel.launch(*args, grid=, backend=, options=)`` -> ``bind`` (arguments checked
against the signature; tensors become views: ``TensorView`` for NumPy arrays and
CPU torch tensors, coalesced; ``DeviceTensorView`` for tensors in a device's
memory; every runtime argument gets an ``ArgSpec``) -> the backend: tensors on a
device go to that device's backend (``npu``), which chooses open block sizes
for the chip and compiles; otherwise the launcher picks open ``dsl.block_size``
parameters for the interpreter, builds the IR from the in-memory cache or with
``dsl.frontend.build_ir`` and ``dsl.passes.optimize``, checks the launch (stored
tensors are writeable and not broadcast) and hands the ``Launch`` to the
execution backend the options name. Every check happens before a backend runs, so
an invalid launch writes nothing.

Backends are looked up by name in the registry (``dsl.backends``): this module
imports nothing from ``lowering``. Settings come from one ``dsl.options.Options``
record, read from the environment when a call does not pass one.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from dsl import dtypes as dt
from dsl import ir_cache
from dsl.backends import UnknownBackendError, get_backend
from dsl.errors import ArgumentOverflowError, DSLCompileError, DSLError, DSLLaunchError
from dsl.frontend import (
    ArgSpec,
    ConstSpec,
    InlinableKernel,
    KernelSource,
    ScalarSpec,
    TensorSpec,
    build_ir,
)
from dsl.hot_launch import HotLauncher, KernelHooks, hot_launcher
from dsl.ir import Function, Param
from dsl.language import SUB_VECTOR_BLOCKS
from dsl.launch_cache import (
    RECIPES_PER_KERNEL,
    CallShape,
    LaunchRecipe,
    Replay,
    build_recipe,
    call_key,
    call_shape,
    exact_call_key,
    int_grid,
)
from dsl.numerics import scalar_converter
from dsl.options import Options
from dsl.passes import optimize
from dsl.targets import DEFAULT_PROGRAMS, get_target
from dsl.views import (
    DeviceTensorView,
    TensorView,
    bind_view,
    grad_leaf,
    is_torch_tensor,
    mark_written,
    partially_overlaps,
    wrapped_tensor,
)

Grid = int | Sequence[int] | Callable[[dict[str, Any]], Sequence[int]]


class BoundTensor(NamedTuple):
    """A tensor argument ready for a backend (a named tuple: one is built per tensor
    per launch, on the hot path)."""

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
    # What the bounds proof of this launch depends on, when a launch recipe knows it
    # cheaply (``dsl.launch_cache``); None: backends derive it from the fields above.
    proof_hint: tuple | None = None


@dataclass(frozen=True)
class Binding:
    """Arguments checked against a kernel's signature: the specialization of each
    bound parameter, the runtime values (views for tensors), and the
    ``dsl.block_size`` parameters the caller left for the launcher to choose."""

    specs: dict[str, ArgSpec]
    values: dict[str, Any]
    open_blocks: frozenset[str]
    torch_tensors: dict[str, Any] = dataclasses.field(default_factory=dict)  # as passed
    given: dict[str, Any] = dataclasses.field(default_factory=dict)  # every argument, as passed

    def grid_meta(self) -> dict[str, Any]:
        """What a callable grid receives, as in Triton: every argument by name, as
        passed (defaults applied), with the constexpr values (chosen block sizes too)."""
        return {**self.given, **{name: spec.value for name, spec in self.specs.items()
                                 if isinstance(spec, ConstSpec)}}

    @property
    def device(self) -> str:
        """``"cpu"``, or the device holding the tensor arguments (``"npu"``)."""
        devices = {v.device for v in self.values.values() if isinstance(v, DeviceTensorView)}
        if not devices:
            return "cpu"
        if len(devices) > 1 or any(isinstance(v, TensorView) for v in self.values.values()):
            raise DSLLaunchError("tensor arguments live on different devices: "
                                 f"{sorted(devices | {'cpu'})}")
        return devices.pop()

    def with_blocks(self, blocks: dict[str, int]) -> Binding:
        """The binding with open block sizes chosen."""
        specs = dict(self.specs)
        specs.update((name, ConstSpec(int(block))) for name, block in blocks.items())
        return Binding(specs, self.values, self.open_blocks - set(blocks), self.torch_tensors,
                       self.given)


def _is_tensor(obj: Any) -> bool:
    return isinstance(obj, (np.ndarray, TensorView)) or is_torch_tensor(obj)


def _scalar_spec(value: Any) -> ScalarSpec | None:
    if isinstance(value, (bool, np.bool_)):
        return ScalarSpec(dt.int1)
    if isinstance(value, (int, np.integer)):
        if isinstance(value, np.integer):
            return ScalarSpec(dt.from_numpy(value.dtype))
        dtype = dt.launch_int_dtype(value)
        return ScalarSpec(dtype) if dtype is not None else None
    if isinstance(value, np.floating):
        return ScalarSpec(dt.from_numpy(value.dtype))
    if isinstance(value, float):
        return ScalarSpec(dt.float32)
    return None


def _next_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


@dataclass
class ExactEntry:
    """What a kernel remembers of one exact call key (``exact_call_key``): the replay
    it ran, and its hot launcher once the key repeats (False: the key gets none)."""

    replay: Replay
    hot: HotLauncher | None | bool = None


class JITFunction(InlinableKernel):
    """A kernel written in the DSL. Call it, or index it with a grid first."""

    def __init__(self, fn: Callable[..., Any], source: KernelSource | None = None) -> None:
        self.fn = fn
        self.source = source or KernelSource.parse(fn)
        self.source_text = self.source.text  # keys the lowering cache
        self._cache: dict[tuple, Function] = {}
        self._recipes: dict[tuple, LaunchRecipe] = {}  # dsl.launch_cache
        # exact_call_key -> the replay a call with that key ran (the hot path)
        self._exact_replays: dict[tuple, ExactEntry] = {}
        # the hot launcher of the last exact key that repeated (dsl.hot_launch)
        self._hot: HotLauncher | None = None
        self._call_shapes: dict[tuple, CallShape | None] = {}
        # what the built specializations read outside the kernel that the user's code
        # may rebind, as (read, seen) pairs (``ir_cache.watch``): a launch that finds
        # one changed forgets every specialization (``_forget_if_rebound``)
        self._watched: dict[tuple, tuple[Callable[[], Any], Any]] = {}
        self._generation = [0]  # times the kernel forgot its specializations
        self._hooks = KernelHooks(self._watched, self._forget_if_rebound, self._generation,
                                  self._grid_call)
        functools.update_wrapper(self, fn)

    @property
    def name(self) -> str:
        return self.source.name

    def __repr__(self) -> str:
        return f"<dsl.jit kernel {self.name}>"

    def __getitem__(self, grid: Grid) -> Callable[..., None]:
        hot = self._hot
        if hot is not None and hot.fits_grid(grid):
            return hot.call  # the hot launcher's own entry point (dsl.hot_launch)

        def launch(*args: Any, **kwargs: Any) -> None:
            self._grid_call(args, kwargs, grid)
        return launch

    def _grid_call(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Grid,
                   tried: HotLauncher | None = None) -> None:
        """``kernel[grid](*args, **kwargs)``; ``tried``: a hot launcher that did not fit
        the call (not tried again)."""
        if self._watched:
            self._forget_if_rebound()
        if kwargs and ("options" in kwargs or "backend" in kwargs) and \
                not self._takes_per_call_names:
            # ``kernel[grid](..., options=, backend=)``: per-call settings, as in
            # ``launch()`` (unless the kernel has parameters of those names)
            settings = {k: kwargs.pop(k) for k in _PER_CALL if k in kwargs}
            options = settings.get("options")
            _check_options(self.name, options)
            self._launch(args, kwargs, grid, settings.get("backend"), options)
            return
        hot = self._hot  # (dsl.hot_launch; tried here, so ``_launch`` need not try it)
        if hot is None or hot is tried or not hot.run(args, kwargs, grid):
            self._launch(args, kwargs, grid, hot_tried=True)

    @functools.cached_property
    def _takes_per_call_names(self) -> bool:
        """Whether a parameter is named ``options`` or ``backend`` (then it is one)."""
        return bool(_PER_CALL.intersection(p.name for p in self.source.params))

    def _forget_if_rebound(self) -> None:
        """Forget every specialization, launch recipe and hot launcher when a name the
        kernel (or a helper it inlines) read outside itself now means another object:
        a module-level constant or helper rebound after the first launch would
        otherwise keep its old value for this kernel in this process (a new process,
        or a new specialization, saw the new one)."""
        for read, seen in self._watched.values():
            if ir_cache.changed(read, seen):
                break
        else:
            return
        # a caller may hold a hot launcher's ``call`` (``kernel[grid]``), of a key this
        # kernel still remembers or not: none may run a forgotten plan again
        self._generation[0] += 1
        self._cache.clear()
        self._recipes.clear()
        self._exact_replays.clear()
        self._hot = None
        self._watched.clear()  # (hot launchers hold this dict)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self._launch(args, kwargs, None)

    def launch(self, *args: Any, grid: Grid | None = None, backend: str | None = None,
               options: Options | None = None, **kwargs: Any) -> None:
        """Launch with an explicit grid, execution backend and options. ``backend``
        names a registered backend: ``"interpreter"`` (the NumPy interpreter),
        ``"compiled-cpu"`` (the lowered kernel compiled for this CPU through
        triton-ascend's CPU target) or ``"compiled-cpu-hfusion"`` (through bishengir's
        HFusion IR; see ``lowering.cpu``). ``options`` defaults to
        ``Options.from_env()``; ``backend`` overrides its ``backend`` field, and
        ``force_interpreter`` (``DSL_INTERPRET=1``) overrides both."""
        _check_options(self.name, options)
        self._launch(args, kwargs, grid, backend, options)

    # -- binding and specialization

    def _def_error(self, message: str) -> DSLLaunchError:
        return DSLLaunchError(message, self.source.loc(self.source.tree), self.name)

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]
             ) -> tuple[dict[str, ArgSpec], dict[str, Any]]:
        """Check arguments against the signature; return (specs, runtime values),
        with open block sizes chosen for the interpreter."""
        binding = self.bind_arguments(args, kwargs)
        binding = binding.with_blocks(self.interpreter_blocks(binding))
        return binding.specs, binding.values

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
        if type(value) is int and dt.launch_int_dtype(value) is None:
            raise ArgumentOverflowError(
                f"argument {name!r}: the integer {value} does not fit a 64-bit scalar "
                "(int64 or, from 2**63, uint64)", self.source.loc(self.source.tree), self.name)
        spec = _scalar_spec(value)
        if spec is None and hasattr(value, "data_ptr"):
            # a tensor-like wrapper (FlagGems' StridedBuffer): an address, no memory
            raise self._def_error(
                f"argument {name!r}: expected a NumPy array or a CPU torch tensor, got "
                f"{type(value).__name__}, an object with data_ptr() but no memory this "
                "project can read and bound-check; pass the tensor it wraps (or a view "
                "of it, such as torch.as_strided), or a wrapper that names that tensor "
                "as _base and has dtype, shape and stride()")
        if spec is None:
            raise self._def_error(
                f"argument {name!r}: expected a tensor, a number or None, got "
                f"{type(value).__name__} (mark the parameter dsl.constexpr to pass "
                "compile-time values)")
        return spec

    def wrapped_argument(self, name: str, value: Any) -> np.ndarray | None:
        """The NumPy view of a tensor-like wrapper argument (``views.wrapped_tensor``:
        FlagGems' ``StridedBuffer``), or None for anything else."""
        if not hasattr(value, "data_ptr") or _is_tensor(value):
            return None
        try:
            return wrapped_tensor(value)
        except (TypeError, ValueError) as exc:
            raise self._def_error(f"argument {name!r}: {exc}") from None

    def bind_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Binding:
        """Check arguments against the signature and specialize each one; block
        sizes the caller left out stay open (``Binding.open_blocks``)."""
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
        torch_tensors: dict[str, Any] = {}
        for p in self.source.params:
            if p.name not in arguments:
                continue  # an open block size
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
            elif _is_tensor(value) or (wrapped := self.wrapped_argument(p.name, value)
                                       ) is not None:
                if not _is_tensor(value):
                    value = wrapped  # (a tensor-like wrapper: the array it describes)
                try:
                    view = bind_view(value)
                except (TypeError, ValueError) as exc:
                    raise self._def_error(f"argument {p.name!r}: {exc}") from None
                specs[p.name] = TensorSpec(view.dtype, view.coalesced().layout, view.ndim)
                values[p.name] = view
                if is_torch_tensor(value):
                    torch_tensors[p.name] = value
            else:
                try:
                    specs[p.name] = self.scalar_spec(p.name, value)
                except TypeError as exc:  # (an element type no kernel takes: float128)
                    if isinstance(exc, DSLLaunchError):  # (named already)
                        raise
                    raise self._def_error(f"argument {p.name!r}: {exc}") from None
                values[p.name] = value
        open_blocks = frozenset(name for name in blocks if name not in specs)
        ordered = {p.name: specs[p.name] for p in self.source.params if p.name in specs}
        return Binding(ordered, values, open_blocks, torch_tensors, arguments)

    def interpreter_blocks(self, binding: Binding) -> dict[str, int]:
        """The launcher's choice for open block sizes on the CPU (see
        ``interpreter_block_size``)."""
        tensors = [v for v in binding.values.values()
                   if isinstance(v, (TensorView, DeviceTensorView))]
        open_blocks = sorted(binding.open_blocks)
        if len(open_blocks) < 2:
            largest = max((v.numel for v in tensors), default=1)
            return {name: interpreter_block_size(largest) for name in open_blocks}
        # Several (a 2-D tile's rows and columns): each covers the longest dimension,
        # as a kernel that does not loop over one of them needs; a tile too large for
        # memory is refused (two blocks of 65536 each asked for 16 GiB)
        longest = max((max(v.shape, default=1) for v in tensors), default=1)
        size = interpreter_block_size(longest)
        if size ** len(open_blocks) > MAX_OPEN_TILE:
            raise self._def_error(
                f"the block sizes {', '.join(open_blocks)} were left to the launcher, which "
                f"would make each {size} (the longest dimension of the tensors): a tile of "
                f"{size ** len(open_blocks):,} elements; pass them explicitly")
        return dict.fromkeys(open_blocks, size)

    def specialize(self, specs: dict[str, ArgSpec], options: Options | None = None) -> Function:
        """The IR of one specialization (every parameter specialized), built on first
        use (or read from the on-disk cache, ``dsl.ir_cache``) and cached in memory."""
        key = tuple((p.name, specs[p.name]) for p in self.source.params)
        fn = self._cache.get(key)
        if fn is None:
            options = options or Options.from_env()
            check = options.verify_passes
            fn, reads = ir_cache.load_or_build(  # on disk: built once per machine
                self.source, dict(key), options,
                lambda reads: optimize(build_ir(self.source, dict(key), verify_ir=check,
                                                reads=reads),
                                       dump_ir=options.dump_ir, verify_each=check))
            if reads:
                self._watched.update(ir_cache.watch(self.source, reads))
            self._cache[key] = fn
        return fn

    def ir(self, *args: Any, **kwargs: Any) -> Function:
        """The typed IR this kernel compiles to for these arguments (nothing runs)."""
        self._forget_if_rebound()
        try:
            specs, _ = self.bind(args, kwargs)
            return self.specialize(specs)
        except DSLCompileError as err:
            raise _without_compiler_frames(err) from None

    def lower(self, *args: Any, target: str | None = None, options: Options | None = None,
              **kwargs: Any) -> Any:
        """Lower one specialization to HIVM for ``target`` (default Ascend910B4).

        Arguments are given as for a launch: arrays, views or ``dsl.tensor_spec``
        placeholders for tensors, numbers for scalars, values for constexprs. A
        ``dsl.block_size`` parameter left out is chosen to fit the target's UB.
        Returns a ``lowering.compiler.LoweredKernel`` (Triton source, TTIR, Linalg,
        HIVM, stage timings, UB estimate and measured use)."""
        _check_options(self.name, options)
        options = options or Options.from_env()
        self._forget_if_rebound()
        try:
            binding = self.bind_arguments(args, kwargs)
        except DSLCompileError as err:
            raise _without_compiler_frames(err) from None
        return get_backend("hivm").lower(self, binding.specs, binding.open_blocks,
                                         get_target(target), options)

    # -- launch

    def _launch(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Grid | None,
                backend: str | None = None, options: Options | None = None,
                hot_tried: bool = False) -> None:
        if self._watched and not hot_tried:
            self._forget_if_rebound()
        hot = self._hot
        if hot is not None and not hot_tried and backend is None and options is None \
                and hot.run(args, kwargs, grid):
            return  # the call fits the kernel's hot launcher (dsl.hot_launch)
        exact = None
        if backend is None and options is None and _PLANS.get() is None:
            # a call whose exact key ran a replay before runs it again
            options = Options.from_env()
            exact = exact_call_key(args, kwargs, grid)
            if exact is not None:
                exact = (exact, options)
                try:
                    entry = self._exact_replays.get(exact)
                except TypeError:  # an unhashable grid element
                    entry = exact = None
                if entry is not None and entry.replay((*args, *kwargs.values())):
                    if entry.hot is None:  # the key repeated: it gets a hot launcher
                        entry.hot = hot_launcher(entry.replay, args, kwargs, grid,
                                                 _PLANS.get, self._hooks) or False
                    if entry.hot:
                        self._hot = entry.hot
                    return
        options = options or Options.from_env()
        if backend is not None:
            options = options.replace(backend=backend)
        key, shape = self._recipe_key(args, kwargs, grid, options)
        try:
            recipe = self._recipes.get(key) if key is not None else None
        except TypeError:  # an unhashable constexpr: the full path reports it
            key, shape, recipe = None, None, None
        values = (*args, *kwargs.values())  # in the call's order: recipes index it
        replay_key = None
        try:
            if recipe is not None:  # a call shape seen before: only this call's parts
                replay_key = recipe.replay_key(values, grid, self)
                replay = recipe.replays.get(replay_key)
                if replay is not None and _PLANS.get() is None and replay(values):
                    if exact is not None:  # the next call with this exact key: one lookup
                        if len(self._exact_replays) >= RECIPES_PER_KERNEL:
                            self._exact_replays.pop(next(iter(self._exact_replays)))
                        self._exact_replays[exact] = ExactEntry(replay)
                    return  # replayed the executor's plan for this key and scalars
                executor = recipe.executor  # the options are part of the key
                try:
                    launch = recipe.prepare(self, values, grid)
                except (TypeError, RuntimeError) as exc:
                    if isinstance(exc, DSLError):
                        raise
                    # a tensor the key does not tell apart whose view fails (torch's
                    # negative bit): the full path raises the same error, naming it
                    self.bind_arguments(args, kwargs)
                    raise
                torch_tensors = {t.name: values[t.position] for t in recipe.written_torch}
            else:
                binding = self.bind_arguments(args, kwargs)
                device = binding.device
                if device != "cpu" and not options.force_interpreter:
                    # the device's backend chooses block sizes for its chip and compiles
                    self._device_backend(device).launch_on_device(self, binding, grid, options)
                    return
                executor = _execution_backend(options)
                binding = binding.with_blocks(self.interpreter_blocks(binding))
                launch = self.prepare_binding(binding, grid, options)
                written = launch.function.tensors_written()
                torch_tensors = {name: tensor for name, tensor in binding.torch_tensors.items()
                                 if name in written}
                if key is not None and shape is not None:
                    recipe = self._remember(key, shape, values, launch, binding, grid,
                                            options)
                    if recipe is not None:  # later launches will carry the same hint
                        launch = dataclasses.replace(launch, proof_hint=recipe.proof_hint(
                            launch.args, launch.tensors, launch.grid))
        except DSLCompileError as err:
            raise _without_compiler_frames(err) from None
        plans = _PLANS.get()
        if plans is not None:  # inside planning(): record, do not run
            plans.append(launch)
            return
        if 0 in launch.grid:  # no programs: bound and compiled (errors show), nothing runs
            return
        run_sub_blocks(lambda one: executor.run(one, options), launch)
        for tensor in torch_tensors.values():  # autograd sees the writes
            mark_written(tensor)
        if recipe is not None:
            self._offer_replay(recipe, values, grid, launch, executor, options, replay_key)

    def _offer_replay(self, recipe: LaunchRecipe, values: tuple[Any, ...], grid: Grid | None,
                      launch: Launch, executor: Any, options: Options,
                      replay_key: tuple | None) -> None:
        """After a launch with a recipe ran: ask the executor for a plan that later
        calls with the same recipe and replay key may run straight from their values
        (``LaunchRecipe.direct``), and remember the answer."""
        if launch.function.sub_blocks:
            return  # a plan holds one pass: such launches take the prepared path
        if replay_key is None:
            replay_key = recipe.replay_key(values, grid, self)
        if replay_key in recipe.replays:
            return
        offer = getattr(executor, "replay_plan", None)
        plan = offer(launch, options) if offer is not None else None
        if len(recipe.replays) >= RECIPES_PER_KERNEL:
            recipe.replays.pop(next(iter(recipe.replays)))
        recipe.replays[replay_key] = None if plan is None else recipe.direct(plan)

    def _recipe_key(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Grid | None,
                    options: Options) -> tuple[tuple | None, CallShape | None]:
        """The launch-recipe key of a call (``dsl.launch_cache``), or (None, None)."""
        shape_key = (len(args), tuple(kwargs))
        shape = self._call_shapes.get(shape_key, False)
        if shape is False:
            shape = call_shape(self.source.params, frozenset(self.source.constexpr_params),
                               frozenset(self.source.block_size_params), *shape_key)
            self._call_shapes[shape_key] = shape
        if shape is None:
            return None, None
        parts = call_key(shape, args, kwargs)
        if parts is None:
            return None, None
        if grid is None or int_grid(grid):
            grid_key: Any = grid
        elif isinstance(grid, (int, tuple)):
            # the elements' types are part of the key (``int_grid``)
            grid_key = (type(grid), tuple(map(type, grid)) if isinstance(grid, tuple) else (),
                        grid)
        elif callable(grid):
            grid_key = callable
        else:
            return None, None
        # an unhashable constexpr makes the key unhashable: ``_launch`` finds out when
        # it looks the key up (hashing it here too would cost a second hash per call)
        return (shape_key, parts, grid_key, options), shape

    def _remember(self, key: tuple, shape: CallShape, values: tuple[Any, ...], launch: Launch,
                  binding: Binding, grid: Grid | None, options: Options
                  ) -> LaunchRecipe | None:
        meta = {name: spec.value for name, spec in binding.specs.items()
                if isinstance(spec, ConstSpec)}
        recipe = build_recipe(shape, values, launch, meta, grid,
                              frozenset(binding.torch_tensors), _execution_backend(options))
        if recipe is None:
            return None
        if len(self._recipes) >= RECIPES_PER_KERNEL:
            self._recipes.pop(next(iter(self._recipes)))
        self._recipes[key] = recipe
        return recipe

    def grad_leaf_error(self, stored: str) -> DSLLaunchError:
        """The error for a stored torch leaf tensor that requires grad."""
        return self._def_error(
            f"argument {stored!r} is stored to but is a torch leaf tensor that requires "
            "grad, which torch lets nothing write in place (its gradient would be taken "
            "through the values the write replaced); pass a tensor without requires_grad")

    def overlap_error(self, stored: str, other: str) -> DSLLaunchError:
        """The error for a stored tensor that partially overlaps another argument."""
        return self._def_error(
            f"arguments {stored!r} and {other!r} partially overlap in memory: some "
            f"elements of {other!r} are written through {stored!r} by other lanes, "
            "so the result would depend on the order programs run in (pass the "
            "same view to both, or copy one of them)")

    def _device_backend(self, device: str) -> Any:
        try:
            backend = get_backend(device)
        except UnknownBackendError:
            backend = None
        if not hasattr(backend, "launch_on_device"):
            raise self._def_error(f"kernel {self.name} got a tensor on device '{device}': no "
                                  "registered backend launches kernels there (CPU tensors and "
                                  "NumPy arrays run here; NPU tensors need torch_npu)")
        return backend

    def prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Grid | None,
                options: Options | None = None) -> Launch:
        """Bind, specialize and check a launch; nothing executes."""
        binding = self.bind_arguments(args, kwargs)
        return self.prepare_binding(binding.with_blocks(self.interpreter_blocks(binding)),
                                    grid, options)

    def prepare_binding(self, binding: Binding, grid: Grid | None,
                        options: Options | None = None) -> Launch:
        """Specialize and check a complete binding of host tensors; nothing executes."""
        fn = self.specialize(binding.specs, options)
        if grid is None:
            grid = self.default_grid(fn)
        grid3 = self.grid(grid, binding.grid_meta() if callable(grid) else {})
        stored = fn.tensors_written()
        through_pointers = fn.tensors_through_pointers()
        tensors: dict[str, BoundTensor] = {}
        for name, value in binding.values.items():
            if isinstance(value, DeviceTensorView):
                raise self._def_error(f"argument {name!r} is a tensor on device "
                                      f"'{value.device}': the {self.name} launch runs on the "
                                      "CPU (DSL_INTERPRET=1 forces the interpreter)")
            if not isinstance(value, TensorView):
                continue
            if name in stored:
                if value.is_broadcast:
                    raise self._def_error(f"argument {name!r} is stored to but is a broadcast "
                                          f"view (strides {list(value.strides)})")
                if grad_leaf(binding.torch_tensors.get(name)):
                    raise self.grad_leaf_error(name)
                if value.overlaps_itself():
                    raise self._def_error(
                        f"argument {name!r} is stored to but its view overlaps itself (shape "
                        f"{list(value.shape)}, element strides {list(value.strides)}: two "
                        "indices reach one element)")
                if not value.buffer.flags.writeable:
                    raise self._def_error(f"argument {name!r} is stored to but is read-only")
            c = value.coalesced()
            # a tensor addressed through pointers may be read up to the end of its
            # allocation, as on the device (a row view's pointer reaches later rows)
            memory = value.kernel_memory() if name in through_pointers else \
                value.kernel_buffer()
            tensors[name] = BoundTensor(name, value, memory, c.sizes, c.strides, c.base)
        # Only an argument the kernel reads can see the order of another's stores into
        # its memory: views it only writes may overlap (SGLang stores the fp8 bytes and
        # the float32 scales of one KV-cache row through a uint8 and a float32 view).
        observed = fn.tensors_observed()
        for name in (n for n in tensors if n in stored):  # (in parameter order: the
            # error names the same pair in every process, whatever the string hashes)
            for other, bound in tensors.items():
                if other != name and other in observed and \
                        partially_overlaps(tensors[name].view, bound.view):
                    raise self.overlap_error(name, other)
        runtime = self.runtime_arguments(fn, binding.values, tensors)
        return Launch(fn, tuple(runtime), grid3, tensors)

    def runtime_arguments(self, fn: Function, values: dict[str, Any],
                          tensors: dict[str, Any]) -> list[Any]:
        """One runtime value per parameter of ``fn``: ``tensors[name]`` for a tensor
        parameter (whatever the backend passes for it), the typed scalar for a scalar,
        and the coalesced size, stride or base offset for a hidden layout parameter."""
        runtime: list[Any] = []
        for param in fn.params:
            if param.role == "tensor":
                runtime.append(tensors[param.user_name])
            elif param.role == "scalar":
                runtime.append(scalar_converter(param.value.dtype.np.type)(
                    values[param.user_name]))
            elif param.role == "sub_block":
                runtime.append(np.int32(0))  # run_sub_blocks sets it per pass
            else:
                runtime.append(param.value.dtype.np.type(
                    hidden_value(values[param.of or ""], param)))
        return runtime

    def default_grid(self, fn: Function, programs: int = DEFAULT_PROGRAMS) -> tuple[int]:
        """The grid of a launch that names none: one program per vector core for a
        kernel that spreads its work with ``tile_range``, one program for a kernel that
        never asks which program it is, and an error for one that reads
        ``program_id`` itself (the grid decides what such a kernel covers)."""
        if fn.grid_use == "direct":
            raise self._def_error(
                f"kernel {self.name} reads dsl.program_id()/dsl.num_programs() itself, so "
                "the grid decides what it covers: launch it as kernel[grid](...) (a default "
                f"grid of {programs} programs only suits kernels that spread their work with "
                "dsl.tile_range)")
        return (programs,) if fn.grid_use == "tiled" else (1,)

    def grid(self, grid: Grid | None, meta: dict[str, Any], default: int = DEFAULT_PROGRAMS
             ) -> tuple[int, int, int]:
        """The launch grid as three non-negative integers (``default`` programs when
        none is given; a callable grid receives ``meta``: ``Binding.grid_meta``). A grid with no
        programs (``cdiv(0, BLOCK)`` for an empty input) launches nothing, as Triton's."""
        if grid is None:
            grid = (default,)
        if callable(grid):
            grid = grid(meta)
        if isinstance(grid, (int, np.integer)):
            grid = (grid,)
        # a tuple or list (Triton's spelling); not any iterable: range(3) is no grid
        dims = tuple(grid) if isinstance(grid, (tuple, list)) else None
        if dims is None or not 1 <= len(dims) <= 3 or not all(
                isinstance(g, (int, np.integer)) and not isinstance(g, bool) and g >= 0
                for g in dims):
            raise self._def_error(f"grid must be 1 to 3 non-negative integers (an int, or a "
                                  f"tuple or list of them), got {grid!r}")
        dims = tuple(int(g) for g in dims) + (1,) * (3 - len(dims))
        return dims  # type: ignore[return-value]


def run_sub_blocks(run: Callable[[Launch], None], launch: Launch) -> None:
    """``run(launch)``, or, for a kernel that reads ``sub_vec_id()``, ``run`` once per
    vector sub-block with the index as the last argument (triton-ascend's interpreter
    runs such kernels the same way). All or nothing across the passes: when one fails,
    the tensors the kernel writes get back what they held before the first."""
    if not launch.function.sub_blocks:
        run(launch)
        return
    written = [launch.tensors[name].buffer for name in sorted(launch.function.tensors_written())]
    saved = [buffer.copy() for buffer in written]
    try:
        for index in range(SUB_VECTOR_BLOCKS):
            # no proof hint: the index moves the addresses, so each pass is proved
            run(dataclasses.replace(launch, args=(*launch.args[:-1], np.int32(index)),
                                    proof_hint=None))
    except BaseException:
        for buffer, before in zip(written, saved):
            np.copyto(buffer, before)
        raise


def _execution_backend(options: Options) -> Any:
    """The backend that runs CPU launches: the requested one is checked even when
    ``force_interpreter`` overrides it, so a typo never passes silently."""
    requested = get_backend(options.backend)  # UnknownBackendError names the registered
    if not hasattr(requested, "run"):
        raise UnknownBackendError(f"backend {options.backend!r} does not execute launches "
                                  "on the CPU; choose interpreter, compiled-cpu or "
                                  "compiled-cpu-hfusion")
    return get_backend(options.execution_backend)


def hidden_value(view: Any, param: Param) -> int:
    """Runtime value of a hidden parameter of tensor ``view``: a size, stride or base
    offset of its coalesced view, or the caller's own shape or stride of a dimension
    (``x.shape[i]``, ``x.stride(i)``)."""
    if param.role == "dim":
        return view.shape[param.dim or 0]
    if param.role == "dim_stride":
        return view.strides[param.dim or 0]
    coalesced = view.coalesced()
    if param.role == "size":
        return coalesced.sizes[param.dim or 0]
    if param.role == "stride":
        return coalesced.strides[param.dim or 0]
    return coalesced.base


_PLANS: ContextVar[list[Launch] | None] = ContextVar("dsl_plans", default=None)

# keywords of ``kernel[grid](...)`` that are per-call settings, as ``launch()``'s
_PER_CALL = frozenset({"options", "backend"})


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


def is_planning() -> bool:
    """True inside ``planning()``: launches are recorded, not run."""
    return _PLANS.get() is not None


# The most elements a tile of several launcher-chosen block sizes may hold
MAX_OPEN_TILE = 1 << 24


def interpreter_block_size(largest_numel: int) -> int:
    """Block size the launcher picks for the interpreter: large enough that NumPy's
    per-call overhead vanishes, never much larger than the biggest tensor."""
    return int(min(1 << 16, max(16, _next_pow2(largest_numel))))


def _without_compiler_frames(err: DSLCompileError) -> DSLCompileError:
    err.__traceback__ = None
    err.__cause__ = None
    err.__suppress_context__ = True
    return err


def _check_options(kernel: str, options: Any) -> None:
    if options is not None and not isinstance(options, Options):
        raise DSLLaunchError(f"{kernel}: options= takes a dsl.Options record, got "
                             f"{type(options).__name__}")


def jit(fn: Callable[..., Any] | None = None) -> Any:
    """Decorator: turn a Python function written in the DSL into a kernel.

    Usable as ``@dsl.jit`` or ``@dsl.jit()``. The kernel compiles per
    specialization on first call; ``DSL_INTERPRET=1`` forces interpreter mode."""
    if fn is None:
        return jit
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"dsl.jit decorates a function defined with def, got "
                        f"{type(fn).__name__}")
    return JITFunction(fn)
