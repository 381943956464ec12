"""A Triton-style kernel DSL for Ascend NPUs.

Write a kernel once with ``@dsl.jit`` and the builtins below; run it on NumPy
arrays or CPU torch tensors through the vectorized NumPy interpreter.
"""

from dsl.dtypes import (
    DType,
    bfloat16,
    float16,
    float32,
    float64,
    int1,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from dsl.errors import (
    DSLCompileError,
    DSLError,
    DSLLaunchError,
    DSLRuntimeError,
    OutOfBoundsError,
    SourceLoc,
)
from dsl.frontend import ScalarSpec, TensorSpec, tensor_spec
from dsl.jit import JITFunction, jit
from dsl.language import (
    abs,
    arange,
    block_size,
    cast,
    cdiv,
    ceil,
    clamp,
    constexpr,
    cos,
    div_rn,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    full,
    load,
    log,
    log1p,
    log2,
    max,
    maximum,
    min,
    minimum,
    num_programs,
    pow,
    program_id,
    range,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    static_assert,
    static_range,
    store,
    sum,
    tanh,
    tile_range,
    umulhi,
    where,
    zeros,
)
from dsl.options import Options
from dsl.views import TensorView, as_view, broadcast_to

__all__ = [
    "DType", "bfloat16", "float16", "float32", "float64", "int1", "int8", "int16", "int32",
    "int64", "uint8", "uint16", "uint32", "uint64",
    "DSLCompileError", "DSLError", "DSLLaunchError", "DSLRuntimeError", "OutOfBoundsError",
    "SourceLoc", "JITFunction", "jit", "abs", "arange", "block_size", "cast", "constexpr",
    "exp", "full", "load", "log", "log1p", "max", "maximum", "min", "minimum",
    "num_programs", "program_id", "range", "sigmoid", "sqrt", "static_assert",
    "static_range", "store", "sum", "tile_range", "where", "zeros", "TensorView", "as_view",
    "broadcast_to", "ScalarSpec", "TensorSpec", "tensor_spec", "Options",
    "cdiv", "ceil", "clamp", "cos", "div_rn", "erf", "exp2", "fdiv", "floor", "fma", "log2",
    "pow", "rsqrt", "sin", "tanh", "umulhi",
]
