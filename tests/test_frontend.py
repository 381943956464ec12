"""Frontend and semantic layer: promotion and broadcast tables, typed IR, errors
that point at the kernel's source with a caret."""

from __future__ import annotations

import traceback

import numpy as np
import pytest

import dsl
from dsl import dtypes as dt
from dsl import frontend
from dsl import semantic as sem
from dsl.ir import Type, Value

# (lhs, rhs, op) -> result dtype; Triton's rules as numbered in dsl.semantic
PROMOTION_TABLE = [
    (dt.int1, dt.int32, "add", dt.int32),  # rule 1
    (dt.int32, dt.bfloat16, "add", dt.float32),  # rule 1: bfloat16 only with bfloat16
    (dt.int1, dt.bfloat16, "mul", dt.float32),  # rule 1
    (dt.int8, dt.float16, "add", dt.float16),  # rule 1
    (dt.int64, dt.float16, "mul", dt.float16),  # rule 1
    (dt.float16, dt.float32, "add", dt.float32),  # rule 2
    (dt.int32, dt.int64, "sub", dt.int64),  # rule 2
    (dt.bfloat16, dt.float32, "mul", dt.float32),  # rule 2
    (dt.float16, dt.bfloat16, "add", dt.float16),  # rule 3
    (dt.bfloat16, dt.float16, "mul", dt.float16),  # rule 3
    (dt.float16, dt.float16, "truediv", dt.float32),  # rule 4
    (dt.bfloat16, dt.bfloat16, "mod", dt.float32),  # rule 4
    (dt.int32, dt.int32, "truediv", dt.float32),  # rule 4
    (dt.int32, dt.int32, "floordiv", dt.int32),
    (dt.float32, dt.float16, "lt", dt.int1),  # rule 7
    (dt.int1, dt.int1, "and", dt.int1),  # rule 7
]

# (typed operand, Python scalar, op) -> result dtype (rule 5)
SCALAR_TABLE = [
    (dt.float16, 2.0, "mul", dt.float16),
    (dt.bfloat16, 1, "sub", dt.bfloat16),
    (dt.int32, 1, "add", dt.int32),
    (dt.int32, 0.5, "mul", dt.float32),
    (dt.int1, 3, "add", dt.int32),
    (dt.int32, 2**40, "add", None),  # does not fit: error
    (dt.float16, 2.0, "truediv", dt.float32),  # rule 4 after rule 5
]


def _value(dtype, shape=()):
    return Value(Type(dtype, shape))


@pytest.mark.parametrize("lhs,rhs,op,expected", PROMOTION_TABLE, ids=str)
def test_promotion_table(lhs, rhs, op, expected):
    b = sem.Builder("k")
    assert sem.binary(b, op, _value(lhs), _value(rhs)).dtype == expected
    assert sem.binary(b, op, _value(rhs), _value(lhs)).dtype == expected


@pytest.mark.parametrize("typed,scalar,op,expected", SCALAR_TABLE, ids=str)
def test_scalar_promotion_table(typed, scalar, op, expected):
    b = sem.Builder("k")
    if expected is None:
        with pytest.raises(dsl.DSLCompileError, match="does not fit"):
            sem.binary(b, op, _value(typed), scalar)
        return
    assert sem.binary(b, op, _value(typed), scalar).dtype == expected
    assert sem.binary(b, op, scalar, _value(typed)).dtype == expected


def test_promotion_makes_casts_and_broadcasts_explicit():
    b = sem.Builder("k")
    r = sem.binary(b, "add", _value(dt.float16, (4, 1)), _value(dt.float32, (8,)))
    assert r.type == Type(dt.float32, (4, 8))
    kinds = [op.kind for op in b.block.ops]
    assert kinds == ["cast", "broadcast", "broadcast", "add"]
    add = b.block.ops[-1]
    assert all(o.type == Type(dt.float32, (4, 8)) for o in add.operands)


BROADCAST_TABLE = [
    ((), (8,), (8,)),
    ((1,), (8,), (8,)),
    ((4, 1), (8,), (4, 8)),
    ((4, 1), (1, 8), (4, 8)),
    ((2, 1, 4), (3, 1), (2, 3, 4)),
    ((4,), (8,), None),
    ((2, 4), (4, 2), None),
]


@pytest.mark.parametrize("a,c,expected", BROADCAST_TABLE, ids=str)
def test_broadcast_table(a, c, expected):
    b = sem.Builder("k")
    if expected is None:
        with pytest.raises(dsl.DSLCompileError, match="incompatible shapes"):
            sem.broadcast_shapes(b, a, c, "+")
    else:
        assert sem.broadcast_shapes(b, a, c, "+") == expected


@dsl.jit
def outer_product(a, b, out, M: dsl.constexpr, N: dsl.constexpr):
    rows = dsl.arange(0, M)
    cols = dsl.arange(0, N)
    av = dsl.load(a, rows)
    bv = dsl.load(b, cols)
    prod = av[:, None] * bv[None, :]
    dsl.store(out, rows[:, None] * N + cols[None, :], prod)


def test_two_dimensional_blocks_end_to_end():
    a = np.arange(4, dtype=np.float16)
    b = np.arange(8, dtype=np.float32)
    out = np.zeros((4, 8), np.float32)
    outer_product[(1,)](a, b, out, 4, 8)
    np.testing.assert_array_equal(out, np.outer(a, b))
    text = str(outer_product.ir(a, b, out, 4, 8))
    assert "float32[4,8]" in text and "expand_dims" in text and "cast" in text


@dsl.jit
def typed_kernel(x, out, n):
    i = dsl.arange(0, 16)
    v = dsl.load(x, i, i < n)
    dsl.store(out, i, v * 2 + 1, i < n)


def test_ir_is_typed_and_readable():
    x = np.arange(16, dtype=np.float16)
    out = np.zeros(16, np.float16)
    fn = typed_kernel.ir(x, out, 16)
    text = str(fn)
    assert text.startswith("kernel @typed_kernel(%x: view<float16,contiguous>")
    assert "load %x" in text and "float16[16]" in text
    for op in fn.walk():
        assert op.loc.line > 0
        for r in op.results:
            assert r.type.dtype is not None and isinstance(r.type.shape, tuple)
    typed_kernel(x, out, 16)
    np.testing.assert_array_equal(out, x * 2 + 1)


# ----------------------------------------------------------------------------- errors


def _compile_error(kernel, *args, **kwargs) -> dsl.DSLCompileError:
    with pytest.raises(dsl.DSLCompileError) as info:
        kernel(*args, **kwargs)
    return info.value


def _line_of(fn_text: str, kernel) -> int:
    lines, first = __import__("inspect").getsourcelines(kernel.fn)
    for i, line in enumerate(lines):
        if fn_text in line:
            return first + i
    raise AssertionError(fn_text)


@dsl.jit
def uses_with(x, n):
    with open("f"):
        pass


@dsl.jit
def unknown_name(x, out):
    dsl.store(out, dsl.arange(0, 4), undefined_thing + 1)  # noqa: F821


@dsl.jit
def shape_mismatch(x, out):
    a = dsl.arange(0, 4)
    b = dsl.arange(0, 8)
    dsl.store(out, a, a + b)


@dsl.jit
def type_mismatch(x, out):
    v = dsl.load(x, dsl.arange(0, 4))
    dsl.store(out, dsl.arange(0, 4), v & 1)


@dsl.jit
def wrong_builtin_arity(x, out):
    v = dsl.exp()
    dsl.store(out, dsl.arange(0, 4), v)


@dsl.jit
def block_if(x, out, n):
    if dsl.arange(0, 4) > n:
        dsl.store(out, dsl.arange(0, 4), 1.0)


@dsl.jit
def loop_variable_after_loop(x, out, n):
    total = 0.0
    for i in range(n):
        total += i
    dsl.store(out, dsl.arange(0, 4), total + i)  # noqa: F821


@dsl.jit
def loop_local_after_loop(x, out, n):
    k = 0
    while k < n:
        last = k * 2.0
        k += 1
    dsl.store(out, dsl.arange(0, 4), last + 1)


X4 = np.zeros(4, np.float32)


@pytest.mark.parametrize("kernel,args,needle,line_text,message", [
    (uses_with, (X4, 3), "with open", "with open(\"f\"):", "unsupported statement: With"),
    (unknown_name, (X4, X4), "undefined_thing", "undefined_thing + 1", "unknown name 'undefined_thing'"),
    (shape_mismatch, (X4, X4), "a + b", "dsl.store(out, a, a + b)", "incompatible shapes [4] and [8]"),
    (type_mismatch, (X4, X4), "v & 1", "v & 1", "does not accept float32"),
    (wrong_builtin_arity, (X4, X4), "dsl.exp()", "v = dsl.exp()", "missing a required argument"),
    (block_if, (X4, X4, 3), "dsl.arange(0, 4) > n", "if dsl.arange(0, 4) > n:",
     "'if' needs a scalar condition"),
    # (session 24: flash-linear-attention reads a loop variable after its loop)
    (loop_variable_after_loop, (X4, X4, 3), "i)", "total + i)",
     "'i' is bound only inside the loop at line"),
    (loop_local_after_loop, (X4, X4, 3), "last + 1", "last + 1)",
     "(Triton: not defined); set a variable before the loop"),
])
def test_errors_show_file_line_column_excerpt_and_caret(kernel, args, needle, line_text, message):
    err = _compile_error(kernel, *args)
    text = str(err)
    line = _line_of(line_text, kernel)
    source = __import__("linecache").getline(__file__, line)
    col = source.index(needle) + 1
    assert f"test_frontend.py:{line}:{col}: error: " in text, text
    assert message in text
    excerpt, caret = text.splitlines()[-2:]
    assert excerpt.strip() == source.strip()
    # the caret sits under the column, relative to the stripped excerpt
    indent = len(source) - len(source.lstrip())
    assert caret == " " * 4 + " " * (col - 1 - indent) + "^"


def test_a_closure_variable_assigned_after_the_kernel_is_a_compile_error():
    # the kernel's closure cell is still empty at its launch (Python raised a bare
    # ValueError "cell is empty" from the front end before)
    @dsl.jit
    def late_scale(x, out):
        i = dsl.arange(0, 4)
        dsl.store(out, i, dsl.load(x, i) * scale)

    with pytest.raises(dsl.DSLCompileError, match="'scale' is not assigned yet where "
                                                  "late_scale is defined") as info:
        late_scale(X4, np.empty(4, np.float32))
    assert "* scale" in str(info.value)
    scale = 2.0
    out = np.empty(4, np.float32)
    late_scale(np.arange(4, dtype=np.float32), out)
    np.testing.assert_array_equal(out, np.arange(4) * scale)


def test_compile_errors_hide_compiler_frames():
    with pytest.raises(dsl.DSLCompileError) as info:
        unknown_name(X4, X4)
    frames = traceback.extract_tb(info.value.__traceback__)
    files = {f.filename for f in frames}
    assert not files & {frontend.__file__, sem.__file__}, files
    assert len(frames) <= 3, files
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_wrong_launch_argument_count_points_at_the_kernel():
    with pytest.raises(dsl.DSLLaunchError) as info:
        typed_kernel(X4, X4)
    text = str(info.value)
    assert "missing argument(s): n" in text
    assert f"test_frontend.py:{_line_of('def typed_kernel', typed_kernel)}:1" in text
    assert "def typed_kernel(x, out, n):" in text and "^" in text
    with pytest.raises(dsl.DSLLaunchError, match="too many positional arguments"):
        typed_kernel(X4, X4, 4, 5)


def test_wrong_argument_kind_is_rejected_before_running():
    with pytest.raises(dsl.DSLLaunchError, match="expected a tensor, a number or None"):
        typed_kernel(X4, X4, "four")


@dsl.jit
def constexpr_branches(x, out, MODE: dsl.constexpr, SCALE: dsl.constexpr):
    i = dsl.arange(0, 4)
    v = dsl.load(x, i)
    if MODE == "double":
        v = v * 2
    elif MODE == "square":
        v = v * v
    else:
        dsl.static_assert(MODE == "same", "unknown MODE")
    for k in dsl.static_range(SCALE):
        v = v + k
    dsl.store(out, i, v)


def test_constexpr_if_static_range_and_static_assert():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    constexpr_branches(x, out, "double", 3)
    np.testing.assert_array_equal(out, x * 2 + 3)
    constexpr_branches(x, out, "square", 0)
    np.testing.assert_array_equal(out, x * x)
    with pytest.raises(dsl.DSLCompileError, match="static_assert failed: unknown MODE"):
        constexpr_branches(x, out, "cube", 0)
    assert len(constexpr_branches._cache) == 2  # one specialization per constexpr set


@dsl.jit
def helper(v, factor: dsl.constexpr):
    return v * factor + 1


@dsl.jit
def calls_helper(x, out):
    i = dsl.arange(0, 4)
    dsl.store(out, i, helper(dsl.load(x, i), 3))


def test_jit_functions_call_each_other_inline():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    calls_helper(x, out)
    np.testing.assert_array_equal(out, x * 3 + 1)


@dsl.jit
def carried_type_changes(x, out, n):
    acc = 0.0
    for _ in range(0, n):
        acc = acc + dsl.load(x, dsl.arange(0, 4))
    dsl.store(out, dsl.arange(0, 4), acc)


def test_loop_carried_type_must_not_change():
    with pytest.raises(dsl.DSLCompileError, match="loop-carried variable 'acc'"):
        carried_type_changes(X4, X4, 2)


def test_builtins_refuse_to_run_outside_kernels():
    with pytest.raises(RuntimeError, match="inside a @dsl.jit kernel"):
        dsl.arange(0, 4)


def test_verifier_rejects_broken_ir():
    from dsl.ir import IRVerificationError, verify

    x = np.arange(16, dtype=np.float16)
    fn = typed_kernel.ir(x, np.zeros(16, np.float16), 16)
    verify(fn)  # the real IR is fine
    ops_list = fn.body.ops
    add = next(op for op in ops_list if op.kind == "add")
    position = ops_list.index(add)
    ops_list.insert(0, ops_list.pop(position))  # use before definition
    with pytest.raises(IRVerificationError, match="before its definition"):
        verify(fn)
    typed_kernel._cache.clear()


_SOURCES = '''
import functools


def plain(x):
    return x + 1


@functools.lru_cache(
    maxsize=None,
)
def decorated(x):
    y = (x +
         2)
    return y


def dead_tail(x):
    y = x * 2
    if False:
        y = y + 1
    # a comment inside

    return y
# a comment at the left margin, after the function


def with_else(x):
    if x:
        return 1
    else:
        pass


    # trailing, indented


def outer(x):
    def inner(y):
        return (y,
                x)
    return inner


def last():
    s = """a string
at the margin"""
    return s
'''


def test_kernel_sources_are_read_from_code_objects_as_inspect_reads_them(tmp_path):
    import inspect
    path = tmp_path / "kernel_sources_mod.py"
    path.write_text(_SOURCES)
    namespace: dict = {"__name__": "kernel_sources_mod"}
    exec(compile(_SOURCES, str(path), "exec"), namespace)  # noqa: S102
    names = ["plain", "decorated", "dead_tail", "with_else", "outer", "last"]
    for name in names:
        fn = namespace[name]
        fn = getattr(fn, "__wrapped__", fn)
        found = frontend._function_source(fn)
        assert found is not None, name
        raw, _, first, tree = found
        lines, inspect_first = inspect.getsourcelines(fn)
        assert (first, raw.rstrip()) == (inspect_first, "".join(lines).rstrip()), name
        assert tree.name == name
    # a function whose source is not on disk: the general reader's error
    code = compile("def nowhere(x):\n    return x\n", "<nowhere>", "exec")
    exec(code, namespace)  # noqa: S102
    assert frontend._function_source(namespace["nowhere"]) is None
    with pytest.raises(dsl.DSLCompileError, match="cannot read the source of nowhere"):
        frontend.KernelSource.parse(namespace["nowhere"])


def test_a_definition_the_fast_reader_cannot_isolate_falls_back_to_inspect(monkeypatch):
    @dsl.jit
    def copy(x, out, BLOCK: dsl.constexpr):
        i = dsl.arange(0, BLOCK)
        dsl.store(out, i, dsl.load(x, i))

    monkeypatch.setattr(frontend, "_function_source", lambda fn: None)
    slow = frontend.KernelSource.parse(copy.fn)
    monkeypatch.undo()
    fast = frontend.KernelSource.parse(copy.fn)
    assert ast_dump(slow.tree) == ast_dump(fast.tree)
    assert (slow.line_offset, slow.col_offset, slow.text) == \
        (fast.line_offset, fast.col_offset, fast.text)


def ast_dump(tree):
    import ast
    return ast.dump(tree, include_attributes=True)


NUMPY_SCALE = np.float32(2.0)
NUMPY_SHIFT = np.int64(3)


@dsl.jit
def scaled_by_numpy_scalars(x, out, N: dsl.constexpr):
    i = dsl.arange(0, N)
    dsl.store(out, i, dsl.load(x, i) * NUMPY_SCALE + NUMPY_SHIFT)


def test_a_numpy_scalar_global_is_a_constant_of_its_type():
    """``S = np.float32(2.0)`` read by a kernel was refused ("cannot apply an operator
    to float32"; found in session 19); it is a constant of its own type."""
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    scaled_by_numpy_scalars(x, out, N=4)
    np.testing.assert_array_equal(out, x * 2 + 3)


def test_a_keyword_only_parameter_is_refused_at_its_line():
    """The refusal had no file:line, unlike every other compile error (found in
    session 19)."""
    def kernel(x, *, w):  # noqa: ARG001
        pass

    with pytest.raises(dsl.DSLCompileError, match="test_frontend.py:[0-9]+: kernel kernel "
                                                  "parameter 'w': .*keyword-only"):
        dsl.jit(kernel)
