"""Triton's type-promotion rules for binary operators: which dtype an operation computes in.

Python numbers are "scalars": one of a lower or equal kind (bool < int < float) than the tensor it meets
takes the tensor's dtype, as in PyTorch. Otherwise C's usual arithmetic conversions apply, with fp16/bf16
going to fp32 for `/` and `%` (PTX has no native half division).
"""

from __future__ import annotations

import math

from ..errors import TileTypeError
from ..language import core
from ..language.core import dtype


def python_scalar_dtype(value) -> dtype:
    """The dtype a Python number gets when it meets the language (Triton's `to_tensor`)."""
    if isinstance(value, bool):
        return core.int1
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return core.int32
        if 2**31 <= value < 2**32:
            return core.uint32
        if -(2**63) <= value < 2**63:
            return core.int64
        if 2**63 <= value < 2**64:
            return core.uint64
        raise TileTypeError(f"integer {value} is not representable in 64 bits")
    if isinstance(value, float):
        magnitude = abs(value)
        fits_fp32 = 2.0**-126 <= magnitude <= (2 - 2.0**-23) * 2.0**127
        if magnitude in (0.0, float("inf")) or math.isnan(value) or fits_fp32:
            return core.float32
        return core.float64
    raise TileTypeError(
        f"{type(value).__name__} value {value!r} cannot be used as a number in a kernel"
    )


def integer_promote(a: dtype, b: dtype) -> dtype:
    """C's usual arithmetic conversions between two integer types."""
    if a.is_int_signed() == b.is_int_signed():
        return a if a.int_bitwidth > b.int_bitwidth else b
    unsigned, signed = (a, b) if not a.is_int_signed() else (b, a)
    return unsigned if unsigned.int_bitwidth >= signed.int_bitwidth else signed


def computation_type(
    a: dtype, a_is_scalar: bool, b: dtype, b_is_scalar: bool, div_or_mod: bool
) -> dtype:
    """The dtype in which `a <op> b` is computed."""
    if a_is_scalar != b_is_scalar:
        scalar, tensor = (a, b) if a_is_scalar else (b, a)
        if scalar.kind() <= tensor.kind():
            if div_or_mod and tensor in (core.float16, core.bfloat16):
                return core.float32
            return tensor
    if a.is_fp64() or b.is_fp64():
        return core.float64
    if a.is_fp32() or b.is_fp32():
        return core.float32
    if a.is_fp16() or b.is_fp16():
        return core.float32 if div_or_mod else core.float16
    if a.is_bf16() or b.is_bf16():
        if div_or_mod or not (a.is_bf16() and b.is_bf16()):
            return core.float32
        return core.bfloat16
    if a.is_fp8() and b.is_fp8():
        return a if a == b else core.float16
    if a.is_fp8() or b.is_fp8():
        return core.float16
    if div_or_mod and a.is_int_signed() != b.is_int_signed() and not (a.is_int1() or b.is_int1()):
        raise TileTypeError(
            f"Cannot use /, // or % with {a!r} and {b!r} because they have different signedness "
            "(Triton's wording): the result is unlikely to be useful",
            hint="cast one side with .to(...) so both are signed or both unsigned",
        )
    return integer_promote(a, b)
