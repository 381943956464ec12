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

``JITFunction`` keeps one hot launcher per kernel (the last exact key that
repeated). The source defines two entry points over the same guard and plan:

- ``run(args, kwargs, grid)``, which ``JITFunction._launch`` tries before anything
  else: a call it does not fit returns False and takes the exact-key path unchanged,
  so a hot launcher can only skip work, never change a result;
- ``call(*args, **kwargs)``, what ``kernel[grid]`` returns for the launcher's own
  grid (``fits_grid``): the launch itself, with no closure made per ``kernel[grid]``,
  no wrapper call around the guard and no grid test (for a 1K-element vector add
  those were ~0.4 us of ~2.7). It first runs the kernel's test for rebound globals
  (``JITFunction._forget_if_rebound``, when it watches any), then falls back to the
  kernel's own path (``fallback``) when the kernel forgot its specializations since
  the launcher was made (its ``generation`` moved on: every launcher it ever made is
  then out of date, held ones included) or the guard fails.

Keys with NaN floats get no launcher: their exact-key path stays the only fast path.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from keyword import iskeyword
from typing import Any

import numpy as np

from dsl.launch_cache import Replay, int_grid
from dsl.options import environment_changed_test
from dsl.views import TORCH_DTYPES_NUMPY_LACKS, is_torch_tensor


@dataclass(frozen=True)
class HotLauncher:
    """A generated guard and replay for one exact call key (see the module doc)."""

    source: str  # the generated functions, for reading and debugging
    run: Callable[[tuple[Any, ...], dict[str, Any], Any], bool]  # False: not this key
    call: Callable[..., None]  # ``kernel[grid]`` for a grid that ``fits_grid``
    fits_grid: Callable[[Any], bool]


@dataclass(frozen=True)
class KernelHooks:
    """What a hot launcher's ``call`` needs of its kernel (``dsl.jit.JITFunction``)."""

    watched: dict[Any, Any]  # non-empty: ``forget_if_rebound`` must run at each launch
    forget_if_rebound: Callable[[], None]
    # ``[n]``: how many times the kernel forgot its specializations (a launcher made at
    # another count runs nothing: its plan may read what was rebound)
    generation: list[int]
    # ``kernel[grid](*args, **kwargs)`` on the kernel's own path, for a call ``call``
    # does not fit: (args, kwargs, grid, the launcher, not to be tried again)
    fallback: Callable[[tuple[Any, ...], dict[str, Any], Any, HotLauncher], None]


def hot_launcher(replay: Replay, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any,
                 planning: Callable[[], Any], kernel: KernelHooks,
                 on_run: Callable[[], None] | None = None) -> HotLauncher | None:
    """A launcher for calls with the exact key of ``(args, kwargs, grid)``, a call
    that has just run ``replay``; ``planning()`` is not None inside ``dsl.jit.planning()``.
    ``on_run`` (for tests) is called by each launch the launcher runs. None when the
    key has an argument the generated guard does not compare (a NaN, anything
    ``exact_call_key`` compares by hash only)."""
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
    lines: list[str] = []  # the guard and the plan, shared by ``run`` and ``call``

    def fail_if(condition: str) -> None:
        lines.append(f"    if {condition}:")
        lines.append(f"        {_FAIL}")

    # (``_entry_points`` binds a0, a1, ... to the call's arguments, in the key's order)
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
            # (a nested tensor's shape and a sparse one's strides raise: such a call
            # falls back to the full path, which names the argument)
            differs = (f"type({name}) is not K{i} or {name}.dtype is not D{i} "
                       f"or {name}.shape != {tuple(value.shape)!r} "
                       f"or {name}.stride() != {tuple(value.stride())!r} or not {name}.is_cpu")
            lines += ["    try:", f"        if {differs}:", f"            {_FAIL}",
                      "    except RuntimeError:", f"        {_FAIL}"]
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
                  "    except (TypeError, RuntimeError):", f"        {_FAIL}"]
    if replay.written_torch:  # a leaf requiring grad in grad mode: the full path refuses it
        constants["grad_enabled"] = sys.modules["torch"].is_grad_enabled
    for position in replay.written_torch:
        fail_if(f"{names[position]}.requires_grad and {names[position]}.is_leaf "
                "and grad_enabled()")
    for i, end in replay.reaches:
        fail_if(f"{buffers[i]}.shape[0] < {end}")
    array_pairs = []  # the pairs of two NumPy arrays, tested together
    for s, i in replay.pairs:
        a, b = (replay.sources[k][0] for k in (s, i))
        if type(values[a]) is np.ndarray and type(values[b]) is np.ndarray:
            array_pairs.append((s, i, a, b))
        else:
            fail_if(f"may_share({buffers[s]}, {buffers[i]})")
    if array_pairs:
        # Two arrays that each own their memory cannot share it (as in ``Replay``): the
        # memory is tested only when some array of a pair is a view or a pair is one
        # array. (A pair that shares memory passes that test, so one test for all pairs
        # fails exactly when one of them would.)
        views = dict.fromkeys(n for _, _, a, b in array_pairs for n in (names[a], names[b]))
        owners = [f"{n}.base is not None" for n in views]
        owners += [f"{names[a]} is {names[b]}" for _, _, a, b in array_pairs]
        shares = [f"may_share({buffers[s]}, {buffers[i]})" for s, i, _, _ in array_pairs]
        fail_if(f"({' or '.join(owners)}) and ({' or '.join(shares)})")
    # the plan itself, inline: its buffers b0, b1, ... are the recipe's tensors it picks
    lines += [f"    b{t} = {buffers[i]}" for t, i in enumerate(replay.picks)]
    if plan.setup:
        lines.append("    scalars = SCALARS")
    lines += plan.statements()
    # autograd sees the writes (``views.mark_written``, without its type test)
    if replay.written_torch:
        constants["increment_version"] = sys.modules["torch"].autograd.graph.increment_version
    lines += [f"    increment_version({names[p]})" for p in replay.written_torch]
    if on_run is not None:
        constants["ON_RUN"] = on_run
        lines.append("    ON_RUN()")
    source = _entry_points(lines, grid, bool(kernel.watched), len(args), list(kwargs))
    constants.update(WATCHED=kernel.watched, FORGET=kernel.forget_if_rebound,
                     FALLBACK=kernel.fallback, GENERATION=kernel.generation,
                     BORN=kernel.generation[0], MISSING=_MISSING,
                     GIVEN=_given)
    if set(constants) & set(plan.namespace):
        return None  # (the plan's globals are lower case: never met)
    namespace = {**plan.namespace, **constants}
    exec(compile(source, "<hot launcher>", "exec"), namespace)
    launcher = HotLauncher(source, namespace["run"], namespace["call"], namespace["fits_grid"])
    namespace["HOT"] = launcher
    return launcher


_FAIL = "<fail>"  # where the guard gives up, in the lines ``_entry_points`` renders
_MISSING = object()  # an argument ``call`` was not given
# names ``call`` uses besides those of the guard's lines
_CALL_NAMES = {"MISSING", "GENERATION", "BORN", "FALLBACK", "GIVEN", "HOT", "GRID", "WATCHED",
               "FORGET", "rest_", "more_"}


def _given(positional: tuple[Any, ...], rest: tuple[Any, ...], keywords: dict[str, Any],
           more: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments of a call to a ``call`` with named parameters, as ``(args,
    kwargs)``: those given of ``positional`` and ``keywords`` (not ``_MISSING``),
    then the others (``rest``, ``more``)."""
    return ((*(v for v in positional if v is not _MISSING), *rest),
            {**{k: v for k, v in keywords.items() if v is not _MISSING}, **more})


def _entry_points(lines: list[str], grid: Any, watched: bool, positional: int,
                  keywords: list[str]) -> str:
    """The source of ``fits_grid``, ``run`` and ``call`` around the guard and plan
    ``lines``, whose locals a0, a1, ... are the key's ``positional`` arguments and
    then its ``keywords`` arguments (see the module doc)."""
    if grid is None:
        fits = "grid is None"
    elif type(grid) is tuple:  # (2.0,) == (2,): only ints are a valid grid (tested
        # first: ``==`` on an array in a tuple would raise)
        fits = "".join(["type(grid) is tuple and len(grid) == ", str(len(grid)),
                        *(f" and type(grid[{i}]) is int" for i in range(len(grid))),
                        " and grid == GRID"])
    else:
        fits = "type(grid) is type(GRID) and grid == GRID"
    names = [f"a{i}" for i in range(positional + len(keywords))]
    unpack = [f"    {', '.join(names[:positional])}, = args"] if positional else []
    unpack += [f"    {name} = kwargs.get({keyword!r}, kwargs)"  # kwargs: absent
               for name, keyword in zip(names[positional:], keywords)]
    arity = f"len(args) != {positional} or len(kwargs) != {len(keywords)}"
    run = ["def run(args, kwargs, grid):", f"    if not ({fits}) or {arity}:",
           "        return False", *unpack,
           *(line.replace(_FAIL, "return False") for line in lines), "    return True"]
    used = set(re.findall(r"[A-Za-z_]\w*", "\n".join(lines))) | _CALL_NAMES | set(names)
    if all(k.isidentifier() and not iskeyword(k) and k not in used for k in keywords):
        # named parameters: Python binds the call's arguments, no tuple or dict is made
        # (a0, ... positional-only, so that a keyword of that name is not bound to one)
        given = [f"{name}=MISSING" for name in names[:positional]]
        signature = ", ".join([*given, "/"] if given else [])
        signature += (", " if signature else "") + ", ".join(
            ["*rest_", *(f"{k}=MISSING" for k in keywords), "**more_"])
        header = f"def call({signature}):"
        last = [names[positional - 1]] if positional else []
        unfit = " or ".join(["GENERATION[0] != BORN", "rest_", "more_",
                             *(f"{v} is MISSING" for v in [*last, *keywords])])
        in_order = f"({''.join(f'{n}, ' for n in names[:positional])})"
        named = f"{{{', '.join(f'{k!r}: {k}' for k in keywords)}}}"
        as_given = f"*GIVEN({in_order}, rest_, {named}, more_)"  # what the call gave
        bound = f"{in_order}, {named}"  # the same, once the call fits the signature
        binding = [f"    {n} = {k}" for n, k in zip(names[positional:], keywords)]
    else:  # a keyword that is no parameter name here: the arguments as they come
        header = "def call(*args, **kwargs):"
        unfit = f"GENERATION[0] != BORN or {arity}"
        as_given = bound = "args, kwargs"
        binding = unpack
    call = [header]
    if watched:  # the kernel read globals: a launch first tests that none was rebound
        call += ["    if WATCHED:", "        FORGET()"]
    call += [f"    if {unfit}:", f"        return FALLBACK({as_given}, GRID, HOT)", *binding,
             *(line.replace(_FAIL, f"return FALLBACK({bound}, GRID, HOT)") for line in lines)]
    return "\n".join(["def fits_grid(grid):", f"    return {fits}", "", *run, "", *call]) + "\n"
