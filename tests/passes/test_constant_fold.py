"""Constant evaluation (`passes/fold.py`): C integer semantics on each width, floats in their own
precision, and no folding where the target could give another answer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tileworkbench.ir.ops import arith
from tileworkbench.ir.types import bf16, f16, f32, f64, i1, i8, i32, i64, u8, u32
from tileworkbench.passes import fold


@pytest.mark.parametrize(
    "cls, lhs, rhs, ty, expected",
    [
        (arith.AddIOp, 2**31 - 1, 1, i32, -(2**31)),  # wraps
        (arith.AddIOp, 2**32 - 1, 1, u32, 0),
        (arith.SubIOp, 0, 1, u32, 2**32 - 1),  # unsigned stored in [0, 2^32)
        (arith.MulIOp, 100, 3, i8, 44),
        (arith.DivSIOp, -7, 2, i32, -3),  # truncates toward zero, not floor
        (arith.RemSIOp, -7, 2, i32, -1),  # sign of the dividend
        (arith.RemSIOp, 7, -2, i32, 1),
        (arith.DivUIOp, -8, 2, i32, 2**31 - 4),  # divui reads the bits as unsigned
        (arith.RemUIOp, 2**32 - 1, 10, u32, 5),
        (arith.DivSIOp, 2**32 - 8, 2, u32, 2**32 - 4),  # divsi on u32 bits: -8 / 2 = -4
        (arith.ShLIOp, 1, 31, i32, -(2**31)),
        (arith.ShRSIOp, -16, 2, i32, -4),  # arithmetic shift
        (arith.ShRUIOp, -16, 28, i32, 15),  # logical shift
        (arith.ShRSIOp, 2**32 - 16, 2, u32, 2**32 - 4),
        (arith.MaxSIOp, -1, 1, i32, 1),
        (arith.MaxUIOp, -1, 1, i32, -1),  # -1 is the largest unsigned
        (arith.MinUIOp, 200, 3, u8, 3),
        (arith.XOrIOp, 0b1100, 0b1010, i8, 0b0110),
        (arith.AndIOp, -1, 2**40 + 5, i64, 2**40 + 5),
        (arith.AddIOp, True, True, i1, False),
    ],
)
def test_int_binary(cls, lhs, rhs, ty, expected):
    got = fold.fold_int_binary(cls, lhs, rhs, ty)
    assert got == expected
    assert isinstance(got, bool) == isinstance(expected, bool)


@pytest.mark.parametrize(
    "cls, lhs, rhs, ty",
    [
        (arith.DivSIOp, 5, 0, i32),
        (arith.DivUIOp, 5, 0, u32),
        (arith.RemSIOp, 5, 0, i32),
        (arith.RemUIOp, 5, 0, i32),
        (arith.DivSIOp, -(2**31), -1, i32),  # overflow is undefined
        (arith.RemSIOp, -(2**7), -1, i8),
        (arith.ShLIOp, 1, 32, i32),  # overshift: poison in LLVM, clamped in PTX
        (arith.ShRUIOp, 1, -1, i32),
        (arith.ShRSIOp, 1, 8, i8),
    ],
)
def test_int_binary_undefined_is_not_folded(cls, lhs, rhs, ty):
    assert fold.fold_int_binary(cls, lhs, rhs, ty) is None


def test_int_results_are_stored_in_the_type_range():
    assert fold.fold_int_binary(arith.AddIOp, 2**32 - 1, 0, u32) == 2**32 - 1
    assert fold.fold_int_binary(arith.AddIOp, 2**32 - 1, 0, i32) == -1
    assert fold.fold_int_binary(arith.AndIOp, 1, 1, i1) is True


@pytest.mark.parametrize(
    "predicate, lhs, rhs, expected",
    [
        ("slt", -1, 0, True),
        ("ult", -1, 0, False),
        ("uge", -1, 0, True),
        ("sge", -1, 0, False),
        ("eq", -1, 2**32 - 1, True),
        ("ne", 3, 3, False),
        ("sle", 3, 3, True),
        ("ugt", 0, 0, False),
    ],
)
def test_cmpi(predicate, lhs, rhs, expected):
    assert fold.fold_cmpi(predicate, lhs, rhs, i32) is expected


def test_f32_is_folded_in_f32_precision():
    got = fold.fold_float_binary(arith.AddFOp, 0.1, 0.2, f32)
    assert got == float(np.float32(0.1) + np.float32(0.2))
    assert got != 0.1 + 0.2
    assert fold.fold_float_binary(arith.MulFOp, 3e38, 10.0, f32) == math.inf


def test_f16_is_folded_in_f16_precision():
    got = fold.fold_float_binary(arith.AddFOp, 1.0, 2.0**-11, f16)
    assert got == 1.0  # the tie rounds to even in f16
    assert fold.fold_float_binary(arith.MulFOp, 300.0, 300.0, f16) == math.inf


def test_signed_zeros_and_nan():
    assert math.copysign(1, fold.fold_float_binary(arith.AddFOp, -0.0, 0.0, f32)) == 1
    assert math.copysign(1, fold.fold_float_binary(arith.AddFOp, -0.0, -0.0, f32)) == -1
    assert math.copysign(1, fold.fold_negf(0.0, f32)) == -1
    assert math.isnan(fold.fold_float_binary(arith.SubFOp, math.inf, math.inf, f32))
    assert math.isnan(fold.fold_float_binary(arith.MaximumFOp, math.nan, 1.0, f32))
    assert fold.fold_float_binary(arith.MaxNumFOp, math.nan, 1.0, f32) == 1.0
    assert fold.fold_float_binary(arith.MinNumFOp, 2.0, math.nan, f32) == 2.0
    # Hardware differs on max(-0.0, +0.0): leave it alone.
    assert fold.fold_float_binary(arith.MaximumFOp, -0.0, 0.0, f32) is None


def test_unsafe_float_folds_are_refused():
    assert fold.fold_float_binary(arith.AddFOp, 1.0, 2.0, bf16) is None
    # f32 division is div.full.f32 (approximate) on the GPU; remf is not exact there either.
    assert fold.fold_float_binary(arith.DivFOp, 1.0, 3.0, f32) is None
    assert fold.fold_float_binary(arith.DivFOp, 1.0, 0.0, f16) is None
    assert fold.fold_float_binary(arith.RemFOp, 7.0, 2.0, f64) is None
    assert fold.fold_cmpf("olt", 1.0, 2.0, bf16) is None


def test_division_is_folded_where_the_gpu_divides_exactly():
    third = float(np.float16(1.0) / np.float16(3.0))
    assert fold.fold_float_binary(arith.DivFOp, 1.0, 3.0, f16) == third
    assert fold.fold_float_binary(arith.DivFOp, 1.0, 3.0, f64) == 1.0 / 3.0


@pytest.mark.parametrize(
    "predicate, expected",
    [
        ("oeq", False),
        ("one", False),
        ("olt", False),
        ("une", True),
        ("ord", False),
        ("uno", True),
    ],
)
def test_cmpf_with_nan(predicate, expected):
    assert fold.fold_cmpf(predicate, math.nan, 1.0, f32) is expected


def test_int_casts():
    assert fold.fold_cast(arith.ExtSIOp, -1, i8, i32) == -1
    assert fold.fold_cast(arith.ExtUIOp, -1, i8, i32) == 255
    assert fold.fold_cast(arith.ExtSIOp, True, i1, i32) == -1
    assert fold.fold_cast(arith.ExtUIOp, True, i1, i32) == 1
    assert fold.fold_cast(arith.TruncIOp, 0x1FF, i32, i8) == -1
    assert fold.fold_cast(arith.TruncIOp, 0x1FF, i32, u8) == 255
    assert fold.fold_cast(arith.ExtUIOp, 2**32 - 1, u32, i64) == 2**32 - 1


def test_float_casts():
    assert fold.fold_cast(arith.SIToFPOp, 2**24 + 1, i32, f32) == 2**24  # round to nearest even
    assert (
        fold.fold_cast(arith.SIToFPOp, 2**62 + 2**38 + 1, i64, f32) == 2**62 + 2**39
    )  # one rounding
    assert fold.fold_cast(arith.UIToFPOp, -1, i32, f32) == 2.0**32
    assert fold.fold_cast(arith.FPToSIOp, -2.9, f32, i32) == -2
    assert fold.fold_cast(arith.FPToUIOp, 255.9, f32, u8) == 255
    assert fold.fold_cast(arith.FPToSIOp, 3e9, f32, i32) is None  # out of range
    assert fold.fold_cast(arith.FPToSIOp, math.nan, f32, i32) is None
    assert fold.fold_cast(arith.TruncFOp, 1.0 + 2.0**-11, f32, f16) == 1.0
    assert fold.fold_cast(arith.TruncFOp, 1e6, f32, f16) == math.inf
    assert fold.fold_cast(arith.ExtFOp, 65504.0, f16, f32) == 65504.0
    assert fold.fold_cast(arith.TruncFOp, 1.0, f32, bf16) is None


def test_bitcast():
    assert fold.fold_cast(arith.BitcastOp, 1.0, f32, i32) == 0x3F800000
    assert fold.fold_cast(arith.BitcastOp, -0.0, f32, u32) == 0x80000000
    assert fold.fold_cast(arith.BitcastOp, 0x3C00, i32, f16) is None  # widths differ
    assert fold.fold_cast(arith.BitcastOp, -(2**31) + 0x3F800000, i32, f32) == -1.0
    assert fold.fold_cast(arith.BitcastOp, 0x7FC00001, i32, f32) is None  # a NaN payload
