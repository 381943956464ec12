"""Triton compatibility: kernels written against ``triton.language`` run here unchanged.

What this module owns, and how a Triton kernel flows through it:

- ``translate(obj)`` maps each object a Triton kernel names to the DSL's: ``tl.load``
  and the other ``triton.language`` builtins to the ``dsl.language`` builtin of the
  same name (their signatures are Triton's), ``tl.float32`` and friends to DSL dtypes,
  ``tl.constexpr`` to ``dsl.constexpr``, a ``@triton.jit`` helper to a DSL kernel
  (inlined at its call), ``triton.cdiv``/``next_power_of_2`` to compile-time
  functions. A Triton builtin the DSL lacks becomes ``Unsupported``: calling it is a
  ``DSLCompileError`` at the kernel's line naming the missing feature.
- ``from_triton(kernel)`` takes a ``@triton.jit`` function (or its plain Python
  function), possibly wrapped by ``@triton.autotune`` and ``@triton.heuristics``, and
  returns a ``TritonKernel``: a ``dsl.JITFunction`` whose source is parsed with
  ``translate`` (so every tensor argument is a pointer, ``dsl.pointers``). It runs on
  the interpreter, compiled-CPU mode and lowering like any DSL kernel. Launch options
  Triton treats as compiler options (``num_warps``, ``num_stages``, ...) are dropped as
  Triton drops the ones its backend does not know; autotune configs and heuristics
  fill in their constexpr arguments (one stated config: the first, or the one
  ``from_triton(kernel, config=)`` names; ``rank_configs`` ranks all of them by how
  they fit the on-chip Unified Buffer when lowered).
- ``install()`` is the ``DSL_TRITON_INTERPRET=1`` switch: it patches Triton's launch
  methods so that every ``kernel[grid](...)`` whose tensors are CPU tensors runs here
  (``ascend_dsl_triton.pth`` runs ``ascend_dsl_startup``, which calls it when the
  script imports Triton if ``DSL_TRITON_INTERPRET`` is set, so scripts need no edit).
  A kernel launched that way which does not compile raises ``TritonCompilationError``,
  both a ``DSLCompileError`` and Triton's ``CompilationError`` (the class scripts
  expect from Triton), with this project's message.

Nothing here imports Triton at module import time: ``translate`` recognises Triton's
objects by their module, and Triton is imported only by ``install``.
"""

from __future__ import annotations

import contextlib
import difflib
import re
import textwrap
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ascend_dsl_startup import after_triton_loads
from dsl import dtypes as dt
from dsl import language as lang
from dsl.errors import DSLCompileError, DSLError, DSLLaunchError
from dsl.frontend import KernelSource, Unsupported, constexpr_function
from dsl.jit import JITFunction
from dsl.pointers import TensorDescriptor

# triton.language dtype names -> DSL dtypes (Triton's own fp8e4b15 has no counterpart).
_DTYPES = {"fp16": dt.float16, "bf16": dt.bfloat16, "fp32": dt.float32, "fp64": dt.float64,
           "int1": dt.int1, "int8": dt.int8, "int16": dt.int16, "int32": dt.int32,
           "int64": dt.int64, "uint8": dt.uint8, "uint16": dt.uint16, "uint32": dt.uint32,
           "uint64": dt.uint64, "fp8e4nv": dt.float8e4nv, "fp8e5": dt.float8e5,
           "fp8e4b8": dt.float8e4b8, "fp8e5b16": dt.float8e5b16}

# Triton classes a kernel names: annotations and loop iterators.
_CLASSES = {"constexpr": lang.constexpr, "const": lang.const, "tensor": lang.tensor,
            "dtype": dt.DType, "pointer_type": lang.pointer_type, "range": lang.range,
            "static_range": lang.static_range, "parallel": lang.range, "PropagateNan": lang.PropagateNan,
            "PROPAGATE_NAN": lang.PropagateNan, "tensor_descriptor": TensorDescriptor,
            "tensor_descriptor_base": TensorDescriptor}

# Plain functions of Triton's that a kernel may call as they are, at compile time
# (PyTorch Inductor's split-scan helpers unwrap a dtype argument).
_PLAIN_FUNCTIONS = frozenset({"_unwrap_if_constexpr"})

# Triton builtins whose DSL counterpart has another name.
_RENAMED = {"sqrt_rn": "sqrt"}


@constexpr_function
def next_power_of_2(n: int) -> int:
    """``triton.next_power_of_2`` on constexprs."""
    return 1 << max(int(n) - 1, 0).bit_length()


@constexpr_function
def log2_floor(n: int) -> int:
    """``triton.language.standard._log2`` on a constexpr: floor(log2(n)), 0 for n <= 1
    (FlagGems' topk and Triton's own bitonic sort call it on a block's length)."""
    return max(int(n), 1).bit_length() - 1


@constexpr_function
def is_power_of_two(n: int) -> bool:
    """``triton.language.standard._is_power_of_two`` on a constexpr."""
    n = int(n)
    return (n & (n - 1)) == 0 and n != 0


@constexpr_function
def get_int_dtype(bitwidth: int, signed: bool) -> dt.DType:
    """``tl.core.get_int_dtype``: the integer type of ``bitwidth`` bits (the bitonic
    argsort that fla and others copy reads a float's bits through it)."""
    if int(bitwidth) == 1:
        return dt.int1
    try:
        return dt.by_name(f"{'' if signed else 'u'}int{int(bitwidth)}")
    except KeyError:
        raise ValueError(f"no integer type of {bitwidth} bits") from None


# Triton's compile-time helpers (plain functions of constexprs), by name.
_CONSTEXPR_HELPERS = {"next_power_of_2": next_power_of_2, "_log2": log2_floor,
                      "_is_power_of_two": is_power_of_two, "get_int_dtype": get_int_dtype}


def _module(obj: Any) -> str:
    module = getattr(obj, "__module__", None)
    return module if isinstance(module, str) else ""


def _is_triton(obj: Any) -> bool:
    """A Triton object: defined in Triton, or an instance of a Triton class (a user's
    @triton.jit function is a triton.runtime.jit.JITFunction)."""
    return _module(obj).split(".")[0] == "triton" or \
        type(obj).__module__.split(".")[0] == "triton"


def translate(obj: Any) -> Any:
    """The DSL's view of an object a Triton kernel names (see the module docstring)."""
    if isinstance(obj, types.ModuleType) or not _is_triton(obj):
        return obj
    cls = type(obj).__name__
    if cls == "constexpr":  # a module-level tl.constexpr(value)
        return translate(obj.value)
    if isinstance(obj, type):
        if obj.__name__ in _CLASSES:
            return _CLASSES[obj.__name__]
        return Unsupported(f"triton.language.{obj.__name__}")
    if cls == "dtype" and hasattr(obj, "name"):
        if obj.name in _DTYPES:
            return _DTYPES[obj.name]
        if obj.name == "fp8e4b15":
            return Unsupported("dtype tl.float8e4b15 (Triton's e4m3 with exponent bias 15 has no "
                               "torch or NumPy type; float8e4nv, float8e5, float8e4b8 and "
                               "float8e5b16 are supported)")
        return Unsupported(f"dtype tl.{obj.name}")
    if cls in ("JITFunction", "Autotuner", "Heuristics"):
        builtin = getattr(lang, getattr(obj, "__name__", ""), None)
        if _module(obj).startswith("triton.") and getattr(builtin, "__dsl_builtin__", False):
            return builtin  # Triton's standard library (tl.sum, tl.maximum, ...): the DSL's own
        return from_triton(obj)
    if callable(obj):
        name = getattr(obj, "__name__", "")
        if name == "cdiv":
            return lang.cdiv  # folds on constexprs, and works on tensors
        if name in _CONSTEXPR_HELPERS:
            return _CONSTEXPR_HELPERS[name]
        if name in _PLAIN_FUNCTIONS and isinstance(obj, types.FunctionType):
            return obj
        name = _RENAMED.get(name, name)
        target = getattr(lang, name, None)
        if target is not None and getattr(target, "__dsl_builtin__", False):
            return target
        return Unsupported(f"{getattr(obj, '__module__', 'triton')}.{obj.__name__}")
    return obj


def missing_attribute(module: types.ModuleType, name: str) -> Any:
    """The DSL builtin a Triton kernel means by ``module.name`` when the installed
    Triton's module lacks it (newer triton-ascend libdevice functions such as
    ``fast_expf``, ``isfinited`` or ``rint`` on the 3.2 wheel, and its Ascend extension's
    ``sub_vec_id``, ``sub_vec_num`` and ``PIPE``), or None."""
    if not module.__name__.startswith("triton."):
        return None
    target = getattr(lang, name, None)
    if name == "PIPE":  # triton-ascend 3.5's pipe enum (sync_block_set/wait arguments)
        return target
    return target if getattr(target, "__dsl_builtin__", False) else None


# ----------------------------------------------------------------------------- kernels


def _unwrap(kernel: Any) -> tuple[Callable[..., Any], list[Any], list[dict[str, Any]], Any]:
    """(Python function, autotune configs, heuristics outermost first, the
    ``Autotuner`` or None) of a Triton kernel object, or of a plain function."""
    configs: list[Any] = []
    heuristics: list[dict[str, Any]] = []
    tuner = None
    seen = 0
    while not isinstance(kernel, types.FunctionType):
        seen += 1
        if seen > 16 or not hasattr(kernel, "fn"):
            raise DSLLaunchError(f"from_triton() needs a @triton.jit kernel or a Python "
                                 f"function, got {type(kernel).__name__}")
        if hasattr(kernel, "configs"):
            configs, tuner = list(kernel.configs), kernel
        elif isinstance(getattr(kernel, "values", None), dict):
            heuristics.append(dict(kernel.values))
        kernel = kernel.fn
    return kernel, configs, heuristics, tuner


def _all_kwargs(config: Any) -> dict[str, Any]:
    """A config's keywords (``triton.Config.all_kwargs()``; a plain dict as it is)."""
    return dict(config.all_kwargs() if hasattr(config, "all_kwargs") else
                getattr(config, "kwargs", config))


def _given_source(kernel: Any) -> str | None:
    """The ``src`` of the ``JITFunction`` in ``kernel`` (under its autotuner and
    heuristics), which a script may replace (Triton compiles ``src``:
    ``_unsafe_update_src``, the ``patch_kernel`` of Triton's own tests); None when
    there is none."""
    for _ in range(16):
        inner = getattr(kernel, "fn", None)
        if inner is None:
            return None
        if isinstance(inner, types.FunctionType):
            src = getattr(kernel, "src", None)
            return src if isinstance(src, str) else None
        kernel = inner
    return None


def _parse(fn: Callable[..., Any], src: str | None) -> KernelSource:
    """``fn``'s source, or ``src`` when it is not ``fn``'s own text (Triton's ``src``
    is the dedented definition from ``def`` on, its decorators dropped)."""
    source = KernelSource.parse(fn, translate)
    if src is None:
        return source
    own = textwrap.dedent(source.text)
    start = re.search(r"^def\s+\w+\s*\(", own, re.MULTILINE)
    if start is not None and own[start.start():] == src:
        return source
    return KernelSource.parse(fn, translate, text=src)


class UnrecognisedKeywordError(DSLLaunchError, KeyError):
    """A launch keyword that is neither a kernel parameter nor a compiler option (a
    ``KeyError``, as Triton's launcher raises, and a ``DSLLaunchError``)."""

    def __str__(self) -> str:  # (KeyError's own would quote the message)
        return DSLLaunchError.__str__(self)


_COMPILER_OPTIONS: list[frozenset[str] | None] = []


def compiler_options() -> frozenset[str] | None:
    """The option names triton-ascend's compiler takes (``NPUOptions``' fields), which
    a launch may pass beside the kernel's parameters; None without triton-ascend."""
    if not _COMPILER_OPTIONS:
        try:
            import dataclasses

            from triton.backends.ascend.compiler import NPUOptions
            _COMPILER_OPTIONS.append(frozenset(f.name for f in dataclasses.fields(NPUOptions)))
        except (ImportError, TypeError):
            _COMPILER_OPTIONS.append(None)
    return _COMPILER_OPTIONS[0]


class TritonKernel(JITFunction):
    """A Triton kernel adapted to this project (see ``from_triton``)."""

    def __init__(self, fn: Callable[..., Any], configs: list[Any] | None = None,
                 heuristics: list[dict[str, Any]] | None = None, config: Any = None,
                 tuner: Any = None, src: str | None = None) -> None:
        super().__init__(fn, _parse(fn, src))
        self.given_source = src  # the kernel's ``src`` this was made from
        self.configs = list(configs or [])
        self.heuristics = list(heuristics or [])
        self.tuner = tuner  # the Autotuner: its prune, reset_to_zero and pre_hook
        # the config to run; unless one is stated, a launch runs the first config the
        # autotuner's prune keeps for its arguments (this one when nothing is pruned)
        self.config = self._pick(0 if config is None else config)
        self._stated = config is not None
        self._call_config: Any = None  # the config of the launch running now
        self.last_config: Any = None  # the config the latest launch ran (Triton's best_config)
        self._bare: TritonKernel | None = None  # see compiled_form

    def __repr__(self) -> str:
        return f"<dsl kernel {self.name} from triton>"

    def _pick(self, config: Any) -> Any:
        if not self.configs:
            return None
        if isinstance(config, int):
            if not 0 <= config < len(self.configs):
                raise DSLLaunchError(f"{self.name}: config {config} out of range (the kernel "
                                     f"has {len(self.configs)} autotune configs)")
            return self.configs[config]
        if not hasattr(config, "kwargs") and not isinstance(config, dict):
            raise DSLLaunchError(f"{self.name}: config= takes an index into the autotune "
                                 f"configs or a triton.Config, got {config!r}")
        return config

    def with_config(self, config: Any) -> TritonKernel:
        """The same kernel running ``config`` (an index into the autotune configs or
        a ``triton.Config``)."""
        return TritonKernel(self.fn, self.configs, self.heuristics, config, self.tuner,
                            self.given_source)

    def _launch(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any,
                backend: str | None = None, options: Any = None, hot_tried: bool = False
                ) -> None:
        """An autotuned kernel's launch as Triton's ``Autotuner.run`` makes it: the
        stated config, or the first one the autotuner's ``prune_configs_by`` keeps
        (there is no device to time them on); with several configs, the
        ``reset_to_zero`` tensors zeroed (Triton zeroes them after timing the configs);
        then the config's ``pre_hook``; then the kernel."""
        if not self.configs:
            super()._launch(args, kwargs, grid, backend, options, hot_tried)
            return
        names = [p.name for p in self.source.params]
        nargs = dict(zip(names, args))
        # Triton's Autotuner.run gets the launch's grid and warmup among its keywords and
        # hands them to the prune, the perf model and the hooks (``nargs["grid"]``)
        tuner_kwargs = {**kwargs, "grid": grid, "warmup": False}
        config = self.config if self._stated else self._first_kept(nargs, tuner_kwargs)
        full = {**nargs, **tuner_kwargs, **_all_kwargs(config)}
        if len(self.configs) > 1 and self.tuner is not None:
            if getattr(self.tuner, "user_defined_pre_hook", False):
                self.tuner.pre_hook(full, reset_only=True)
            for name in getattr(self.tuner, "reset_to_zero", ()):
                tensor = full[name]
                tensor.zero_() if hasattr(tensor, "zero_") else tensor.fill(0)
        if getattr(config, "pre_hook", None) is not None:
            config.pre_hook(full)
        if self.tuner is not None:  # Triton's Autotuner.run leaves it there for the caller
            self.tuner.best_config = config
        self._call_config = self.last_config = config
        try:
            super()._launch(args, kwargs, grid, backend, options, hot_tried)
        finally:
            self._call_config = None

    def _first_kept(self, nargs: dict[str, Any], kwargs: dict[str, Any]) -> Any:
        """The first config that the autotuner's ``early_config_prune`` and
        ``perf_model``/``top_k`` keep, as ``Autotuner.prune_configs`` prunes them."""
        kept = self.configs
        prune = getattr(self.tuner, "early_config_prune", None)
        if prune is not None:
            kept = list(prune(self.configs, nargs, **kwargs))
        model = getattr(self.tuner, "perf_model", None)
        if model is not None and kept:
            top_k = getattr(self.tuner, "configs_top_k", 1.0)
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = int(len(self.configs) * top_k)
            if len(kept) > top_k:
                timing = {id(c): model(**nargs, **kwargs, **_all_kwargs(c)) for c in kept}
                kept = sorted(kept, key=lambda c: timing[id(c)])[:top_k]
        if not kept:
            raise DSLLaunchError(f"{self.name}: the autotuner's prune_configs_by kept none of "
                                 f"its {len(self.configs)} configs")
        return kept[0]

    def signature_bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Triton's launch: compiler options dropped, the config's and heuristics'
        constexprs filled in (a caller's own value for a tuned argument is an error,
        as in Triton)."""
        config = self._call_config if self._call_config is not None else self.config
        return self.bind_with_config(config, args, kwargs)

    def bind_with_config(self, config: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                         ) -> dict[str, Any]:
        """``signature_bind`` for a launch that runs ``config`` (None: no config)."""
        names = {p.name for p in self.source.params}
        # Triton hands keywords that are not parameters (num_warps, ...) to its
        # compiler as options and refuses one that is no option either. The options
        # differ between triton-ascend versions (its unit tests pass ones the 3.2.0
        # wheel lacks: auto_blockify_size), so an unknown keyword is dropped as an
        # option, unless it is a parameter's name misspelt (a constexpr with a default
        # would otherwise run silently with the default)
        options = compiler_options() or frozenset()
        for key in sorted(kwargs):
            if key in names or key in options:
                continue
            close = difflib.get_close_matches(key, sorted(names), n=1, cutoff=0.75)
            if close:
                raise UnrecognisedKeywordError(
                    f"{self.name}: keyword argument {key!r} was specified but unrecognised: "
                    f"it is neither a parameter of the kernel nor an option of "
                    f"triton-ascend's compiler (did you mean {close[0]!r}? Triton raises "
                    "KeyError)")
        kwargs = {k: v for k, v in kwargs.items() if k in names}
        if config is not None:
            tuned = dict(getattr(config, "kwargs", config))
            clash = sorted(set(tuned) & set(kwargs))
            if clash:
                raise DSLLaunchError(f"{self.name}: conflicting meta-parameters {clash}: they "
                                     "are chosen by the autotune config")
            kwargs = {**kwargs, **{k: v for k, v in tuned.items() if k in names}}
        # a launch argument wrapped in tl.constexpr(...) is its value
        args = tuple(_unwrap_constexpr(a) for a in args)
        kwargs = {k: _unwrap_constexpr(v) for k, v in kwargs.items()}
        arguments = super().signature_bind(args, kwargs)
        for values in self.heuristics:  # the outermost decorator runs first, as in Triton
            for name, rule in values.items():
                arguments[name] = rule(dict(arguments))
        return arguments

    def compiled_form(self) -> TritonKernel:
        """The kernel as Triton compiles one launch of it: its autotune config and
        heuristics already applied, so every constexpr is an argument (what a
        launch's returned kernel relaunches); this kernel when it has neither."""
        if not self.configs and not self.heuristics:
            return self
        if self._bare is None:
            self._bare = TritonKernel(self.fn, src=self.given_source)
        return self._bare

    def _recipe_key(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any,
                    options: Any) -> tuple[Any, Any]:
        """Launch recipes only for calls ``signature_bind`` leaves as they are: no
        autotune config or heuristics, no compiler keywords, no ``tl.constexpr``
        wrappers."""
        if self.configs or self.heuristics or any(
                _unwrap_constexpr(a) is not a for a in (*args, *kwargs.values())):
            return None, None
        return super()._recipe_key(args, kwargs, grid, options)

    def rank_configs(self, *args: Any, target: str = "Ascend910B4", **kwargs: Any
                     ) -> list[tuple[Any, int | None, str]]:
        """Every autotune config lowered for ``target``: (config, UB bytes or None,
        note), the configs that fit first, fullest Unified Buffer first (the largest
        tiles that fit), then those that do not, with the reason."""
        ranked: list[tuple[Any, int | None, str]] = []
        for i in range(len(self.configs)):
            kernel = self.with_config(i)
            try:
                lowered = kernel.lower(*args, target=target, **kwargs)
            except DSLError as exc:  # UBOverflowError among them
                ranked.append((self.configs[i], None, str(exc).splitlines()[0]))
                continue
            ranked.append((self.configs[i], lowered.ub_measured_bytes,
                           f"{lowered.ub_measured_bytes} of {lowered.ub_capacity_bytes} B"))
        return sorted(ranked, key=lambda r: (r[1] is None, -(r[1] or 0)))


def _unwrap_constexpr(value: Any) -> Any:
    return value.value if type(value).__name__ == "constexpr" and _is_triton(value) else value


def from_triton(kernel: Any, config: Any = None) -> TritonKernel:
    """A DSL kernel from a ``@triton.jit`` kernel (or its plain Python function),
    understanding ``@triton.autotune`` and ``@triton.heuristics``. An autotuned kernel
    runs the ``config``-th config, or the ``triton.Config`` given, or by default the
    first config its ``prune_configs_by`` keeps for the call (there is no device to
    time them on), with the autotuner's ``reset_to_zero`` and the config's
    ``pre_hook`` applied as Triton applies them. The result runs with
    ``kernel[grid](...)`` on NumPy arrays and CPU torch tensors, ``launch(...,
    backend="cpu")`` and ``lower(...)`` like any DSL kernel."""
    cached = getattr(kernel, "_dsl_kernel", None)
    if isinstance(cached, TritonKernel) and config is None and \
            _given_source(kernel) is cached.given_source and (  # (src not replaced since)
            cached.tuner is None or list(cached.tuner.configs) == cached.configs):
        # (nor the autotuner's configs: Triton reads them for every new autotune key)
        return cached
    fn, configs, heuristics, tuner = _unwrap(kernel)
    result = TritonKernel(fn, configs, heuristics, config, tuner, _given_source(kernel))
    if config is None and not isinstance(kernel, types.FunctionType):
        with contextlib.suppress(AttributeError):  # a slotted wrapper: no cache
            kernel._dsl_kernel = result
    return result


# ----------------------------------------------------------------------------- the switch

def _on_cpu(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """True unless a torch tensor argument lives on a device (then Triton runs it)."""
    for value in (*args, *kwargs.values()):
        device = getattr(value, "device", None)
        if device is not None and getattr(device, "type", "cpu") != "cpu":
            return False
    return True


class LaunchedKernel:
    """What ``kernel[grid](...)`` (and ``kernel.warmup(...)``, which compiles and checks
    the launch and runs nothing) returns under ``DSL_TRITON_INTERPRET=1``, as Triton's
    launcher returns the kernel it compiled: ``name``, ``signature`` and ``constants``
    (Triton's, from the launch's arguments) and ``asm``, whose ``"ttir"`` (Triton IR)
    and ``"ttadapter"`` (its Linalg conversion) compile the user's kernel with the
    installed triton-ascend on first access (for Ascend910B4). The launch itself ran
    in the interpreter; nothing here is computed unless asked for (a launch in a hot
    loop pays only for this record)."""

    def __init__(self, kernel: Any, dsl_kernel: TritonKernel, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        self._kernel, self._dsl_kernel, self._args, self._kwargs = kernel, dsl_kernel, args, \
            kwargs
        # the autotune config this launch ran (the prune may have kept another than
        # the first); Triton compiled its constexprs into the kernel
        self._config = (dsl_kernel.last_config or dsl_kernel.config) if dsl_kernel.configs \
            else None
        while not hasattr(kernel, "params") and hasattr(kernel, "fn"):  # autotune, heuristics
            kernel = kernel.fn
        self.jit_fn = kernel
        self.name = getattr(kernel, "__name__", "kernel")
        self._types: tuple[dict[str, str], dict[str, Any]] | None = None
        self._asm: _LazyAsm | None = None

    def _typed(self) -> tuple[dict[str, str], dict[str, Any]]:
        """Triton's (signature, constants) of the launch: every parameter's value with
        configs and heuristics applied, typed as Triton types them."""
        if self._types is None:
            from triton.runtime.jit import mangle_type

            arguments = self._dsl_kernel.bind_with_config(self._config, self._args,
                                                          self._kwargs)
            signature: dict[str, str] = {}
            constants: dict[str, Any] = {}
            for param in self.jit_fn.params:
                value = _unwrap_constexpr(arguments.get(param.name))
                if param.is_constexpr or value is None:
                    constants[param.name] = value
                else:
                    signature[param.name] = param.annotation_type or \
                        mangle_type(value, param.is_const)
            self._types = signature, constants
        return self._types

    @property
    def signature(self) -> dict[str, str]:
        return self._typed()[0]

    @property
    def constants(self) -> dict[str, Any]:
        return self._typed()[1]

    @property
    def asm(self) -> Mapping[str, str]:
        if self._asm is None:
            from dsl.backends import get_backend
            from dsl.targets import get_target

            self._asm = _LazyAsm(get_backend("hivm").triton_stages(
                self.jit_fn, self.signature, self.constants, get_target("Ascend910B4")))
        return self._asm

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        """``compiled[grid](*args)``, Triton's way to launch a compiled kernel again
        (triton-ascend's ``libentry`` does): another launch of the same kernel, in the
        interpreter. Given fewer arguments than the kernel has parameters, they are
        the compiled kernel's own (its ``signature``, in order), and the constexprs are
        this launch's, as they are compiled into Triton's kernel: an autotuned kernel
        runs the config of this launch again (no autotune, prune or hooks), and
        heuristics are not evaluated again."""
        launch = self._dsl_kernel.compiled_form()[grid]

        def relaunch(*args: Any, **kwargs: Any) -> None:
            if len(args) + len(kwargs) >= len(self.jit_fn.params):
                launch(*args, **kwargs)
                return
            given = {**dict(zip(self.signature, args)), **kwargs}
            launch(**{**{k: v for k, v in self.constants.items() if k not in given}, **given})

        return relaunch

    def _init_handles(self) -> None:
        """Triton loads the binary onto the device here (lightllm calls it after
        ``warmup``); off the device there is nothing to load."""

    def __repr__(self) -> str:
        return f"<launched Triton kernel {self.name} (ran in ascend-dsl's interpreter)>"


class _LazyAsm(Mapping[str, str]):
    def __init__(self, stages: dict[str, Callable[[], str]]) -> None:
        self.stages = stages

    def __getitem__(self, key: str) -> str:
        stage = self.stages.get(key)
        if stage is None:
            raise KeyError(f"{key!r}: off the device a launch has {sorted(self.stages)} "
                           "(Triton IR and its Linalg conversion), not the device binary")
        return stage()

    def __iter__(self) -> Iterator[str]:
        return iter(self.stages)

    def __len__(self) -> int:
        return len(self.stages)


def _patched_run(original: Callable[..., Any]) -> Callable[..., Any]:
    def run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
        if not _on_cpu(args, kwargs):
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        kernel = from_triton(self)
        try:
            if not warmup:
                kernel[grid if grid is not None else (1,)](*args, **kwargs)
            elif not kernel.configs:  # warmup compiles and checks, runs nothing
                kernel.prepare(args, kwargs, grid if grid is not None else (1,))
        except DSLCompileError as err:
            if type(err) is not DSLCompileError:  # a launch error stays a TypeError
                raise
            raise _as_triton_compilation_error(err) from None
        return LaunchedKernel(self, kernel, args, kwargs)
    run.__dsl_patched__ = True  # type: ignore[attr-defined]
    return run


_compilation_error_class: type[DSLCompileError] | None = None


def _triton_compilation_error_class() -> type[DSLCompileError]:
    """``TritonCompilationError``: both ``DSLCompileError`` and Triton's
    ``triton.compiler.errors.CompilationError``. Made on first use (this module does not
    import Triton before ``install``), and reachable as this module's attribute so that
    it pickles."""
    global _compilation_error_class
    if _compilation_error_class is None:
        from triton.compiler.errors import CompilationError

        class TritonCompilationError(DSLCompileError, CompilationError):
            """A kernel launched through Triton's API did not compile here."""

            def __init__(self, message: str, loc: Any = None, kernel: str | None = None) -> None:
                # not DSLCompileError.__init__: its super() call would reach Triton's
                self.message, self.loc, self.kernel = message, loc, kernel
                # Triton's own fields: no Python AST node here, the message says where
                self.src, self.node, self.error_message = None, None, message
                Exception.__init__(self, self._render())

            def __str__(self) -> str:
                return self._render()

            def __reduce__(self) -> tuple[Any, ...]:
                return type(self), (self.message, self.loc, self.kernel)

        TritonCompilationError.__module__ = __name__
        TritonCompilationError.__qualname__ = "TritonCompilationError"
        _compilation_error_class = TritonCompilationError
    return _compilation_error_class


def __getattr__(name: str) -> Any:
    if name == "TritonCompilationError":
        return _triton_compilation_error_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _as_triton_compilation_error(err: DSLCompileError) -> DSLCompileError:
    """``err`` as a ``TritonCompilationError``, with the same message and traceback.

    Triton wraps every error found while compiling a kernel in ``CompilationError``,
    and scripts test for that class (``pytest.raises(CompilationError, match=...)``);
    under the switch such a script sees the class it expects. The message stays this
    project's (source position, the line, the caret)."""
    converted = _triton_compilation_error_class()(err.message, err.loc, err.kernel)
    converted.__traceback__ = err.__traceback__
    return converted


def install() -> None:
    """Route every Triton launch on CPU tensors through this project's interpreter
    (``@triton.jit``, ``@triton.autotune`` and ``@triton.heuristics`` kernels alike).
    Idempotent."""
    from triton.runtime import autotuner
    from triton.runtime import jit as triton_jit
    for cls in (triton_jit.JITFunction, autotuner.Autotuner, autotuner.Heuristics):
        run = cls.run
        if not getattr(run, "__dsl_patched__", False):
            cls.run = _patched_run(run)
    allow_autotune_without_device()


def allow_autotune_without_device() -> None:
    """Let ``@triton.autotune`` be applied on a machine with no device driver, where
    Triton's own decorator fails ("0 active drivers") before ``from_triton`` could read
    its configs; with a driver nothing changes. Importing ``dsl`` arranges it for when
    Triton is loaded (``ascend_dsl_startup.after_triton_loads``). Idempotent."""
    from triton.runtime import autotuner
    init = autotuner.Autotuner.__init__
    if not getattr(init, "__dsl_patched__", False):
        autotuner.Autotuner.__init__ = _autotuner_init(init)


def _autotuner_init(original: Callable[..., Any]) -> Callable[..., Any]:
    """``@triton.autotune`` asks the active device driver for a benchmarker when it is
    applied; with no device there is none, and the configs are never benchmarked
    here (one stated config runs), so a stand-in that refuses to time is given."""
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("do_bench") is None:
            from triton.runtime import driver
            try:
                driver.active.get_benchmarker()
            except RuntimeError:  # no active driver: no device on this machine
                kwargs["do_bench"] = _no_benchmark
        original(self, *args, **kwargs)
    init.__dsl_patched__ = True  # type: ignore[attr-defined]
    return init


def _no_benchmark(*_: Any, **__: Any) -> Any:
    raise DSLLaunchError("autotune benchmarking needs a device; off the device one stated "
                         "config runs (dsl.from_triton(kernel, config=))")


after_triton_loads(allow_autotune_without_device)

__all__ = ["LaunchedKernel", "TritonKernel", "from_triton", "install", "next_power_of_2",
           "translate"]
