"""The op registry, the backends' handler tables, the IR's use lists, and the
architecture rules the registry exists for (README, "How to add an op").

None of these tests needs triton-ascend or LLVM: compiled-CPU mode and lowering
run the Triton code generator's table, which is checked here."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dsl
from dsl import dtypes as dt
from dsl.ir import Block, Function, IRVerificationError, Op, Param, Type, Value, ViewType, verify
from dsl.layout import Layout
from dsl.opdefs import OPS, Effect, Signature
from lowering import interpreter, triton_codegen, ub

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("dsl", "lowering", "ops")

# Every backend's handler table, by the name a coverage failure reports.
BACKEND_TABLES = {
    "interpreter (lowering.interpreter.HANDLERS)": interpreter.HANDLERS,
    "Triton code generator, also compiled-CPU mode and HIVM lowering "
    "(lowering.triton_codegen.EMITTERS)": triton_codegen.EMITTERS,
    "UB model (lowering.ub.UB_RULES)": ub.UB_RULES,
}


def missing_handlers(kinds: dict[str, object]) -> dict[str, list[str]]:
    """Backend -> registered kinds its table lacks (the coverage rule)."""
    return {backend: sorted(set(kinds) - set(table)) for backend, table in
            BACKEND_TABLES.items() if set(kinds) - set(table)}


# ----------------------------------------------------------------------------- coverage


def test_every_backend_has_a_handler_for_every_registered_kind():
    assert missing_handlers(OPS) == {}


@pytest.mark.parametrize("backend", sorted(BACKEND_TABLES))
def test_no_backend_handles_an_unregistered_kind(backend):
    assert set(BACKEND_TABLES[backend]) <= set(OPS), backend


def test_a_newly_registered_kind_without_handlers_is_reported():
    """The coverage rule can fail: register a kind and give no backend a handler."""
    kinds = dict(OPS, popcount=dataclasses.replace(OPS["abs"], name="popcount"))
    missing = missing_handlers(kinds)
    assert set(missing) == set(BACKEND_TABLES)
    assert all(names == ["popcount"] for names in missing.values())


def test_pass_tables_name_registered_kinds_only():
    from dsl import passes

    for table in (passes._FOLDERS, passes._LEAF_RANGES, passes._ARITHMETIC,
                  passes._PASS_THROUGH, passes._TRUE_WHEN):
        assert set(table) <= set(OPS)


def test_every_record_is_complete():
    for name, record in OPS.items():
        assert record.name == name
        assert record.doc and callable(record.check)
        assert isinstance(record.effect, Effect)
        if record.elementwise is not None:
            ew = record.elementwise
            assert len(record.signature.required) == ew.arity, name
            assert set(ew.kinds) <= {"float", "int", "bool"} and ew.result in ("same", "bool")
        if record.index_roles is not None:
            assert set(record.index_roles) <= set(record.signature.roles), name


# ----------------------------------------------------------------------------- records and ops


def test_signature_parsing_and_positions():
    sig = Signature.parse("view index offset [mask other]")
    assert sig.required == ("view", "index", "offset") and sig.optional == ("mask", "other")
    assert sig.accepts(3) and sig.accepts(5) and not sig.accepts(4) and not sig.accepts(6)
    assert sig.position("other", 5) == 4 and sig.position("mask", 3) is None
    loop = Signature.parse("start end step *inits")
    assert loop.variadic == "inits" and loop.accepts(3) and loop.accepts(9)
    with pytest.raises(KeyError):
        sig.position("value", 5)


def _scalar(dtype=dt.int32) -> Value:
    return Value(Type(dtype))


def test_op_refuses_unregistered_kinds_and_wrong_operand_counts():
    with pytest.raises(ValueError, match="unknown op kind 'popcount'"):
        Op("popcount", [_scalar()])
    with pytest.raises(IRVerificationError, match="add takes operands"):
        Op("add", [_scalar()])


def _view(name="x", dtype=dt.float32) -> Value:
    return Value(ViewType(dtype, Layout("contiguous")), name=name)


def _load(masked: bool) -> tuple[Op, dict[str, Value]]:
    view, index = _view(), Value(Type(dt.int32, (8,)))
    parts = {"view": view, "index": index, "offset": index}
    if masked:
        parts["mask"] = Value(Type(dt.int1, (8,)))
        parts["other"] = Value(Type(dt.float32, (8,)))
    return Op.create("load", list(parts.values()), [Type(dt.float32, (8,))]), parts


def test_named_accessors_follow_the_signature():
    load, parts = _load(masked=True)
    assert load.view is parts["view"] and load.index is parts["index"]
    assert load.offset is parts["offset"] and load.mask is parts["mask"]
    assert load.other is parts["other"] and load.masked and load.tensor == "x"
    plain, _ = _load(masked=False)
    assert plain.mask is None and plain.other is None and not plain.masked
    load.drop_optional()
    assert load.mask is None and not load.masked
    assert not parts["mask"].has_uses and not parts["other"].has_uses
    with pytest.raises(IRVerificationError, match="load at line 0 has no mask"):
        load.require("mask")


def test_use_lists_track_operand_changes():
    a, b, c = _scalar(), _scalar(), _scalar()
    add = Op.create("add", [a, a], [Type(dt.int32)])
    mul = Op.create("mul", [a, b], [Type(dt.int32)])
    assert a.users == [add, mul] and b.users == [mul]
    mul.set_operand("rhs", c)
    assert b.users == [] and c.users == [mul]
    a.replace_all_uses_with(b)
    assert not a.has_uses and b.users == [add, mul] and add.operands == (b, b)
    add.erase()
    assert b.users == [mul]


def test_roles_read_after_an_operand_change_give_the_new_operand():
    """Reads by role are cached per op (interpreters read them at every launch); every
    way of changing operands drops the cache."""
    a, b, c = _scalar(), _scalar(), _scalar()
    mul = Op.create("mul", [a, b], [Type(dt.int32)])
    assert mul.lhs is a and mul.rhs is b
    mul.set_operand("rhs", c)
    assert mul.rhs is c
    a.replace_all_uses_with(b)
    assert mul.lhs is b and mul.operand("rhs") is c
    mul.set_operands([c, a])
    assert (mul.lhs, mul.rhs) == (c, a)
    with pytest.raises(KeyError):
        mul.operand("mask")  # a role the kind does not have
    load, parts = _load(masked=True)
    assert load.mask is parts["mask"]
    load.drop_optional()
    assert load.mask is None and load.index is parts["index"]


def test_replace_all_uses_visits_each_user_once(monkeypatch):
    """Linear replace-all-uses: one substitution per user, not a walk per use."""
    old, new = _scalar(), _scalar()
    users = [Op.create("add", [old, old], [Type(dt.int32)]) for _ in range(500)]
    calls = []
    original = Op._substitute

    def counting(self, a, b):
        calls.append(self)
        original(self, a, b)

    monkeypatch.setattr(Op, "_substitute", counting)
    old.replace_all_uses_with(new)
    assert len(calls) == len(users) and not old.has_uses
    assert all(u.operands == (new, new) for u in users)


def _function(ops: list[Op], params: list[Param]) -> Function:
    return Function("f", params, Block([p.value for p in params], ops))


def test_verify_catches_an_op_removed_without_erase():
    x = Value(Type(dt.int32), name="x")
    one = Op.create("const", [], [Type(dt.int32)], {"value": 1})
    add = Op.create("add", [x, one.result], [Type(dt.int32)])
    fn = _function([one, add], [Param(x, "scalar", "x")])
    verify(fn)
    fn.body.ops.remove(add)  # the const still lists add as a user
    with pytest.raises(IRVerificationError, match="lists a user that does not read it"):
        verify(fn)


def test_verify_applies_each_records_typing_rule():
    x = Value(Type(dt.int32), name="x")
    y = Value(Type(dt.float32), name="y")
    bad = Op.create("add", [x, y], [Type(dt.int32)])
    with pytest.raises(IRVerificationError, match="operands of different dtypes"):
        verify(_function([bad], [Param(x, "scalar", "x"), Param(y, "scalar", "y")]))
    cmp = Op.create("lt", [x, x], [Type(dt.int32)])
    with pytest.raises(IRVerificationError, match="result dtype int32, expected int1"):
        verify(_function([cmp], [Param(x, "scalar", "x")]))


def test_verify_requires_loads_of_tensor_parameters():
    load, parts = _load(masked=False)
    index = parts["index"]
    fn = _function([load], [Param(index, "scalar", "i")])
    with pytest.raises(IRVerificationError):
        verify(fn)


def test_every_kernel_of_the_operators_verifies_with_exact_use_lists():
    import ops

    n = 64
    x = np.random.default_rng(0).uniform(0.1, 0.9, n).astype(np.float32)
    fn = ops.bce_backward_kernel.ir(np.array(1.0, np.float32), x, x, None, np.empty_like(x), n, 1.0,
                                    HAS_WEIGHT=False, APPLY_SCALE=True)
    verify(fn)
    for op in fn.walk():
        for operand in op.operands:
            assert op in operand.users


# ----------------------------------------------------------------------------- architecture


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).glob("*.py"))


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


@pytest.mark.parametrize(("package", "forbidden"), [("dsl", "lowering"), ("dsl", "ops"),
                                                    ("lowering", "ops")])
def test_layering(package, forbidden):
    offenders = {p.name: sorted(m for m in _imports(p) if m.split(".")[0] == forbidden)
                 for p in _modules(package)}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_dsl_runs_kernels_without_importing_lowering_statically():
    """A fresh interpreter: importing dsl loads no lowering module; the first launch
    finds the interpreter through the backend registry."""
    code = ("import sys, numpy as np, dsl\n"
            "assert not [m for m in sys.modules if m.startswith('lowering')]\n"
            "from dsl.backends import backend_names, get_backend\n"
            "assert {'interpreter', 'compiled-cpu', 'npu', 'hivm'} <= set(backend_names())\n"
            "print(type(get_backend('interpreter')).__module__)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "lowering.backends"


def test_unknown_backend_names_are_refused_before_anything_runs():
    @dsl.jit
    def copy(x, out):
        i = dsl.arange(0, 8)
        dsl.store(out, i, dsl.load(x, i))

    x, out = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        copy.launch(x, out, backend="gpu")
    assert not out.any()


def _environ_writes(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        text = ast.unparse(node) if isinstance(node, (ast.Assign, ast.AugAssign, ast.Call,
                                                      ast.Delete)) else ""
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)) and "os.environ[" in text:
            lines.append(node.lineno)
        if isinstance(node, ast.Call) and any(f"os.{f}(" in text.split("=")[0] or
                                              f"environ.{f}(" in text for f in
                                              ("setdefault", "update", "pop", "putenv",
                                               "unsetenv")):
            lines.append(node.lineno)
    return lines


def test_no_module_writes_the_environment_and_one_reads_it():
    writers = {str(p.relative_to(ROOT)): _environ_writes(p)
               for pkg in PACKAGES for p in _modules(pkg)}
    assert {k: v for k, v in writers.items() if v} == {}
    readers = sorted(str(p.relative_to(ROOT)) for pkg in PACKAGES for p in _modules(pkg)
                     if "os.environ" in p.read_text() or "os.getenv" in p.read_text())
    # options.py reads the settings; toolrun.py hands the environment on to children
    assert readers == ["dsl/options.py", "lowering/toolrun.py"]


def _kind_comparisons(path: Path) -> list[int]:
    """Lines comparing an op's ``kind`` with a string literal (or a set of them)."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        kind = any(isinstance(s, ast.Attribute) and s.attr == "kind" for s in sides)
        literal = any(isinstance(s, ast.Constant) and isinstance(s.value, str) or
                      isinstance(s, (ast.Tuple, ast.Set, ast.List)) and s.elts and
                      all(isinstance(e, ast.Constant) for e in s.elts) for s in sides)
        if kind and literal:
            hits.append(node.lineno)
    return hits


# dtype, NumPy dtype, layout and parameter kinds are not op kinds
_NOT_OP_KINDS = {"dsl/dtypes.py", "dsl/layout.py", "dsl/semantic.py", "dsl/frontend.py",
                 "dsl/numerics.py", "dsl/philox.py"}


def test_op_kinds_are_compared_only_in_the_registry():
    hits = {str(p.relative_to(ROOT)): _kind_comparisons(p)
            for pkg in PACKAGES for p in _modules(pkg)}
    allowed = {"dsl/opdefs.py"} | _NOT_OP_KINDS
    assert {k: v for k, v in hits.items() if v and k not in allowed} == {}


def test_no_positional_operand_reads():
    """Operands are read by role (``op.mask``), not as ``op.operands[3]``."""
    hits = {}
    for pkg in PACKAGES:
        for path in _modules(pkg):
            if path.name in ("ir.py", "opdefs.py"):
                continue  # the IR and the registry define the roles
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                        and node.value.attr == "operands":
                    hits.setdefault(str(path.relative_to(ROOT)), []).append(node.lineno)
    assert hits == {}
