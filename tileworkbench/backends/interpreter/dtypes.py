"""Tile IR element types as NumPy dtypes (bf16 and fp8 through ml_dtypes), and the reinterpreting views
the interpreter needs for C integer semantics (signed vs unsigned) and low-precision float math."""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

from ...dtypes import TABLE as DTYPES
from ...dtypes import memory_dtype  # noqa: F401 - the evaluators' import
from ...ir.types import PointerType, ScalarType, TensorType, Type, element_type

_NUMPY = {row.ir: row.numpy_dtype for row in DTYPES}

POINTER = np.dtype(np.int64)  # pointers are int64 virtual byte addresses
F32 = np.dtype(np.float32)
# Float types NumPy has no native arithmetic for: math runs in float32 and rounds back per op.
# (bf16 and the fp8 formats: the ml_dtypes types)
LOW_FLOATS = frozenset(
    row.numpy_dtype for row in DTYPES if row.numpy.startswith(("bfloat", "float8"))
)
# bytes -> the signed and unsigned integer dtypes of that width
_SIGNED = {row.bits // 8: row.numpy_dtype for row in DTYPES if row.kind[0] == "i" and row.bits >= 8}
_UNSIGNED = {row.bits // 8: row.numpy_dtype for row in DTYPES if row.kind[0] == "u"}


def numpy_dtype(t: Type) -> np.dtype:
    """The NumPy dtype of the elements of `t` (int64 for pointers)."""
    element = element_type(t)
    if isinstance(element, PointerType):
        return POINTER
    return _NUMPY[element.name]


def shape(t: Type) -> tuple[int, ...]:
    return t.shape if isinstance(t, TensorType) else ()


def signed(x):
    """`x` reinterpreted as a signed integer of its width (bool reads as int8 0/1)."""
    return np.asarray(x).view(_SIGNED[np.asarray(x).dtype.itemsize])


def unsigned(x):
    """`x` reinterpreted as an unsigned integer of its width."""
    return np.asarray(x).view(_UNSIGNED[np.asarray(x).dtype.itemsize])


def unsigned_dtype(dtype: np.dtype) -> np.dtype:
    return _UNSIGNED[dtype.itemsize]


def signed_dtype(dtype: np.dtype) -> np.dtype:
    return _SIGNED[dtype.itemsize]


def make_value(value, t: Type):
    """A constant or argument `value` as a NumPy value of type `t`: a scalar or a full tensor.

    Integers wrap to the type's width (a frontend may write u32 0xFFFFFFFF as -1 or the other way)."""
    dtype = numpy_dtype(t)
    if isinstance(value, (np.ndarray, list, tuple)):
        array = np.asarray(value)
        scalar_array = (
            array.astype(dtype) if array.dtype.kind == dtype.kind else _convert(array, dtype)
        )
        return np.broadcast_to(scalar_array, shape(t)).copy() if shape(t) else scalar_array[()]
    scalar = _convert(np.asarray(value), dtype)[()]
    if shape(t):
        return np.full(shape(t), scalar, dtype=dtype)
    return scalar


def _convert(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return array.astype(np.bool_)
    if dtype.kind in "iu":
        if array.dtype.kind != "O":
            return array.astype(dtype)  # C casts between integer types wrap
        bits = dtype.itemsize * 8
        wrapped = np.asarray(
            np.vectorize(lambda v: int(v) & ((1 << bits) - 1), otypes=[object])(array)
        )
        return wrapped.astype(_UNSIGNED[dtype.itemsize]).view(dtype)
    with np.errstate(over="ignore"):  # a constant beyond the type's range becomes inf, as in C
        return array.astype(np.float64).astype(dtype)


# Triton's fp8e4b15 has e4m3fn's bit layout (4 exponent and 3 mantissa bits, NaN at S.1111.111,
# no inf) with exponent bias 15 instead of 7. No NumPy format has it, so the interpreter holds its
# values as the float8_e4m3fn of the same bits: the number is that value times 2**-8. Loads, stores,
# bitcasts and shape ops then need nothing; ops that read or make a number go through value_scale.
E4B15_SCALE = 2.0**-8


def value_scale(t: Type) -> float:
    """The factor from a value held for type `t` to the number it stands for (1 but fp8e4b15)."""
    element = element_type(t)
    return E4B15_SCALE if isinstance(element, ScalarType) and element.name == "f8e4b15" else 1.0


def typed_math(fn: Callable, t: Type) -> Callable:
    """`float_math(fn)` for an op whose operands and result have type `t`, on the numbers they stand
    for (fp8e4b15: unscaled, computed in float32, rounded and scaled back)."""
    dtype = numpy_dtype(t)
    scale = value_scale(t)
    if scale == 1.0:
        return float_math(fn, dtype)

    def on_numbers(*args):
        result = fn(*(np.asarray(a).astype(F32) * F32.type(scale) for a in args))
        return to_float8(np.asarray(result, F32) / F32.type(scale), dtype)

    return on_numbers


def rescaled(source: Type, result: Type) -> float:
    """The factor a cast from `source` to `result` applies to the held value (fp8e4b15's scale)."""
    return value_scale(source) / value_scale(result)


def float_math(fn: Callable, dtype: np.dtype) -> Callable:
    """`fn` computed in `dtype`, or for bf16/fp8 in float32 and rounded back (one rounding per op)."""
    if dtype not in LOW_FLOATS:
        return fn

    def widened(*args):
        result = np.asarray(fn(*(np.asarray(a).astype(F32) for a in args)))
        if dtype.itemsize == 1:  # fp8 saturates, as its conversions (and the GPU's) do
            return to_float8(result, dtype)
        return result.astype(dtype)[()]

    return widened


def to_float8(x, dtype: np.dtype):
    """Round to an fp8 type, saturating overflow and infinities to the largest finite value like the
    GPU's `cvt.rn.satfinite` (ml_dtypes alone turns overflow into NaN for e4m3fn); NaN stays NaN."""
    limit = float(ml_dtypes.finfo(dtype).max)
    wide = np.asarray(x).astype(np.float32)
    return np.clip(wide, -limit, limit).astype(dtype)[()]
