"""`tt.dot` on CUDA cores: each thread computes its own accumulator elements with one FMA per k, reading
A rows and B columns that the dot-operand layouts put, whole along K, in its registers. Tensor cores
(mma.sync / wgmma) are a separate issue."""

from __future__ import annotations

from ....ir.ops import tt
from ....ir.types import element_type
from ..llvm_types import llvm_type
from ..lower import TVal
from . import lowers
from .arith import resize_float


@lowers(tt.DotOp)
def lower_dot(lw, op) -> None:
    a, b, c = lw.get(op.a), lw.get(op.b), lw.get(op.c)
    out_layout = lw.layout(op.result)
    acc_type = llvm_type(op.result.type)
    is_float = element_type(op.result.type).is_float
    k_size = op.a.type.shape[-1]
    a_regs = {coords: r for r, coords in enumerate(a.layout.all_reg_coords())}
    b_regs = {coords: r for r, coords in enumerate(b.layout.all_reg_coords())}
    a_vals = [_convert(lw, v, acc_type, op.a) for v in a.vals]
    b_vals = [_convert(lw, v, acc_type, op.b) for v in b.vals]
    builder = lw.builder
    out = []
    for r, coords in enumerate(out_layout.all_reg_coords()):
        acc = c.vals[r] if isinstance(c, TVal) else c
        batch, m, n = coords[:-2], coords[-2], coords[-1]
        for k in range(k_size):
            x = a_vals[a_regs[batch + (m, k)]]
            y = b_vals[b_regs[batch + (k, n)]]
            if is_float:
                acc = lw.call_intrinsic(f"llvm.fmuladd.{acc_type.intrinsic_name}", acc_type,
                                        [x, y, acc])
            else:
                acc = builder.add(builder.mul(x, y), acc)
        out.append(acc)
    lw.set(op.result, TVal(out, out_layout))


def _convert(lw, v, to, source):
    if v.type == to:
        return v
    t = element_type(source.type)
    if t.is_float:
        from .arith import fp8_to_float, scalar_type_is_fp8
        if scalar_type_is_fp8(t):
            v = fp8_to_float(lw, v, t)
        return resize_float(lw, v, to)
    if v.type.width < to.width:
        return lw.builder.sext(v, to) if t.is_signed else lw.builder.zext(v, to)
    return lw.builder.trunc(v, to)
