"""The DSL's builtins, as thin documented stubs.

Inside a ``@dsl.jit`` kernel the frontend recognises these functions and turns each
call into IR through ``dsl.semantic`` (their signatures are the contract checked
for argument counts and names). Called from ordinary Python they raise, because
they only have meaning inside a kernel.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from dsl.dtypes import DType


class constexpr:  # noqa: N801 - Triton's spelling
    """Annotation for a compile-time parameter: ``BLOCK: dsl.constexpr``.

    A constexpr argument is part of the specialization key; expressions over
    constexprs are evaluated in Python while compiling, and ``if`` statements must
    test constexprs."""


class const:  # noqa: N801 - Triton's spelling
    """Annotation for a tensor argument the kernel only reads (Triton's ``tl.const``):
    a store or atomic through it is a compile error."""


class tensor:  # noqa: N801 - Triton's spelling
    """Triton's ``tl.tensor``, for ``isinstance(x, tl.tensor)`` in a kernel: true of a
    block, a runtime scalar or a pointer, false of a compile-time value."""


@dataclass(frozen=True)
class PointerType:
    """``pointer_type(element)``: the type a pointer argument is cast to
    (``x_ptr.to(tl.pointer_type(tl.int32))``)."""

    element: Any


def pointer_type(element_ty: Any) -> PointerType:
    """Triton's ``tl.pointer_type``: a pointer to ``element_ty``, for casts of pointer
    arguments to another element type of the same size."""
    return PointerType(element_ty)


pointer_type.__dsl_constexpr_fn__ = True  # type: ignore[attr-defined]


class block_size(constexpr):  # noqa: N801
    """A constexpr block size that the launcher chooses when the caller omits it.

    The interpreter picks a large power of two that keeps NumPy's per-call overhead
    negligible; a compiled backend picks the largest block that fits the target's
    on-chip buffer."""


class PropagateNan:  # noqa: N801 - Triton's spelling
    """``maximum``/``minimum``/``clamp``'s NaN policy: ``NONE`` ignores a NaN operand,
    ``ALL`` propagates it."""

    NONE = 0
    ALL = 0xFFFF


class PIPE(enum.Enum):  # noqa: N801 - triton-ascend's spelling
    """The AI core pipes a ``sync_block_set``/``sync_block_wait`` pair names (scalar,
    vector, cube, the memory-transfer engines, fixpipe). Accepted for the device's
    sake: a program's ops run in order here, so no pipe needs waiting for."""

    PIPE_S = 0
    PIPE_V = 1
    PIPE_M = 2
    PIPE_MTE1 = 3
    PIPE_MTE2 = 4
    PIPE_MTE3 = 5
    PIPE_ALL = 6
    PIPE_FIX = 7


# Vector sub-blocks per AI core: the 1:2 cube-to-vector ratio of Atlas A2/A3, the
# chips this project targets (``sub_vec_num()``).
SUB_VECTOR_BLOCKS = 2


def _outside(name: str) -> RuntimeError:
    return RuntimeError(f"dsl.{name}() can only be used inside a @dsl.jit kernel")


def builtin(fn: Any) -> Any:
    fn.__dsl_builtin__ = True
    return fn


@builtin
def program_id(axis: int = 0) -> Any:
    """Index of this program instance along grid ``axis`` (int32 scalar)."""
    raise _outside("program_id")


@builtin
def num_programs(axis: int = 0) -> Any:
    """Number of program instances along grid ``axis`` (int32 scalar)."""
    raise _outside("num_programs")


@builtin
def arange(start: int, end: int) -> Any:
    """int32 block ``[start, end)``; bounds are constexpr, the length a power of two."""
    raise _outside("arange")


@builtin
def zeros(shape: Any, dtype: DType) -> Any:
    """Block of zeros of constexpr ``shape``."""
    raise _outside("zeros")


@builtin
def full(shape: Any, value: Any, dtype: DType) -> Any:
    """Block of constexpr ``shape`` filled with the constexpr ``value``."""
    raise _outside("full")


@builtin
def load(pointer: Any, index: Any = None, mask: Any = None, other: Any = None,
         boundary_check: Any = (), padding_option: str = "", cache_modifier: str = "",
         eviction_policy: str = "", volatile: bool = False) -> Any:
    """Load from memory, in one of three forms.

    - ``load(tensor, index, mask=None, other=None)``: the logical row-major ``index``
      (scalar or block) of a tensor argument; the compiler derives the physical offset
      from the tensor's layout, so broadcast operands (stride 0) are read in place.
    - ``load(ptrs, mask=None, other=None)``, Triton's form: ``ptrs`` is a tensor
      argument (a pointer to its first element) plus element offsets (``x_ptr +
      offsets``); strides are the kernel's to apply. After a pointer the next
      positional argument is the mask, as in Triton.
    - ``load(block_ptr, boundary_check=(dims), padding_option="zero"|"nan")``: a
      block pointer (``make_block_ptr``); lanes outside the parent tensor in the
      checked dimensions give the padding.

    Lanes where ``mask`` is false are not read and give ``other`` (default 0).
    ``cache_modifier``, ``eviction_policy`` and ``volatile`` are accepted and
    ignored (they have no meaning off the device)."""
    raise _outside("load")


@builtin
def store(pointer: Any, index: Any = None, value: Any = None, mask: Any = None,
          boundary_check: Any = (), cache_modifier: str = "", eviction_policy: str = "") -> Any:
    """Store ``value`` (converted to the tensor's dtype): ``store(tensor, index,
    value, mask=None)`` at a logical index, ``store(ptrs, value, mask=None)`` through
    pointers, or ``store(block_ptr, value, boundary_check=(dims))``."""
    raise _outside("store")


@builtin
def make_block_ptr(base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any,
                   order: Any) -> Any:
    """A block pointer: the ``block_shape`` block at ``offsets`` of a parent tensor of
    ``shape`` and ``strides`` (elements) starting at ``base``; load and store expand
    it to pointer arithmetic and a boundary mask."""
    raise _outside("make_block_ptr")


@builtin
def advance(base: Any, offsets: Any) -> Any:
    """The block pointer ``base`` moved by ``offsets`` (one per dimension)."""
    raise _outside("advance")


@builtin
def make_tensor_descriptor(base: Any, shape: Any, strides: Any, block_shape: Any) -> Any:
    """Triton's tensor descriptor: a parent tensor of ``shape`` and ``strides``
    (elements) at ``base``, read and written in ``block_shape`` blocks at any offsets
    (``desc.load(offsets)``, ``desc.store(offsets, value)``). Every dimension is
    bounds-checked: elements outside the parent read as 0 and are not written, as the
    device's tensor-memory copies do. Expanded like a block pointer."""
    raise _outside("make_tensor_descriptor")


@builtin
def load_tensor_descriptor(desc: Any, offsets: Any) -> Any:
    """``desc.load(offsets)``: the block of ``desc`` at ``offsets`` (0 outside the parent)."""
    raise _outside("load_tensor_descriptor")


@builtin
def store_tensor_descriptor(desc: Any, offsets: Any, value: Any) -> Any:
    """``desc.store(offsets, value)``: write the block at ``offsets`` (the elements inside
    the parent)."""
    raise _outside("store_tensor_descriptor")


@builtin
def index_select(src: Any, idx: Any, bound: Any, lstdim_blksiz: Any, offsets: Any,
                 numels: Any) -> Any:
    """triton-ascend 3.2's embedding gather (``tl.index_select``): for each entry of the
    1-D or 2-D integer block ``idx``, ``lstdim_blksiz`` elements of that row of the
    row-major table at ``src`` (rows of ``numels[-1]``), from column ``offsets[-1]``;
    a negative index counts from ``bound``. Rows whose index is outside [0, bound),
    positions with ``offsets[d] + p[d] >= numels[d]`` and columns past ``numels[-1]``
    read 0 (the device leaves them unwritten). Expanded to pointer arithmetic and a
    masked load."""
    raise _outside("index_select")


@builtin
def index_select_simd(src: Any, dim: Any, index: Any, src_shape: Any, src_offset: Any,
                      read_shape: Any) -> Any:
    """triton-ascend's gather of whole tiles: from the row-major tensor of ``src_shape``
    at pointer ``src``, the tile of ``read_shape`` at ``src_offset`` whose dimension
    ``dim`` (not the last) runs through the 1-D ``index`` (``read_shape[dim]`` is -1,
    ``src_offset[dim]`` ignored). The other dimensions are cut at ``src_shape``: lanes
    past it read 0. An index outside the tensor is an ``OutOfBoundsError`` (the device
    does not check). Expanded to pointer arithmetic and a masked load."""
    raise _outside("index_select_simd")


@builtin
def where(condition: Any, x: Any, y: Any) -> Any:
    """Elementwise ``x if condition else y``."""
    raise _outside("where")


@builtin
def maximum(x: Any, y: Any, propagate_nan: Any = None) -> Any:
    """Elementwise maximum: a NaN operand is ignored (IEEE maxNum), or propagated with
    ``propagate_nan=PropagateNan.ALL``."""
    raise _outside("maximum")


@builtin
def minimum(x: Any, y: Any, propagate_nan: Any = None) -> Any:
    """Elementwise minimum: a NaN operand is ignored (IEEE minNum), or propagated with
    ``propagate_nan=PropagateNan.ALL``."""
    raise _outside("minimum")


@builtin
def exp(x: Any) -> Any:
    """Elementwise e**x."""
    raise _outside("exp")


@builtin
def log(x: Any) -> Any:
    """Elementwise natural logarithm."""
    raise _outside("log")


@builtin
def log1p(x: Any) -> Any:
    """Elementwise log(1 + x), accurate near 0."""
    raise _outside("log1p")


@builtin
def abs(x: Any) -> Any:  # noqa: A001 - Triton's name
    """Elementwise absolute value."""
    raise _outside("abs")


@builtin
def sigmoid(x: Any) -> Any:
    """Elementwise 1 / (1 + exp(-x))."""
    raise _outside("sigmoid")


@builtin
def sqrt(x: Any) -> Any:
    """Elementwise square root."""
    raise _outside("sqrt")


@builtin
def sum(input: Any, axis: int | None = None, keep_dims: bool = False) -> Any:  # noqa: A001,A002
    """Sum along ``axis`` (all axes when None, the last first). A float sum adds in a
    halving tree (``x[i] + x[i + n/2]``, then again on the halves), in the interpreter
    and compiled-CPU mode alike; it accumulates as rule 10 of dsl.semantic says."""
    raise _outside("sum")


@builtin
def max(input: Any, axis: int | None = None, return_indices: bool = False,  # noqa: A001,A002
        return_indices_tie_break_left: bool = True, keep_dims: bool = False,
        propagate_nan: Any = None) -> Any:
    """Maximum along ``axis`` (all axes when None; a NaN is ignored unless
    ``propagate_nan=PropagateNan.ALL``). With
    ``return_indices`` a (value, int32 index) pair, as ``argmax`` folds them."""
    raise _outside("max")


@builtin
def min(input: Any, axis: int | None = None, return_indices: bool = False,  # noqa: A001,A002
        return_indices_tie_break_left: bool = True, keep_dims: bool = False,
        propagate_nan: Any = None) -> Any:
    """Minimum along ``axis`` (all axes when None; a NaN is ignored unless
    ``propagate_nan=PropagateNan.ALL``). With
    ``return_indices`` a (value, int32 index) pair, as ``argmin`` folds them."""
    raise _outside("min")


@builtin
def argmax(input: Any, axis: Any, tie_break_left: bool = True,  # noqa: A002
           keep_dims: bool = False) -> Any:
    """int32 index of the largest element along ``axis`` (the first on ties with
    ``tie_break_left``): a left fold of Triton's combine, in which a NaN resets the
    fold (the element after it replaces it, so an extreme before a NaN is lost) and a
    NaN in the last position wins (dsl.numerics.arg_fold). Compiled code may pick
    another index in a row holding a NaN."""
    raise _outside("argmax")


@builtin
def argmin(input: Any, axis: Any, tie_break_left: bool = True,  # noqa: A002
           keep_dims: bool = False) -> Any:
    """int32 index of the smallest element along ``axis`` (see ``argmax``)."""
    raise _outside("argmin")


@builtin
def xor_sum(input: Any, axis: int | None = None, keep_dims: bool = False) -> Any:  # noqa: A002
    """Bitwise xor of the integer elements along ``axis`` (all axes when None)."""
    raise _outside("xor_sum")


@builtin
def cumsum(input: Any, axis: int = 0, reverse: bool = False) -> Any:  # noqa: A002
    """Inclusive prefix sums along ``axis`` in index order (from the end with
    ``reverse``), in the operand's dtype (bfloat16 in float32)."""
    raise _outside("cumsum")


@builtin
def cumprod(input: Any, axis: int = 0, reverse: bool = False) -> Any:  # noqa: A002
    """Inclusive prefix products along ``axis`` (see ``cumsum``)."""
    raise _outside("cumprod")


@builtin
def cast(x: Any, dtype: DType, bitcast: bool = False, fp_downcast_rounding: str | None = None,
         overflow_mode: str | None = None) -> Any:
    """Convert to ``dtype`` (same as ``x.to(dtype)``): values round to nearest even
    between floats and truncate toward zero to integers; with ``bitcast=True`` the
    bits are reinterpreted instead (the widths must match). Triton's
    ``fp_downcast_rounding="rtz"`` rounds a narrowing float conversion toward zero;
    triton-ascend's ``overflow_mode="saturate"`` turns an out-of-range value into the
    nearest value of ``dtype`` (a NaN converted to an integer into 0) instead of
    wrapping ("trunc", the default)."""
    raise _outside("cast")


@builtin
def tile_range(start: Any, end: Any, block: int) -> Any:
    """Tile loop: ``for t in tile_range(0, n, BLOCK)`` visits tile starts
    ``start, start + BLOCK, ... < end``, spread round-robin over the programs of
    grid axis 0 (program p takes tiles p, p + P, ...). This is the Ascend idiom: one
    program per vector core, each looping over many tiles."""
    raise _outside("tile_range")


@builtin
def static_range(*args: int) -> Any:
    """A loop unrolled at compile time; bounds are constexpr, the loop variable too."""
    raise _outside("static_range")


@builtin
def range(*args: Any) -> Any:  # noqa: A001
    """A dynamic loop, same as Python's ``range`` inside a kernel."""
    raise _outside("range")


@builtin
def extract_slice(ful: Any, offsets: Any, sizes: Any, strides: Any) -> Any:
    """triton-ascend's extension: the ``sizes`` block of ``ful`` at ``offsets`` (constexpr
    or runtime scalars), every ``strides``-th element along each dimension."""
    raise _outside("extract_slice")


@builtin
def insert_slice(ful: Any, sub: Any, offsets: Any, sizes: Any, strides: Any) -> Any:
    """triton-ascend's extension: ``ful`` with ``sub`` written at ``offsets``."""
    raise _outside("insert_slice")


@builtin
def get_element(src: Any, indice: Any) -> Any:
    """triton-ascend's extension: the one element of ``src`` at the ``indice`` tuple."""
    raise _outside("get_element")


@builtin
def gather(src: Any, index: Any, axis: Any) -> Any:
    """``src`` read along ``axis`` at ``index``: ``out[i][j] = src[index[i][j]][j]`` for
    axis 0 (index has src's rank; its other dimensions equal src's)."""
    raise _outside("gather")


@builtin
def inline_asm_elementwise(asm: Any, constraints: Any, args: Any, dtype: Any, is_pure: Any,
                           pack: Any) -> Any:
    """Device assembly applied to every lane of ``args`` (broadcast together). The NPU
    build passes the text to triton-ascend; the interpreter evaluates a subset of Ascend
    scalar assembly (``MOV``, ``ADD``/``SUB``/``MUL`` with a type suffix, ``SYS_CNT``;
    see ``dsl.inline_asm``) and refuses any other instruction at compile time."""
    raise _outside("inline_asm_elementwise")


@builtin
def histogram(input: Any, num_bins: Any, mask: Any = None) -> Any:  # noqa: A002
    """int32 counts of a 1-D integer block's values in ``num_bins`` bins of width 1
    starting at 0; lanes where ``mask`` is false are not counted. A counted value
    outside ``[0, num_bins)`` has no bin on the device (undefined there): the
    interpreter reports it as an error, compiled-CPU mode leaves it out."""
    raise _outside("histogram")


@builtin
def sort(ptr: Any, dim: Any = -1, descending: Any = False) -> Any:
    """The block sorted along ``dim`` (ascending; NaN last, or first when descending).
    (Triton names the block ``ptr``.)"""
    raise _outside("sort")


@builtin
def multibuffer(src: Any, size: Any) -> Any:
    """triton-ascend's hint to keep ``size`` copies of a tensor's buffer (double
    buffering on the device): accepted, no effect here."""
    raise _outside("multibuffer")


@builtin
def debug_barrier() -> Any:
    """Triton's barrier between the threads of a program: accepted, no effect (a
    program's ops already run in order here)."""
    raise _outside("debug_barrier")


@builtin
def assume(cond: Any) -> Any:
    """Triton's optimisation hint that ``cond`` holds: accepted, no effect."""
    raise _outside("assume")


@builtin
def compile_hint(ptr: Any, hint_name: str, hint_val: Any = None) -> Any:
    """triton-ascend's hint to its compiler about a value: accepted, no effect."""
    raise _outside("compile_hint")


@builtin
def sub_vec_id() -> Any:
    """triton-ascend's index of the vector sub-block running this program (int32
    scalar, 0 to ``sub_vec_num() - 1``). On the device a mixed kernel's cube part runs
    once per AI core and its vector part on each of the core's vector sub-blocks. Here
    a launch of a kernel that calls it runs the whole grid once per sub-block, in
    order (sub-block 0, then 1), as triton-ascend's own interpreter does; a failure in
    any pass leaves every tensor as it was."""
    raise _outside("sub_vec_id")


@builtin
def sub_vec_num() -> Any:
    """triton-ascend's number of vector sub-blocks per AI core, a constexpr: 2 (Atlas
    A2/A3)."""
    raise _outside("sub_vec_num")


@builtin
def sync_block_set(sender: Any, receiver: Any, event_id: Any, sender_pipe: Any = None,
                   receiver_pipe: Any = None) -> Any:
    """triton-ascend's signal from the cube to the vector unit or back (``sender`` and
    ``receiver`` are "cube" or "vector", ``event_id`` a constexpr 0-15, the pipes
    ``PIPE`` members). Checked and accepted: a program's ops already run in order."""
    raise _outside("sync_block_set")


@builtin
def sync_block_wait(sender: Any, receiver: Any, event_id: Any, sender_pipe: Any = None,
                    receiver_pipe: Any = None) -> Any:
    """The wait matching ``sync_block_set``: checked and accepted, as it is."""
    raise _outside("sync_block_wait")


@builtin
def sync_block_all(mode: Any, event_id: Any) -> Any:
    """triton-ascend's barrier across all cube and/or vector cores (``mode`` one of
    "all_cube", "all_vector", "all", "all_sub_vector"; ``event_id`` a constexpr 0-15).
    Checked and accepted: programs here are independent, as the rest of the language
    assumes."""
    raise _outside("sync_block_all")


@builtin
def static_assert(condition: Any, message: str = "") -> Any:
    """Fail compilation with ``message`` when the constexpr ``condition`` is false."""
    raise _outside("static_assert")


# ----------------------------------------------------------------------------- math
# fp32 functions are evaluated at fp32 precision (float64, rounded) in the
# interpreter and in compiled-CPU mode; 16-bit operands compute in fp32 and round
# back. On an NPU, Ascend's math library computes them and may differ in the last
# bits.


@builtin
def tanh(x: Any) -> Any:
    """Elementwise hyperbolic tangent (triton-ascend's ``libdevice.tanh``)."""
    raise _outside("tanh")


@builtin
def exp2(x: Any) -> Any:
    """Elementwise 2**x."""
    raise _outside("exp2")


@builtin
def log2(x: Any) -> Any:
    """Elementwise base-2 logarithm."""
    raise _outside("log2")


@builtin
def rsqrt(x: Any) -> Any:
    """Elementwise 1 / sqrt(x)."""
    raise _outside("rsqrt")


@builtin
def sin(x: Any) -> Any:
    """Elementwise sine."""
    raise _outside("sin")


@builtin
def cos(x: Any) -> Any:
    """Elementwise cosine."""
    raise _outside("cos")


@builtin
def erf(x: Any) -> Any:
    """Elementwise error function."""
    raise _outside("erf")


@builtin
def sinh(x: Any) -> Any:
    """Elementwise hyperbolic sine (libdevice's ``sinh``; ``dsl.mathlib``)."""
    raise _outside("sinh")


@builtin
def cosh(x: Any) -> Any:
    """Elementwise hyperbolic cosine (libdevice's ``cosh``; ``dsl.mathlib``)."""
    raise _outside("cosh")


@builtin
def asinh(x: Any) -> Any:
    """Elementwise inverse hyperbolic sine (libdevice's ``asinh``; ``dsl.mathlib``)."""
    raise _outside("asinh")


@builtin
def acosh(x: Any) -> Any:
    """Elementwise inverse hyperbolic cosine, NaN below 1 (``dsl.mathlib``)."""
    raise _outside("acosh")


@builtin
def atanh(x: Any) -> Any:
    """Elementwise inverse hyperbolic tangent, +-inf at +-1 (``dsl.mathlib``)."""
    raise _outside("atanh")


@builtin
def atan(x: Any) -> Any:
    """Elementwise arc tangent (``dsl.mathlib``)."""
    raise _outside("atan")


@builtin
def asin(x: Any) -> Any:
    """Elementwise arc sine, NaN outside [-1, 1] (``dsl.mathlib``)."""
    raise _outside("asin")


@builtin
def acos(x: Any) -> Any:
    """Elementwise arc cosine, NaN outside [-1, 1] (``dsl.mathlib``)."""
    raise _outside("acos")


@builtin
def atan2(y: Any, x: Any) -> Any:
    """Elementwise angle of the point (x, y) in (-pi, pi] (``dsl.mathlib``)."""
    raise _outside("atan2")


@builtin
def lgamma(x: Any) -> Any:
    """Elementwise log|gamma(x)| (Lanczos; ``dsl.mathlib``)."""
    raise _outside("lgamma")


@builtin
def gamma(x: Any) -> Any:
    """Elementwise gamma function; NaN at the poles (``dsl.mathlib``)."""
    raise _outside("gamma")


@builtin
def erfinv(x: Any) -> Any:
    """Elementwise inverse error function, +-inf at +-1 (``dsl.mathlib``)."""
    raise _outside("erfinv")


@builtin
def cyl_bessel_i0(x: Any) -> Any:
    """Elementwise modified Bessel function of the first kind, order 0 (``dsl.mathlib``)."""
    raise _outside("cyl_bessel_i0")


@builtin
def log10(x: Any) -> Any:
    """Elementwise base-10 logarithm (``dsl.mathlib``)."""
    raise _outside("log10")


@builtin
def trunc(x: Any) -> Any:
    """Elementwise rounding toward zero (``dsl.mathlib``)."""
    raise _outside("trunc")


@builtin
def nearbyint(x: Any) -> Any:
    """Elementwise rounding to the nearest integer, ties to even (``dsl.mathlib``)."""
    raise _outside("nearbyint")


@builtin
def relu(x: Any) -> Any:
    """Elementwise max(x, 0); a NaN stays NaN (``dsl.mathlib``)."""
    raise _outside("relu")


@builtin
def isnan(x: Any) -> Any:
    """Elementwise int1: x is a NaN (``dsl.mathlib``)."""
    raise _outside("isnan")


@builtin
def signbit(x: Any) -> Any:
    """Elementwise int1: x's sign bit is set, -0.0 included (``dsl.mathlib``)."""
    raise _outside("signbit")


@builtin
def round(x: Any) -> Any:  # noqa: A001 - libdevice's name
    """Elementwise rounding to the nearest integer, halves away from zero (C's
    ``round``; ``dsl.mathlib``)."""
    raise _outside("round")


@builtin
def tan(x: Any) -> Any:
    """Elementwise tangent, ``sin(x) / cos(x)`` (``dsl.mathlib``)."""
    raise _outside("tan")


@builtin
def expm1(x: Any) -> Any:
    """Elementwise ``exp(x) - 1``, accurate near 0 (``dsl.mathlib``)."""
    raise _outside("expm1")


@builtin
def reciprocal(x: Any) -> Any:
    """Elementwise ``1 / x`` (``dsl.mathlib``)."""
    raise _outside("reciprocal")


@builtin
def isinf(x: Any) -> Any:
    """Elementwise int1: x is +inf or -inf (``dsl.mathlib``)."""
    raise _outside("isinf")


@builtin
def ilogb(x: Any) -> Any:
    """Elementwise unbiased binary exponent of x, in x's float type (``dsl.mathlib``)."""
    raise _outside("ilogb")


@builtin
def fmod(x: Any, y: Any) -> Any:
    """Elementwise C ``fmod`` of floats, the same as float ``%`` (``dsl.mathlib``)."""
    raise _outside("fmod")


@builtin
def ldexp(x: Any, n: Any) -> Any:
    """Elementwise ``x * 2**n`` for an integral ``n`` (``dsl.mathlib``)."""
    raise _outside("ldexp")


@builtin
def div_rz(x: Any, y: Any) -> Any:
    """Elementwise ``x / y`` rounded toward zero, float32 (``dsl.mathlib``)."""
    raise _outside("div_rz")


@builtin
def copysign(x: Any, y: Any) -> Any:
    """Elementwise |x| with y's sign bit (``dsl.mathlib``)."""
    raise _outside("copysign")


@builtin
def hypot(x: Any, y: Any) -> Any:
    """Elementwise sqrt(x*x + y*y) without intermediate overflow (``dsl.mathlib``)."""
    raise _outside("hypot")


@builtin
def nextafter(x: Any, y: Any) -> Any:
    """Elementwise: the value after x toward y, in x's dtype (``dsl.mathlib``)."""
    raise _outside("nextafter")


@builtin
def floor(x: Any) -> Any:
    """Elementwise round toward -inf."""
    raise _outside("floor")


@builtin
def ceil(x: Any) -> Any:
    """Elementwise round toward +inf."""
    raise _outside("ceil")


@builtin
def pow(x: Any, y: Any) -> Any:  # noqa: A001 - Triton's name
    """Elementwise x**y on floats (triton-ascend's ``libdevice.pow``); ``x ** y`` too."""
    raise _outside("pow")


@builtin
def fma(x: Any, y: Any, z: Any) -> Any:
    """Elementwise x * y + z, rounded once."""
    raise _outside("fma")


@builtin
def fast_dividef(x: Any, y: Any) -> Any:
    """Elementwise x / y (triton-ascend's ``libdevice.fast_dividef``, which may be
    approximate on the NPU; the interpreter and compiled-CPU mode divide exactly)."""
    raise _outside("fast_dividef")


@builtin
def fast_expf(x: Any) -> Any:
    """Elementwise e**x (triton-ascend's ``libdevice.fast_expf``, which may be
    approximate on the NPU; here it is ``exp``)."""
    raise _outside("fast_expf")


@builtin
def isfinite(x: Any) -> Any:
    """Elementwise int1: x is neither infinite nor a NaN, for float16, bfloat16 and
    float32 x (``dsl.mathlib``; libdevice's ``isfinited`` and ``finitef``)."""
    raise _outside("isfinite")


@builtin
def isfinited(x: Any) -> Any:
    """libdevice's name for ``isfinite``."""
    raise _outside("isfinited")


@builtin
def finitef(x: Any) -> Any:
    """libdevice's name for ``isfinite``."""
    raise _outside("finitef")


@builtin
def rint(x: Any) -> Any:
    """Elementwise rounding to the nearest integer, ties to even: ``nearbyint``
    (libdevice's ``rint``)."""
    raise _outside("rint")


@builtin
def div_rn(x: Any, y: Any) -> Any:
    """Elementwise x / y rounded to nearest (IEEE division, like ``/``)."""
    raise _outside("div_rn")


@builtin
def mul_rn(x: Any, y: Any) -> Any:
    """Elementwise x * y rounded to nearest (libdevice's; like ``*``: unsloth's NF4)."""
    raise _outside("mul_rn")


@builtin
def add_rn(x: Any, y: Any) -> Any:
    """Elementwise x + y rounded to nearest (libdevice's; like ``+``)."""
    raise _outside("add_rn")


@builtin
def sub_rn(x: Any, y: Any) -> Any:
    """Elementwise x - y rounded to nearest (libdevice's; like ``-``)."""
    raise _outside("sub_rn")


@builtin
def fdiv(x: Any, y: Any, ieee_rounding: bool = False) -> Any:
    """Elementwise x / y. Triton allows a faster, approximate division here; the
    interpreter and compiled-CPU mode divide exactly."""
    raise _outside("fdiv")


@builtin
def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = None) -> Any:  # noqa: A002
    """Elementwise ``maximum(minimum(x, max), min)`` on floats, as triton-ascend lowers
    it: a NaN ``x`` gives ``max`` (Triton's default ``propagate_nan=NONE``)."""
    raise _outside("clamp")


@builtin
def cdiv(x: Any, div: Any) -> Any:
    """Ceiling division of integers: ``(x + div - 1) // div``."""
    raise _outside("cdiv")


@builtin
def umulhi(x: Any, y: Any) -> Any:
    """High 32 bits of the 64-bit product of two int32 or uint32 operands."""
    raise _outside("umulhi")


# ----------------------------------------------------------------------------- shapes
# Block shapes are constexpr tuples of powers of two; the shape can be passed as one
# tuple or as separate integers, as in Triton. Blocks also offer these as methods
# (``x.reshape(4, 8)``, ``x.T``).


@builtin
def reshape(input: Any, *shape: Any, can_reorder: bool = False) -> Any:  # noqa: A002
    """The same elements in row-major order, in a new ``shape`` of the same size.
    ``can_reorder`` is accepted; the order is always kept."""
    raise _outside("reshape")


@builtin
def view(input: Any, *shape: Any) -> Any:  # noqa: A002
    """Same as ``reshape`` (Triton's deprecated spelling)."""
    raise _outside("view")


@builtin
def permute(input: Any, *dims: Any) -> Any:  # noqa: A002
    """Axes reordered: result axis i is ``input`` axis ``dims[i]``."""
    raise _outside("permute")


@builtin
def trans(input: Any, *dims: Any) -> Any:  # noqa: A002
    """``permute``; without ``dims`` the two axes of a 2-D block are swapped (``x.T``)."""
    raise _outside("trans")


@builtin
def expand_dims(input: Any, axis: Any) -> Any:  # noqa: A002
    """A new axis of size 1 at ``axis`` (or at each axis of a tuple)."""
    raise _outside("expand_dims")


@builtin
def broadcast_to(input: Any, *shape: Any) -> Any:  # noqa: A002
    """``input`` broadcast to ``shape`` (NumPy rules). Inside a kernel
    ``dsl.broadcast_to(block, shape)`` means this; on the host, ``dsl.broadcast_to``
    makes a stride-0 tensor view."""
    raise _outside("broadcast_to")


@builtin
def topk(input: Any, k: int, dim: Any = None) -> Any:  # noqa: A002
    """The ``k`` largest elements along the last axis, largest first (``tl.topk``)."""
    raise _outside("topk")


@builtin
def broadcast(input: Any, other: Any) -> Any:  # noqa: A002
    """Both blocks broadcast to their common shape (NumPy rules): a pair."""
    raise _outside("broadcast")


@builtin
def cat(input: Any, other: Any, can_reorder: bool = False) -> Any:  # noqa: A002
    """Two 1-D blocks concatenated, ``input`` first (the order is always kept;
    ``can_reorder`` is accepted)."""
    raise _outside("cat")


@builtin
def join(a: Any, b: Any) -> Any:
    """A new minor axis of 2: ``join(a, b)[..., 0] == a``, ``[..., 1] == b``."""
    raise _outside("join")


@builtin
def split(a: Any) -> Any:
    """The two halves ``(a[..., 0], a[..., 1])`` of a minor axis of size 2."""
    raise _outside("split")


@builtin
def interleave(a: Any, b: Any) -> Any:
    """``a`` and ``b`` interleaved along their last axis (``join`` then ``reshape``)."""
    raise _outside("interleave")


@builtin
def flip(x: Any, dim: int | None = None) -> Any:
    """The elements reversed along ``dim`` (default: the last axis)."""
    raise _outside("flip")


# ----------------------------------------------------------------------------- random
# Counter-based random numbers: Philox 4x32 keyed by ``seed``, one counter per
# ``offset`` (int32 or uint32), as triton.language.random defines them (see
# dsl/philox.py). The same seed and offsets give the same numbers everywhere.


@builtin
def randint(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """One uint32 random word per offset."""
    raise _outside("randint")


@builtin
def randint4x(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """Four uint32 random words per offset (a tuple of four blocks)."""
    raise _outside("randint4x")


@builtin
def philox(seed: Any, c0: Any, c1: Any, c2: Any, c3: Any, n_rounds: int = 10) -> Any:
    """Triton's ``philox``: ``n_rounds`` of Philox 4x32 on the counter (c0, c1, c2, c3),
    32-bit integers (blocks or scalars, broadcast together), keyed by ``seed``; four
    uint32 blocks. Spelled with ``umulhi``, ``^``, ``*`` and ``+``, as Triton spells it."""
    raise _outside("philox")


@builtin
def rand(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """One float32 uniform in [0, 1) per offset."""
    raise _outside("rand")


@builtin
def randn(seed: Any, offset: Any, n_rounds: int = 10) -> Any:
    """One float32 standard normal per offset (Box-Muller)."""
    raise _outside("randn")


# ----------------------------------------------------------------------------- matrix


@builtin
def dot(input: Any, other: Any, acc: Any = None, input_precision: Any = None,  # noqa: A002
        allow_tf32: Any = None, max_num_imprecise_acc: Any = None, out_dtype: Any = None) -> Any:
    """``acc + input @ other`` of 2-D blocks (M, N, K >= 16), on the Cube unit when
    lowered. fp16/bf16/fp32 operands accumulate in float32 (``out_dtype=float16``
    allowed for float16), int8 in int32. The products are rounded and added in k order,
    starting from ``acc`` (the order triton-ascend's lowering adds in); the interpreter
    and compiled-CPU mode agree bit for bit. ``input_precision`` is accepted; the
    interpreter always computes IEEE fp32 products."""
    raise _outside("dot")


@builtin
def dot_scaled(lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any,
               rhs_format: Any, acc: Any = None, out_dtype: Any = None, lhs_k_pack: Any = True,
               rhs_k_pack: Any = True) -> Any:
    """triton-ascend's scaled ``dot`` of bf16/fp16 blocks:
    ``acc + (lhs * 2**lhs_scale) @ (rhs * 2**rhs_scale)``. ``lhs_scale`` is an int8
    ``[M, G]`` block of exponents, each for ``K/G`` consecutive elements of a row;
    ``rhs_scale`` (``[N, G]``, per column of ``rhs``) may be None. The formats are
    ``"bf16"`` or ``"fp16"``, matching the operands' dtypes; the scaled operands are
    rounded to that dtype, then multiplied as ``dot`` does."""
    raise _outside("dot_scaled")


# ----------------------------------------------------------------------------- atomics
# Triton spells these on pointers (``atomic_add(ptr, val, mask)``); in the logical view
# model a tensor and an index name the element. Each returns the old values (0 where
# masked off). The interpreter gives a defined result when lanes and programs
# collide: as if applied one at a time, in program order (grid x fastest), then lane
# order (row-major), loop iterations one after another. ``sem`` and ``scope`` are
# passed to the generated Triton.


@builtin
def atomic_add(pointer: Any, index: Any = None, val: Any = None, mask: Any = None, sem: Any = None,
               scope: Any = None) -> Any:
    """Atomically add ``val``; returns the old values."""
    raise _outside("atomic_add")


@builtin
def atomic_max(pointer: Any, index: Any = None, val: Any = None, mask: Any = None, sem: Any = None,
               scope: Any = None) -> Any:
    """Atomically keep the larger value (a NaN is ignored); returns the old values."""
    raise _outside("atomic_max")


@builtin
def atomic_min(pointer: Any, index: Any = None, val: Any = None, mask: Any = None, sem: Any = None,
               scope: Any = None) -> Any:
    """Atomically keep the smaller value (a NaN is ignored); returns the old values."""
    raise _outside("atomic_min")


@builtin
def atomic_xchg(pointer: Any, index: Any = None, val: Any = None, mask: Any = None, sem: Any = None,
                scope: Any = None) -> Any:
    """Atomically replace with ``val``; returns the old values."""
    raise _outside("atomic_xchg")


@builtin
def atomic_and(pointer: Any, index: Any = None, val: Any = None, mask: Any = None, sem: Any = None,
               scope: Any = None) -> Any:
    """Atomic bitwise and (integer tensors); returns the old values."""
    raise _outside("atomic_and")


@builtin
def atomic_or(pointer: Any, index: Any = None, val: Any = None, mask: Any = None, sem: Any = None,
              scope: Any = None) -> Any:
    """Atomic bitwise or (integer tensors); returns the old values."""
    raise _outside("atomic_or")


@builtin
def atomic_xor(pointer: Any, index: Any = None, val: Any = None, mask: Any = None, sem: Any = None,
               scope: Any = None) -> Any:
    """Atomic bitwise xor (integer tensors); returns the old values."""
    raise _outside("atomic_xor")


@builtin
def atomic_cas(pointer: Any, index: Any = None, cmp: Any = None, val: Any = None,
               sem: Any = None,
               scope: Any = None) -> Any:
    """Atomic compare-and-swap: write ``val`` where the old value equals ``cmp``;
    returns the old values."""
    raise _outside("atomic_cas")


# ----------------------------------------------------------------------------- debugging, hints


@builtin
def static_print(*values: Any, sep: str = " ", end: str = "\n") -> Any:
    """Print while the kernel compiles (constexprs print their value, blocks their
    type)."""
    raise _outside("static_print")


@builtin
def device_print(prefix: str, *args: Any, hex: bool = False) -> Any:  # noqa: A002
    """Print ``prefix`` and the values from every program: the interpreter writes one
    line per program, starting with its id. Compiled-CPU mode cannot run it
    (triton-ascend lowers it to an Ascend library call)."""
    raise _outside("device_print")


@builtin
def device_assert(cond: Any, msg: str = "") -> Any:
    """Fail the launch where ``cond`` is false: the interpreter raises
    ``dsl.DeviceAssertionError`` naming the program, lane and source line, and the
    launch writes nothing. The generated Triton keeps it (Triton checks it only in
    debug mode); compiled-CPU mode does not check it (triton-ascend compiles it to
    nothing)."""
    raise _outside("device_assert")


@builtin
def multiple_of(input: Any, values: Any) -> Any:  # noqa: A002
    """``input`` unchanged; tells the compiler its values are multiples of ``values``."""
    raise _outside("multiple_of")


@builtin
def max_contiguous(input: Any, values: Any) -> Any:  # noqa: A002
    """``input`` unchanged; tells the compiler runs of ``values`` elements are
    contiguous."""
    raise _outside("max_contiguous")


@builtin
def max_constancy(input: Any, values: Any) -> Any:  # noqa: A002
    """``input`` unchanged; tells the compiler runs of ``values`` elements are equal."""
    raise _outside("max_constancy")


@builtin
def reduce(input: Any, axis: int, combine_fn: Any, keep_dims: bool = False) -> Any:  # noqa: A002
    """Reduce ``input`` (a block or a tuple of blocks of one shape) along ``axis`` with
    ``combine_fn``, a ``@dsl.jit`` function of (accumulators..., elements...) returning
    the new accumulators: a left fold in index order (the order triton-ascend's
    lowered loop combines in)."""
    raise _outside("reduce")


@builtin
def associative_scan(input: Any, axis: int, combine_fn: Any,  # noqa: A002
                     reverse: bool = False) -> Any:
    """Inclusive scan of ``input`` along ``axis`` with ``combine_fn`` (see ``reduce``),
    in index order, from the end with ``reverse``."""
    raise _outside("associative_scan")
