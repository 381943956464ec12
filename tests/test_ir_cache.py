"""The on-disk IR cache (dsl.ir_cache): a second process reads each specialization's
optimised IR instead of building it, and reads it only when everything the build read
is unchanged; damaged entries, values without a fingerprint and the off switch build
as before. Each run is a child process with its own cache folder, as a user's script
running twice; the child reports how many IRs it built and the kernel's output."""

from __future__ import annotations

import importlib
import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dsl
from dsl import ir_cache
from dsl.dtypes import ALL_DTYPES
from dsl.frontend import ConstSpec, KernelSource
from dsl.ir import format_function

REPO = Path(__file__).resolve().parent.parent

# The child: imports the kernel module from its folder, counts builds, launches
# ``run(np_x)`` (which the module defines) and prints {"built": n, "out": [...]}.
CHILD = textwrap.dedent("""
    import importlib, json, sys
    import numpy as np
    jit = importlib.import_module("dsl.jit")
    built = []
    original = jit.build_ir
    def counting(*args, **kwargs):
        built.append(args[0].name)
        return original(*args, **kwargs)
    jit.build_ir = counting
    sys.path.insert(0, sys.argv[1])
    module = importlib.import_module(sys.argv[2])
    x = np.arange(1, 9, dtype=np.float32)
    out = module.run(x)
    print(json.dumps({"built": built, "out": [float(v) for v in out]}))
""")


def run_child(folder: Path, module: str, cache: Path, **env: str) -> dict:
    script = folder / "child_main.py"
    script.write_text(CHILD)
    environ = dict(os.environ, DSL_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1",
                   PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
                   **env)
    done = subprocess.run([sys.executable, str(script), str(folder), module], env=environ,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "ir").glob("*/*.ir"))


SCALED = """
import numpy as np
import dsl
from helpers import twice
import settings

SCALE = {scale}


@dsl.jit
def scaled(x, out, n, BLOCK: dsl.constexpr):
    offs = dsl.program_id(0) * BLOCK + dsl.arange(0, BLOCK)
    mask = offs < n
    v = dsl.load(x, offs, mask=mask)
    dsl.store(out, offs, twice(v) * SCALE + settings.SHIFT, mask=mask)


def run(x):
    out = np.zeros_like(x)
    scaled[(1,)](x, out, x.size, BLOCK=8)
    return out
"""

HELPER = """
import dsl


@dsl.jit
def twice(v):
    return v {op} v
"""


def _write(folder: Path, scale: float = 2.0, op: str = "+", shift: float = 0.5) -> None:
    (folder / "scaled_kernel.py").write_text(SCALED.format(scale=scale))
    (folder / "helpers.py").write_text(HELPER.format(op=op))
    (folder / "settings.py").write_text(f"SHIFT = {shift}\n")


def _expected(scale: float = 2.0, op: str = "+", shift: float = 0.5) -> list[float]:
    x = np.arange(1, 9, dtype=np.float32)
    twice = x + x if op == "+" else x * x
    return [float(v) for v in twice * np.float32(scale) + np.float32(shift)]


def test_second_process_reads_the_ir_instead_of_building_it(tmp_path):
    _write(tmp_path)
    cache = tmp_path / "cache"
    first = run_child(tmp_path, "scaled_kernel", cache)
    assert first["built"] == ["scaled"] and first["out"] == _expected()
    assert len(entries(cache)) == 1
    second = run_child(tmp_path, "scaled_kernel", cache)
    assert second["built"] == [] and second["out"] == _expected()


@pytest.mark.parametrize("change", ["global", "helper", "module attribute"])
def test_a_changed_read_builds_again(tmp_path, change):
    """A global the kernel reads, an inlined helper's text, or an attribute of a
    module the kernel reads, changed between runs: the entry is not used."""
    _write(tmp_path)
    cache = tmp_path / "cache"
    assert run_child(tmp_path, "scaled_kernel", cache)["built"] == ["scaled"]
    changed = {"global": {"scale": 3.0}, "helper": {"op": "*"},
               "module attribute": {"shift": -1.0}}[change]
    _write(tmp_path, **changed)
    again = run_child(tmp_path, "scaled_kernel", cache)
    assert again["built"] == ["scaled"], "a stale entry was used"
    assert again["out"] == _expected(**changed)
    # and the entry written by that build serves the next run
    assert run_child(tmp_path, "scaled_kernel", cache)["built"] == []


def test_damaged_entry_is_a_miss(tmp_path):
    _write(tmp_path)
    cache = tmp_path / "cache"
    run_child(tmp_path, "scaled_kernel", cache)
    [entry] = entries(cache)
    data = bytearray(entry.read_bytes())
    data[-5] ^= 0xFF
    entry.write_bytes(bytes(data))
    again = run_child(tmp_path, "scaled_kernel", cache)
    assert again["built"] == ["scaled"] and again["out"] == _expected()
    entry.write_bytes(b"")  # truncated
    assert run_child(tmp_path, "scaled_kernel", cache)["built"] == ["scaled"]


def test_switched_off_writes_nothing(tmp_path):
    _write(tmp_path)
    cache = tmp_path / "cache"
    for _ in range(2):
        done = run_child(tmp_path, "scaled_kernel", cache, DSL_IR_CACHE="0")
        assert done["built"] == ["scaled"] and done["out"] == _expected()
    assert entries(cache) == []


UNFINGERPRINTED = """
import numpy as np
import dsl
from dsl.frontend import constexpr_function

OFFSETS = np.array([1.0, 2.0])  # an array: no fingerprint proves it unchanged


@constexpr_function
def pick(i):
    return float(OFFSETS[i])


@dsl.jit
def shifted(x, out, n, BLOCK: dsl.constexpr):
    offs = dsl.arange(0, BLOCK)
    mask = offs < n
    dsl.store(out, offs, dsl.load(x, offs, mask=mask) + pick(1), mask=mask)


def run(x):
    out = np.zeros_like(x)
    shifted[(1,)](x, out, x.size, BLOCK=8)
    return out
"""


def test_a_read_without_fingerprint_is_not_stored(tmp_path):
    """A user's compile-time function reads a NumPy array: the build is not cached."""
    (tmp_path / "unfingerprinted.py").write_text(UNFINGERPRINTED)
    cache = tmp_path / "cache"
    for _ in range(2):
        done = run_child(tmp_path, "unfingerprinted", cache)
        assert done["built"] == ["shifted"]
        assert done["out"] == [float(v) + 2.0 for v in range(1, 9)]
    assert entries(cache) == []


TRITON_STYLE = """
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)
"""


def test_reads_of_a_triton_kernel_are_what_its_text_names(tmp_path, kernel_from_source):
    pytest.importorskip("triton")
    kernel, _ = kernel_from_source("add_one", TRITON_STYLE)
    kern = dsl.from_triton(kernel)
    src: KernelSource = kern.source
    reads = ir_cache.Reads(src)
    x = np.arange(4, dtype=np.float32)
    specs, _ = kern.bind((x, np.zeros_like(x), 4), {"BLOCK": 4})
    dsl_jit = __import__("importlib").import_module("dsl.jit")
    dsl_jit.build_ir(src, specs, reads=reads)
    paths = {path for owner, path, _ in reads.entries}
    assert reads.cacheable
    assert paths == {("tl",), ("tl", "program_id"), ("tl", "arange"), ("tl", "load"),
                     ("tl", "store")}
    assert ir_cache.unchanged(src, tuple(reads.entries))
    # the same entries, with one fingerprint altered, no longer match
    owner, path, fingerprint = reads.entries[0]
    assert not ir_cache.unchanged(src, ((owner, path, ("module", "elsewhere")),))


def test_flatten_round_trip_prints_the_same_ir(kernel_from_source):
    kernel, _ = kernel_from_source("add_one", TRITON_STYLE.replace("add_one", "add_one"))
    x = np.arange(16, dtype=np.float32)
    fn = dsl.from_triton(kernel).ir(x, np.zeros_like(x), 16, BLOCK=8)
    again = ir_cache.unflatten(pickle.loads(pickle.dumps(ir_cache.flatten(fn))))
    assert format_function(again) == format_function(fn)
    assert again is not fn and again.params[0].value is not fn.params[0].value
    # the dtypes read back are the module's own objects, as in a freshly built IR
    dtypes = {id(d) for d in ALL_DTYPES}
    assert all(id(r.type.dtype) in dtypes for op in again.walk() for r in op.results)


def test_fingerprints_tell_values_apart():
    assert ir_cache.fingerprint(1) != ir_cache.fingerprint(True)
    assert ir_cache.fingerprint(0.0) != ir_cache.fingerprint(-0.0)
    assert ir_cache.fingerprint((1, 2)) != ir_cache.fingerprint([1, 2])
    assert ir_cache.fingerprint(dsl.float16) != ir_cache.fingerprint(dsl.bfloat16)
    assert ir_cache.fingerprint(np.exp) == ("ref", "numpy", "exp")
    with pytest.raises(ir_cache.Uncacheable):
        ir_cache.fingerprint(np.zeros(2))
    with pytest.raises(ir_cache.Uncacheable):
        ir_cache.fingerprint(lambda v: v)
    with pytest.raises(ir_cache.Uncacheable):
        ir_cache.fingerprint(object())
    with pytest.raises(ir_cache.Uncacheable):
        ir_cache._spec_fingerprint(ConstSpec(np.zeros(2)))
    # a module or class is known by name where its attribute reads are recorded (a
    # global); given as a constexpr argument its reads go through a parameter
    assert ir_cache.fingerprint(np) == ("module", "numpy")
    for by_parameter in (np, ConstSpec, (1, np)):
        with pytest.raises(ir_cache.Uncacheable):
            ir_cache._spec_fingerprint(ConstSpec(by_parameter))


class _NoRepr:
    """A value whose repr fails (fingerprinting must not break the launch)."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_a_value_that_cannot_be_fingerprinted_never_breaks_a_build(tmp_path,
                                                                     kernel_from_source):
    kernel, _ = kernel_from_source("add_one", TRITON_STYLE)
    src = dsl.from_triton(kernel).source
    reads = ir_cache.Reads(src)
    reads.record(src, ("TOKEN",), _NoRepr())
    assert not reads.cacheable
    built = []
    options = dsl.Options(cache_dir=tmp_path)

    def build(recorder):
        built.append(recorder)
        return dsl.from_triton(kernel).ir(np.zeros(8, np.float32), np.zeros(8, np.float32),
                                          8, BLOCK=8)

    specs = {"BLOCK": ConstSpec(_NoRepr())}
    fn, _ = ir_cache.load_or_build(src, specs, options, build)
    # built (its reads recorded for ``dsl.jit``'s watch), not stored
    assert fn is not None and len(built) == 1 and isinstance(built[0], ir_cache.Reads)
    assert not (tmp_path / "ir").exists()


REBOUND = textwrap.dedent('''
    import dsl

    SHIFT = 4.0


    @dsl.jit
    def plus_one(v):
        return v + 1.0


    @dsl.jit
    def shifted(x, out, N: dsl.constexpr):
        i = dsl.arange(0, N)
        dsl.store(out, i, plus_one(dsl.load(x, i)) + SHIFT)
''')


@pytest.mark.parametrize("cache", ["0", "1"])
def test_rebinding_a_global_or_helper_is_seen_by_the_next_launch(tmp_path, monkeypatch,
                                                                 kernel_from_source, cache):
    """A module-level constant or helper rebound after a kernel's first launch kept its
    old value for that kernel in the process (its specialization, launch recipe and
    hot launcher were reused), while a new specialization saw the new one: one kernel,
    two answers (found in session 19). A launch now forgets the kernel's builds when a
    name it read outside itself means another object."""
    monkeypatch.setenv("DSL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DSL_IR_CACHE", cache)
    kernel, _ = kernel_from_source("shifted", REBOUND)
    scope = kernel.fn.__globals__
    x = np.zeros(8, np.float32)

    def launch(indexed: bool = True) -> float:
        out = np.zeros(8, np.float32)
        (kernel[(1,)] if indexed else kernel)(x, out, N=8)
        return float(out[0])

    assert [launch() for _ in range(3)] == [5.0] * 3  # the third through the hot launcher
    scope["SHIFT"] = 10.0
    assert [launch(), launch(), launch(indexed=False)] == [11.0] * 3

    @dsl.jit
    def plus_hundred(v):
        return v + 100.0

    scope["plus_one"] = plus_hundred
    assert [launch(), launch(indexed=False)] == [110.0] * 2
    assert "value=100.0" in format_function(kernel.ir(x, np.zeros(8, np.float32), N=8))
    wide = np.zeros(8, np.float64)
    kernel[(1,)](np.zeros(8, np.float64), wide, N=8)
    assert wide[0] == 110.0
    scope["SHIFT"] = 10.0  # an equal value in a new object: built again, same answer
    assert launch() == 110.0


def test_a_held_hot_launch_sees_a_rebound_global(tmp_path, monkeypatch, kernel_from_source):
    """``kernel[grid]`` of a hot kernel is its hot launcher's own launch, which a caller
    may keep: it must not run the plan its kernel forgot, whether it is the launch that
    finds the global rebound or another launch of the kernel found it first."""
    monkeypatch.setenv("DSL_CACHE_DIR", str(tmp_path / "cache"))
    kernel, _ = kernel_from_source("shifted", REBOUND)
    scope = kernel.fn.__globals__
    x = np.zeros(8, np.float32)

    def through(launch) -> float:
        out = np.zeros(8, np.float32)
        launch(x, out, N=8)
        return float(out[0])

    def held() -> object:
        assert [through(kernel[(1,)]) for _ in range(3)] == [through(kernel[(1,)])] * 3
        launch = kernel[(1,)]
        assert launch is kernel._hot.call, "the key repeated: indexing gives its launch"
        return launch

    first = held()
    scope["SHIFT"] = 10.0
    assert through(first) == 11.0  # this launch finds the rebound global
    second = held()
    scope["SHIFT"] = 20.0
    assert through(kernel) == 21.0  # another launch finds it
    assert through(second) == 21.0 and through(first) == 21.0


def test_a_held_hot_launch_the_kernel_no_longer_remembers_sees_a_rebound_global(
        tmp_path, monkeypatch, kernel_from_source):
    """A held launch whose key the kernel has since dropped (it remembers
    ``RECIPES_PER_KERNEL`` keys) must not run its plan once a global it read is rebound
    (it did: only the launchers of remembered keys were told, found in session 28)."""
    monkeypatch.setenv("DSL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(importlib.import_module("dsl.jit"), "RECIPES_PER_KERNEL", 2)
    kernel, _ = kernel_from_source("shifted", REBOUND)
    x = np.zeros(8, np.float32)

    def through(launch, n: int = 8) -> float:
        out = np.zeros(n, np.float32)
        launch(np.zeros(n, np.float32) if n != 8 else x, out, N=n)
        return float(out[0])

    assert [through(kernel[(1,)]) for _ in range(3)] == [5.0] * 3
    held = kernel[(1,)]
    assert held is kernel._hot.call
    for n in (16, 32, 64):  # other keys, each hot in turn: the first is dropped
        assert [through(kernel[(1,)], n) for _ in range(3)] == [5.0] * 3
    assert all(entry.hot is False or entry.hot.call is not held
               for entry in kernel._exact_replays.values())
    kernel.fn.__globals__["SHIFT"] = 10.0
    assert through(held) == 11.0


CONTAINERS = textwrap.dedent('''
    import dsl

    SCALE = [2.0]
    TABLE = {"shift": 4.0}


    @dsl.jit
    def scaled(x, out, N: dsl.constexpr):
        i = dsl.arange(0, N)
        dsl.store(out, i, dsl.load(x, i) * SCALE[0] + TABLE["shift"])
''')


@pytest.mark.parametrize("cache", ["0", "1"])
def test_a_global_container_changed_in_place_is_seen_by_the_next_launch(
        tmp_path, monkeypatch, kernel_from_source, cache):
    """A module-level list (fingerprinted by its elements) or dict (no fingerprint: the
    build is not stored) changed in place after the kernel's first launches kept its
    old value for that kernel, while a fresh ``dsl.jit`` of the function saw the new
    one (the helper hunt of session 26): the watch compared the name's object by
    identity, and a build with a read lacking a fingerprint was not watched at all."""
    monkeypatch.setenv("DSL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DSL_IR_CACHE", cache)
    kernel, _ = kernel_from_source("scaled", CONTAINERS)
    scope = kernel.fn.__globals__
    x = np.ones(8, np.float32)

    def launch() -> float:
        out = np.zeros(8, np.float32)
        kernel[(1,)](x, out, N=8)
        return float(out[0])

    assert [launch() for _ in range(3)] == [6.0] * 3  # the third through the hot launcher
    scope["SCALE"][0] = 3.0
    assert [launch() for _ in range(3)] == [7.0] * 3
    scope["TABLE"]["shift"] = 10.0
    assert [launch() for _ in range(3)] == [13.0] * 3
    scope["TABLE"] = {"shift": 0.5}  # rebound: no fingerprint, watched all the same
    assert launch() == 3.5
    fresh = dsl.jit(kernel.fn)
    out = np.zeros(8, np.float32)
    fresh[(1,)](x, out, N=8)
    assert out[0] == 3.5


def test_the_contents_watch_survives_odd_containers(tmp_path, monkeypatch, kernel_from_source):
    """An element whose ``==`` is elementwise (an array) and a list that comes to hold
    itself: the launch goes on (built again), never raising from the watch."""
    monkeypatch.setenv("DSL_CACHE_DIR", str(tmp_path / "cache"))
    kernel, _ = kernel_from_source("scaled", CONTAINERS)
    scope = kernel.fn.__globals__
    scope["SCALE"].append(np.ones(2))
    x = np.ones(8, np.float32)

    def launch() -> float:
        out = np.zeros(8, np.float32)
        kernel[(1,)](x, out, N=8)
        return float(out[0])

    assert [launch() for _ in range(3)] == [6.0] * 3
    scope["SCALE"][1] = np.zeros(2)
    assert launch() == 6.0
    scope["SCALE"][0] = 3.0
    scope["SCALE"].append(scope["SCALE"])
    assert launch() == 7.0
