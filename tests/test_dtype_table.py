"""One dtype table: the mappings other modules keep are derived from `dtypes.TABLE`, and agree with
it row by row; a scan of the package fails on a new dict literal keyed by dtype names outside
`dtypes.py` (derive it from the table, or add a column there) beyond the few listed below, each
with the reason it is no restatement of the table."""

from __future__ import annotations

import ast
import ctypes
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tileworkbench.language as tl
from tileworkbench import dtypes
from tileworkbench.dtypes import HELD_AS, TABLE

PACKAGE = Path(__file__).resolve().parent.parent / "tileworkbench"

# (module, the name the dict is bound to) -> why its keys are dtype names but it restates no column
ALLOWED = {
    ("backends/llvm/llvm_types.py", "NOT_LOWERED"): "the rows the LLVM lowering refuses, and why",
    ("backends/llvm/lowering/wgmma.py", "ACC_TYPES"): "wgmma's accumulator types (PTX's spelling)",
    ("backends/numpy_libdevice/rounding.py", "_FLOAT_NAMES"): "libdevice's names in its symbols",
    ("runtime/device_limits.py", "_TENSOR_CORE_OPS"): "Triton's per-generation tensor-core figures",
    ("runtime/device_limits.py", "_SIMD_OPS"): "Triton's per-generation CUDA-core figures",
    ("workbench/ceilings.py", "DATASHEET"): "roofline ceiling names (fp32, tf32, ...), not dtypes",
    ("workbench/hostbench.py", "measure_host"): "roofline ceiling names",
    ("workbench/microbench.py", "measure_gemm"): "roofline ceiling names -> cuBLAS types",
    ("workbench/roofline_chart.py", "COLORS"): "roofline ceiling names -> plot colors",
    ("workbench/check.py", "TOLERANCES"): "the check's tolerance per output dtype (a policy)",
    ("workbench/check.py", "UNIT_ROUNDOFF"): "per dot input kind, tf32 (no dtype) included",
}


def _dtype_names() -> set[str]:
    names = {"half", "float", "double", "bool"}
    for row in TABLE:
        names |= {row.triton, row.kind, row.ir, row.numpy, row.torch, row.llvm, row.language}
    return names - {""}


def _owner(parents: dict[int, ast.AST], node: ast.AST) -> str:
    """The name a dict literal is bound to, or the function it sits in."""
    while node is not None:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            return node.targets[0].id
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            return node.target.id
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            return node.name
        node = parents.get(id(node))
    return "<module>"


def dtype_keyed_literals() -> set[tuple[str, str]]:
    """(module, owner) of every dict literal outside dtypes.py with two or more dtype-name keys."""
    names, found = _dtype_names(), set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "dtypes.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {id(child): node for node in ast.walk(tree)
                   for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                if sum(isinstance(k, str) and k in names for k in keys) >= 2:
                    found.add((path.relative_to(PACKAGE).as_posix(), _owner(parents, node)))
    return found


def test_no_new_dtype_keyed_literal():
    new = dtype_keyed_literals() - set(ALLOWED)
    assert not new, f"dict literals keyed by dtype names outside dtypes.py (derive them from " \
                    f"dtypes.TABLE): {sorted(new)}"


def test_the_scan_finds_what_it_is_about():
    """A broken scan would pass; it sees the allowed ones, and no allowed entry is stale."""
    assert set(ALLOWED) <= dtype_keyed_literals()


@pytest.mark.parametrize("row", TABLE, ids=lambda row: row.triton)
def test_language_names_follow_the_table(row):
    from tileworkbench.language import core

    for name in (row.triton, row.kind, row.language or row.triton):
        assert tl.dtype(name).name == row.triton
    assert getattr(tl, row.language or row.triton) == tl.dtype(row.triton)
    assert repr(tl.dtype(row.triton)) == f"triton.language.{row.language or row.triton}"
    assert tl.dtype(row.triton).primitive_bitwidth == row.bits
    assert core._IR_NAMES[row.triton] == row.ir
    if row.numpy not in HELD_AS:
        assert tl.dtype(row.numpy).name == row.triton


@pytest.mark.parametrize("row", [r for r in TABLE if r.is_float], ids=lambda row: row.triton)
def test_float_formats_follow_the_table_and_ml_dtypes(row):
    t = tl.dtype(row.triton)
    assert (t.fp_mantissa_width, t.exponent_bias) == (row.mantissa, row.bias)
    if row.numpy not in HELD_AS:  # fp8e4b15 has no ml_dtypes type of its own
        info = ml_dtypes.finfo(row.numpy_dtype)
        assert (info.nmant, 1 - info.minexp) == (row.mantissa, row.bias)


@pytest.mark.parametrize("row", TABLE, ids=lambda row: row.triton)
def test_backend_mappings_follow_the_table(row):
    from tileworkbench.backends.interpreter.dtypes import LOW_FLOATS, numpy_dtype
    from tileworkbench.cuda.arguments import normalize_kind
    from tileworkbench.ir.types import ScalarType
    from tileworkbench.runtime.device_limits import _dtype_name

    assert numpy_dtype(ScalarType(row.ir)) == row.numpy_dtype
    assert (row.numpy_dtype in LOW_FLOATS) == row.numpy.startswith(("bfloat", "float8"))
    assert normalize_kind(row.ir) == normalize_kind(row.kind) == row.kind
    assert normalize_kind("*" + row.ir) == "*" + row.kind
    assert _dtype_name(row.triton) == _dtype_name(row.numpy) == row.numpy
    if not row.llvm.startswith("i"):  # a float LLVM type names one row; "i8" is fp8's bytes too
        assert dtypes.BY_LLVM_FLOAT[row.llvm] is row


@pytest.mark.parametrize("row", TABLE, ids=lambda row: row.triton)
def test_llvm_and_host_call_types_follow_the_table(row):
    from tileworkbench.backends.cpu.host_calls import _CTYPES
    from tileworkbench.backends.llvm.llvm_types import NOT_LOWERED, llvm_type
    from tileworkbench.ir.types import ScalarType

    if row.ir not in NOT_LOWERED:
        assert str(llvm_type(ScalarType(row.ir))) == row.llvm
    if row.ir in _CTYPES:
        assert ctypes.sizeof(_CTYPES[row.ir]) * 8 == row.bits
        assert np.dtype(_CTYPES[row.ir]) == row.numpy_dtype
    else:
        assert row.bits == 1 or row.bits == 16 or row.bits == 8 and row.is_float


def test_tensor_core_names_follow_the_table():
    from tileworkbench.backends.llvm.lowering.wgmma import AB_TYPES
    from tileworkbench.frontend.scaled_dot import _FP8
    from tileworkbench.passes.mma import _FP8 as MMA_FP8

    assert AB_TYPES == {"f16": "f16", "bf16": "bf16", "f32": "tf32", "i8": "s8", "f8e4nv": "e4m3",
                        "f8e5": "e5m2"}
    assert MMA_FP8 == {ir: name for ir, name in AB_TYPES.items() if ir.startswith("f8")}
    assert {name: t.name for name, t in _FP8.items()} == {"e4m3": "fp8e4nv", "e5m2": "fp8e5"}


def test_llvm_float_bits_follow_the_table():
    from tileworkbench.backends.llvm.llvm_types import BF16, F16, F32, F64

    assert dtypes.LLVM_FLOAT_BITS == {"half": 16, "bfloat": 16, "float": 32, "double": 64}
    assert {str(t): dtypes.BY_LLVM_FLOAT[str(t)].ir for t in (F16, BF16, F32, F64)} == \
        {"half": "f16", "bfloat": "bf16", "float": "f32", "double": "f64"}
