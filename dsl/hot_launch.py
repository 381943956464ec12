"""Hot launchers: a kernel's most recent repeated call, as one generated function.

A cached launch (``dsl.launch_cache``) still builds the call's exact key (a tuple
read from every argument), hashes it, looks it up and then runs a ``Replay`` that
re-derives, per call, what its key already fixed (the scalar arguments' converted
values, which tensors may need the overlap test). For a small kernel that was most
of the call: a 1K-element vector add spent ~4 us of Python around a 0.5 us add.

``hot_launcher`` turns one exact key that ran a replay into straight-line Python
(``HotLauncher.source``), compiled once:

1. a guard that compares the call with the key, argument by argument -- the
   grid, the keyword names, each NumPy array's type, dtype, shape and strides (and
   a stored one's writeability), each ``int``/``bool``/``str``/``None`` by value and each ``float``
   by value and sign (as ``exact_call_key``), the environment variables the options
   are read from (``Options.from_env`` is a function of them) and that no
   ``dsl.jit.planning()`` block is recording -- returning False at the first difference;
2. the replay's own checks, spelled out for these arguments: each pointer-addressed
   tensor's memory reaching the plan's accesses, and a stored tensor sharing memory
   with another argument (skipped, as in ``Replay``, for two distinct arrays that
   each own their memory);
3. the plan's own statements (``Plan.statements``), inline, with the scalar
   values converted once, when the launcher was made.

A CPU torch tensor is compared by its exact type, dtype, shape, strides and
device (what ``exact_call_key`` fixes); its buffer comes from its recipe as on the
exact-key path (``Tensor.numpy()``, spelled out for a C-contiguous one), any overlap
with it is tested, and a stored one is marked written for autograd after the plan
ran (as ``views.mark_written`` does).

``JITFunction._launch`` keeps one hot launcher per kernel (the last exact key that
repeated) and tries it before anything else; a call it does not fit (False) takes
the exact-key path unchanged, so a hot launcher can only skip work, never change a
result. Keys with NaN floats get no launcher: their exact-key path stays the only
fast path.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsl.launch_cache import Replay, int_grid
from dsl.options import environment_changed_test
from dsl.views import TORCH_DTYPES_NUMPY_LACKS, is_torch_tensor


@dataclass(frozen=True)
class HotLauncher:
    """A generated guard and replay for one exact call key (see the module doc)."""

    source: str  # the generated function, for reading and debugging
    run: Callable[[tuple[Any, ...], dict[str, Any], Any], bool]


def hot_launcher(replay: Replay, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any,
                 planning: Callable[[], Any]) -> HotLauncher | None:
    """A launcher for calls with the exact key of ``(args, kwargs, grid)``, a call
    that has just run ``replay``; ``planning()`` is not None inside ``dsl.jit.planning()``.
    None when the key has an argument the generated guard does not compare (a NaN,
    anything ``exact_call_key`` compares by hash only)."""
    environment = environment_changed_test()
    if environment is None or (grid is not None and not int_grid(grid)):
        return None
    values = (*args, *kwargs.values())
    names = [f"a{i}" for i in range(len(values))]
    constants: dict[str, Any] = {
        "ndarray": np.ndarray, "copysign": math.copysign, "may_share": np.may_share_memory,
        "planning": planning, "GRID": grid, **environment[1],
        "SCALARS": replay.scalar_values(values),
    }
    plan = replay.plan
    stored = {t.position for t in replay.tensors if t.stored}
    lines = ["def hot(args, kwargs, grid):"]

    def fail_if(condition: str) -> None:
        lines.append(f"    if {condition}:")
        lines.append("        return False")

    fail_if(f"len(args) != {len(args)} or len(kwargs) != {len(kwargs)}")
    fail_if("grid is not None" if grid is None else "type(grid) is not type(GRID) or grid != GRID")
    if type(grid) is tuple and grid:  # (2.0,) == (2,): only ints are a valid grid
        fail_if(" or ".join(f"type(grid[{i}]) is not int" for i in range(len(grid))))
    if args:
        lines.append(f"    {', '.join(names[:len(args)])}, = args")
    for name, keyword in zip(names[len(args):], kwargs):
        lines.append(f"    {name} = kwargs.get({keyword!r}, kwargs)")  # kwargs: absent
    fail_if("planning() is not None")
    fail_if(environment[0])  # the options' variables as they were
    for i, (name, value) in enumerate(zip(names, values)):
        kind = type(value)
        if kind is np.ndarray:
            constants[f"D{i}"] = value.dtype
            fail_if(f"type({name}) is not ndarray or {name}.shape != {value.shape!r} "
                    f"or {name}.strides != {value.strides!r}")
            fail_if(f"{name}.dtype is not D{i} and {name}.dtype != D{i}")
            if i in stored:  # (a loaded array's replay is the same either way)
                fail_if(f"{name}.flags.writeable is not {value.flags.writeable}")
        elif kind is bool or value is None:
            fail_if(f"{name} is not {value!r}")
        elif kind is int or kind is str:
            fail_if(f"type({name}) is not {kind.__name__} or {name} != {value!r}")
        elif kind is float and not math.isnan(value):
            constants[f"F{i}"] = value
            fail_if(f"type({name}) is not float or {name} != F{i} "
                    f"or copysign(1.0, {name}) != {math.copysign(1.0, value)!r}")
        elif is_torch_tensor(value) and value.is_cpu:
            constants[f"K{i}"], constants[f"D{i}"] = kind, value.dtype
            fail_if(f"type({name}) is not K{i} or {name}.dtype is not D{i} "
                    f"or {name}.shape != {tuple(value.shape)!r} "
                    f"or {name}.stride() != {tuple(value.stride())!r} or not {name}.is_cpu")
        else:
            return None  # a NaN, a tensor elsewhere: the exact-key path only
    buffers = []  # per tensor of the recipe
    fetch: list[str] = []  # the lines that read the recipe's buffers
    for i, (position, recipe) in enumerate(replay.sources):
        if recipe is None:  # a C-contiguous 1-D array: its own buffer
            buffers.append(names[position])
            continue
        constants[f"T{i}"] = recipe
        buffers.append(f"c{i}")
        value, name = values[position], names[position]
        if not (recipe.contiguous_tensor and is_torch_tensor(value)) or \
                str(value.dtype) in TORCH_DTYPES_NUMPY_LACKS:
            fetch.append(f"    c{i} = T{i}.buffer_of({name})")
            continue
        # ``TensorRecipe.buffer_of`` of a C-contiguous torch tensor whose dtype NumPy
        # holds, spelled out (half its cost is the checks the guard made above)
        fetch.append(f"    c{i} = ({name}.numpy() if not {name}.requires_grad "
                     f"else {name}.detach().numpy()).reshape(-1)")
        if not recipe.through_pointers:
            if recipe.span != (0, value.numel()):
                fetch.append(f"    c{i} = c{i}[{recipe.span[0]}:{recipe.span[1]}]")
        else:  # all of its storage, or the general computation of what a pointer reaches
            fetch.append(f"    if {name}.storage_offset() != 0 or "
                         f"{name}.untyped_storage().nbytes() != c{i}.nbytes:")
            fetch.append(f"        c{i} = T{i}.buffer_of({name})")
    if fetch:
        # torch refuses ``numpy()`` of a tensor whose negative bit is set, which the
        # guard does not compare: such a call falls back, before anything runs, to the
        # full path, which names the argument
        lines += ["    try:", *("    " + line for line in fetch),
                  "    except (TypeError, RuntimeError):", "        return False"]
    if replay.written_torch:  # a leaf requiring grad in grad mode: the full path refuses it
        constants["grad_enabled"] = sys.modules["torch"].is_grad_enabled
    for position in replay.written_torch:
        fail_if(f"{names[position]}.requires_grad and {names[position]}.is_leaf "
                "and grad_enabled()")
    for i, end in replay.reaches:
        fail_if(f"{buffers[i]}.shape[0] < {end}")
    for s, i in replay.pairs:
        a, b = (replay.sources[k][0] for k in (s, i))
        overlap = f"may_share({buffers[s]}, {buffers[i]})"
        if type(values[a]) is np.ndarray and type(values[b]) is np.ndarray:
            # (two arrays that each own their memory cannot share it, as in ``Replay``)
            overlap = f"({names[a]} is {names[b]} or {names[a]}.base is not None " \
                f"or {names[b]}.base is not None) and {overlap}"
        fail_if(overlap)
    # the plan itself, inline: its buffers b0, b1, ... are the recipe's tensors it picks
    lines += [f"    b{t} = {buffers[i]}" for t, i in enumerate(replay.picks)]
    if plan.setup:
        lines.append("    scalars = SCALARS")
    lines += plan.statements()
    # autograd sees the writes (``views.mark_written``, without its type test)
    if replay.written_torch:
        constants["increment_version"] = sys.modules["torch"].autograd.graph.increment_version
    lines += [f"    increment_version({names[p]})" for p in replay.written_torch]
    lines.append("    return True")
    source = "\n".join(lines) + "\n"
    if set(constants) & set(plan.namespace):
        return None  # (the plan's globals are lower case: never met)
    namespace = {**plan.namespace, **constants}
    exec(compile(source, "<hot launcher>", "exec"), namespace)
    return HotLauncher(source, namespace["hot"])
