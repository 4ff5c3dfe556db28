"""The backend registry and the one dtype table: targets resolve through the registry, one list of
architectures, and no target-string compares outside `tileworkbench/backends/`."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tileworkbench import dtypes
from tileworkbench.backends import backend_for, backends, default_target, target_names
from tileworkbench.errors import CompilationError
from tileworkbench.runtime.compiler import resolve_target

PACKAGE = Path(__file__).resolve().parents[2] / "tileworkbench"


def test_every_builtin_backend_registers_and_claims_its_targets():
    names = {b.name for b in backends()}
    assert {"interpreter", "nvptx"} <= names
    assert backend_for("interpreter").name == "interpreter"
    for target in ("cuda", "sm_80", "sm_90a"):
        assert backend_for(target).name == "nvptx"
        assert backend_for(target).is_gpu


def test_architectures_have_one_owner():
    from tileworkbench.backends.nvptx.archs import ARCHS

    assert backend_for("sm_90").architectures() == tuple(ARCHS)
    assert resolve_target("sm_90") == "sm_90"


@pytest.mark.parametrize("target", ["sm_120", "tpu", "sm_90 "])
def test_unknown_target_fails_at_resolve_naming_the_known_ones(target):
    with pytest.raises(CompilationError, match="unknown target") as info:
        resolve_target(target)
    assert "sm_90" in str(info.value) and "interpreter" in str(info.value)


def test_default_target_follows_config(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "interpret", True)
    assert default_target() == "interpreter"
    monkeypatch.setattr(config, "interpret", False)
    monkeypatch.setattr(config, "target", "interpreter")
    assert default_target() == "interpreter"
    assert "interpreter" in target_names()


_TARGET = r'"(?:interpreter|cuda|cpu|sm_\w*)"'
# a compare with a target string, a membership test in a literal list of them, or a prefix test
TARGET_COMPARE = re.compile(
    rf"[!=]= *{_TARGET}|{_TARGET} *[!=]=|\bin *[(\[{{][^)\]}}]*{_TARGET}|"
    r'\.startswith\( *[(]?"(?:sm_[0-9"]|cuda|cpu|interp)')  # not ncu metrics ("sm__pipe...")


@pytest.mark.parametrize("line", ['if target == "cpu":', 'if "interpreter" != t:',
                                  'if t in ("cuda", x):', 'ok = arch.startswith("sm_")',
                                  'if target in {"sm_90a"}:', 'if arch == "sm_90":'])
def test_the_target_compare_pattern_catches_each_form(line):
    assert TARGET_COMPARE.search(line)


def test_no_target_string_compares_outside_backends():
    """Code outside tileworkbench/backends/ asks the registry (`backend_for(t).is_gpu`, ...) instead
    of comparing target strings (issue 13)."""
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
                 for path in PACKAGE.rglob("*.py")
                 if "backends" not in path.relative_to(PACKAGE).parts[:1]
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if TARGET_COMPARE.search(line.split("#")[0])]
    assert offenders == []


def test_dtype_table_rows_agree_with_numpy_and_are_unique():
    for key in ("triton", "kind", "ir", "numpy"):
        values = [getattr(row, key) for row in dtypes.TABLE]
        assert len(values) == len(set(values)), key
    for row in dtypes.TABLE:
        assert row.numpy_dtype.itemsize * 8 == max(row.bits, 8)
        assert np.dtype(row.raw_numpy).itemsize == row.numpy_dtype.itemsize
        assert dtypes.lookup(row.triton) is row and dtypes.lookup(row.ir) is row


def test_derived_tables_follow_the_dtype_table():
    from tileworkbench.backends.interpreter.dtypes import _NUMPY
    from tileworkbench.language import core
    from tileworkbench.runtime import specialize

    for row in dtypes.TABLE:
        assert _NUMPY[row.ir] == row.numpy_dtype
        assert core.dtype(row.triton).name == row.triton
        if row.numpy in dtypes.HELD_AS:  # fp8e4b15: its arrays are other rows' dtype by design
            assert specialize.dtype_name(row.numpy_dtype) != row.kind
            continue
        assert specialize.dtype_name(row.numpy_dtype) == row.kind


def test_tma_element_codes_and_llvm_widths_come_from_the_dtype_table():
    """CUDA's CUtensorMapDataType (host maps) and PTX's tensormap.replace codes (maps built in the
    kernel) differ for fp64 and bf16; types without a code of their own take the unsigned type of
    their width (bytes are copied as they are)."""
    host = {k: dtypes.tma_element_code(k, in_kernel=False) for k in
            ("u8", "u16", "u32", "i32", "u64", "i64", "fp16", "fp32", "fp64", "bf16")}
    assert host == {"u8": 0, "u16": 1, "u32": 2, "i32": 3, "u64": 4, "i64": 5, "fp16": 6,
                    "fp32": 7, "fp64": 8, "bf16": 9}
    device = {k: dtypes.tma_element_code(k, in_kernel=True)
              for k in ("fp16", "fp32", "fp64", "bf16")}
    assert device == {"fp16": 6, "fp32": 7, "fp64": 9, "bf16": 10}
    for name, width_code in (("i8", 0), ("fp8e4nv", 0), ("int16", 1), ("i1", 0)):
        assert dtypes.tma_element_code(name, in_kernel=False) == width_code
        assert dtypes.tma_element_code(name, in_kernel=True) == width_code
    assert dtypes.tma_element_code("int32", in_kernel=True) == 2  # kernel maps: i32 as u32
    assert dtypes.LLVM_FLOAT_BITS == {"half": 16, "bfloat": 16, "float": 32, "double": 64}
    with pytest.raises(KeyError, match="no dtype named"):
        dtypes.tma_element_code("fp12", in_kernel=False)
