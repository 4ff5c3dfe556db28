"""`math` ops and the special float ops of `tt`: PTX approximate instructions on fp32 where Triton uses
them (ex2/lg2/rsqrt/sqrt/sin/cos .approx), exact LLVM intrinsics or libdevice (`__nv_*`) elsewhere.
f16/bf16 compute in fp32; f64 calls libdevice."""

from __future__ import annotations

import math as pymath

from llvmlite import ir

from ....ir.ops import math, tt
from ..llvm_types import F32, F64
from . import elementwise
from .arith import resize_float

# exp2 flushes subnormal results to zero, as Triton's (libdevice's exp2f under its default
# nvvm-reflect-ftz): one MUFU.EX2, where the non-ftz form costs a compare and two multiplies more
# (a third of the non-matmul instructions of attention's key loop); `enable_reflect_ftz=False` takes
# the non-ftz form, as libdevice's exp2f does then (_NO_FTZ)
_APPROX = {
    math.Exp2Op: "ex2.approx.ftz.f32",
    math.Log2Op: "lg2.approx.f32",
    math.RsqrtOp: "rsqrt.approx.f32",
    math.SqrtOp: "sqrt.approx.f32",
    math.SinOp: "sin.approx.f32",
    math.CosOp: "cos.approx.f32",
}
_NO_FTZ = {"ex2.approx.ftz.f32": "ex2.approx.f32"}
_LIBDEVICE = {
    math.ExpOp: "exp",
    math.Exp2Op: "exp2",
    math.LogOp: "log",
    math.Log2Op: "log2",
    math.RsqrtOp: "rsqrt",
    math.SinOp: "sin",
    math.CosOp: "cos",
    math.ErfOp: "erf",
}


def _in_f32(lw, x, compute):
    """Run `compute` on fp32 for f16/bf16 inputs and round back."""
    if isinstance(x.type, (ir.FloatType, ir.DoubleType)):
        return compute(x)
    return resize_float(lw, compute(resize_float(lw, x, F32)), x.type)


def _approx(lw, text: str, x) -> ir.Value:
    return lw.hooks.approx_math(lw, text, x)


@elementwise(math.ExpOp)
def lower_exp(lw, op, x) -> ir.Value:
    """exp(x) = ex2.approx(x * log2(e)) on fp32, as Triton."""

    def f32(v):
        if isinstance(v.type, ir.DoubleType):
            return lw.libdevice("__nv_exp", F64, [v])
        scaled = lw.builder.fmul(v, ir.Constant(F32, 1.0 / pymath.log(2.0)), flags=lw.fp_flags)
        return _approx(lw, "ex2.approx.f32", scaled)

    return _in_f32(lw, x, f32)


@elementwise(math.LogOp)
def lower_log(lw, op, x) -> ir.Value:
    """log(x) = lg2.approx(x) * ln(2) on fp32."""

    def f32(v):
        if isinstance(v.type, ir.DoubleType):
            return lw.libdevice("__nv_log", F64, [v])
        return lw.builder.fmul(
            _approx(lw, "lg2.approx.f32", v), ir.Constant(F32, pymath.log(2.0)), flags=lw.fp_flags
        )

    return _in_f32(lw, x, f32)


@elementwise(*_APPROX)
def lower_approx(lw, op, x) -> ir.Value:
    def f32(v):
        if isinstance(v.type, ir.DoubleType):
            if isinstance(op, math.SqrtOp):
                return lw.call_intrinsic("llvm.sqrt.f64", F64, [v])
            return lw.libdevice(f"__nv_{_LIBDEVICE[type(op)]}", F64, [v])
        instruction = _APPROX[type(op)]
        if not lw.reflect_ftz:
            instruction = _NO_FTZ.get(instruction, instruction)
        return _approx(lw, instruction, v)

    return _in_f32(lw, x, f32)


@elementwise(math.ErfOp)
def lower_erf(lw, op, x) -> ir.Value:
    def f(v):
        if isinstance(v.type, ir.DoubleType):
            return lw.libdevice("__nv_erf", F64, [v])
        return lw.libdevice("__nv_erff", F32, [v])

    return _in_f32(lw, x, f)


_INTRINSIC = {
    math.AbsFOp: "llvm.fabs",
    math.FloorOp: "llvm.floor",
    math.CeilOp: "llvm.ceil",
    tt.PreciseSqrtOp: "llvm.sqrt",
}


@elementwise(*_INTRINSIC)
def lower_float_intrinsic(lw, op, x) -> ir.Value:
    """fabs/floor/ceil; precise_sqrt is llvm.sqrt, which NVPTX emits as `sqrt.rn`."""

    def f(v):
        return lw.call_intrinsic(f"{_INTRINSIC[type(op)]}.{v.type.intrinsic_name}", v.type, [v])

    if isinstance(op, math.AbsFOp):
        if isinstance(x.type, ir.IntType):  # fp8 bits: clear the sign bit (there is no fabs of i8)
            return lw.builder.and_(x, ir.Constant(x.type, (1 << (x.type.width - 1)) - 1))
        return f(x)
    return _in_f32(lw, x, f)


@elementwise(math.AbsIOp)
def lower_absi(lw, op, x) -> ir.Value:
    b = lw.builder
    negative = b.icmp_signed("<", x, ir.Constant(x.type, 0))
    return b.select(negative, b.neg(x), x)


@elementwise(math.FmaOp)
def lower_fma(lw, op, a, b, c) -> ir.Value:
    return lw.call_intrinsic(f"llvm.fma.{a.type.intrinsic_name}", a.type, [a, b, c])


@elementwise(tt.PreciseDivFOp)
def lower_precise_divf(lw, op, lhs, rhs) -> ir.Value:
    """IEEE division (`div.rn`)."""
    return lw.builder.fdiv(lhs, rhs)


@elementwise(tt.MulhiUIOp)
def lower_mulhiui(lw, op, lhs, rhs) -> ir.Value:
    b = lw.builder
    width = lhs.type.width
    wide = ir.IntType(2 * width)
    product = b.mul(b.zext(lhs, wide), b.zext(rhs, wide))
    return b.trunc(b.lshr(product, ir.Constant(wide, width)), lhs.type)


@elementwise(tt.ClampFOp)
def lower_clampf(lw, op, x, lo, hi) -> ir.Value:
    kind = ("llvm.maximum", "llvm.minimum") if op.propagate_nan else ("llvm.maxnum", "llvm.minnum")
    name = x.type.intrinsic_name
    low = lw.call_intrinsic(f"{kind[0]}.{name}", x.type, [x, lo])
    return lw.call_intrinsic(f"{kind[1]}.{name}", x.type, [low, hi])
