"""Host versions of PTX's fp32 `.approx` instructions, as branch-free LLVM IR that LLVM vectorizes
across a program's elements (a libm call per element would not): `ex2` by range reduction and a
degree-6 polynomial, `lg2` by exponent extraction and the atanh series, both within a few ulp like the
GPU's; `sqrt`, `rsqrt`, `sin`, `cos` by LLVM intrinsics. Used by CpuHooks.approx_math.
"""

from __future__ import annotations

import math

from llvmlite import ir

from ..llvm.llvm_types import F32, I32

# 2^f on [-0.5, 0.5], a Chebyshev fit (relative error 2.6e-9 before fp32 rounding)
_EXP2 = (1.0, 0.693147207, 0.240226512, 0.0555032721, 0.00961802560, 0.00134004322, 0.000154697322)
_LOG2_SERIES = (1.0, 1 / 3, 1 / 5, 1 / 7, 1 / 9)  # atanh(s)/s = sum z^k / (2k+1), z = s^2


def _c(value: float) -> ir.Constant:
    return ir.Constant(F32, value)


def _horner(b, x, coefficients) -> ir.Value:
    acc = _c(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = b.fadd(b.fmul(acc, x), _c(c))
    return acc


def _select_lt(b, x, bound: float, then, otherwise):
    return b.select(b.fcmp_ordered("<", x, _c(bound)), then, otherwise)


def exp2(lw, x, ftz: bool = True) -> ir.Value:
    """2^x: x = k + f (k an integer, |f| <= 1/2), 2^k built in the exponent bits. `ftz`: results
    below 2^-126 flush to zero (`ex2.approx.ftz.f32`); else they are subnormal (`ex2.approx.f32`).
    """
    b = lw.builder
    if not ftz:  # 2^x = 2^(x + 64) * 2^-64 below 2^-126, where 2^(x + 64) is normal
        tiny = b.fcmp_ordered("<", x, _c(-126.0))
        scaled = exp2(lw, b.select(tiny, b.fadd(x, _c(64.0)), x))
        return b.select(tiny, b.fmul(scaled, _c(2.0**-64)), scaled)
    clamped = _select_lt(b, x, -127.0, _c(-127.0), x)
    clamped = b.select(b.fcmp_ordered(">", clamped, _c(128.0)), _c(128.0), clamped)
    k = lw.call_intrinsic("llvm.rint.f32", F32, [clamped])
    f = b.fsub(clamped, k)
    bits = b.shl(b.add(b.fptosi(k, I32), ir.Constant(I32, 127)), ir.Constant(I32, 23))
    result = b.fmul(_horner(b, f, _EXP2), b.bitcast(bits, F32))  # k = -127: 0; k = 128: inf
    result = _select_lt(b, result, 2.0**-126, _c(0.0), result)  # ftz: no subnormal result
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


def log2(lw, x) -> ir.Value:
    """log2(x) = e + log2(m), m in [sqrt(1/2), sqrt(2)); subnormals scaled by 2^23 first."""
    b = lw.builder
    tiny = b.fcmp_ordered("<", x, _c(2.0**-126))
    scaled = b.select(tiny, b.fmul(x, _c(2.0**23)), x)
    bits = b.bitcast(scaled, I32)
    exponent = b.sub(b.lshr(bits, ir.Constant(I32, 23)), ir.Constant(I32, 127))
    exponent = b.sub(exponent, b.select(tiny, ir.Constant(I32, 23), ir.Constant(I32, 0)))
    mantissa = b.bitcast(
        b.or_(b.and_(bits, ir.Constant(I32, 0x7FFFFF)), ir.Constant(I32, 0x3F800000)), F32
    )
    high = b.fcmp_ordered(">", mantissa, _c(math.sqrt(2.0)))
    mantissa = b.select(high, b.fmul(mantissa, _c(0.5)), mantissa)
    e = b.sitofp(b.add(exponent, b.zext(high, I32)), F32)
    s = b.fdiv(b.fsub(mantissa, _c(1.0)), b.fadd(mantissa, _c(1.0)))
    series = _horner(b, b.fmul(s, s), _LOG2_SERIES)
    result = b.fadd(e, b.fmul(b.fmul(s, _c(2.0 / math.log(2.0))), series))
    result = b.select(b.fcmp_ordered("==", x, _c(math.inf)), x, result)
    result = b.select(b.fcmp_ordered("==", x, _c(0.0)), _c(-math.inf), result)
    return b.select(b.fcmp_unordered("ult", x, _c(0.0)), _c(math.nan), result)  # x < 0 or NaN


def approx(lw, instruction: str, x) -> ir.Value:
    """The host value of `instruction` (`ex2.approx.f32`, ...) on fp32 `x`."""
    b = lw.builder
    if instruction in ("ex2.approx.f32", "ex2.approx.ftz.f32"):
        return exp2(lw, x, ftz=instruction == "ex2.approx.ftz.f32")
    if instruction == "lg2.approx.f32":
        return log2(lw, x)
    if instruction == "rsqrt.approx.f32":
        return b.fdiv(_c(1.0), lw.call_intrinsic("llvm.sqrt.f32", F32, [x]))
    name = {
        "sqrt.approx.f32": "llvm.sqrt.f32",
        "sin.approx.f32": "llvm.sin.f32",
        "cos.approx.f32": "llvm.cos.f32",
    }.get(instruction)
    if name is None:
        raise lw.error(lw.current_op, f"internal: no host version of `{instruction}`")
    return lw.call_intrinsic(name, F32, [x])
