"""The on-disk IR cache: each specialization's front end runs once per machine.

Tracing a kernel into IR and optimising it (``dsl.frontend.build_ir`` and
``dsl.passes.optimize``) is most of a first launch, and a process paid it again for
every specialization, every run of a script. ``load_or_build`` keeps the optimised
IR of each specialization under ``<cache root>/ir/`` (``Options.cache_root``) and a
later process reads it back instead of building it.

A hit must give exactly the IR a build would give. The front end's result depends
on the project, the kernel's text, the specialization and the values the kernel's
names resolve to outside it; the cache checks all of them:

- the file name of an entry (``specialization_key``) is a SHA-256 over the project
  (path, size and modification time of every module of the ``dsl`` and ``lowering``
  packages; the versions of Python, NumPy and, for a kernel written against
  ``triton.language``, Triton), the kernel's own text (file, position, source,
  parameter defaults) and each parameter's spec (constexpr values fingerprinted);
- the entry holds, beside the IR, every read the build made from outside the
  kernel (``Reads``, recorded by ``dsl.frontend`` as it resolves them): each name
  found in a closure, the globals or the builtins, each attribute chain read from
  one, in the kernel and in every helper it inlines, with the value's fingerprint.
  A load resolves each again (``resolve``, the front end's rules) and uses the
  entry only when every fingerprint is unchanged (``unchanged``). The build reads
  the same values in the same order, so it would trace the same IR: the cache can
  only skip work, never change a result.

``fingerprint`` knows plain values (numbers, strings, None, tuples of them), modules
and classes (by name: a kernel can only read their attributes, which are recorded),
dtypes, kernels (their text), and functions of the project, NumPy, Python and Triton
(by module and qualified name: their versions are in the key). Anything else (an
array, an instance of a user's class, a user's plain function run at compile time)
has no fingerprint that proves it unchanged: such a build is not stored, and builds
in every process as before.

An entry is the flattened IR (``flatten``: values numbered in definition order,
ops as kind, operand and result numbers, attributes, location and regions),
pickled behind a SHA-256 of the payload and written atomically
(``dsl.diskcache``). A truncated, edited or unreadable entry reads as a miss; the
IR is checked against the build's reads before use. Entries are pickles: like any compile cache
(Triton's loads shared objects from its own), the folder must be trusted. Errors
are never cached: a kernel that fails to compile fails in every process.
``DSL_IR_CACHE=0`` (``Options.ir_cache``) turns the cache off; ``DSL_DUMP_IR`` bypasses
it, so that the dump shows every pass.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
import pickle
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dsl import diskcache
from dsl.dtypes import DType
from dsl.frontend import (
    ConstSpec,
    InlinableKernel,
    KernelSource,
    ScalarSpec,
    TensorSpec,
    Unresolved,
    Unsupported,
)
from dsl.ir import Block, Function, IRVerificationError, Op, Param, Value, format_function, verify
from dsl.options import Options

FORMAT = b"ascend-dsl-ir 1\n"
_DIGEST_BYTES = 32

# Modules whose functions and classes are fingerprinted by name: the project's own
# (its files are in the key) and libraries whose versions are in the key.
_NAMED_MODULES = ("dsl", "lowering", "triton", "numpy", "math", "builtins", "operator")

_PLAIN = (type(None), bool, int, float, complex, str, bytes)


class Uncacheable(Exception):
    """Something the kernel reads has no fingerprint; it is built in memory."""


# ----------------------------------------------------------------------------- entry point


def load_or_build(src: KernelSource, specs: dict[str, Any], options: Options,
                  build: Callable[[Reads], Function]) -> tuple[Function, tuple | None]:
    """The optimised IR of ``src`` under ``specs``: read from the cache when its entry
    is there and everything its build read is unchanged, else ``build(reads)`` (which
    passes ``reads`` to ``dsl.frontend.build_ir``) and stored when it can be. Also
    returns the reads (``Reads.entries``: the entry's on a hit; ``Reads.watched``
    when some read has no fingerprint), which ``dsl.jit`` watches (``watch``)."""
    try:
        key = specialization_key(src, specs) if options.ir_cache and not options.dump_ir \
            else None
    except Exception:  # noqa: BLE001 - Uncacheable, or a value whose repr or hash fails:
        key = None  # the cache never stands between a kernel and its launch
    path = None if key is None else options.cache_root / "ir" / key[:2] / f"{key}.ir"
    if path is not None:
        found = load(path, src, verify_ir=options.verify_passes)
        if found is not None:
            return found
    reads = Reads(src)
    fn = build(reads)
    if not reads.cacheable:
        return fn, tuple(reads.watched)  # (watched, not stored)
    if path is not None and store(path, fn, reads.entries) and options.verify_passes:
        check_round_trip(fn)
    return fn, tuple(reads.entries)


def check_round_trip(fn: Function) -> None:
    """Raise ``IRVerificationError`` unless ``fn`` flattened, pickled, read back and
    rebuilt prints exactly as ``fn`` does (run with ``DSL_VERIFY_PASSES``, so the
    test suite checks every IR it stores)."""
    flat = flatten(fn)
    again = unflatten(pickle.loads(pickle.dumps(flat, protocol=pickle.HIGHEST_PROTOCOL)))
    verify(again)
    if format_function(again) != format_function(fn) or \
            [(p.role, p.user_name, p.of, p.dim) for p in again.params] != \
            [(p.role, p.user_name, p.of, p.dim) for p in fn.params]:
        raise IRVerificationError(f"the on-disk form of {fn.name} does not read back as "
                                  "the same IR")


def load(path: Path, src: KernelSource, verify_ir: bool = True
         ) -> tuple[Function, tuple] | None:
    """The IR stored at ``path`` and its build's reads, when those still resolve to
    the same values from ``src``; None when not (or missing, damaged, another
    format). The IR is verified when ``verify_ir`` (``DSL_VERIFY_PASSES``, which the
    test suite sets: a build verifies its IR once in any case, and the entry is that
    IR)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(FORMAT) + _DIGEST_BYTES
    if not data.startswith(FORMAT) or len(data) <= head:
        return None
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(FORMAT):head]:
        return None
    try:
        entries, flat = pickle.loads(payload)  # noqa: S301 - the project's own cache folder
        if not unchanged(src, entries):
            return None
        fn = unflatten(flat)
        if verify_ir:
            verify(fn)
    except Exception:  # noqa: BLE001 - a damaged or stale entry is a miss, never a failure
        return None
    return fn, tuple(entries)


def store(path: Path, fn: Function, entries: tuple = ()) -> bool:
    """Write ``fn`` and the reads its build made to ``path``; False when it cannot be
    flattened or written (the cache is an optimisation: a launch never fails for it)."""
    flat = flatten(fn)
    if flat is None:
        return False
    try:
        payload = pickle.dumps((tuple(entries), flat), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - an attribute pickle cannot write: not cached
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        diskcache.write_atomic(path, FORMAT + hashlib.sha256(payload).digest() + payload)
    except OSError:
        return False
    return True


# ----------------------------------------------------------------------------- the key


def specialization_key(src: KernelSource, specs: dict[str, Any]) -> str:
    """The file name of ``src``'s entry under ``specs``: the project, the kernel's
    source and the specialization (what the build reads from outside is checked
    against the entry, ``unchanged``); raises ``Uncacheable`` for a constexpr value
    without a fingerprint."""
    parts: list[Any] = [project_fingerprint()]
    if src.triton:
        triton = sys.modules.get("triton")
        parts.append(("triton", getattr(triton, "__version__", None)))
    parts.append(tuple((name, _spec_fingerprint(spec)) for name, spec in specs.items()))
    parts.append(kernel_fingerprint(src))
    return hashlib.sha256(repr(parts).encode()).hexdigest()


_PROJECT: list[str] = []


def project_fingerprint() -> str:
    """The project's modules (path, size, mtime) and the interpreter's and NumPy's
    versions, hashed once per process."""
    if not _PROJECT:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        entries: list[tuple[str, int, int]] = []
        for package in ("dsl", "lowering"):
            with os.scandir(os.path.join(root, package)) as listing:
                for entry in listing:
                    if entry.name.endswith(".py"):
                        stat = entry.stat()
                        entries.append((f"{package}/{entry.name}", stat.st_size,
                                        stat.st_mtime_ns))
        record = (sys.version, np.__version__, FORMAT, sorted(entries))
        _PROJECT.append(hashlib.sha256(repr(record).encode()).hexdigest())
    return _PROJECT[0]


def _spec_fingerprint(spec: Any) -> Any:
    if isinstance(spec, TensorSpec):
        return ("tensor", repr(spec.dtype), repr(spec.layout), spec.rank)
    if isinstance(spec, ScalarSpec):
        return ("scalar", repr(spec.dtype))
    if isinstance(spec, ConstSpec):
        return ("const", fingerprint(spec.value, by_name=False))
    raise Uncacheable(f"spec {spec!r}")


def kernel_fingerprint(src: KernelSource) -> Any:
    """A kernel's own text: file, position, name, source and its parameters' defaults
    (what it reads from outside is recorded per build, ``Reads``)."""
    found = getattr(src.tree, "_dsl_fingerprint", None)
    if found is None:
        text = src.text or ast.dump(src.tree, include_attributes=True)
        found = ("kernel", src.file, src.line_offset, src.col_offset, src.name, src.triton,
                 hashlib.sha256(text.encode()).hexdigest())
        src.tree._dsl_fingerprint = found  # type: ignore[attr-defined]
    defaults = tuple((p.name, fingerprint(p.default, by_name=False)) for p in src.params
                     if p.default is not inspect.Parameter.empty)
    return (*found, defaults)


# ----------------------------------------------------------------------------- reads


class Reads:
    """What one build read from outside the kernel, as the front end resolved it.

    ``dsl.frontend`` calls ``enter(src)`` for each function it traces (the kernel,
    inlined helpers, combine functions) and ``record(src, path, value)`` for each
    name it resolves outside the function's scope (``("BLOCK",)``) and each attribute
    chain read from such a name (``("tl", "float32")``). An entry is ``(owner,
    path, fingerprint)``: ``owner`` is the chain of recorded paths from the kernel to
    the helper whose globals ``path`` resolves in (``()`` for the kernel itself). A
    helper reached in any other way, or a value without a fingerprint, makes the
    build uncacheable; ``watched`` still lists every read whose owner is known (a
    value without a fingerprint with None for it), for ``watch``."""

    def __init__(self, root: KernelSource) -> None:
        self.owners: dict[int, tuple] = {id(root): ()}
        self.entries: list[tuple] = []
        self.watched: list[tuple] = []
        self.seen: set[tuple] = set()
        self.cacheable = True

    def enter(self, src: KernelSource) -> None:
        if id(src) not in self.owners:
            self.cacheable = False  # a helper not reached through a recorded name

    def record(self, src: KernelSource, path: tuple[str, ...], value: Any) -> None:
        owner = self.owners.get(id(src))
        if owner is None:
            self.cacheable = False
            return
        if isinstance(value, InlinableKernel):
            self.owners.setdefault(id(value.source), (*owner, path))
        if (owner, path) in self.seen:
            return
        self.seen.add((owner, path))
        try:
            entry = (owner, path, fingerprint(value))
        except Exception:  # noqa: BLE001 - Uncacheable, or a repr that fails: the build
            self.cacheable = False  # goes on, uncached (and watched all the same)
            entry = (owner, path, None)
        self.watched.append(entry)
        if self.cacheable:
            self.entries.append(entry)


def unchanged(src: KernelSource, entries: tuple) -> bool:
    """True when every recorded read resolves, from ``src`` now, to a value with the
    recorded fingerprint."""
    owners: dict[tuple, KernelSource] = {(): src}
    for owner, path, recorded in entries:
        where = owners.get(owner)
        if where is None:
            where = _owner(src, owner)
            if where is None:
                return False
            owners[owner] = where
        try:
            if fingerprint(resolve(where, path)) != recorded:
                return False
        except Uncacheable:
            return False
    return True


_ABSENT = object()  # what a watched name resolves to once it is gone


def watch(src: KernelSource, entries: tuple
          ) -> dict[tuple, tuple[Callable[[], Any], Any]]:
    """For a build's reads (``Reads.entries``) from ``src``: one ``(read, seen)`` pair
    per name or attribute chain whose value the user's code may rebind (a module-level
    constant, a helper kernel, an attribute of the user's own module), keyed by the
    function reading it and the path, with ``read()`` giving what it is now and
    ``seen`` what the build found; the same object means the same IR. Reads rooted in
    the project, NumPy, Triton, ``math`` or the builtins are left out (their modules
    are in the cache key, and they are not rebound)."""
    pairs: dict[tuple, tuple[Callable[[], Any], Any]] = {}
    for owner, path, _ in entries:
        where = _owner(src, owner)
        if where is None:
            continue
        read = _reader(where.fn, path)
        if read is None:
            continue
        if isinstance(read(), _CONTAINERS):
            by_contents = _contents_reader(read)
            try:
                pairs[(id(where.fn), path)] = (by_contents, by_contents())
                continue
            except Exception:  # noqa: BLE001 - a container holding itself: by identity
                pass
        pairs[(id(where.fn), path)] = (read, read())
    return pairs


# Containers a kernel may read elements of (``SCALE[0]``) and the user's code may change
# in place: watched by their contents as well as their identity (``Contents``).
_CONTAINERS = (list, dict, set, bytearray)


@dataclass(frozen=True, eq=False)
class Contents:
    """A watched container and a snapshot of what it held: equal to another when both
    are the same object holding the same elements (by identity, then equality, as
    tuples compare), so an in-place change (``SCALE[0] = 3.0``) counts as a change."""

    obj: Any
    snapshot: Any

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Contents) and self.obj is other.obj and \
            self.snapshot == other.snapshot

    __hash__ = None  # type: ignore[assignment]


def _snapshot(obj: Any) -> Any:
    """``obj``'s elements, nested containers included, as a tuple of values."""
    if isinstance(obj, (list, tuple)):
        return (type(obj), tuple(_snapshot(v) for v in obj))
    if isinstance(obj, dict):
        return (dict, tuple((k, _snapshot(v)) for k, v in obj.items()))
    if isinstance(obj, (set, frozenset)):
        return (type(obj), frozenset(obj))
    if isinstance(obj, bytearray):
        return (bytearray, bytes(obj))
    return (type(obj), obj)


def _contents_reader(read: Callable[[], Any]) -> Callable[[], Contents]:
    def read_contents() -> Contents:
        obj = read()
        return Contents(obj, _snapshot(obj))
    return read_contents


# Values a build depends on by type and value alone: another object equal to the one
# seen, of the same types (``_snapshot``), builds the same IR (a property that makes
# a new float per read must not rebuild the kernel on every launch).
_VALUE_TYPES = (int, float, bool, str, bytes, complex, tuple, type(None))


def changed(read: Callable[[], Any], seen: Any) -> bool:
    """Whether a watched read (``watch``) now gives something other than ``seen``: a
    container by identity and contents, a plain value by type and value, anything
    else by identity."""
    try:
        now = read()
        if type(seen) is Contents:
            return bool(now != seen)
        if now is seen:
            return False
        if type(now) is not type(seen) or type(now) not in _VALUE_TYPES:
            return True
        return bool(_snapshot(now) != _snapshot(seen))
    except Exception:  # noqa: BLE001 - elements whose == fails (arrays), a container
        return True  # now holding itself: a change (the kernel is built again)


def _reader(fn: Callable[..., Any], path: tuple[str, ...]) -> Callable[[], Any] | None:
    """A function reading ``path`` as ``fn``'s code would (closure cell, then
    globals), without the front end's translations; None for a read not worth
    watching (see ``watch``)."""
    name, attrs = path[0], path[1:]
    cell = None
    if fn.__closure__:
        cell = dict(zip(fn.__code__.co_freevars, fn.__closure__)).get(name)
    scope = fn.__globals__
    if cell is None and name not in scope:
        return None  # a builtin
    root = cell.cell_contents if cell is not None else scope[name]
    if isinstance(root, types.ModuleType) and root.__name__.split(".")[0] in _NAMED_MODULES:
        return None

    def read() -> Any:
        if cell is None:
            obj = scope.get(name, _ABSENT)
        else:
            try:
                obj = cell.cell_contents
            except ValueError:  # emptied
                return _ABSENT
        for attr in attrs:
            obj = getattr(obj, attr, _ABSENT)
        return obj
    return read


def _owner(src: KernelSource, chain: tuple) -> KernelSource | None:
    for path in chain:
        obj = resolve(src, path)
        if not isinstance(obj, InlinableKernel):
            return None
        src = obj.source
    return src


def resolve(src: KernelSource, path: tuple[str, ...]) -> Any:
    """What the front end finds for ``path`` from ``src``'s function now: the root by
    ``KernelSource.resolve_name``, then attributes through modules, classes and dtypes
    by ``KernelSource.resolve_attribute`` (the front end's own rules)."""
    try:
        obj = src.resolve_name(path[0])
        for attr in path[1:]:
            if not (inspect.ismodule(obj) or isinstance(obj, (DType, type))):
                raise Uncacheable(f"attribute {attr!r} of {type(obj).__name__}")
            obj = src.resolve_attribute(obj, attr)
    except Unresolved as exc:
        raise Uncacheable(str(exc)) from None
    return obj



def fingerprint(obj: Any, by_name: bool = True) -> Any:
    """A value that is equal for two objects only when the front end treats them
    alike; raises ``Uncacheable`` for an object it cannot vouch for. A kernel's is its
    own text (its reads are recorded separately); a module or class is its name, as
    a kernel can only read its attributes and those reads are recorded when it is
    reached through a global name. A module or class given as an argument or a
    default (``by_name=False``) is read through a parameter, which is not recorded:
    it has no fingerprint."""
    if isinstance(obj, _PLAIN):
        return (type(obj).__name__, repr(obj))
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__, tuple(fingerprint(item, by_name) for item in obj))
    if isinstance(obj, (types.ModuleType, type)) and not by_name:
        raise Uncacheable(f"{getattr(obj, '__name__', 'a module or class')} as an argument")
    if isinstance(obj, types.ModuleType):
        return ("module", obj.__name__)
    if isinstance(obj, (DType, Unsupported)):
        return ("object", repr(obj))
    if isinstance(obj, InlinableKernel):
        return kernel_fingerprint(obj.source)
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<locals>" not in qualname:
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            return ("class", module, qualname)  # only its attributes are read: recorded
        if callable(obj) and module.split(".")[0] in _NAMED_MODULES:
            return ("ref", module, qualname)
    raise Uncacheable(f"a {type(obj).__name__} object")


# ----------------------------------------------------------------------------- flattening


def flatten(fn: Function) -> tuple | None:
    """``fn`` as plain data (values numbered in definition order), or None when an
    attribute holds IR objects."""
    numbers: dict[int, int] = {}
    types_: list[Any] = []
    names: list[str | None] = []

    def define(value: Value) -> int:
        numbers[id(value)] = len(types_)
        types_.append(value.type)
        names.append(value.name)
        return numbers[id(value)]

    def block(b: Block) -> tuple:
        args = tuple(define(a) for a in b.args)
        ops = []
        for op in b.ops:
            if _holds_ir(op.attrs):
                raise Uncacheable(f"{op.kind} attributes")
            operands = tuple(numbers[id(v)] for v in op.operands)
            results = tuple(define(r) for r in op.results)
            regions = tuple(block(r) for r in op.regions)
            ops.append((op.kind, operands, results, op.attrs, op.loc, regions))
        return args, tuple(ops)

    try:
        body = block(fn.body)
        params = tuple((numbers[id(p.value)], p.role, p.user_name, p.of, p.dim)
                       for p in fn.params)
    except (Uncacheable, KeyError):  # KeyError: a value used before its definition
        return None
    return (fn.name, fn.source_file, fn.specialization, fn.grid_use, tuple(types_),
            tuple(names), params, body)


def unflatten(flat: tuple) -> Function:
    """The ``Function`` ``flatten`` gave ``flat`` for (fresh values and use lists)."""
    name, source_file, specialization, grid_use, value_types, names, params, body = flat
    values = [Value(t, n) for t, n in zip(value_types, names)]

    def block(data: tuple) -> Block:
        args, ops = data
        out = Block([values[a] for a in args], [])
        for kind, operands, results, attrs, loc, regions in ops:
            op = Op(kind, [values[i] for i in operands], [values[i] for i in results],
                    attrs, loc, [block(r) for r in regions])
            for result in op.results:
                result.owner = op
            out.ops.append(op)
        return out

    fn_body = block(body)
    fn_params = [Param(values[v], role, user_name, of, dim)
                 for v, role, user_name, of, dim in params]
    return Function(name, fn_params, fn_body, source_file, specialization, grid_use)


def _holds_ir(value: Any) -> bool:
    if isinstance(value, (Value, Op, Block, Function)):
        return True
    if isinstance(value, dict):
        return any(_holds_ir(v) for v in value.values())
    if isinstance(value, (tuple, list, set, frozenset)):
        return any(_holds_ir(v) for v in value)
    return False


__all__ = ["load_or_build", "watch", "specialization_key", "fingerprint", "flatten", "unflatten",
           "load", "store", "Reads", "unchanged", "resolve", "Uncacheable"]
