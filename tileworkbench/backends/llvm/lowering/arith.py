"""`arith` ops: constants, integer and float arithmetic, comparisons, select and casts (fp8 included)."""

from __future__ import annotations

from llvmlite import ir

from ....dtypes import LLVM_FLOAT_BITS
from ....ir.ops import arith
from ....ir.types import TensorType
from ..llvm_types import F16, F32, I8, I16, I32, llvm_type
from ..values import TVal
from . import elementwise, lowers
from .common import scalar_type


def constant(lw, t, value) -> ir.Value:
    ty = llvm_type(t)
    if isinstance(ty, ir.IntType):
        if isinstance(value, float):
            value = int(value)
        return ir.Constant(ty, int(value) & ((1 << ty.width) - 1))
    if scalar_type_is_fp8(
        t
    ):  # the byte of the value rounded to fp8 (zero for a masked load's other)
        import ml_dtypes
        import numpy as np

        fp8 = ml_dtypes.float8_e4m3fn if t.name == "f8e4nv" else ml_dtypes.float8_e5m2
        return ir.Constant(ty, int(np.array(float(value), dtype=fp8).view(np.uint8)))
    return ir.Constant(ty, float(value))


def scalar_type_is_fp8(t) -> bool:
    name = getattr(t, "name", "")
    return name in ("f8e4nv", "f8e5")


@lowers(arith.ConstantOp)
def lower_constant(lw, op) -> None:
    t = op.result.type
    c = constant(lw, t.element if isinstance(t, TensorType) else t, op.value)
    if isinstance(t, TensorType):
        layout = lw.layout(op.result)
        lw.set(op.result, TVal([c] * layout.num_regs, layout))
    else:
        lw.set(op.result, c)


_INT_BINARY = {
    arith.AddIOp: "add",
    arith.SubIOp: "sub",
    arith.MulIOp: "mul",
    arith.DivSIOp: "sdiv",
    arith.DivUIOp: "udiv",
    arith.RemSIOp: "srem",
    arith.RemUIOp: "urem",
    arith.AndIOp: "and_",
    arith.OrIOp: "or_",
    arith.XOrIOp: "xor",
    arith.ShLIOp: "shl",
    arith.ShRSIOp: "ashr",
    arith.ShRUIOp: "lshr",
}
_FLOAT_BINARY = {
    arith.AddFOp: "fadd",
    arith.SubFOp: "fsub",
    arith.MulFOp: "fmul",
    arith.RemFOp: "frem",
}


def _fp8_in_f32(rule):
    """`rule` on fp8 operands (bytes: no PTX instruction computes on them) widened to f32, with an
    fp8 result rounded back, saturating: one rounding per op, as the interpreter computes fp8."""

    def rule_on_fp8(lw, op, *args):
        source = scalar_type(op.operands[0])
        if not scalar_type_is_fp8(source):
            return rule(lw, op, *args)
        result = rule(lw, op, *(fp8_to_float(lw, a, source) for a in args))
        target = scalar_type(op.result)
        return float_to_fp8(lw, result, target) if scalar_type_is_fp8(target) else result

    return rule_on_fp8


@elementwise(*_INT_BINARY)
def lower_int_binary(lw, op, lhs, rhs) -> ir.Value:
    return getattr(lw.builder, _INT_BINARY[type(op)])(lhs, rhs)


@elementwise(*_FLOAT_BINARY)
@_fp8_in_f32
def lower_float_binary(lw, op, lhs, rhs) -> ir.Value:
    return getattr(lw.builder, _FLOAT_BINARY[type(op)])(lhs, rhs, flags=lw.fp_flags)


@elementwise(arith.DivFOp)
@_fp8_in_f32
def lower_divf(lw, op, lhs, rhs) -> ir.Value:
    """fp32 division as Triton does it: `div.full.f32` (2 ulp, fast); others divide exactly."""
    if isinstance(lhs.type, ir.FloatType):
        return lw.hooks.fast_divide(lw, lhs, rhs)
    return lw.builder.fdiv(lhs, rhs)


_MINMAX_INT = {
    arith.MaxSIOp: (">", True),
    arith.MinSIOp: ("<", True),
    arith.MaxUIOp: (">", False),
    arith.MinUIOp: ("<", False),
}


@elementwise(*_MINMAX_INT)
def lower_minmax_int(lw, op, lhs, rhs) -> ir.Value:
    pred, signed = _MINMAX_INT[type(op)]
    cmp = lw.builder.icmp_signed if signed else lw.builder.icmp_unsigned
    return lw.builder.select(cmp(pred, lhs, rhs), lhs, rhs)


_MINMAX_FLOAT = {
    arith.MaximumFOp: "llvm.maximum",
    arith.MinimumFOp: "llvm.minimum",
    arith.MaxNumFOp: "llvm.maxnum",
    arith.MinNumFOp: "llvm.minnum",
}


@elementwise(*_MINMAX_FLOAT)
@_fp8_in_f32
def lower_minmax_float(lw, op, lhs, rhs) -> ir.Value:
    name = f"{_MINMAX_FLOAT[type(op)]}.{lhs.type.intrinsic_name}"
    return lw.call_intrinsic(name, lhs.type, [lhs, rhs])


@elementwise(arith.NegFOp)
@_fp8_in_f32
def lower_negf(lw, op, x) -> ir.Value:
    return lw.builder.fneg(x)


_ICMP = {
    "eq": "==",
    "ne": "!=",
    "slt": "<",
    "sle": "<=",
    "sgt": ">",
    "sge": ">=",
    "ult": "<",
    "ule": "<=",
    "ugt": ">",
    "uge": ">=",
}
_FCMP = {
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "rd": "ord",
    "no": "uno",
}


@elementwise(arith.CmpIOp)
def lower_cmpi(lw, op, lhs, rhs) -> ir.Value:
    pred = op.predicate
    if lhs.type == ir.PointerType(addrspace=1):
        lhs, rhs = (
            lw.builder.ptrtoint(lhs, ir.IntType(64)),
            lw.builder.ptrtoint(rhs, ir.IntType(64)),
        )
    if pred[0] == "s":
        return lw.builder.icmp_signed(_ICMP[pred], lhs, rhs)
    return lw.builder.icmp_unsigned(_ICMP[pred], lhs, rhs)


@elementwise(arith.CmpFOp)
@_fp8_in_f32
def lower_cmpf(lw, op, lhs, rhs) -> ir.Value:
    pred = op.predicate  # o<cmp> is false on NaN, u<cmp> true; "ord"/"uno" test for NaN only
    if pred == "uno":
        return lw.builder.fcmp_unordered("uno", lhs, rhs)
    if pred[0] == "u":
        return lw.builder.fcmp_unordered(_FCMP[pred[1:]], lhs, rhs)
    return lw.builder.fcmp_ordered(_FCMP[pred[1:]], lhs, rhs)


@elementwise(arith.SelectOp)
def lower_select(lw, op, cond, a, b) -> ir.Value:
    return lw.builder.select(cond, a, b)


# -- casts ------------------------------------------------------------------------------------------
@elementwise(arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
def lower_int_cast(lw, op, x) -> ir.Value:
    to = llvm_type(op.result.type)
    src_bits, dst_bits = x.type.width, to.width
    if src_bits == dst_bits:
        return x
    if dst_bits < src_bits:
        return lw.builder.trunc(x, to)
    signed = isinstance(op, arith.ExtSIOp) and src_bits > 1
    return lw.builder.sext(x, to) if signed else lw.builder.zext(x, to)


@elementwise(arith.ExtFOp, arith.TruncFOp)
def lower_float_cast(lw, op, x) -> ir.Value:
    src, dst = scalar_type(op.operand), scalar_type(op.result)
    x = fp8_to_float(lw, x, src) if scalar_type_is_fp8(src) else x
    if scalar_type_is_fp8(dst):
        return float_to_fp8(lw, x, dst)
    return resize_float(lw, x, llvm_type(dst))


@lowers(arith.TruncFOp)
def lower_truncf(lw, op) -> None:
    """A float tensor -> fp8 two registers at a time (`cvt.rn.satfinite.e5m2x2.f32` converts a
    pair; one per value took twice the instructions: 64 a loop iteration for fp8 attention's p),
    where the hardware has the conversion; everything else element by element."""
    from .common import constant_runs, lower_elementwise

    x, src, dst = lw.get(op.operand), scalar_type(op.operand), scalar_type(op.result)
    paired = (
        isinstance(x, TVal)
        and scalar_type_is_fp8(dst)
        and not scalar_type_is_fp8(src)
        and _has_fp8_hw(lw)
        and x.layout == lw.layout(op.result)
    )
    if paired:  # a register equal to an earlier one is computed once there (lower_elementwise)
        runs = constant_runs(x.layout, lw.axis.info(op.result).constancy)
        paired = runs == list(range(x.layout.num_regs))
    if not paired:
        lower_elementwise(lw, op)
        return
    vals = [resize_float(lw, v, F32) for v in x.vals]
    out = []
    for first, second in zip(vals[0::2], vals[1::2]):
        out += _float_pair_to_fp8(lw, first, second, dst)
    if len(vals) % 2:
        out.append(float_to_fp8(lw, vals[-1], dst))
    lw.set(op.result, TVal(out, x.layout))


def resize_float(lw, x, to: ir.Type) -> ir.Value:
    if x.type == to:
        return x
    if _float_bits(x.type) < _float_bits(to):
        return lw.builder.fpext(x, to)
    if _float_bits(x.type) == _float_bits(to):  # f16 <-> bf16
        return lw.builder.fptrunc(lw.builder.fpext(x, F32), to)
    return lw.builder.fptrunc(x, to)


def _float_bits(t: ir.Type) -> int:
    return LLVM_FLOAT_BITS[str(t)]


@elementwise(arith.SIToFPOp, arith.UIToFPOp)
def lower_int_to_float(lw, op, x) -> ir.Value:
    dst = scalar_type(op.result)
    to = F32 if scalar_type_is_fp8(dst) else llvm_type(dst)
    signed = isinstance(op, arith.SIToFPOp) and x.type.width > 1
    y = lw.builder.sitofp(x, to) if signed else lw.builder.uitofp(x, to)
    return float_to_fp8(lw, y, dst) if scalar_type_is_fp8(dst) else y


@elementwise(arith.FPToSIOp, arith.FPToUIOp)
def lower_float_to_int(lw, op, x) -> ir.Value:
    src = scalar_type(op.operand)
    x = fp8_to_float(lw, x, src) if scalar_type_is_fp8(src) else x
    to = llvm_type(op.result.type)
    if to.width == 1:
        return lw.builder.fcmp_unordered("une", x, ir.Constant(x.type, 0.0))
    # Saturating, NaN -> 0: what the GPU's cvt.rzi does, made defined for LLVM (and the interpreter).
    kind = "fptosi" if isinstance(op, arith.FPToSIOp) else "fptoui"
    name = f"llvm.{kind}.sat.i{to.width}.{x.type.intrinsic_name}"
    return lw.call_intrinsic(name, to, [x])


@elementwise(arith.BitcastOp)
def lower_bitcast(lw, op, x) -> ir.Value:
    to = llvm_type(op.result.type)
    return x if x.type == to else lw.builder.bitcast(x, to)


# -- fp8 ----------------------------------------------------------------------------------------------
def fp8_to_float(lw, x, src) -> ir.Value:
    """fp8 bits -> f32. e5m2 is the top byte of an f16; e4m3 uses `cvt.rn.f16x2.e4m3x2` (sm_89+)."""
    b = lw.builder
    if src.name == "f8e5":
        half = b.bitcast(b.shl(b.zext(x, I16), ir.Constant(I16, 8)), F16)
        return b.fpext(half, F32)
    if not _has_fp8_hw(lw):
        return _e4m3_to_f32_soft(lw, x)
    pair = lw.asm("cvt.rn.f16x2.e4m3x2 $0, $1;", "=r,h", I32, [b.zext(x, I16)])
    return b.fpext(b.bitcast(b.trunc(pair, I16), F16), F32)


def float_to_fp8(lw, x, dst) -> ir.Value:
    """Any float -> fp8 bits, rounding to nearest even and saturating to the finite range."""
    x = resize_float(lw, x, F32)
    kind = "e5m2" if dst.name == "f8e5" else "e4m3"
    if not _has_fp8_hw(lw):
        return _f32_to_e5m2_soft(lw, x) if kind == "e5m2" else _f32_to_e4m3_soft(lw, x)
    return _float_pair_to_fp8(lw, x, ir.Constant(F32, 0.0), dst)[0]


def _float_pair_to_fp8(lw, x, y, dst) -> list[ir.Value]:
    """Two f32 -> two fp8 bytes with one conversion (the instruction's second source is the low
    byte of its result)."""
    b = lw.builder
    kind = "e5m2" if dst.name == "f8e5" else "e4m3"
    pair = lw.asm(f"cvt.rn.satfinite.{kind}x2.f32 $0, $1, $2;", "=h,f,f", I16, [y, x])
    return [b.trunc(pair, I8), b.trunc(b.lshr(pair, ir.Constant(I16, 8)), I8)]


def _e4m3_to_f32_soft(lw, x) -> ir.Value:
    """e4m3fn bits -> f32 without sm_89's cvt: exponent bias 7, subnormals m * 2^-9, 0x7F is NaN."""
    b = lw.builder
    bits = b.zext(x, I32)
    sign = b.shl(b.lshr(bits, ir.Constant(I32, 7)), ir.Constant(I32, 31))
    exp = b.and_(b.lshr(bits, ir.Constant(I32, 3)), ir.Constant(I32, 0xF))
    man = b.and_(bits, ir.Constant(I32, 7))
    normal = b.or_(
        b.shl(b.add(exp, ir.Constant(I32, 120)), ir.Constant(I32, 23)),
        b.shl(man, ir.Constant(I32, 20)),
    )
    sub = b.bitcast(b.fmul(b.uitofp(man, F32), ir.Constant(F32, 2.0**-9)), I32)
    magnitude = b.select(b.icmp_unsigned("==", exp, ir.Constant(I32, 0)), sub, normal)
    is_nan = b.icmp_unsigned("==", b.and_(bits, ir.Constant(I32, 0x7F)), ir.Constant(I32, 0x7F))
    magnitude = b.select(is_nan, ir.Constant(I32, 0x7FC00000), magnitude)
    return b.bitcast(b.or_(magnitude, sign), F32)


# (mantissa bits, exponent bias, largest finite code, largest finite value) of each fp8 format
_FP8 = {"e4m3": (3, 7, 0x7E, 448.0), "e5m2": (2, 15, 0x7B, 57344.0)}


def _f32_to_e4m3_soft(lw, x) -> ir.Value:
    return _f32_to_fp8_soft(lw, x, "e4m3")


def _f32_to_e5m2_soft(lw, x) -> ir.Value:
    return _f32_to_fp8_soft(lw, x, "e5m2")


def _f32_to_fp8_soft(lw, x, kind: str) -> ir.Value:
    """f32 -> fp8 bits without sm_89's cvt: nearest even, saturating to the largest finite value
    (as `cvt.rn.satfinite`), NaN -> 0x7F with the sign."""
    man_bits, bias, max_code, max_value = _FP8[kind]
    shift = 23 - man_bits
    b = lw.builder
    bits = b.bitcast(x, I32)
    sign = b.trunc(b.shl(b.lshr(bits, ir.Constant(I32, 31)), ir.Constant(I32, 7)), I8)
    mag_bits = b.and_(bits, ir.Constant(I32, 0x7FFFFFFF))
    magnitude = b.bitcast(mag_bits, F32)
    lsb = b.and_(b.lshr(mag_bits, ir.Constant(I32, shift)), ir.Constant(I32, 1))
    half_ulp = ir.Constant(I32, (1 << (shift - 1)) - 1)
    rounded = b.lshr(b.add(b.add(mag_bits, half_ulp), lsb), ir.Constant(I32, shift))
    normal = b.sub(rounded, ir.Constant(I32, (127 - bias) << man_bits))
    min_normal = 2.0 ** (1 - bias)
    steps = b.fmul(magnitude, ir.Constant(F32, 2.0 ** (bias - 1 + man_bits)))
    sub = b.fptoui(lw.call_intrinsic("llvm.rint.f32", F32, [steps]), I32)
    code = b.select(b.fcmp_ordered("<", magnitude, ir.Constant(F32, min_normal)), sub, normal)
    big = b.fcmp_ordered(">=", magnitude, ir.Constant(F32, max_value))
    code = b.select(big, ir.Constant(I32, max_code), code)
    is_nan = b.fcmp_unordered("uno", x, x)
    code = b.trunc(b.select(is_nan, ir.Constant(I32, 0x7F), code), I8)
    return b.or_(code, sign)


def _has_fp8_hw(lw) -> bool:
    return lw.hooks.fp8_convert(lw)
