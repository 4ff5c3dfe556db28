"""Constant evaluation for `canonicalize`: what an arith op computes on constant operands,
bit-exactly.

Integers follow C/Triton semantics on the type's width (wraparound, truncating division); the op
(`divsi` vs `divui`) says how the bits are read and the result type says how the constant is stored
(`i32` signed, `u32` unsigned). Floats are folded in their own precision with NumPy (f16, f32, f64
only). Every function returns None where folding could differ from the GPU: undefined behaviour
(division by zero, overshifts, out-of-range float-to-int), bf16/fp8, and signed-zero ties of
min/max."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..dtypes import TABLE as DTYPES
from ..ir.ops import arith
from ..ir.types import ScalarType

FLOAT_DTYPES = {
    row.ir: row.numpy_dtype.type for row in DTYPES if row.is_float and row.numpy == row.raw_numpy
}
_UINT_OF_WIDTH = {16: np.uint16, 32: np.uint32, 64: np.uint64}


# -- integer representation ----------------------------------------------------------------------
def to_bits(value: int | bool, bits: int) -> int:
    """The two's-complement bit pattern of `value` on `bits` bits, as a non-negative int."""
    return int(value) & ((1 << bits) - 1)


def as_signed(pattern: int, bits: int) -> int:
    return pattern - (1 << bits) if pattern >> (bits - 1) else pattern


def stored_int(value: int, type: ScalarType) -> int | bool:
    """`value` wrapped to `type` as constants store it: signed iN, unsigned uN, bool for i1."""
    pattern = to_bits(value, type.bitwidth)
    if type.is_bool:
        return bool(pattern)
    return as_signed(pattern, type.bitwidth) if type.is_signed else pattern


def foldable_float(type: ScalarType) -> bool:
    return type.name in FLOAT_DTYPES


def to_float(value: Any, type: ScalarType) -> np.floating:
    with np.errstate(over="ignore"):  # a constant too large for f16 is inf there, as on the GPU
        return FLOAT_DTYPES[type.name](value)


# -- integer binary ops (operands and results are bit patterns; None = do not fold) --------------
def _sdiv(a: int, b: int, n: int) -> int | None:
    x, y = as_signed(a, n), as_signed(b, n)
    if y == 0 or (y == -1 and x == -(1 << (n - 1))):
        return None
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _srem(a: int, b: int, n: int) -> int | None:
    x, y = as_signed(a, n), as_signed(b, n)
    if y == 0 or (y == -1 and x == -(1 << (n - 1))):
        return None
    r = abs(x) % abs(y)
    return r if x >= 0 else -r


def _shift_ok(b: int, n: int) -> bool:
    # LLVM makes a shift by >= the width poison, and PTX clamps it: two answers, so never fold.
    return b < n


INT_BINARY: dict[type, Callable[[int, int, int], int | None]] = {
    arith.AddIOp: lambda a, b, n: a + b,
    arith.SubIOp: lambda a, b, n: a - b,
    arith.MulIOp: lambda a, b, n: a * b,
    arith.DivSIOp: _sdiv,
    arith.DivUIOp: lambda a, b, n: a // b if b else None,
    arith.RemSIOp: _srem,
    arith.RemUIOp: lambda a, b, n: a % b if b else None,
    arith.AndIOp: lambda a, b, n: a & b,
    arith.OrIOp: lambda a, b, n: a | b,
    arith.XOrIOp: lambda a, b, n: a ^ b,
    arith.ShLIOp: lambda a, b, n: a << b if _shift_ok(b, n) else None,
    arith.ShRSIOp: lambda a, b, n: as_signed(a, n) >> b if _shift_ok(b, n) else None,
    arith.ShRUIOp: lambda a, b, n: a >> b if _shift_ok(b, n) else None,
    arith.MaxSIOp: lambda a, b, n: max(as_signed(a, n), as_signed(b, n)),
    arith.MinSIOp: lambda a, b, n: min(as_signed(a, n), as_signed(b, n)),
    arith.MaxUIOp: lambda a, b, n: max(a, b),
    arith.MinUIOp: lambda a, b, n: min(a, b),
}

INT_PREDICATES: dict[str, Callable[[int, int, int], bool]] = {
    "eq": lambda a, b, n: a == b,
    "ne": lambda a, b, n: a != b,
    "slt": lambda a, b, n: as_signed(a, n) < as_signed(b, n),
    "sle": lambda a, b, n: as_signed(a, n) <= as_signed(b, n),
    "sgt": lambda a, b, n: as_signed(a, n) > as_signed(b, n),
    "sge": lambda a, b, n: as_signed(a, n) >= as_signed(b, n),
    "ult": lambda a, b, n: a < b,
    "ule": lambda a, b, n: a <= b,
    "ugt": lambda a, b, n: a > b,
    "uge": lambda a, b, n: a >= b,
}


def fold_int_binary(cls: type, lhs: Any, rhs: Any, type: ScalarType) -> int | bool | None:
    fn = INT_BINARY.get(cls)
    if fn is None:
        return None
    n = type.bitwidth
    result = fn(to_bits(lhs, n), to_bits(rhs, n), n)
    return None if result is None else stored_int(result, type)


def fold_cmpi(predicate: str, lhs: Any, rhs: Any, type: ScalarType) -> bool | None:
    fn = INT_PREDICATES.get(predicate)
    n = type.bitwidth
    return None if fn is None else bool(fn(to_bits(lhs, n), to_bits(rhs, n), n))


# -- float binary ops ----------------------------------------------------------------------------
def _mixed_zeros(a: np.floating, b: np.floating) -> bool:
    return a == 0 and b == 0 and math.copysign(1, a) != math.copysign(1, b)


def _maximum(a, b, propagate_nan: bool, pick_max: bool):
    if np.isnan(a) or np.isnan(b):
        if propagate_nan:
            return a if np.isnan(a) else b
        return b if np.isnan(a) else a
    if _mixed_zeros(a, b):
        return None  # hardware and libraries disagree on the sign of max(-0.0, +0.0)
    return max(a, b) if pick_max else min(a, b)


FLOAT_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    arith.AddFOp: lambda a, b: a + b,
    arith.SubFOp: lambda a, b: a - b,
    arith.MulFOp: lambda a, b: a * b,
    arith.MaximumFOp: lambda a, b: _maximum(a, b, True, True),
    arith.MinimumFOp: lambda a, b: _maximum(a, b, True, False),
    arith.MaxNumFOp: lambda a, b: _maximum(a, b, False, True),
    arith.MinNumFOp: lambda a, b: _maximum(a, b, False, False),
}
# divf is folded only where the GPU divides exactly (f16, f64): f32 division is lowered, as in
# Triton, to the approximate `div.full.f32`, whose quotient a correctly rounded fold could differ
# from in the last bits. remf is never folded (its lowering is not exact either).
EXACT_DIVISION = ("f16", "f64")


def _divide(a, b):
    return None if b == 0 else a / b  # x / 0.0 is inf or NaN; leave the choice to the target


FLOAT_PREDICATES: dict[str, Callable[[Any, Any], bool]] = {
    "oeq": lambda a, b: a == b,
    "one": lambda a, b: a < b or a > b,
    "olt": lambda a, b: a < b,
    "ole": lambda a, b: a <= b,
    "ogt": lambda a, b: a > b,
    "oge": lambda a, b: a >= b,
    "une": lambda a, b: a != b,  # true when either is NaN
    "ord": lambda a, b: not (np.isnan(a) or np.isnan(b)),
    "uno": lambda a, b: bool(np.isnan(a) or np.isnan(b)),
}


def fold_float_binary(cls: type, lhs: Any, rhs: Any, type: ScalarType) -> float | None:
    fn = FLOAT_BINARY.get(cls)
    if cls is arith.DivFOp and type.name in EXACT_DIVISION:
        fn = _divide
    if fn is None or not foldable_float(type):
        return None
    with np.errstate(all="ignore"):
        result = fn(to_float(lhs, type), to_float(rhs, type))
    return None if result is None else float(result)


def fold_cmpf(predicate: str, lhs: Any, rhs: Any, type: ScalarType) -> bool | None:
    fn = FLOAT_PREDICATES.get(predicate)
    if fn is None or not foldable_float(type):
        return None
    return bool(fn(to_float(lhs, type), to_float(rhs, type)))


def fold_negf(value: Any, type: ScalarType) -> float | None:
    return float(-to_float(value, type)) if foldable_float(type) else None


# -- casts ---------------------------------------------------------------------------------------
def _int_to_float(value: int, signed: bool, dst: ScalarType) -> float:
    # Convert from a 64-bit integer array so NumPy rounds once, as cvt.rn does (a Python float
    # in between would round twice).
    source = np.array(value, dtype=np.int64 if signed else np.uint64)
    return float(source.astype(FLOAT_DTYPES[dst.name]))


def _float_to_int(value: Any, src: ScalarType, dst: ScalarType, signed: bool) -> int | None:
    x = to_float(value, src)
    if not np.isfinite(x):
        return None
    t = math.trunc(float(x))
    n = dst.bitwidth
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
    # Out of range is poison in LLVM and saturates in PTX: leave it to the target.
    return stored_int(t, dst) if lo <= t <= hi else None


def _bits_of(value: Any, type: ScalarType) -> int | None:
    if type.is_int:
        return to_bits(value, type.bitwidth)
    if not foldable_float(type):
        return None
    return int(np.array(to_float(value, type)).view(_UINT_OF_WIDTH[type.bitwidth]))


def _bitcast(value: Any, src: ScalarType, dst: ScalarType) -> Any:
    bits = _bits_of(value, src)
    if bits is None or src.bitwidth != dst.bitwidth:
        return None
    if dst.is_int:
        return stored_int(bits, dst)
    if not foldable_float(dst):
        return None
    result = np.array(bits, dtype=_UINT_OF_WIDTH[dst.bitwidth]).view(FLOAT_DTYPES[dst.name])
    # A Python float cannot keep every NaN payload, so a NaN stays a bitcast.
    return None if np.isnan(result) else float(result)


def fold_cast(cls: type, value: Any, src: ScalarType, dst: ScalarType) -> Any:
    """The `dst` constant the cast `cls` makes of constant `value` of type `src`, or None."""
    if src.is_int and dst.is_int:
        bits = to_bits(value, src.bitwidth)
        if cls is arith.ExtSIOp and dst.bitwidth >= src.bitwidth:
            return stored_int(as_signed(bits, src.bitwidth), dst)
        if cls is arith.ExtUIOp and dst.bitwidth >= src.bitwidth:
            return stored_int(bits, dst)
        if cls is arith.TruncIOp and dst.bitwidth <= src.bitwidth:
            return stored_int(bits, dst)
    if cls in (arith.SIToFPOp, arith.UIToFPOp) and src.is_int and foldable_float(dst):
        signed = cls is arith.SIToFPOp
        bits = to_bits(value, src.bitwidth)
        return _int_to_float(as_signed(bits, src.bitwidth) if signed else bits, signed, dst)
    if cls in (arith.FPToSIOp, arith.FPToUIOp) and foldable_float(src) and dst.is_int:
        return _float_to_int(value, src, dst, signed=cls is arith.FPToSIOp)
    if cls in (arith.ExtFOp, arith.TruncFOp) and foldable_float(src) and foldable_float(dst):
        with np.errstate(all="ignore"):
            return float(to_float(value, src).astype(FLOAT_DTYPES[dst.name]))
    if cls is arith.BitcastOp:
        return _bitcast(value, src, dst)
    return None
