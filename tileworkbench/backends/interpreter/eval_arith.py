"""`arith` ops in NumPy with C/LLVM semantics: integers wrap, division truncates toward zero, signedness
comes from the op (divsi vs divui), float math runs in the op's own type (bf16/fp8 via float32)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir.ops import arith
from .dtypes import (
    F32,
    LOW_FLOATS,
    make_value,
    numpy_dtype,
    rescaled,
    signed,
    signed_dtype,
    to_float8,
    typed_math,
    unsigned,
    unsigned_dtype,
    value_scale,
)


def c_div(a, b):
    """Integer division truncating toward zero (C), where NumPy's `//` floors."""
    return (a - np.fmod(a, b)) // b


def _signed_zeros(fn: Callable, larger: bool) -> Callable:
    """`fn` with -0.0 < +0.0, as IEEE 754-2019 maximum/minimum and the GPU's max/min order them;
    NumPy's maximum/fmax return their first operand for (-0.0, +0.0), which makes the op
    non-commutative."""

    def ordered(a, b):
        result = fn(a, b)
        tie = (result == 0) & (a == b)
        pick = np.where(np.signbit(a), b, a) if larger else np.where(np.signbit(a), a, b)
        return np.where(tie, pick, result)[()]

    return ordered


FLOAT_BINARY: dict[type, Callable] = {
    arith.AddFOp: np.add,
    arith.SubFOp: np.subtract,
    arith.MulFOp: np.multiply,
    arith.DivFOp: np.divide,
    arith.RemFOp: np.fmod,  # C fmod: the sign of the dividend
    arith.MaximumFOp: _signed_zeros(np.maximum, larger=True),  # propagates NaN
    arith.MinimumFOp: _signed_zeros(np.minimum, larger=False),
    arith.MaxNumFOp: _signed_zeros(np.fmax, larger=True),  # returns the non-NaN operand
    arith.MinNumFOp: _signed_zeros(np.fmin, larger=False),
}

# Integer ops by the signedness they read their operands with: None means either works.
INT_BINARY: dict[type, tuple[Callable, str | None]] = {
    arith.AddIOp: (np.add, None),
    arith.SubIOp: (np.subtract, None),
    arith.MulIOp: (np.multiply, None),
    arith.AndIOp: (np.bitwise_and, None),
    arith.OrIOp: (np.bitwise_or, None),
    arith.XOrIOp: (np.bitwise_xor, None),
    arith.ShLIOp: (np.left_shift, None),
    arith.DivSIOp: (c_div, "signed"),
    arith.RemSIOp: (np.fmod, "signed"),  # C %: the sign of the dividend
    arith.ShRSIOp: (np.right_shift, "signed"),  # arithmetic shift
    arith.MaxSIOp: (np.maximum, "signed"),
    arith.MinSIOp: (np.minimum, "signed"),
    arith.DivUIOp: (np.floor_divide, "unsigned"),
    arith.RemUIOp: (np.remainder, "unsigned"),
    arith.ShRUIOp: (np.right_shift, "unsigned"),  # logical shift
    arith.MaxUIOp: (np.maximum, "unsigned"),
    arith.MinUIOp: (np.minimum, "unsigned"),
}


def eval_float_binary(op, ctx):
    return typed_math(FLOAT_BINARY[type(op)], op.result.type)


def eval_int_binary(op, ctx):
    fn, signedness = INT_BINARY[type(op)]
    dtype = numpy_dtype(op.result.type)
    if dtype == np.bool_:
        return _on_bits(fn, dtype)
    if signedness == "signed" and dtype.kind == "u":
        return _viewed(fn, signed, dtype)
    if signedness == "unsigned" and dtype.kind == "i":
        return _viewed(fn, unsigned, dtype)
    return fn


def _viewed(fn: Callable, view: Callable, dtype: np.dtype) -> Callable:
    """`fn` on operands reinterpreted by `view`, the result reinterpreted back as `dtype`."""
    return lambda a, b: np.asarray(fn(view(a), view(b))).view(dtype)[()]


_BOOL_SAFE = (np.bitwise_and, np.bitwise_or, np.bitwise_xor)


def _on_bits(fn: Callable, dtype: np.dtype) -> Callable:
    """i1 arithmetic wraps mod 2 (NumPy's bool `+` is a logical or); logic ops run on bools as is."""
    if fn in _BOOL_SAFE:
        return fn
    return lambda a, b: (np.bitwise_and(fn(unsigned(a), unsigned(b)), 1) != 0)[()]


def eval_negf(op, ctx):
    return typed_math(np.negative, op.result.type)


def eval_constant(op, ctx):
    scale = value_scale(op.result.type)
    number = op.value if scale == 1.0 else np.asarray(op.value, np.float64) / scale
    value = make_value(number, op.result.type)
    return lambda: value


# -- comparisons and select ------------------------------------------------------------------------
INT_PREDICATES = {
    "eq": (np.equal, None),
    "ne": (np.not_equal, None),
    "slt": (np.less, signed),
    "sle": (np.less_equal, signed),
    "sgt": (np.greater, signed),
    "sge": (np.greater_equal, signed),
    "ult": (np.less, unsigned),
    "ule": (np.less_equal, unsigned),
    "ugt": (np.greater, unsigned),
    "uge": (np.greater_equal, unsigned),
}


def _either_nan(a, b):
    return np.isnan(a) | np.isnan(b)


# Ordered predicates are false on NaN (NumPy's comparisons already are); unordered ones are true.
FLOAT_PREDICATES = {
    "oeq": np.equal,
    "olt": np.less,
    "ole": np.less_equal,
    "ogt": np.greater,
    "oge": np.greater_equal,
    "one": lambda a, b: np.less(a, b) | np.greater(a, b),
    "une": np.not_equal,
    "ord": lambda a, b: ~_either_nan(a, b),
    "uno": _either_nan,
    "ueq": lambda a, b: np.equal(a, b) | _either_nan(a, b),
    "ult": lambda a, b: ~np.greater_equal(a, b),
    "ule": lambda a, b: ~np.greater(a, b),
    "ugt": lambda a, b: ~np.less_equal(a, b),
    "uge": lambda a, b: ~np.less(a, b),
    "true": lambda a, b: np.ones(np.broadcast(a, b).shape, np.bool_)[()],
    "false": lambda a, b: np.zeros(np.broadcast(a, b).shape, np.bool_)[()],
}


def eval_cmpi(op, ctx):
    fn, view = INT_PREDICATES[op.predicate]
    if view is None:
        return fn
    return lambda a, b: fn(view(a), view(b))[()]


def eval_cmpf(op, ctx):
    fn = FLOAT_PREDICATES[op.predicate]
    if numpy_dtype(op.lhs.type) in LOW_FLOATS:
        return lambda a, b: fn(np.asarray(a).astype(F32), np.asarray(b).astype(F32))
    return fn


def eval_select(op, ctx):
    # np.where even for scalars: combine regions of tt.reduce run scalar-typed ops on whole slices
    return lambda c, t, f: np.where(c, t, f)[()]


# -- casts -----------------------------------------------------------------------------------------
def eval_extsi(op, ctx):
    dtype = numpy_dtype(op.result.type)
    if numpy_dtype(op.operand.type) == np.bool_:  # sign-extending i1 true gives -1
        return lambda x: np.negative(np.asarray(x).astype(dtype))[()]
    return lambda x: signed(x).astype(dtype)[()]


def eval_extui(op, ctx):
    dtype = numpy_dtype(op.result.type)
    return lambda x: unsigned(x).astype(dtype)[()]


def eval_trunci(op, ctx):
    dtype = numpy_dtype(op.result.type)
    if dtype == np.bool_:
        return lambda x: np.bitwise_and(x, 1) != 0
    return lambda x: np.asarray(x).astype(dtype)[()]  # C casts wrap


def eval_float_cast(op, ctx):
    """extf / truncf: round to nearest even; fp8 saturates like the GPU's satfinite conversions."""
    dtype = numpy_dtype(op.result.type)
    factor = rescaled(op.operand.type, op.result.type)
    if factor != 1.0:  # to or from fp8e4b15 (exact in float64: a power of two)
        if dtype.itemsize == 1:
            return lambda x: to_float8(np.asarray(x).astype(np.float64) * factor, dtype)
        return lambda x: (np.asarray(x).astype(np.float64) * factor).astype(dtype)[()]
    if dtype in LOW_FLOATS and dtype.itemsize == 1:
        return lambda x: to_float8(x, dtype)
    return lambda x: np.asarray(x).astype(dtype)[()]


def _int_to_float(view: Callable):
    def factory(op, ctx):
        dtype = numpy_dtype(op.result.type)
        wide = np.float64 if dtype in LOW_FLOATS else dtype
        if dtype in LOW_FLOATS and dtype.itemsize == 1:
            factor = 1.0 / value_scale(op.result.type)
            return lambda x: to_float8(view(x).astype(np.float64) * factor, dtype)
        return lambda x: view(x).astype(wide).astype(dtype)[()]

    return factory


def _float_to_int(unsigned_result: bool):
    """fptosi / fptoui: truncate toward zero, saturate out-of-range values, and NaN gives 0 (as PTX's
    `cvt.rzi` does; LLVM calls these poison)."""

    def factory(op, ctx):
        dtype = numpy_dtype(op.result.type)
        target = unsigned_dtype(dtype) if unsigned_result else signed_dtype(dtype)
        info = np.iinfo(target)
        # the largest float64 not above the integer maximum (2**63 - 1 itself rounds up)
        high = float(np.nextafter(np.float64(info.max), 0)) if info.bits == 64 else float(info.max)

        factor = value_scale(op.operand.type)

        def convert(x):
            wide = np.asarray(x).astype(np.float64) * factor
            wide = np.where(np.isnan(wide), 0.0, np.clip(np.trunc(wide), float(info.min), high))
            return wide.astype(target).view(dtype)[()]

        return convert

    return factory


def eval_bitcast(op, ctx):
    dtype = numpy_dtype(op.result.type)
    return lambda x: np.asarray(x).view(dtype)[()]


EVALUATORS = {
    **{cls: eval_float_binary for cls in FLOAT_BINARY},
    **{cls: eval_int_binary for cls in INT_BINARY},
    arith.NegFOp: eval_negf,
    arith.ConstantOp: eval_constant,
    arith.CmpIOp: eval_cmpi,
    arith.CmpFOp: eval_cmpf,
    arith.SelectOp: eval_select,
    arith.ExtSIOp: eval_extsi,
    arith.ExtUIOp: eval_extui,
    arith.TruncIOp: eval_trunci,
    arith.ExtFOp: eval_float_cast,
    arith.TruncFOp: eval_float_cast,
    arith.SIToFPOp: _int_to_float(signed),
    arith.UIToFPOp: _int_to_float(unsigned),
    arith.FPToSIOp: _float_to_int(unsigned_result=False),
    arith.FPToUIOp: _float_to_int(unsigned_result=True),
    arith.BitcastOp: eval_bitcast,
}
