"""The compile driver: specialized IR -> Triton source -> TTIR -> Linalg -> HIVM.

Stages (each timed, each failure reported with its stage name and, where the
toolchain gives a location in the generated file, the user's kernel line):

1. ``triton``: ``lowering.triton_codegen`` writes the source, content-addressed,
   into the cache folder (``Options.cache_root``: ``DSL_CACHE_DIR``, default
   ``~/.cache/ascend-dsl``) and
   imports it (``triton.jit`` needs a real file).
2. ``ttir``: triton-ascend's ``ASTSource.make_ir`` and ``make_ttir``.
3. ``linalg``: triton-ascend's ``ttir_to_linalg`` (runs ``triton-adapter-opt``).
4. ``hivm``: ``bishengir-compile`` (ascendnpu-ir) in a fresh temp folder with
   ``--save-temps``. Without CANN it exits 1 with "External hivmc run fails" after
   writing ``module.hivm.opt.mlir``: that file is the stage's output. A real error
   (for example a UB overflow) leaves no such file.
5. ``npubin``: CANN's ``hivmc``; only on an Ascend host, reported as skipped here.

Before stage 2 the UB need of the specialization is estimated
(``lowering.ub``); a kernel that would overflow the target's UB is refused with
the project's own error, never sent to the backend. After stage 4 the real UB use
is read off the HIVM.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from dsl import diskcache
from dsl.errors import DSLError, SourceLoc
from dsl.ir import Function
from dsl.options import Options
from dsl.targets import Target
from lowering import ub
from lowering.toolrun import LoweringError, ToolchainMissing, failure_text, quoted, run_tool, workdir
from lowering.triton_codegen import FP8_REFUSAL, OFFSETS_REFUSED, GeneratedKernel, fp8_use, generate

__all__ = ["LoweringError", "ToolchainMissing", "LoweredKernel", "StageReport", "lower",
           "compile_triton", "run_bishengir", "toolchain", "toolchain_versions", "cache_dir",
           "write_source", "import_kernel", "user_location", "TritonFrontEnd"]


@dataclass
class StageReport:
    name: str
    ok: bool
    seconds: float
    size: int  # characters of the stage's output
    note: str = ""


@dataclass
class LoweredKernel:
    """Every stage's output for one specialization on one target."""

    name: str
    target: Target
    generated: GeneratedKernel
    ttir: str
    linalg: str
    hivm: str
    stages: list[StageReport]
    ub_estimate_bytes: int
    ub_measured_bytes: int
    ub_capacity_bytes: int
    source_path: Path
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def triton(self) -> str:
        return self.generated.source

    def stage_table(self) -> str:
        """The stages as a table: stage, ok, time, size."""
        cached = not self.extra.get("compiled_now", True)
        rows = [f"{'stage':<8} {'ok':<4} {'time':>17} {'size':>10}  note"]
        if cached:
            rows.insert(0, "(served from the on-disk cache: each time, marked cached, is the "
                           "one the compile that stored it measured)")
        for s in self.stages:
            time = f"{'cached ' if cached else ''}{s.seconds * 1e3:.1f}ms"
            rows.append(f"{s.name:<8} {'yes' if s.ok else 'no':<4} {time:>17} "
                        f"{s.size:>10}  {s.note}")
        return "\n".join(rows)

    def ub_report(self) -> str:
        est, real, cap = self.ub_estimate_bytes, self.ub_measured_bytes, self.ub_capacity_bytes
        ratio = f"{est / real:.2f}x" if real else "n/a"
        kind = self.extra.get("ub_estimate_kind", "compiled")
        trust = "from two probe compiles" if kind == "calibrated" else \
            ("not sure before compiling, so compiled to find out; the static liveness "
             f"model said {self.extra.get('ub_static_estimate', '?')} B")
        others = "; ".join(f"{name} {used} of {capacity} B" for name, (used, capacity)
                           in ub.memory_use(self.hivm).items() if name != "UB")
        return (f"UB: estimate {est} B ({trust}), measured {real} B (high-water mark of UB "
                f"pointer_casts), capacity {cap} B; estimate/measured {ratio}"
                + (f"; Cube unit: {others}" if others else ""))


def cache_dir(options: Options | None = None) -> Path:
    """The cache folder the options name (``DSL_CACHE_DIR`` when none are given)."""
    return (options or Options.from_env()).cache_root


def toolchain() -> tuple[Any, Path]:
    """(triton-ascend backend class, bishengir-compile path); ToolchainMissing if absent."""
    try:
        import triton.backends as backends

        backend = backends.backends["ascend"].compiler
    except Exception as exc:  # ImportError, KeyError: not installed or broken
        raise ToolchainMissing("toolchain", f"triton-ascend is not usable ({exc}); install "
                               "the 'npu' extra: pip install '.[npu]'") from None
    spec = importlib.util.find_spec("ascendnpuir")
    if spec is None or not spec.submodule_search_locations:
        raise ToolchainMissing("toolchain", "ascendnpu-ir is not installed; install the 'npu' "
                               "extra: pip install '.[npu]'")
    compiler = Path(list(spec.submodule_search_locations)[0]) / "bin" / "bishengir-compile"
    if not compiler.exists():
        raise ToolchainMissing("toolchain", f"bishengir-compile not found at {compiler}")
    return backend, compiler


def toolchain_versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for dist in ("triton-ascend", "ascendnpu-ir"):
        try:
            parts.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist}=missing")
    return ",".join(parts)


def write_source(kernel: GeneratedKernel, root: Path) -> Path:
    """Write the generated source content-addressed (atomically); return its path."""
    folder = diskcache.cache_folder(root, "triton")
    path = folder / f"{kernel.name}_{kernel.digest[:20]}.py"
    try:
        current = path.read_bytes()
    except OSError:
        current = None
    if current != kernel.source.encode():  # (missing, stale or damaged: written again)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(kernel.source.encode())
        os.replace(tmp, path)
    return path


def import_kernel(path: Path, name: str) -> Any:
    module_name = f"ascend_dsl_generated_{path.stem}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return getattr(module, name)


_LOC = re.compile(r'loc\("([^"]+)":(\d+):(\d+)\)')
# an MLIR tool's diagnostic: "FILE:LINE:COL: error: ..."
_DIAGNOSTIC = re.compile(r'^([^\s"]+\.py):(\d+):(\d+): (?:error|note|warning):', re.MULTILINE)


def user_location(text: str, kernel: GeneratedKernel, path: Path) -> SourceLoc | None:
    """The user's source line for the first location in ``text`` that points into the
    generated file."""
    for file, line, _col in _LOC.findall(text) + _DIAGNOSTIC.findall(text):
        if Path(file).name == path.name:
            return kernel.line_map.get(int(line))
    match = re.search(r"\bat (\d+):(\d+):", text)  # Triton's CompilationError, from the def
    if match:
        return kernel.line_map.get(kernel.def_line + int(match.group(1)) - 1)
    return None


def lower(fn: Function, target: Target, root: Path | None = None,
          ub_estimate: int | None = None) -> LoweredKernel:
    """Run every stage up to HIVM for a specialized kernel on ``target``.

    ``ub_estimate`` (bytes) is checked against the target's UB before anything is
    sent to the backend; without it the static liveness estimate is used."""
    if not target.lowerable:
        raise LoweringError("target", f"{target.name} cannot be lowered with this toolchain "
                            f"({target.source})")
    toolchain()
    fp8 = fp8_use(fn)
    if fp8 is not None:
        raise LoweringError("ttir", f"kernel '{fn.name}' cannot be lowered: {fp8}, and "
                            f"{FP8_REFUSAL}")
    root = root or cache_dir()
    stages: list[StageReport] = []

    live = ub.static_estimate(fn)
    estimate = live.bytes if ub_estimate is None else ub_estimate
    capacity = target.ub_bytes or 0
    if ub_estimate is not None and capacity and estimate > capacity:
        # a calibrated estimate (measured at two blocks) is trusted to refuse
        raise ub.UBOverflowError(fn.name, target, estimate, None, live)
    # The static liveness estimate is not (0.1x to 5x off on 2-D tiles): bishengir
    # decides, and an overflow it reports becomes the same clean error.
    try:
        kernel, path, (ttir, linalg, hivm) = retry_with_guarded_offsets(
            lambda guarded: _generate_and_compile(fn, guarded, target, stages, root))
    except LoweringError as err:
        overflow = ub.reported_overflow(str(err))
        if overflow is None:
            raise
        memory, needed, available = overflow
        raise ub.UBOverflowError(fn.name, target, needed, None, live, measured=True,
                                 loc=err.loc, memory=memory, capacity=available) from None
    measured = ub.measured_bytes(hivm)
    capacity = ub.capacity_bytes(hivm) or capacity
    if ub_estimate is None:
        # Not sure before compiling, so compiled to find out: the estimate is what
        # bishengir planned; the static model's figure is kept for comparison.
        return LoweredKernel(fn.name, target, kernel, ttir, linalg, hivm, stages, measured,
                             measured, capacity, path,
                             {"ub_estimate_kind": "compiled", "ub_static_estimate": estimate})
    return LoweredKernel(fn.name, target, kernel, ttir, linalg, hivm, stages, estimate, measured,
                         capacity, path, {"ub_estimate_kind": "calibrated"})


T = TypeVar("T")


def retry_with_guarded_offsets(attempt: Callable[[bool], T]) -> T:
    """``attempt(False)``, compiling the kernel as generated; after triton-ascend's
    refusal of offsets below 0 in masked-off lanes or of a zero stride
    (``OFFSETS_REFUSED``), ``attempt(True)``, compiling it generated with masked
    offsets guarded (``generate(masked_offsets_guarded=True)``)."""
    try:
        return attempt(False)
    except LoweringError as err:
        if not any(refusal in str(err) for refusal in OFFSETS_REFUSED):
            raise
        return attempt(True)


def _generate_and_compile(fn: Function, masked_offsets_guarded: bool, target: Any,
                          stages: list[StageReport], root: Path
                          ) -> tuple[GeneratedKernel, Path, tuple[str, str, str]]:
    """The kernel's Triton source (``triton_codegen.generate``), written and compiled
    to (ttir, linalg, hivm)."""
    start = time.perf_counter()
    kernel = generate(fn, masked_offsets_guarded=masked_offsets_guarded)
    path = write_source(kernel, root)
    jit_fn = import_kernel(path, kernel.name)
    stages.append(StageReport("triton", True, time.perf_counter() - start, len(kernel.source)))
    return kernel, path, compile_triton(jit_fn, kernel.signature, {}, target, stages, kernel,
                                        path)


class TritonFrontEnd:
    """triton-ascend's front end for one ``triton.jit`` function and target kind:
    backend, options and metadata, and ``run`` for timed stages whose failures
    become ``LoweringError``s mapped to the user's line (through ``locate``)."""

    def __init__(self, jit_fn: Any, signature: dict[str, str], constants: dict[str, Any],
                 gpu_target: Any, stages: list[StageReport], digest: str,
                 extra_metadata: dict[str, Any] | None = None,
                 locate: Any = lambda text: None,
                 option_defaults: dict[str, Any] | None = None) -> None:
        backend_cls, _ = toolchain()
        self.jit_fn, self.signature, self.constants = jit_fn, signature, constants
        self.backend = backend_cls(gpu_target)
        self.options = self.backend.parse_options({})
        for key, value in (option_defaults or {}).items():
            if not hasattr(self.options, key):  # an option the target's record lacks
                object.__setattr__(self.options, key, value)
        self.metadata = {"hash": digest, "target": gpu_target, **self.options.__dict__,
                         **(extra_metadata or {})}
        self.pipeline: dict[str, Any] = {}
        self.backend.add_stages(self.pipeline, self.options)
        self.stages = stages
        self.locate = locate

    def run(self, name: str, action: Any) -> Any:
        began = time.perf_counter()
        try:
            output = action()
        except DSLError:
            raise
        except subprocess.CalledProcessError as exc:
            detail = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) \
                else str(exc.stderr or exc)
            raise LoweringError(name, quoted(detail), self.locate(detail)) from None
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            raise LoweringError(name, quoted(text), self.locate(text)) from None
        self.stages.append(StageReport(name, True, time.perf_counter() - began,
                                       len(str(output))))
        return output

    def ttir(self) -> Any:
        """Stage "ttir": ``ASTSource.make_ir`` then ``make_ttir``."""
        from triton._C.libtriton import ir
        from triton.compiler.compiler import ASTSource

        def make() -> Any:
            context = ir.context()
            ir.load_dialects(context)
            self.backend.load_dialects(context)
            source = ASTSource(self.jit_fn, self.signature, constants=self.constants)
            module = source.make_ir(self.options, self.backend.get_codegen_implementation(),
                                    self.backend.get_module_map(), context)
            return self.pipeline["ttir"](module, self.metadata)

        return self.run("ttir", make)

    def stage(self, name: str, key: str, source: Any) -> Any:
        """Run triton-ascend's stage ``key`` on ``source``, reported as ``name``."""
        return self.run(name, lambda: self.pipeline[key](source, self.metadata))


def compile_triton(jit_fn: Any, signature: dict[str, str], constants: dict[str, Any],
                   target: Target, stages: list[StageReport],
                   kernel: GeneratedKernel | None = None, path: Path | None = None
                   ) -> tuple[str, str, str]:
    """Stages 2-4 for any ``triton.jit`` function (generated or hand-written):
    returns (TTIR, Linalg, HIVM) and appends a report per stage to ``stages``.
    ``kernel`` and ``path`` map toolchain locations back to the user's kernel."""
    _, bishengir = toolchain()
    from triton.backends.compiler import GPUTarget

    def locate(text: str) -> SourceLoc | None:
        return user_location(text, kernel, path) if kernel and path else None

    front = TritonFrontEnd(jit_fn, signature, constants,
                           GPUTarget("npu", target.name, target.vector_cores or 1), stages,
                           kernel.digest if kernel else jit_fn.__name__, locate=locate)
    ttir_module = front.ttir()
    linalg = front.stage("linalg", "ttadapter", ttir_module)
    check_linalg(linalg)
    hivm = front.run("hivm", lambda: run_bishengir(bishengir, linalg, target, locate))
    stages.append(StageReport("npubin", False, 0.0, 0,
                              "skipped: CANN's hivmc is needed (Ascend host only)"))
    return str(ttir_module), linalg, hivm


def triton_stages(jit_fn: Any, signature: dict[str, str], constants: dict[str, Any],
                  target: Target) -> dict[str, Callable[[], str]]:
    """The front stages of a hand-written ``triton.jit`` function through the installed
    triton-ascend, each computed on first call (and once): ``"ttir"``, Triton IR, and
    ``"ttadapter"``, its Linalg conversion, under the names Triton's compiled kernels
    give them in ``asm``. A failure is a ``LoweringError`` naming the stage."""
    from triton.backends.compiler import GPUTarget

    @functools.cache
    def front() -> TritonFrontEnd:
        return TritonFrontEnd(jit_fn, signature, constants,
                              GPUTarget("npu", target.name, target.vector_cores or 1), [],
                              getattr(jit_fn, "__name__", "kernel"))

    @functools.cache
    def ttir_module() -> Any:
        return front().ttir()

    @functools.cache
    def linalg() -> str:
        return front().stage("linalg", "ttadapter", ttir_module())

    return {"ttir": lambda: str(ttir_module()), "ttadapter": linalg}


_UNCONVERTED = re.compile(r'"tt\.(reduce|scan)"')


def check_linalg(linalg: str) -> None:
    """LoweringError when triton-ascend left a Triton op unconverted in the Linalg
    module (the next tool would fail with an unregistered-dialect parse error)."""
    match = _UNCONVERTED.search(linalg)
    if match:
        kind = "reduce" if match.group(1) == "reduce" else "associative_scan"
        raise LoweringError("linalg", f"triton-ascend 3.2.0 could not convert a {kind} with "
                            "this combine function to Linalg: it converts single-block "
                            "combines and (value, index) pairs shaped like Triton's "
                            "argmax/argmin combine")


def run_bishengir(bishengir: Path, linalg: str, target: Target,
                  locate: Any = lambda text: None) -> str:
    """bishengir-compile to HIVM; returns the HIVM text (see the module doc)."""
    with workdir("bishengir") as work:
        source = work / "kernel.linalg.mlir"
        source.write_text(linalg)
        temps = work / "temps"
        temps.mkdir()
        # Without CANN it exits 1 ("External hivmc run fails") after writing the HIVM.
        done = run_tool("hivm", [bishengir, source, f"--target={target.name}",
                                 "--enable-hfusion-compile=true", "--enable-hivm-compile=true",
                                 "--enable-triton-kernel-compile=true",
                                 "--enable-auto-multi-buffer=True",
                                 "--enable-auto-bind-sub-block=True", f"--save-temps={temps}",
                                 "-o", work / "kernel"], check=False)
        hivm = temps / "module.hivm.opt.mlir"
        if hivm.exists():
            return hivm.read_text()
        detail = failure_text(done)
        raise LoweringError("hivm", detail, locate(detail))
