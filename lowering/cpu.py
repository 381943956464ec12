"""Compiled-CPU mode: the real lowered kernel, compiled for x86, run on NumPy arrays.

Route 1 of issue 5: triton-ascend's own "cpu" target. The generated Triton source
goes through the same front end as for the NPU (TTIR, then Linalg via
triton-adapter-opt), then MLIR's standard lowering to the LLVM dialect and LLVM IR
(the passes of triton-ascend's ``linalg_to_llir``, run here with Debian's
mlir-19-tools: ``_LLIR_PASSES``, one moved), then ``llc`` to an object file that
``gcc`` links into a shared object with a small runtime shim. Four things had to be
supplied around triton-ascend 3.2.0 (found by hand, see the issue): the Linalg stage
reads option keys the CPU options lack (added to the metadata here); its CPU
assembly step links an aarch64-only libclc bitcode file (not used: this module runs
``llc`` itself); its Linalg-to-LLVM pass order leaves a branch carrying a block typed
as a memref (since session 20 this module runs the passes itself, that one moved, so
an ``if`` whose branches yield a block compiles); the object needs ``memrefCopy`` (MLIR's
C runner utility), ``__truncsfbf2`` (fp32 -> bf16, round to nearest even) and, for
kernels using ``log1p``, ``__hmf_log1pf`` (Ascend's math library), all in the shim,
which also gives the kernel the project's fp32 ``expf``/``logf``/``log1pf``
(evaluated in double and rounded; see ``dsl.opdefs``) instead of the C library's;
and its CPU launcher is an empty placeholder, so kernels are called through ctypes
here.

Calling convention of the compiled function (read off the LLVM signature): two
leading memrefs triton-ascend adds for the NPU (sync-block lock, workspace; unused
on the CPU, passed empty), then every tensor parameter as a 1-D memref descriptor
(allocated pointer, aligned pointer, offset, size, stride), then the scalar
parameters, then ``num_programs`` x, y, z and ``program_id`` x, y, z as i32. A launch
calls it once per program of the grid, after the interpreter's bounds pre-pass;
programs run on the worker threads when the pre-pass proved their stores disjoint.

Shared objects are cached on disk under ``<cache folder>/cpu`` keyed by the
generated source, the toolchain versions and the LLVM root, and in memory once
loaded. The LLVM installation is ``Options.llvm_root`` (``DSL_LLVM_ROOT``).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dsl import diskcache
from dsl.errors import DSLError, SourceLoc
from dsl.options import Options
from dsl.targets import get_target
from lowering import workers
from lowering.compiler import (
    StageReport,
    TritonFrontEnd,
    check_linalg,
    compile_triton,
    import_kernel,
    retry_with_guarded_offsets,
    toolchain,
    toolchain_versions,
    user_location,
    write_source,
)
from lowering.interpreter import Interpreter, checks_at_run_time
from lowering.toolrun import LoweringError, failure_text, run_tool, workdir
from lowering.triton_codegen import FP8_REFUSAL, GeneratedKernel, fp8_use, generate

if TYPE_CHECKING:
    from dsl.jit import Launch

_SHIM_C = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The fp32 transcendental functions of dsl.opdefs: evaluated in double, rounded to
   float. Linked with -Bsymbolic, they replace the C library's expf/logf/... for the
   kernel, so the interpreter and compiled code share one definition. __hmf_* are
   triton-ascend's libdevice functions (Ascend's math library). */
float expf(float x) { return (float)exp((double)x); }
float logf(float x) { return (float)log((double)x); }
float log1pf(float x) { return (float)log1p((double)x); }
float exp2f(float x) { return (float)exp2((double)x); }
float log2f(float x) { return (float)log2((double)x); }
float sinf(float x) { return (float)sin((double)x); }
float cosf(float x) { return (float)cos((double)x); }
float tanhf(float x) { return (float)tanh((double)x); }
float erff(float x) { return (float)erf((double)x); }
float powf(float x, float y) { return (float)pow((double)x, (double)y); }
float __hmf_log1pf(float x) { return (float)log1p((double)x); }
float __hmf_tanhf(float x) { return (float)tanh((double)x); }
float __hmf_powf(float x, float y) { return (float)pow((double)x, (double)y); }

/* MLIR's memrefCopy (CRunnerUtils): copy between two strided memrefs of any rank. */
typedef struct { int64_t rank; void *descriptor; } UnrankedMemRef;

void memrefCopy(int64_t elem_size, UnrankedMemRef *src, UnrankedMemRef *dst) {
    int64_t rank = src->rank;
    char **s = (char **)src->descriptor, **d = (char **)dst->descriptor;
    int64_t *sm = (int64_t *)(s + 2), *dm = (int64_t *)(d + 2);
    int64_t *sizes = sm + 1, *sstr = sm + 1 + rank, *dstr = dm + 1 + rank;
    int64_t total = 1, index[16] = {0};
    for (int64_t r = 0; r < rank; ++r) total *= sizes[r];
    for (int64_t n = 0; n < total; ++n) {
        int64_t so = sm[0], doff = dm[0];
        for (int64_t r = 0; r < rank; ++r) { so += index[r] * sstr[r]; doff += index[r] * dstr[r]; }
        memcpy(d[1] + doff * elem_size, s[1] + so * elem_size, (size_t)elem_size);
        for (int64_t r = rank - 1; r >= 0; --r) { if (++index[r] < sizes[r]) break; index[r] = 0; }
    }
}
"""

# fp32 -> bf16 with round to nearest even (quiet NaN kept), in LLVM IR so that the
# bf16 return convention is LLVM's own.
_SHIM_LL = """
define bfloat @__truncsfbf2(float %x) {
  %b = bitcast float %x to i32
  %nan = fcmp uno float %x, %x
  %upper = lshr i32 %b, 16
  %lsb = and i32 %upper, 1
  %bias = add i32 %lsb, 32767
  %rounded = add i32 %b, %bias
  %hi = lshr i32 %rounded, 16
  %quiet = or i32 %upper, 64
  %bits = select i1 %nan, i32 %quiet, i32 %hi
  %t = trunc i32 %bits to i16
  %r = bitcast i16 %t to bfloat
  ret bfloat %r
}
"""

_CTYPES = {"ptr": ctypes.c_void_p, "i64": ctypes.c_int64, "i32": ctypes.c_int32,
           "i16": ctypes.c_int16, "i8": ctypes.c_int8, "i1": ctypes.c_bool,
           "float": ctypes.c_float, "double": ctypes.c_double}


class CompiledCPUError(DSLError):
    """Compiled-CPU mode could not compile or run a kernel."""


@dataclass
class CPUKernel:
    """A kernel compiled for x86: the shared object and how to call it."""

    name: str
    library: Path
    argument_types: list[str]
    stages: list[StageReport]
    generated: GeneratedKernel
    _function: Any = field(default=None, repr=False)

    def function(self) -> Any:
        if self._function is None:
            lib = ctypes.CDLL(str(self.library))
            fn = getattr(lib, self.name)
            fn.restype = None
            fn.argtypes = [_CTYPES[t] for t in self.argument_types]
            self._function = fn
        return self._function


def llvm_tools(llvm_root: Path | None = None) -> dict[str, Path]:
    """mlir-opt, mlir-translate and llc under ``llvm_root`` (default: the options'
    ``llvm_root``); CompiledCPUError naming what is missing (gcc included)."""
    llvm_root = llvm_root or Options.from_env().llvm_root
    tools = {name: llvm_root / "bin" / name for name in ("mlir-opt", "mlir-translate", "llc")}
    missing = [str(p) for p in tools.values() if not p.exists()]
    if missing or shutil.which("gcc") is None:
        raise CompiledCPUError(
            "compiled-CPU mode needs Debian's mlir-19-tools and llvm-19 (apt-get install "
            f"mlir-19-tools llvm-19) and gcc; missing: {', '.join(missing) or 'gcc'}")
    return tools


def _signature(llir: str, name: str) -> list[str]:
    match = re.search(rf"define void @{re.escape(name)}\(([^)]*)\)", llir)
    if match is None:
        raise CompiledCPUError(f"no function @{name} in the LLVM IR")
    types = [part.strip().split()[0] for part in match.group(1).split(",") if part.strip()]
    unknown = [t for t in types if t not in _CTYPES]
    if unknown:
        raise CompiledCPUError(f"unsupported parameter types {unknown} in @{name}")
    return types


def compile_cpu(generated: GeneratedKernel, root: Path | None = None,
                options: Options | None = None) -> CPUKernel:
    """Compile generated Triton source to a shared object (cached on disk)."""
    options = options or Options.from_env()
    tools = llvm_tools(options.llvm_root)
    toolchain()
    root = root or options.cache_root
    folder = diskcache.cache_folder(root, "cpu")
    # the shim, the pre-pass and the passes are part of what the object is built from
    key = hashlib.sha256(f"{generated.digest}|{toolchain_versions()}|{options.llvm_root}|"
                         f"{_SHIM_C}|{_SHIM_LL}|{_LIBM_ONLY.pattern}|{_ANNOTATION.pattern}|"
                         f"{_LLIR_PASSES}".encode())
    library = folder / f"{generated.name}_{key.hexdigest()[:20]}.so"
    with diskcache.locked(library.with_suffix(".lock")):
        cached = _cached_library(library)
        if cached is not None:
            return CPUKernel(generated.name, library, cached, [], generated)
        return _compile_cpu(generated, root, options, tools, library)


def _cached_library(library: Path) -> list[str] | None:
    """The argument types of a cached shared object whose bytes match the SHA-256
    its ``.sig`` record holds; None for anything else (missing, truncated, random
    bytes, a record of another shape), which is then compiled again: a damaged
    object is never handed to ``dlopen``."""
    try:
        record = json.loads(library.with_suffix(".sig").read_bytes())
        types = record["types"]
        digest = record["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(types, list) or not all(t in _CTYPES for t in types):
        return None
    return types if diskcache.read_verified(library, digest) is not None else None


def _compile_cpu(generated: GeneratedKernel, root: Path, options: Options,
                 tools: dict[str, Path], library: Path) -> CPUKernel:
    from triton.backends.compiler import GPUTarget

    path = write_source(generated, root)
    stages: list[StageReport] = []

    def locate(text: str) -> SourceLoc | None:
        return user_location(text, generated, path)

    # The Linalg stage reads NPU option keys the CPU options lack.
    front = TritonFrontEnd(
        import_kernel(path, generated.name), generated.signature, {},
        GPUTarget("cpu", "x86_64", 0), stages, generated.digest,
        extra_metadata={"enable_nd2nz_on_vector": False, "enable_select_analysis": False,
                        "compile_on_910_95": False, "force_simt_template": False,
                        "enable_linearize": False},
        # the Triton front end reads this option; the CPU options record lacks it
        option_defaults={"sanitize_overflow": False,
                         "allowed_dot_input_precisions": ("ieee", "hf32")},
        locate=locate)
    linalg = front.stage("linalg", "ttadapter", front.ttir())
    check_linalg(linalg)
    linalg = lower_hivm_pointer_casts(lower_hfusion_float_mods(lower_hfusion_histograms(linalg)))
    refuse_ascend_only_ops(linalg, generated.name)
    llir = front.run("llir", lambda: _linalg_to_llir(linalg, options.llvm_root))
    types = _signature(llir, generated.name)
    front.run("shared-object", lambda: _link(llir, tools, library))
    record = {"types": types, "sha256": diskcache.sha256(library.read_bytes())}
    diskcache.write_atomic(library.with_suffix(".sig"), json.dumps(record).encode())
    return CPUKernel(generated.name, library, types, stages, generated)


# Math ops that MLIR's convert-math-to-llvm (triton-ascend's CPU pipeline) leaves
# alone; converted to C library calls (the shim's definitions) beforehand.
_LIBM_ONLY = re.compile(r"\bmath\.(erf)\b")


# ``tl.histogram`` reaches Linalg as the Ascend-only ``hfusion.histogram`` (triton-ascend's
# TritonToHFusion pass); upstream MLIR has no such dialect.
_HFUSION_HISTOGRAM = re.compile(
    r"^(?P<indent>\s*)(?P<result>%[\w.#]+) = hfusion\.histogram (?P<source>%[\w.#]+), "
    r"(?P<bins>\d+) : tensor<(?P<n>\d+)x(?P<ity>i\d+)> -> tensor<(?P=bins)xi32>$", re.MULTILINE)

_HISTOGRAM_LOOP = """\
{i}%{p}c0 = arith.constant 0 : index
{i}%{p}c1 = arith.constant 1 : index
{i}%{p}n = arith.constant {n} : index
{i}%{p}one = arith.constant 1 : i32
{i}%{p}lo = arith.constant 0 : {ity}
{i}%{p}hi = arith.constant {bins} : {ity}
{i}%{p}zero = arith.constant dense<0> : tensor<{bins}xi32>
{i}{result} = scf.for %{p}k = %{p}c0 to %{p}n step %{p}c1 iter_args(%{p}acc = %{p}zero) \
-> (tensor<{bins}xi32>) {{
{i}  %{p}v = tensor.extract {source}[%{p}k] : tensor<{n}x{ity}>
{i}  %{p}ge = arith.cmpi sge, %{p}v, %{p}lo : {ity}
{i}  %{p}lt = arith.cmpi slt, %{p}v, %{p}hi : {ity}
{i}  %{p}in = arith.andi %{p}ge, %{p}lt : i1
{i}  %{p}next = scf.if %{p}in -> (tensor<{bins}xi32>) {{
{i}    %{p}bin = arith.index_cast %{p}v : {ity} to index
{i}    %{p}count = tensor.extract %{p}acc[%{p}bin] : tensor<{bins}xi32>
{i}    %{p}inc = arith.addi %{p}count, %{p}one : i32
{i}    %{p}put = tensor.insert %{p}inc into %{p}acc[%{p}bin] : tensor<{bins}xi32>
{i}    scf.yield %{p}put : tensor<{bins}xi32>
{i}  }} else {{
{i}    scf.yield %{p}acc : tensor<{bins}xi32>
{i}  }}
{i}  scf.yield %{p}next : tensor<{bins}xi32>
{i}}}"""


def lower_hfusion_histograms(linalg: str) -> str:
    """Each ``hfusion.histogram`` rewritten as the loop it means on a CPU: one pass over
    the values, adding 1 to the bin of each value in ``[0, bins)``. A value outside
    counts nowhere: the device leaves that case undefined and the interpreter
    reports it; here it must at least not write outside the bins."""
    def loop(match: re.Match[str]) -> str:
        prefix = "hist" + re.sub(r"\W", "_", match["result"][1:]) + "_"
        return _HISTOGRAM_LOOP.format(i=match["indent"], p=prefix, result=match["result"],
                                      source=match["source"], bins=match["bins"],
                                      n=match["n"], ity=match["ity"])
    return _HFUSION_HISTOGRAM.sub(loop, linalg)


_TENSOR_LIBRARY_CALL = re.compile(r"func\.func private @(\w+)\([^)]*tensor<")
_HFUSION_OP = re.compile(r"\bhfusion\.(\w+)")


# Float ``%`` (C's fmod) reaches Linalg as the Ascend-only ``hfusion.elemwise_binary``
# with ``binary_fn<mod>``; on a CPU it is ``arith.remf`` (LLVM's frem: C's fmod).
_HFUSION_FLOAT_MOD = re.compile(
    r"^(?P<indent>\s*)(?P<result>%[\w.#]+) = hfusion\.elemwise_binary "
    r"\{fun = #hfusion\.binary_fn<mod>\} ins\((?P<a>%[\w.#]+), (?P<b>%[\w.#]+) : "
    r"tensor<(?P<shape>(?:\d+x)*)(?P<ety>f16|bf16|f32|f64)>, tensor<(?P=shape)(?P=ety)>\) "
    r"outs\((?P<out>%[\w.#]+) : tensor<(?P=shape)(?P=ety)>\) -> "
    r"tensor<(?P=shape)(?P=ety)>$", re.MULTILINE)


def lower_hfusion_float_mods(linalg: str) -> str:
    """Each elementwise float ``hfusion`` mod of two tensors rewritten as the
    ``linalg.generic`` of ``arith.remf`` it means on a CPU (other forms stay, and
    ``refuse_ascend_only_ops`` names them)."""
    def generic(match: re.Match[str]) -> str:
        rank = match["shape"].count("x")
        dims = ", ".join(f"d{k}" for k in range(rank))
        identity = f"affine_map<({dims}) -> ({dims})>"
        p = "fmod" + re.sub(r"\W", "_", match["result"][1:]) + "_"
        tensor = f"tensor<{match['shape']}{match['ety']}>"
        ety, i = match["ety"], match["indent"]
        iterators = ", ".join(['"parallel"'] * rank)
        return (f"{i}{match['result']} = linalg.generic {{indexing_maps = "
                f"[{identity}, {identity}, {identity}], iterator_types = "
                f"[{iterators}]}} ins({match['a']}, {match['b']} : "
                f"{tensor}, {tensor}) outs({match['out']} : {tensor}) {{\n"
                f"{i}^bb0(%{p}x: {ety}, %{p}y: {ety}, %{p}o: {ety}):\n"
                f"{i}  %{p}r = arith.remf %{p}x, %{p}y : {ety}\n"
                f"{i}  linalg.yield %{p}r : {ety}\n"
                f"{i}}} -> {tensor}")
    return _HFUSION_FLOAT_MOD.sub(generic, linalg)


# A pointer cast from an integer (``addr.to(tl.pointer_type(T))``) reaches Linalg as
# the Ascend-only ``hivm.hir.pointer_cast`` of the address to a 1-D memref of the
# accessed extent (triton-adapter's lowering of ``tt.int_to_ptr``).
_HIVM_POINTER_CAST = re.compile(
    r"^(?P<indent>\s*)(?P<result>%[\w.#]+) = hivm\.hir\.pointer_cast\((?P<address>%[\w.#]+)\) "
    r"\[(?P<size>%[\w.#]+)\] : (?P<memref>memref<\?x(?P<ety>\w+)>)$", re.MULTILINE)

_DESCRIPTOR = "!llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>"


def lower_hivm_pointer_casts(linalg: str) -> str:
    """Each ``hivm.hir.pointer_cast`` rewritten as what it means on a CPU: the memref
    whose data is at that host address, built as the LLVM memref descriptor MLIR
    itself uses (pointer, offset 0, the size, stride 1) and cast to the memref type;
    lowering the memref to LLVM meets the cast and cancels it. The interpreter has
    checked every address of the launch before the compiled code runs
    (``dsl.host_memory``)."""
    def descriptor(match: re.Match[str]) -> str:
        i, p = match["indent"], "ptrcast" + re.sub(r"\W", "_", match["result"][1:]) + "_"
        return "\n".join([
            f"{i}%{p}ptr = llvm.inttoptr {match['address']} : i64 to !llvm.ptr",
            f"{i}%{p}size = arith.index_cast {match['size']} : index to i64",
            f"{i}%{p}zero = llvm.mlir.constant(0 : i64) : i64",
            f"{i}%{p}one = llvm.mlir.constant(1 : i64) : i64",
            f"{i}%{p}d0 = llvm.mlir.undef : {_DESCRIPTOR}",
            f"{i}%{p}d1 = llvm.insertvalue %{p}ptr, %{p}d0[0] : {_DESCRIPTOR}",
            f"{i}%{p}d2 = llvm.insertvalue %{p}ptr, %{p}d1[1] : {_DESCRIPTOR}",
            f"{i}%{p}d3 = llvm.insertvalue %{p}zero, %{p}d2[2] : {_DESCRIPTOR}",
            f"{i}%{p}d4 = llvm.insertvalue %{p}size, %{p}d3[3, 0] : {_DESCRIPTOR}",
            f"{i}%{p}d5 = llvm.insertvalue %{p}one, %{p}d4[4, 0] : {_DESCRIPTOR}",
            f"{i}{match['result']} = builtin.unrealized_conversion_cast %{p}d5 : "
            f"{_DESCRIPTOR} to {match['memref']}"])
    return _HIVM_POINTER_CAST.sub(descriptor, linalg)


def refuse_ascend_only_ops(linalg: str, kernel: str) -> None:
    """CompiledCPUError naming what triton-ascend lowered to Ascend-only code that has
    no CPU lowering: calls of an Ascend library function on whole tensors (``flip``:
    ``triton_flip``; the CPU pipeline cannot bufferize them either), and ``hfusion``
    ops left after ``lower_hfusion_histograms`` (upstream MLIR cannot parse them)."""
    calls = sorted(set(_TENSOR_LIBRARY_CALL.findall(linalg)))
    ops = sorted(set(_HFUSION_OP.findall(linalg)))
    found = ([f"Ascend library call(s) {', '.join(calls)} on whole tensors"] if calls else []) \
        + ([f"Ascend's {', '.join('hfusion.' + op for op in ops)}"] if ops else [])
    if found:
        raise CompiledCPUError(
            f"compiled-CPU mode cannot run {kernel}: triton-ascend lowers it to "
            f"{' and '.join(found)}, which have no CPU implementation (run it in the "
            "interpreter; it lowers to HIVM for the NPU)")


# Ascend layout hints (``annotation.mark %buf {MayImplicitTransposeWithLastAxis}``)
# that upstream MLIR cannot parse; they carry no semantics for a CPU.
_ANNOTATION = re.compile(r"^\s*annotation\.mark [^\n]*\n", re.MULTILINE)


# triton-ascend 3.2.0's Linalg -> LLVM dialect passes (``linalg_to_llir`` of its CPU
# target), with one change: ``--convert-cf-to-llvm`` runs after the memref and func
# conversions. In its order a branch carrying a block (an ``if`` whose branches yield
# one) reached ``llvm.cond_br`` still typed as a memref, and mlir-opt refused it.
_LLIR_PASSES = (
    "--convert-linalg-to-affine-loops", "--eliminate-empty-tensors",
    "--empty-tensor-to-alloc-tensor", "--one-shot-bufferize=allow-return-allocs-from-loops=true",
    "--lower-affine", "--convert-linalg-to-loops", "--convert-scf-to-cf",
    "--convert-arith-to-llvm", "--convert-math-to-llvm", "--convert-complex-to-llvm",
    "--convert-vector-to-llvm", "--convert-index-to-llvm", "--memref-expand",
    "--expand-strided-metadata", "--finalize-memref-to-llvm", "--convert-func-to-llvm",
    "--convert-cf-to-llvm",
    # lowering memrefs makes affine.apply ops, and those arith ops, again
    "--lower-affine", "--convert-arith-to-llvm", "--reconcile-unrealized-casts",
)


def _linalg_to_llir(linalg: str, llvm_root: Path) -> str:
    """The Linalg -> LLVM IR step: ``_LLIR_PASSES`` with ``mlir-opt``, then
    ``mlir-translate``, both from ``llvm_root``."""
    with workdir("llir") as work:
        source = work / "kernel.mlir"
        source.write_text(_ANNOTATION.sub("", linalg))
        if _LIBM_ONLY.search(linalg):
            # into another file: mlir-opt maps its input, and writing over it (past
            # ~16 KiB) crashed it
            libm = work / "kernel.libm.mlir"
            # the math ops LLVM has first: the libm pass marks every op it knows
            # illegal, and failed on a math.rsqrt it has no function for
            run_tool("llir", [llvm_root / "bin" / "mlir-opt", source, "--convert-math-to-llvm",
                              "--convert-math-to-libm", "-o", libm])
            source = libm
        dialect = work / "kernel.llvm.mlir"
        run_tool("llir", [llvm_root / "bin" / "mlir-opt", source, *_LLIR_PASSES, "-o", dialect])
        run_tool("llir", [llvm_root / "bin" / "mlir-translate", dialect, "--mlir-to-llvmir",
                          "-o", work / "kernel.ll"])
        return (work / "kernel.ll").read_text()


def _link(llir: str, tools: dict[str, Path], library: Path) -> Path:
    """llc the kernel and the shim, gcc them into ``library`` (written atomically)."""
    with workdir("cpu") as work:
        (work / "kernel.ll").write_text(llir)
        (work / "shim.ll").write_text(_SHIM_LL)
        (work / "shim.c").write_text(_SHIM_C)
        for stem in ("kernel", "shim"):
            run_tool("shared-object", [tools["llc"], "-O2", "-filetype=obj",
                                       "-relocation-model=pic", work / f"{stem}.ll", "-o",
                                       work / f"{stem}.o"])
        tmp = library.with_suffix(f".{os.getpid()}.tmp")
        run_tool("shared-object", ["gcc", "-shared", "-O2", "-fPIC", work / "kernel.o",
                                   work / "shim.o", work / "shim.c", "-Wl,-Bsymbolic", "-lm",
                                   "-o", tmp])
        if library.exists() and not library.is_file():
            diskcache.clear(library)  # e.g. a directory left where the object belongs
        os.replace(tmp, library)
        return library


# ----------------------------------------------------------------------------- route 2

_VNOT_I1 = re.compile(r"hfusion\.elemwise_unary \{fun = #hfusion\.unary_fn<vnot>\} "
                      r"ins\([^)]*xi1>\)")


class BishengirCPUBug(CompiledCPUError):
    """Route 2 refused a kernel: bishengir's CPU lowering would miscompile it."""


def hfusion_ir(linalg: str, target_name: str = "Ascend910B4") -> str:
    """bishengir-compile's HFusion-level IR: the module just before
    ``convert-hfusion-to-hivm`` (the last target-independent form)."""
    _, bishengir = toolchain()
    with workdir("hfusion") as work:
        (work / "kernel.mlir").write_text(linalg)
        # Without CANN it exits 1 after the HIVM passes ran: the dumps tell success.
        done = run_tool("hfusion", [bishengir, work / "kernel.mlir", f"--target={target_name}",
                                    "--enable-hfusion-compile=true",
                                    "--enable-hivm-compile=true",
                                    "--enable-triton-kernel-compile=true",
                                    "--mlir-print-ir-after-all",
                                    f"--mlir-print-ir-tree-dir={work / 'tree'}", "-o",
                                    work / "out"], check=False)
        dumps = sorted((work / "tree").glob("builtin_module_*/*.mlir"),
                       key=lambda p: int(p.name.split("_")[0]))
        position = next((i for i, p in enumerate(dumps) if "convert-hfusion-to-hivm" in p.name),
                        None)
        if not position:
            raise LoweringError("hfusion", "no HFusion-level module in bishengir's dumps "
                                f"(exit status {done.returncode}): {failure_text(done)}")
        return dumps[position - 1].read_text()


def _upstream_mlir(llvm_dialect: str) -> str:
    """Drop the hacc attributes upstream mlir-translate cannot parse (the module's
    device spec, the kernel's hacc markers); the code itself is untouched."""
    lines = llvm_dialect.split("\n")
    lines[0] = re.sub(r"^module attributes \{.*\} \{$", "module {", lines[0])
    text = "\n".join(lines).replace(" {hacc.arg_type = #hacc.arg_type<ffts_base_address>}", "")
    return re.sub(r"attributes \{[^{}]*hacc\.[^{}]*\}", "", text)


def compile_hfusion_route(generated: GeneratedKernel, root: Path | None = None,
                          options: Options | None = None) -> CPUKernel:
    """Route 2: bishengir's HFusion-level IR lowered with bishengir-opt's CPU-runner
    pipeline minus its host-main wrapper, then LLVM as route 1. Checks bishengir's
    HFusion rewrites too. A kernel with a logical NOT on i1 is refused: bishengir
    1.2.0 lowers ``hfusion.elemwise_unary vnot`` on i1 to a no-op on this route,
    which inverts masks and NaN checks (``maximum`` compiles to one)."""
    options = options or Options.from_env()
    tools = llvm_tools(options.llvm_root)
    _, bishengir = toolchain()
    root = root or options.cache_root
    path = write_source(generated, root)
    jit_fn = import_kernel(path, generated.name)
    stages: list[StageReport] = []
    _, linalg, _ = compile_triton(jit_fn, generated.signature, {}, get_target("Ascend910B4"),
                                  stages)
    began = time.perf_counter()
    hfusion = hfusion_ir(linalg)
    stages.append(StageReport("hfusion", True, time.perf_counter() - began, len(hfusion)))
    bad = _VNOT_I1.findall(hfusion)
    if bad:
        raise BishengirCPUBug(
            f"route 2 refuses {generated.name}: its HFusion IR has {len(bad)} logical NOT(s) "
            "on i1 (hfusion.elemwise_unary vnot), which bishengir 1.2.0's CPU lowering turns "
            "into a no-op, inverting masks and NaN checks; use route 1 (compiled-cpu)")
    opt = bishengir.parent / "bishengir-opt"
    with workdir("route2") as work:
        (work / "hfusion.mlir").write_text(hfusion)
        # Only the printed pipeline is wanted; running it on the hacc module fails.
        dumped = run_tool("route2-cpu-runner", [opt, work / "hfusion.mlir",
                                                "--lower-for-cpu-runner-pipeline",
                                                "--dump-pass-pipeline", "-o", "/dev/null"],
                          check=False)
        pipeline = next((line for line in (dumped.stdout + dumped.stderr).splitlines()
                         if line.startswith("builtin.module(")), None)
        if pipeline is None:
            raise LoweringError("route2-cpu-runner", "bishengir-opt printed no pass pipeline: "
                                + failure_text(dumped))
        pipeline = re.sub(r"execution-engine-create-host-main\{[^}]*\},", "", pipeline)
        run_tool("route2-cpu-runner", [opt, work / "hfusion.mlir", f"--pass-pipeline={pipeline}",
                                       "-o", work / "llvm.mlir"])
        (work / "clean.mlir").write_text(_upstream_mlir((work / "llvm.mlir").read_text()))
        run_tool("route2-translate", [tools["mlir-translate"], "--mlir-to-llvmir",
                                      work / "clean.mlir", "-o", work / "kernel.ll"])
        llir = (work / "kernel.ll").read_text()
    types = _signature(llir, generated.name)
    key = hashlib.sha256(f"route2|{generated.digest}|{toolchain_versions()}".encode())
    library = root / "cpu" / f"{generated.name}_r2_{key.hexdigest()[:20]}.so"
    library.parent.mkdir(parents=True, exist_ok=True)
    _link(llir, tools, library)
    return CPUKernel(generated.name, library, types, stages, generated)


_LOADED: dict[tuple, CPUKernel] = {}

# Op kinds triton-ascend 3.2.0's CPU route compiles wrongly (measured here): kernels
# that use them are refused with the reason (compiled-CPU mode's handler table for
# kinds it cannot check; every other kind runs through the Triton code generator).
MISCOMPILED_KINDS = {
    "atomic": "its atomics compile to plain loads and stores (a mask on computed "
              "addresses is dropped, and nothing is atomic across programs)",
    "atomic_cas": "its atomic_cas compiles to plain loads and stores and returns the new "
                  "value instead of the old one",
    "atomic_address": "its atomics compile to plain loads and stores (nothing is atomic "
                      "across programs)",
    "atomic_cas_address": "its atomic_cas compiles to plain loads and stores and returns "
                          "the new value instead of the old one",
    "print": "device_print becomes a call of an Ascend library function (triton_print) "
             "with no CPU implementation",
}


# Kinds the CPU route lowers only in some forms: the reason when ``op`` is not one.
UNLOWERABLE_FORMS = {
    "inline_asm": lambda op: "inline_asm_elementwise holds the NPU's assembly, which no "
                             "x86 assembler takes",
    "arg_reduce": lambda op: "its argmax/argmin of integers returns -1 for some inputs "
                             "(measured: argmax of uint8 [128, 0, 32, 0, 34, 0, 0, 0] and "
                             "argmin of eight int32 1048576)"
                             if op.source.dtype.is_int else None,
    "reduce_fn": lambda op: _tuple_reduce_failure(len(op.operands)),
    "cast": lambda op: "its float64 -> bfloat16 conversion calls compiler-rt's "
                       "__truncdfbf2, which the shared object cannot find (LLVM 19's "
                       "builtins here have none)"
                       if op.source.dtype.name == "float64" and
                       op.result.dtype.name == "bfloat16" else None,
}


def _tuple_reduce_failure(tensors: int) -> str | None:
    """Why a ``reduce`` with a user combine over ``tensors`` tensors cannot run
    compiled (None: one tensor, which lowers right)."""
    if tensors == 2:
        return ("its reduce of a (value, index) pair with a user combine returns wrong "
                "values and indices (measured: a min with an index tie-break over the row "
                "[2, 2, 2, 2] gave 1 at index 21886)")
    if tensors > 2:
        return (f"it lowers a reduce of at most two tensors (a value and its index), not "
                f"{tensors} (triton-adapter-opt asserts 'Only reduce or reduce with index "
                f"are supported')")
    return None


def refuse_miscompiled(launch: Launch) -> None:
    """CompiledCPUError naming the first op the CPU route would compile wrongly or
    cannot lower (or the first fp8 value, which it cannot compile at all)."""
    fp8 = fp8_use(launch.function)
    if fp8 is not None:
        raise CompiledCPUError(f"compiled-CPU mode cannot check {launch.function.name}: {fp8}, "
                               f"and {FP8_REFUSAL}; run it in the interpreter")
    for op in launch.function.walk():
        reason = MISCOMPILED_KINDS.get(op.kind)
        form = UNLOWERABLE_FORMS.get(op.kind)
        if reason is None and form is not None:
            reason = form(op)
        if reason is not None:
            raise CompiledCPUError(
                f"compiled-CPU mode cannot check {launch.function.name} (line {op.loc.line}): "
                f"triton-ascend 3.2.0's CPU lowering of {op.kind} fails -- {reason}; "
                "run it in the interpreter")


def run(launch: Launch, options: Options | None = None, route: int = 1) -> None:
    """Execute a prepared launch with the kernel compiled for the CPU.

    The interpreter's bounds pre-pass runs first, so an out-of-bounds launch is
    refused before the compiled code touches memory; when indices depend on loaded
    data (a gather, a scatter) the pre-pass cannot decide, and the whole launch is
    interpreted once with every write undone (``Interpreter.dry_run``) to check them:
    the compiled code never runs an access the interpreter would refuse."""
    options = options or Options.from_env()
    refuse_miscompiled(launch)
    checker = Interpreter(launch, options)
    if not checker.prove_in_bounds() or checks_at_run_time(launch.function):
        # (compiled code does not check a slice's runtime offsets, a gather's indices
        # or a histogram's values: it read garbage outside the block instead)
        Interpreter(launch, options).dry_run()
    generated = generate(launch.function, tree_sums=True)
    key = (route, generated.digest, options.cache_root, options.llvm_root)
    kernel = _LOADED.get(key)
    if kernel is None:
        compile_route = compile_cpu if route == 1 else compile_hfusion_route
        kernel = retry_with_guarded_offsets(lambda guarded: compile_route(
            generate(launch.function, tree_sums=True, masked_offsets_guarded=True)
            if guarded else generated, options=options))
        _LOADED[key] = kernel
    fn = kernel.function()
    arguments: list[Any] = [0] if route == 2 else []  # route 2: the FFTS base address
    arguments += [None, None, 0, 0, 0] * 2  # sync-block lock, workspace: unused
    keep: list[Any] = []
    for param, value in zip(launch.function.params, launch.args):
        if param.role == "tensor":
            buffer = value.buffer
            size = buffer.size
            if not size:
                # an empty argument: the guarded offsets of masked-off lanes still read
                # element 0 (and a null pointer crashed); give them a zeroed element
                buffer = np.zeros(1, buffer.dtype)
            pointer = buffer.ctypes.data
            keep.append(buffer)
            arguments += [pointer, pointer, 0, size, 1]
        else:
            arguments.append(value.item() if isinstance(value, np.generic) else value)
    gx, gy, gz = launch.grid
    expected = len(kernel.argument_types)
    if len(arguments) + 6 != expected:
        raise CompiledCPUError(f"{kernel.name}: {len(arguments) + 6} arguments for a function "
                               f"of {expected} parameters")
    programs = [(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]

    def run_programs(share: list[tuple[int, int, int]]) -> None:
        for x, y, z in share:
            fn(*arguments, gx, gy, gz, x, y, z)

    count = options.workers
    if checker.parallel and count > 1 and len(programs) > 1:
        # ctypes releases the GIL; the pre-pass proved the programs' stores disjoint
        workers.run_all([lambda share=programs[i::count]: run_programs(share)
                         for i in range(count)], count)
    else:
        run_programs(programs)
