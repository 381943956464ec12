"""The options record: every setting of the compiler and its backends, in one place.

``Options`` is frozen. ``Options.from_env()`` is the only place that reads the
environment, and it runs when a call needs options, never at import; nothing in
the project writes ``os.environ``. Pass a record per call to override it:

    opts = dsl.Options.from_env().replace(backend="compiled-cpu", dump_ir=True)
    kernel.launch(x, y, out, n, options=opts)

Environment variables (all optional):

- ``DSL_BACKEND``: execution mode of CPU launches, a backend name registered in
  ``lowering.backends`` (``interpreter``, ``compiled-cpu``,
  ``compiled-cpu-hfusion``); default ``interpreter``.
- ``DSL_INTERPRET=1``: force the NumPy interpreter, whatever else is asked for
  (NPU tensors included).
- ``DSL_DUMP_IR=1``: print the IR after each pass to stderr.
- ``DSL_VERIFY_PASSES=1``: verify the IR after it is built and after every pass, so
  that a broken invariant names the pass that broke it (the test suite sets it). By
  default the IR is verified once, after the last pass: each verification re-runs
  every op's typing rule, and seven of them were a fifth of a first launch.
- ``DSL_CACHE_DIR``: folder of generated sources, optimised IR, lowered kernels and
  shared objects; default ``~/.cache/ascend-dsl``.
- ``DSL_IR_CACHE=0``: do not keep or read the optimised IR of each specialization
  on disk (``dsl.ir_cache``; on by default).
- ``DSL_INTERPRETER_THREADS``: worker threads for independent chunks and
  programs; 0 or unset means one per core, at most 8; 1 runs on the calling thread.
- ``DSL_LLVM_ROOT``: the MLIR/LLVM 19 installation compiled-CPU mode uses; default
  ``/usr/lib/llvm-19``.
- ``DSL_TRITON_INTERPRET=1`` is not an option of this record: it is read once at
  start-up by ``ascend_dsl_startup`` (run by ``ascend_dsl_triton.pth``), which must
  not import the package; see ``dsl.triton_compat``.
- ``DSL_RACE_CHECK``: the interpreter's race detector. ``fast`` (the default):
  no two programs (or lanes of one block) store to one element in one store op.
  ``full``: also across store ops and loads, over the whole launch -- an element
  written by one program and written or read by another is a race (costs two int32
  arrays per stored tensor). ``0``/``off`` turns it off.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_LLVM_ROOT = Path("/usr/lib/llvm-19")
MAX_DEFAULT_WORKERS = 8


_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")


def _flag(value: str | None, name: str, default: bool = False) -> bool:
    """A boolean environment variable: unset or empty -> ``default``; 1/true/yes/on
    and 0/false/no/off in any case; anything else is an error naming the variable
    (``DSL_DUMP_IR=false`` turned the dump on)."""
    word = (value or "").strip().lower()
    if not word:
        return default
    if word in _ON:
        return True
    if word in _OFF:
        return False
    raise ValueError(f"{name} must be one of {', '.join(_ON + _OFF)} (any case), got {value!r}")


def _race_mode(value: str) -> str:
    """DSL_RACE_CHECK: unset or 1 -> fast, 0/off -> off, full -> full."""
    value = value.strip().lower()
    if value in ("", "1", "fast", "on"):
        return "fast"
    if value in ("0", "off"):
        return "off"
    if value == "full":
        return "full"
    raise ValueError(f"DSL_RACE_CHECK must be 0, 1, off, fast or full, got {value!r}")


# The environment variables ``Options.from_env`` reads.
ENVIRONMENT = ("DSL_BACKEND", "DSL_INTERPRET", "DSL_DUMP_IR", "DSL_CACHE_DIR",
               "DSL_INTERPRETER_THREADS", "DSL_LLVM_ROOT", "DSL_RACE_CHECK",
               "DSL_VERIFY_PASSES", "DSL_IR_CACHE")


@dataclass(frozen=True)
class Options:
    """Compiler and backend settings (see the module doc for the environment)."""

    backend: str = "interpreter"
    force_interpreter: bool = False
    dump_ir: bool = False
    cache_dir: Path | None = None  # None: ~/.cache/ascend-dsl
    interpreter_threads: int = 0  # 0: one per core, at most MAX_DEFAULT_WORKERS
    llvm_root: Path = DEFAULT_LLVM_ROOT
    race_check: str = "fast"  # "fast", "full" or "off" (see the module doc)
    verify_passes: bool = False  # verify the IR after every pass, not only the last
    ir_cache: bool = True  # keep each specialization's optimised IR on disk (dsl.ir_cache)

    def __post_init__(self) -> None:
        if not isinstance(self.backend, str) or not self.backend:
            raise ValueError(f"Options.backend must be a backend name, got {self.backend!r}")
        if not isinstance(self.interpreter_threads, int) or self.interpreter_threads < 0:
            raise ValueError("Options.interpreter_threads must be a non-negative integer, got "
                             f"{self.interpreter_threads!r}")
        for name in ("cache_dir", "llvm_root"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise ValueError(f"Options.{name} must be a path, got {value!r}")
        if self.cache_dir is not None and not isinstance(self.cache_dir, Path):
            object.__setattr__(self, "cache_dir", Path(self.cache_dir))
        if self.race_check not in ("fast", "full", "off"):
            raise ValueError(f"Options.race_check must be fast, full or off, got "
                             f"{self.race_check!r}")
        if not isinstance(self.llvm_root, Path):
            object.__setattr__(self, "llvm_root", Path(self.llvm_root))
        # every launch hashes its options into a cache key: hash the fields once
        object.__setattr__(self, "_hash", hash(dataclasses.astuple(self)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_hash"]  # string hashes differ between processes
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        object.__setattr__(self, "_hash", hash(dataclasses.astuple(self)))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Options:
        """The options the environment asks for (``os.environ`` unless given)."""
        env = os.environ if environ is None else environ
        # every launch asks: parse once per distinct set of values (a hashed, frozen
        # record also keys the launch caches)
        key = _environment_values(env)
        options = _FROM_ENV.get(key)
        if options is None:
            options = cls._parse(env)
            if len(_FROM_ENV) >= 16:
                _FROM_ENV.clear()
            _FROM_ENV[key] = options
        return options

    @classmethod
    def _parse(cls, env: Mapping[str, str]) -> Options:
        threads = env.get("DSL_INTERPRETER_THREADS", "").strip() or "0"
        try:
            thread_count = int(threads)
        except ValueError:
            thread_count = -1
        if thread_count < 0:
            raise ValueError(f"DSL_INTERPRETER_THREADS must be a non-negative integer (0: one "
                             f"thread per core), got {threads!r}") from None
        cache = env.get("DSL_CACHE_DIR")
        return cls(backend=env.get("DSL_BACKEND") or "interpreter",
                   force_interpreter=_flag(env.get("DSL_INTERPRET"), "DSL_INTERPRET"),
                   dump_ir=_flag(env.get("DSL_DUMP_IR"), "DSL_DUMP_IR"),
                   cache_dir=Path(cache) if cache else None,
                   interpreter_threads=thread_count,
                   llvm_root=Path(env.get("DSL_LLVM_ROOT") or DEFAULT_LLVM_ROOT),
                   race_check=_race_mode(env.get("DSL_RACE_CHECK", "")),
                   verify_passes=_flag(env.get("DSL_VERIFY_PASSES"), "DSL_VERIFY_PASSES"),
                   ir_cache=_flag(env.get("DSL_IR_CACHE"), "DSL_IR_CACHE", default=True))

    def replace(self, **changes: Any) -> Options:
        """A copy with ``changes`` applied (validated like a new record)."""
        return dataclasses.replace(self, **changes)

    @property
    def cache_root(self) -> Path:
        """The cache folder (``cache_dir`` or ``~/.cache/ascend-dsl``)."""
        return self.cache_dir or Path.home() / ".cache" / "ascend-dsl"

    @property
    def workers(self) -> int:
        """Worker threads to use (``interpreter_threads``, or one per core up to 8)."""
        return self.interpreter_threads or min(_cpu_count() or 1, MAX_DEFAULT_WORKERS)

    @property
    def execution_backend(self) -> str:
        """The backend a CPU launch runs on: the interpreter when forced."""
        return "interpreter" if self.force_interpreter else self.backend


# ``os.cpu_count`` reads the system's CPU list on each call (~8 us, a part of every
# interpreted launch): the count is read once per process
_cpu_count = functools.cache(os.cpu_count)

_FROM_ENV: dict[tuple[Any, ...], Options] = {}
_ENCODED = tuple(name.encode() for name in ENVIRONMENT)


def environment_changed_test() -> tuple[str, dict[str, Any]] | None:
    """For generated code (``dsl.hot_launch``): a Python condition that is true once
    the environment may give other options than it gives now, and the globals it
    uses (named ``ENV_*``); None where ``os.environ`` has no underlying bytes
    mapping. A variable set again to the value it had fails the condition too (the
    test is by identity, ~0.1 us for all of them): a caller then reads the options."""
    data = getattr(os.environ, "_data", None)
    if not isinstance(data, dict) or os.name != "posix":
        return None
    names: dict[str, Any] = {"ENV_OS": os, "ENV_ENVIRON": os.environ, "ENV_DATA": data}
    tests = ["ENV_OS.environ is not ENV_ENVIRON"]
    for i, name in enumerate(_ENCODED):
        value = data.get(name)
        if value is None:
            tests.append(f"{name!r} in ENV_DATA")
        else:
            names[f"ENV_{i}"] = value
            tests.append(f"ENV_DATA.get({name!r}) is not ENV_{i}")
    return " or ".join(tests), names


def _environment_values(env: Mapping[str, str]) -> tuple[Any, ...]:
    """The values of the ``ENVIRONMENT`` variables, as a key. ``os.environ`` is read
    through its underlying bytes mapping when CPython has one: each ``os.environ.get``
    encodes and decodes, which made this the largest part of a cached launch."""
    data = getattr(env, "_data", None) if env is os.environ else None
    if isinstance(data, dict) and os.name == "posix":
        return tuple(map(data.get, _ENCODED))  # map: no generator frame per name
    return tuple(env.get(name) for name in ENVIRONMENT)
