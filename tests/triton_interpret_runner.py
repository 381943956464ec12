"""Run generated Triton kernels under Triton's own interpreter (TRITON_INTERPRET=1)
on CPU torch tensors and compare them with this project's interpreter.

Invoked by tests/test_triton_interpreter.py in a subprocess (the variable must be
set before triton.jit decorates the generated code). Prints one JSON line per case.
Triton's interpreter needs one patch with NumPy >= 2.4 (tests/
triton_interpret_patch.py). And
Triton's interpreter refuses every ``extern_elementwise`` call, which is how
triton-ascend's ``libdevice.log1p`` is spelled; the runner gives the interpreter
builder the one extern symbol the kernels use (``__hmf_log1pf``). fp32 exp, log
and log1p are given the project's definition (evaluated in float64 and rounded,
see dsl.opdefs) in place of NumPy's float32 functions. The generated source itself
is run unchanged.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton.runtime.interpreter as triton_interpreter  # noqa: E402
import triton_interpret_patch  # noqa: E402  (this file's folder is sys.path[0])
from triton.language.extra.ascend import libdevice as ascend_libdevice  # noqa: E402

import dsl  # noqa: E402
import ops  # noqa: E402
from lowering import interpreter  # noqa: E402
from lowering.compiler import write_source  # noqa: E402
from lowering.triton_codegen import generate  # noqa: E402

triton_interpret_patch.install()

def _fp32(fn):
    """The project's fp32 math (dsl.opdefs): evaluated in float64, rounded."""
    def run(x):
        return fn(x.astype(np.float64)).astype(np.float32) if x.dtype == np.float32 else fn(x)
    return run


# Triton's interpreter evaluates fp32 exp/log with NumPy's float32 functions, which
# differ from the project's definition in the last bit: give it the project's.
triton_interpreter.InterpreterBuilder.create_exp = \
    lambda self, arg: self.unary_op(arg, _fp32(np.exp))
triton_interpreter.InterpreterBuilder.create_log = \
    lambda self, arg: self.unary_op(arg, _fp32(np.log))
_EXTERN = {"__hmf_log1pf": _fp32(np.log1p)}


def _extern_elementwise(self, lib_name, lib_path, symbol, args, ret_type, is_pure):
    arg = args[0]
    with np.errstate(all="ignore"):
        data = _EXTERN[symbol](arg.data)
    return triton_interpreter.TensorHandle(data, arg.dtype)


triton_interpreter.InterpreterBuilder.create_extern_elementwise = _extern_elementwise
# the interpreter patches tl and tl.math with its builder, not vendor libdevice modules
triton_interpreter._patch_builtin(ascend_libdevice, triton_interpreter.interpreter_builder)


def to_torch(array: np.ndarray) -> torch.Tensor:
    if array.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def run_case(kernel, args, kwargs, grid, folder):
    launch = kernel.prepare(args, kwargs, grid)
    out_name = next(op.tensor for op in launch.function.walk() if op.kind == "store")
    ours = launch.tensors[out_name].buffer
    ours[...] = 0
    interpreter.run(launch)
    expected = ours.copy()
    generated = generate(launch.function, tree_sums=True)
    path = write_source(generated, folder)
    spec = importlib.util.spec_from_file_location(f"interp_{generated.digest[:12]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    theirs = launch.tensors[out_name].buffer
    theirs[...] = 0
    call = []
    for param, value in zip(launch.function.params, launch.args):
        call.append(to_torch(value.buffer) if param.role == "tensor" else value.item())
    getattr(module, generated.name)[launch.grid](*call)
    got = theirs.copy()
    if got.dtype == ml_dtypes.bfloat16:
        a, b = got.view(np.int16).astype(np.int32), expected.view(np.int16).astype(np.int32)
        ulps = int(np.abs(a - b).max()) if a.size else 0
    else:
        ulps = None
    return {"bitexact": bool(np.array_equal(got.view(np.uint8), expected.view(np.uint8))),
            "max_ulps_bf16": ulps, "dtype": str(got.dtype)}


def main() -> None:
    folder = __import__("pathlib").Path(sys.argv[1])
    rng = np.random.default_rng(0)
    n = 1000
    shape = (20, 50)
    for dtype, weight in itertools.product(
            [np.float32, np.float16, ml_dtypes.bfloat16], [False, True]):
        x = rng.uniform(0.02, 0.98, shape).astype(dtype)
        y = rng.uniform(0, 1, shape).astype(dtype)
        g = dsl.broadcast_to(np.array(0.7, dtype), shape)
        w = dsl.broadcast_to(rng.uniform(0.5, 2, (50,)).astype(dtype), shape) if weight else None
        out = np.zeros(shape, dtype)
        result = run_case(ops.bce_backward_kernel, (g, x, y, w, out, n, 1.0 / n),
                          {"HAS_WEIGHT": weight, "APPLY_SCALE": True, "BLOCK": 256}, (4,),
                          folder)
        print(json.dumps({"case": f"bce {np.dtype(dtype).name} w={weight}", **result}))
        logits = (rng.standard_normal(shape) * 4).astype(dtype)
        p = dsl.broadcast_to(rng.uniform(0.5, 3, (50,)).astype(dtype), shape) if weight else None
        result = run_case(ops.bce_with_logits_target_backward_kernel,
                          (g, logits, None, p, np.zeros(shape, dtype), n, 1.0),
                          {"HAS_WEIGHT": False, "HAS_POS_WEIGHT": weight, "APPLY_SCALE": False,
                           "BLOCK": 256}, (3,), folder)
        print(json.dumps({"case": f"target {np.dtype(dtype).name} p={weight}", **result}))


if __name__ == "__main__":
    main()
