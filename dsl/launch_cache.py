"""Launch recipes: the host side of a repeated launch, without re-deriving it.

A launch first binds its arguments (signature, views, specializations), picks block
sizes, specializes the IR and checks the tensors (stored ones writeable and not
broadcast). All of that depends only on the *shape of the call*: which arguments
are given, each tensor's type, dtype, shape and strides, each scalar's type (and
int32 range), the constexpr values, the grid and the options. ``call_key`` reads
exactly those from a call in a few microseconds; the first launch with a key runs
the full path (``JITFunction._launch``) and leaves a ``LaunchRecipe``; later ones
run ``LaunchRecipe.prepare``, which only builds the views of this call's tensors,
checks what depends on their addresses (partial overlap of a stored tensor with
another argument) and converts the scalars.

A recipe also keeps *replays*: after a launch ran, the execution backend may offer
a plan that any launch with the same recipe, grid and scalar values may run
(``lowering.plan``; the interpreter offers one for flat kernels). Later calls then
compute ``replay_key`` (grid, scalars bit for bit) and run the plan straight from
their values (``direct``): no ``Launch`` and no views are built. A stored tensor
sharing memory with another argument, or a pointer-addressed tensor whose memory
ends before an access of the plan, sends the call down the full path.

A call the key cannot describe (an unhashable or unusual argument, a tensor on a
device, a kernel whose argument binding is customised) gets ``None`` and always
takes the full path, so the cache can only skip work, never change a result.
"""

from __future__ import annotations

import inspect
import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dsl.dtypes import DType, launch_int_dtype
from dsl.numerics import scalar_converter
from dsl.views import (
    TensorView,
    as_view,
    grad_leaf,
    is_torch_tensor,
    mark_written,
    partially_overlaps,
    to_numpy,
)

if TYPE_CHECKING:
    from dsl.ir import Function
    from dsl.jit import BoundTensor, Launch

# Recipes kept per kernel (most recent call shapes).
RECIPES_PER_KERNEL = 64

_SERIALS = itertools.count()

def _tensor_key(value: Any) -> tuple | None:
    """What a tensor argument contributes to the key (None: not cacheable)."""
    kind = type(value)
    if kind is np.ndarray:
        return (kind, value.dtype, value.shape, value.strides, value.flags.writeable)
    if kind is TensorView:
        return (kind, value.dtype, value.shape, value.strides, value.base,
                value.buffer.flags.writeable, value.buffer.dtype)
    if is_torch_tensor(value):
        if value.device.type != "cpu":
            return None
        try:
            return ("torch", value.dtype, tuple(value.shape), value.stride())
        except RuntimeError:  # a nested tensor has no shape (the launch names the problem)
            return None
    return None


def _runtime_key(value: Any) -> Any:
    """What a runtime (non-constexpr) argument contributes to the key."""
    kind = type(value)
    if kind is np.ndarray:
        return (kind, value.dtype, value.shape, value.strides, value.flags.writeable)
    if kind is bool or kind is float or value is None:
        return kind
    if kind is int:  # the scalar's type (None: no 64-bit type holds it, the full path refuses it)
        dtype = launch_int_dtype(value)
        return None if dtype is None else (int, dtype)
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return kind
    return _tensor_key(value)


@dataclass(frozen=True)
class CallShape:
    """How the positional and keyword arguments of one call map onto parameters."""

    names: tuple[str, ...]  # the parameter each given argument binds to, in order
    constexpr: tuple[bool, ...]  # per given argument
    defaults: tuple[tuple[str, Any], ...]  # parameters left to their defaults


def call_shape(params: list[inspect.Parameter], constexprs: frozenset[str],
               blocks: frozenset[str], positional: int, keywords: tuple[str, ...]
               ) -> CallShape | None:
    """The mapping for ``positional`` arguments and ``keywords``, or None when the
    call does not bind plainly (the full path then reports the error)."""
    if positional > len(params) or any(p.kind not in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            for p in params):
        return None
    names = [p.name for p in params[:positional]]
    known = {p.name for p in params}
    if any(k not in known or k in names for k in keywords):
        return None
    names += keywords
    given = set(names)
    defaults = []
    for p in params:
        if p.name in given:
            continue
        if p.default is inspect.Parameter.empty:
            if p.name in blocks:
                continue  # an open block size: chosen by the launcher
            return None
        defaults.append((p.name, p.default))
    return CallShape(tuple(names), tuple(n in constexprs for n in names), tuple(defaults))


def call_key(shape: CallShape, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple | None:
    """The key of a call with this call shape (None: not cacheable; an unhashable
    constexpr is found when the caller hashes the key)."""
    parts: list[Any] = []
    for value, constexpr in zip((*args, *kwargs.values()), shape.constexpr):
        if constexpr:
            parts.append(("c", type(value), value))
            continue
        kind = type(value)
        if kind is np.ndarray:  # the common case, inline: this runs on every call
            parts.append((kind, value.dtype, value.shape, value.strides,
                          value.flags.writeable))
            continue
        key = _runtime_key(value)
        if key is None:
            return None
        parts.append(key)
    return tuple(parts)  # JITFunction._recipe_key hashes the whole key once


def int_grid(grid: Any) -> bool:
    """Whether ``grid`` is an int or a tuple of ints, by exact type: ``(2.0,) == (2,)``
    and ``(True,) == (1,)`` as keys, but only the ints are valid grids, so the launch
    caches key other grids apart (or not at all)."""
    return type(grid) is int or (type(grid) is tuple and all(type(g) is int for g in grid))


def exact_call_key(args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any) -> tuple | None:
    """A key that fixes everything a replay depends on, read straight from a call:
    each NumPy array's dtype, shape, strides and writeability, each torch CPU
    tensor's ``_tensor_key``, each ``int``/``bool``/``str``/``None`` by value and
    each ``float`` by value and sign (0.0 and -0.0 differ; a NaN matches only
    itself), the keyword names and a grid given as an int or a tuple of them. It is at least
    as fine as the recipe key and the replay key together, so a call with a key seen
    before may run the replay that key's first call ran (``JITFunction._launch``'s
    hot path, one dict lookup instead of two keys). None for any other argument or
    grid: the call takes the recipe path (``int_grid``)."""
    if grid is not None and not int_grid(grid):
        return None
    parts: list[Any] = [grid, tuple(kwargs)]
    for value in (*args, *kwargs.values()):
        kind = type(value)
        if kind is np.ndarray:
            parts.append((value.dtype, value.shape, value.strides, value.flags.writeable))
        elif kind is int or kind is bool or kind is str or value is None:
            parts.append((kind, value))
        elif kind is float:
            parts.append((kind, value, math.copysign(1.0, value)))
        elif is_torch_tensor(value) and (key := _tensor_key(value)) is not None:
            parts.append(key)
        else:
            return None
    return tuple(parts)


@dataclass(frozen=True)
class TensorRecipe:
    """How to bind one tensor argument of a cached call."""

    name: str
    position: int  # among the call's given arguments
    stored: bool
    observed: bool  # possibly read by the kernel (``Function.tensors_observed``)
    through_pointers: bool
    torch: bool  # passed as a torch tensor (autograd is told about writes)
    contiguous_array: bool  # a C-contiguous NumPy array: its view is built inline
    scalar_array: bool  # a NumPy array whose elements are all one: likewise
    contiguous_tensor: bool  # a C-contiguous torch tensor: its buffer is read inline
    corner: tuple  # the slices that select a scalar array's element as a 1-element view
    dtype: DType
    shape: tuple[int, ...]
    view_strides: tuple[int, ...]  # element strides of the argument itself
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    base: int
    span: tuple[int, int]  # the kernel buffer: [lo, hi) of the view's buffer, from base

    def buffer_of(self, value: Any) -> np.ndarray:
        """The flat kernel buffer of this argument's ``value`` in a call with the
        recipe's key: for a pointer-addressed tensor, the memory a pointer to it may
        address (``TensorView.kernel_memory``), which depends on its allocation."""
        if self.contiguous_tensor:
            flat = to_numpy(value).reshape(-1)  # its elements, in order (as ``as_view``)
            if not self.through_pointers:
                return flat[self.span[0]:self.span[1]]
            storage = value.untyped_storage()
            if value.storage_offset() == 0 and storage.nbytes() == flat.nbytes:
                return flat  # all of its storage: what a pointer may reach
        if self.through_pointers:
            if self.contiguous_array and not isinstance(value.base, np.ndarray):
                # its own allocation (it owns its memory, or views a torch tensor's):
                # the memory a pointer may reach is all of it and no more
                return value.reshape(-1)
            return self.view_of(value).kernel_memory()
        if self.contiguous_array:  # fixed by the key: a C-contiguous NumPy array
            return value.reshape(-1)
        if self.scalar_array:  # a NumPy array broadcast from one element
            return value[self.corner].reshape(1)
        view = as_view(value)
        return view.buffer[view.base + self.span[0]:view.base + self.span[1]]

    def view_of(self, value: Any) -> TensorView:
        """The view of this argument's ``value`` in a call with the recipe's key."""
        if self.contiguous_array:
            return TensorView(value.reshape(-1), self.dtype, self.shape, self.view_strides, 0,
                              value)
        if self.scalar_array:
            return TensorView(value[self.corner].reshape(1), self.dtype, self.shape,
                              self.view_strides, 0, value)
        return as_view(value)


@dataclass(frozen=True)
class Replay:
    """A launch of one recipe and replay key, run straight from a call's values
    (``LaunchRecipe.direct``): the plan and what to pick from the call for it."""

    plan: Any  # a lowering.plan.Plan
    tensors: tuple[TensorRecipe, ...]  # the recipe's
    sources: tuple[tuple[int, TensorRecipe | None], ...]
    picks: tuple[int, ...]  # the tensor of each plan buffer, by index in ``tensors``
    reaches: tuple[tuple[int, int], ...]
    pairs: tuple[tuple[int, int], ...]
    scalars: tuple[tuple[int, Any], ...]
    written_torch: tuple[int, ...]  # positions of the stored torch tensors

    def scalar_values(self, values: tuple[Any, ...]) -> list[Any]:
        """The plan's scalar arguments for a call's values."""
        return [convert(values[position]) if position >= 0 else convert
                for position, convert in self.scalars]

    def __call__(self, values: tuple[Any, ...]) -> bool:
        """Run the plan for a call's positional then keyword values; False (nothing
        run) when the call needs the full path (see ``LaunchRecipe.direct``)."""
        sources = self.sources
        try:
            buffers = [values[p] if t is None else t.buffer_of(values[p]) for p, t in sources]
        except (TypeError, RuntimeError):
            # a tensor the key does not tell apart whose memory torch will not show
            # (its negative bit set): the full path names the argument
            return False
        for i, end in self.reaches:
            if buffers[i].shape[0] < end:
                return False
        for s, i in self.pairs:
            a, b = values[sources[s][0]], values[sources[i][0]]
            if type(a) is np.ndarray and type(b) is np.ndarray and a is not b \
                    and a.base is None and b.base is None:
                continue  # two arrays that each own their memory
            if np.may_share_memory(buffers[s], buffers[i]):
                return False
        for position in self.written_torch:
            if grad_leaf(values[position]):
                return False  # the full path refuses it
        self.plan.run(self.scalar_values(values), [buffers[i] for i in self.picks])
        for position in self.written_torch:  # autograd sees the writes
            mark_written(values[position])
        return True


@dataclass(frozen=True)
class LaunchRecipe:
    """A launch's host side for one call key (see the module doc)."""

    serial: int  # unique per recipe: names its layouts in proof hints
    function: Function
    grid: tuple[int, int, int] | None  # None: a callable grid, called per launch
    meta: dict[str, Any]  # the constexpr values (chosen block sizes too)
    tensors: tuple[TensorRecipe, ...]
    # per parameter of ``function``: ("tensor", name) | ("scalar", position, numpy type)
    # | ("fixed", value) (a hidden layout value, fixed by the key)
    runtime: tuple[tuple, ...]
    executor: Any  # the execution backend the key's options name
    # the stored tensors passed as torch tensors (autograd is told of their writes)
    written_torch: tuple[TensorRecipe, ...]
    # (position among the call's values, NumPy type) of each scalar parameter
    scalars: tuple[tuple[int, Any], ...]
    # the call's shape: which parameter each value binds to, and the defaults applied
    # (what a callable grid receives with ``meta``, as Triton passes every argument)
    shape: CallShape
    # replay_key -> a call that runs a launch with that key straight from the call's
    # values (``direct``), or None when the executor offered none for it
    replays: dict[tuple, Replay | None] = \
        field(default_factory=dict, compare=False, hash=False)

    def grid_meta(self, values: tuple[Any, ...]) -> dict[str, Any]:
        """A callable grid's argument for a call with ``values`` (``Binding.grid_meta``)."""
        return {**dict(self.shape.defaults), **dict(zip(self.shape.names, values)), **self.meta}

    def replay_key(self, values: tuple[Any, ...], grid: Any, kernel: Any) -> tuple:
        """What a launch's bounds proof depends on beyond the recipe's key, from the
        call's values: the grid and the scalar arguments bit for bit (the part of
        ``proof_hint`` a call without pointer-addressed tensors has)."""
        grid3 = self.grid if self.grid is not None else kernel.grid(grid, self.grid_meta(values))
        # a Python int is its own exact key (the type is fixed by the recipe's key);
        # anything else by the bits of its conversion (0.0 and -0.0 differ)
        return (grid3, *[value if type(value := values[position]) is int
                         else convert(value).tobytes() for position, convert in self.scalars])

    def direct(self, plan: Any) -> Replay | None:
        """A call that runs a launch of this recipe from the call's values with
        ``plan.run(scalars, buffers)`` (a ``lowering.plan.Plan``, whose ``params`` and
        ``tensors`` name positions in ``function.params``). The call returns False,
        running nothing, when a stored tensor shares memory with another argument
        (the full path then reports the overlap or interprets the alias), or when a
        pointer-addressed tensor's memory, which depends on its allocation, ends
        before an access of the plan (the full path then reports it). None when the
        plan reads a tensor as a scalar."""
        entries = [self.runtime[position] for _, position in plan.params]
        if any(entry[0] == "tensor" for entry in entries):
            return None
        tensors = self.tensors
        by_name = {t.name: i for i, t in enumerate(tensors)}
        stored = [i for i, t in enumerate(tensors) if t.stored]
        # the tensor each plan buffer is, by index among the tensors
        picks = tuple(by_name[self.runtime[position][1]] for position in plan.tensors)
        return Replay(
            plan=plan,
            tensors=tensors,
            # per tensor: (position, None) when its buffer is the argument itself (a
            # C-contiguous 1-D NumPy array), else (position, its recipe)
            sources=tuple((t.position, None if t.contiguous_array and not t.through_pointers
                           and len(t.shape) == 1 else t) for t in tensors),
            picks=picks,
            # (index among the tensors, elements the plan's accesses need) per pointer
            # tensor
            reaches=tuple((pick, end) for pick, end in zip(picks, plan.ends)
                          if tensors[pick].through_pointers),
            # (stored, other) pairs of tensor indices whose memory must not be shared
            pairs=tuple((s, i) for s in stored for i in range(len(tensors)) if i != s),
            # (position among the call's values, NumPy type), or (-1, value) for a
            # hidden layout parameter, which the key fixes
            scalars=tuple((entry[1], entry[2]) if entry[0] == "scalar" else (-1, entry[1])
                          for entry in entries),
            written_torch=tuple(t.position for t in self.written_torch))

    def prepare(self, kernel: Any, values: tuple[Any, ...], grid: Any) -> Launch:
        """The ``Launch`` of a call with this recipe's key, from the call's positional
        then keyword values."""
        from dsl.jit import BoundTensor, Launch

        bound: dict[str, BoundTensor] = {}
        for t in self.tensors:
            value = values[t.position]
            view = t.view_of(value)
            if t.through_pointers:
                buffer = view.kernel_memory()
            elif t.contiguous_array or t.scalar_array:
                buffer = view.buffer
            else:
                buffer = view.buffer[view.base + t.span[0]:view.base + t.span[1]]
            bound[t.name] = BoundTensor(t.name, view, buffer, t.sizes, t.strides, t.base)
        for t in self.tensors:
            if not t.stored:
                continue
            if t.torch and grad_leaf(values[t.position]):
                raise kernel.grad_leaf_error(t.name)
            for other in self.tensors:  # (as JITFunction.prepare_binding checks)
                if other is not t and other.observed and \
                        partially_overlaps(bound[t.name].view, bound[other.name].view):
                    raise kernel.overlap_error(t.name, other.name)
        runtime: list[Any] = []
        for entry in self.runtime:
            kind = entry[0]
            if kind == "tensor":
                runtime.append(bound[entry[1]])
            elif kind == "scalar":
                runtime.append(entry[2](values[entry[1]]))
            else:
                runtime.append(entry[1])
        grid3 = self.grid if self.grid is not None else kernel.grid(grid, self.grid_meta(values))
        return Launch(self.function, tuple(runtime), grid3, bound,
                      self.proof_hint(runtime, bound, grid3))

    def proof_hint(self, runtime: list[Any] | tuple[Any, ...], bound: dict[str, Any],
                   grid: tuple[int, int, int]) -> tuple:
        """What a launch's bounds proof depends on beyond this recipe's key (which
        fixes the specialization, every layout and tensor size): the scalar values
        bit for bit, the memory a pointer-addressed tensor spans, the grid."""
        hint: list[Any] = [self.serial, grid]
        hint.extend(bound[t.name].buffer.shape[0] for t in self.tensors if t.through_pointers)
        hint.extend(value.tobytes() for entry, value in zip(self.runtime, runtime)
                    if entry[0] == "scalar")
        return tuple(hint)


def build_recipe(shape: CallShape, launch_values: tuple[Any, ...], launch: Launch,
                 meta: dict[str, Any], grid: Any, torch_names: frozenset[str], executor: Any
                 ) -> LaunchRecipe | None:
    """The recipe of a launch the full path prepared, or None when a part of it is not
    fixed by the call key."""
    fn = launch.function
    positions = {name: i for i, name in enumerate(shape.names)}
    stored, observed = fn.tensors_written(), fn.tensors_observed()
    through = fn.tensors_through_pointers()
    tensors = []
    for name, t in launch.tensors.items():
        if name not in positions:
            return None
        view = t.view
        start = view.buffer.ctypes.data + view.base * view.buffer.itemsize
        lo = (t.buffer.ctypes.data - start) // view.buffer.itemsize if t.buffer.size else 0
        span = (lo, lo + t.buffer.size) if name not in through else (0, 0)
        value = launch_values[positions[name]]
        array = type(value) is np.ndarray and value.size > 0
        contiguous = array and value.flags.c_contiguous
        scalar = array and not contiguous and not any(value.strides)
        contiguous_tensor = is_torch_tensor(value) and view.numel > 0 and \
            to_numpy(value).flags.c_contiguous
        tensors.append(TensorRecipe(name, positions[name], name in stored, name in observed,
                                    name in through, name in torch_names, contiguous, scalar,
                                    contiguous_tensor,
                                    (slice(0, 1),) * value.ndim if scalar else (), view.dtype,
                                    view.shape, view.strides, t.sizes, t.strides, t.base,
                                    span))
    runtime: list[tuple] = []
    for param, value in zip(fn.params, launch.args):
        if param.role == "tensor":
            runtime.append(("tensor", param.user_name))
        elif param.role == "scalar":
            if param.user_name not in positions:
                return None
            runtime.append(("scalar", positions[param.user_name],
                            scalar_converter(param.value.dtype.np.type)))
        else:
            runtime.append(("fixed", value))
    fixed_grid = launch.grid if not callable(grid) else None
    return LaunchRecipe(next(_SERIALS), fn, fixed_grid, meta, tuple(tensors), tuple(runtime),
                        executor, tuple(t for t in tensors if t.stored and t.torch),
                        tuple((entry[1], entry[2]) for entry in runtime if entry[0] == "scalar"),
                        shape)
