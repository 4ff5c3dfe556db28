"""The language items of Triton's test_core through the NVPTX lowering: each kernel of
tests/frontend/test_lang_test_core_items.py assembles with ptxas, and the ones with new lowering paths
(one-element conditions and x.item() as a reduction, tl.cat along dim 1, int1 sums, NaN-skipping
argmax, arithmetic >> of unsigned amounts, tl.map_elementwise) run on the CPU emulator against NumPy."""

from __future__ import annotations


import numpy as np
import pytest
from cpu_emulator import Emulator
from nvptx_support import needs_ptxas, run_ptxas

import tileworkbench as tw
import tileworkbench.language as tl

import test_lang_test_core_items as compat  # noqa: E402

RNG = np.random.default_rng(14)
CASES = {
    "methods": (compat.methods_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                        "count_ptr": "*i32"}, {"N": 16}),
    "early_exit": (compat.early_exit_kernel, {"exit_ptr": "*i32", "out_ptr": "*i32"}, {"MODE": "dynamic"}),
    "cat_dim1": (compat.cat_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"}, {"DIM": 1}),
    "python_values": (compat.python_values_kernel, {"out_ptr": "*fp32", "x_ptr": "*fp32"}, {}),
    "scalars_loop": (compat.scalars_and_loop_kernel, {"x": "i32", "y": "i32", "z_ptr": "*fp32", "n": "i32"},
                     {}),
    "sum_int1": (compat.sum_in_dtype_kernel, {"out_ptr": "*i32", "init": "i32"},
                 {"IN": tl.int1, "OUT": tl.int1}),
    "argmax": (compat.arg_kernel, {"x_ptr": "*fp32", "out_ptr": "*i32"}, {"N": 8}),
    "shr": (compat.binary_kernel, {"x_ptr": "*i32", "y_ptr": "*u32", "out_ptr": "*i32"}, {"OP": ">>"}),
    "map_elementwise": (compat.map_elementwise_kernel, {"a_ptr": "*u32", "b_ptr": "*u32", "sign_ptr": "*i32",
                                                        "quotient_ptr": "*u32", "remainder_ptr": "*u32"},
                        {"N": 32}),
}


@needs_ptxas
@pytest.mark.parametrize("name", list(CASES))
def test_assembles(tmp_path, name):
    fn, signature, constexprs = CASES[name]
    compiled = tw.compile(fn, signature=signature, constexprs=constexprs, target="sm_90")
    result = run_ptxas(compiled.asm["ptx"], "sm_90", tmp_path)
    assert result.returncode == 0, result.stderr


def emulator(name: str) -> Emulator:
    fn, signature, constexprs = CASES[name]
    return Emulator(fn, signature, constexprs, num_warps=1)


@pytest.mark.parametrize("exit_early", [1, 0])
def test_early_exit_emulated(exit_early):
    out = np.full(1, -1, np.int32)
    emulator("early_exit").launch((1,), np.array([exit_early], np.int32), out)
    assert out[0] == (0 if exit_early else 1)


def test_cat_dim1_emulated():
    x, y = (RNG.standard_normal((4, 8)).astype(np.float32) for _ in range(2))
    out = np.full((4, 16), np.nan, np.float32)
    emulator("cat_dim1").launch((1,), x, y, out)
    np.testing.assert_array_equal(out, np.concatenate([x, y], axis=1))


def test_int1_sum_argmax_and_shift_emulated():
    out = np.full(1, -1, np.int32)
    emulator("sum_int1").launch((1,), out, 1)
    assert out[0] == 0  # 1024 ones added in int1 wrap to 0
    x = RNG.standard_normal(8).astype(np.float32)
    x[3] = np.nan
    idx = np.full(2, -1, np.int32)
    emulator("argmax").launch((1,), x, idx)
    assert list(idx) == [np.nanargmax(x), np.nanargmin(x)]
    values = RNG.integers(-(2**31), 2**31 - 1, 8).astype(np.int32)
    shifts = RNG.integers(0, 31, 8).astype(np.uint32)
    shifted = np.full(8, 7, np.int32)
    emulator("shr").launch((1,), values, shifts, shifted)
    np.testing.assert_array_equal(shifted, values >> shifts.astype(np.int32))


def test_map_elementwise_emulated():
    a = RNG.integers(1, 1000, 32).astype(np.uint32)
    b = RNG.integers(1, 1000, 32).astype(np.uint32)
    b[:4] = a[:4]
    sign, quotient, remainder = (np.full(32, 7, t) for t in (np.int32, np.uint32, np.uint32))
    emulator("map_elementwise").launch((1,), a, b, sign, quotient, remainder)
    np.testing.assert_array_equal(sign, np.sign(a.astype(np.int64) - b))
    np.testing.assert_array_equal(quotient, a // b)
    np.testing.assert_array_equal(remainder, a % b)
