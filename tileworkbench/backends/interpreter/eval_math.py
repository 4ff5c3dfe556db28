"""`math` ops, `tt.extern_elementwise` (libdevice) and the special float/integer `tt` ops in NumPy."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ...errors import InterpreterError
from ...ir.ops import math as math_ops
from ...ir.ops import tt
from ..numpy_libdevice import extern_function
from ..numpy_libdevice.special import erf
from .dtypes import numpy_dtype, typed_math, unsigned, unsigned_dtype, value_scale


def _rsqrt(x):
    return np.reciprocal(np.sqrt(x))


def _erf(x):
    x = np.asarray(x)
    return erf(x).astype(x.dtype)[()]


MATH_UNARY: dict[type, Callable] = {
    math_ops.ExpOp: np.exp,
    math_ops.Exp2Op: np.exp2,
    math_ops.LogOp: np.log,
    math_ops.Log2Op: np.log2,
    math_ops.SqrtOp: np.sqrt,
    math_ops.RsqrtOp: _rsqrt,
    math_ops.SinOp: np.sin,
    math_ops.CosOp: np.cos,
    math_ops.AbsFOp: np.abs,
    math_ops.FloorOp: np.floor,
    math_ops.CeilOp: np.ceil,
    math_ops.ErfOp: _erf,
    tt.PreciseSqrtOp: np.sqrt,
}


def eval_math_unary(op, ctx):
    return typed_math(MATH_UNARY[type(op)], op.result.type)


def eval_absi(op, ctx):
    return np.abs  # |INT_MIN| wraps to INT_MIN, as in two's complement hardware


def eval_fma(op, ctx):
    """One rounding: the product and sum are exact in float64 for f16/bf16 and nearly so for f32."""
    dtype = numpy_dtype(op.result.type)
    if value_scale(op.result.type) != 1.0:  # fp8e4b15
        return typed_math(lambda a, b, c: a * b + c, op.result.type)
    if dtype == np.float64:
        return lambda a, b, c: a * b + c
    return lambda a, b, c: (np.asarray(a, np.float64) * b + c).astype(dtype)[()]


def eval_precise_divf(op, ctx):
    return typed_math(np.divide, op.result.type)


def eval_clampf(op, ctx):
    """`propagate_nan`: a NaN x gives NaN (maximum/minimum); otherwise NaN x gives lo (fmax/fmin)."""
    if op.propagate_nan:
        return typed_math(lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), op.result.type)
    return typed_math(lambda x, lo, hi: np.fmin(np.fmax(x, lo), hi), op.result.type)


def eval_mulhiui(op, ctx):
    dtype = numpy_dtype(op.result.type)
    bits = dtype.itemsize * 8
    if bits == 64:
        return lambda a, b: _mulhi64(unsigned(a), unsigned(b)).view(dtype)[()]
    shift = np.uint64(bits)

    def mulhi(a, b):
        product = unsigned(a).astype(np.uint64) * unsigned(b).astype(np.uint64)
        return (product >> shift).astype(unsigned_dtype(dtype)).view(dtype)[()]

    return mulhi


def _mulhi64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The high 64 bits of a 64x64-bit product, from 32-bit halves (no carries are lost)."""
    low_mask, half = np.uint64(0xFFFFFFFF), np.uint64(32)
    a_lo, a_hi = a & low_mask, a >> half
    b_lo, b_hi = b & low_mask, b >> half
    lo_lo, hi_lo, lo_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi
    cross = (lo_lo >> half) + (hi_lo & low_mask) + lo_hi
    return (a_hi * b_hi) + (hi_lo >> half) + (cross >> half)


def eval_extern_elementwise(op, ctx):
    """libdevice in NumPy (backends/numpy_libdevice), rounded to the result type."""
    fn = extern_function(op.symbol, numpy_dtype(op.result.type))
    if fn is None:
        raise InterpreterError(
            f"the interpreter has no implementation of the device-library function '{op.symbol}' "
            f"(kernel '{ctx.kernel}' at {ctx.where(op)}); it runs only on the GPU"
        )
    return fn


# PTX the frontend itself emits for tl.extra.cuda (frontend/calls.py), and its host meaning.
KNOWN_ASM = {
    "mov.u64 $0, %globaltimer;": lambda: np.int64(time.time_ns()),
    "mov.u32 $0, %smid;": lambda: np.int32(0),
    # grid dependence control: launches run one after another here, nothing to wait for
    "griddepcontrol.wait; // dummy $0": lambda: np.int32(0),
    "griddepcontrol.launch_dependents; // dummy $0": lambda: np.int32(0),
}


def eval_inline_asm(op, ctx):
    known = KNOWN_ASM.get(op.asm_string)
    if known is not None and not op.args:
        return known
    where = ctx.where(op)
    kernel = ctx.kernel

    def refuse(*args):
        raise InterpreterError(
            f"inline_asm_elementwise runs only on the GPU: the interpreter cannot execute PTX "
            f"(kernel '{kernel}' at {where}). Run on a GPU, or give the kernel a portable fallback."
        )

    return refuse


EVALUATORS = {
    **{cls: eval_math_unary for cls in MATH_UNARY},
    math_ops.AbsIOp: eval_absi,
    math_ops.FmaOp: eval_fma,
    tt.PreciseDivFOp: eval_precise_divf,
    tt.ClampFOp: eval_clampf,
    tt.MulhiUIOp: eval_mulhiui,
    tt.ExternElementwiseOp: eval_extern_elementwise,
    tt.ElementwiseInlineAsmOp: eval_inline_asm,
}
