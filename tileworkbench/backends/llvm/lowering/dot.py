"""`tt.dot` on CUDA cores: each thread computes its own accumulator elements with one FMA per k.

When both operands come straight from a conversion to the dot-operand layout (the usual case), the
conversion is deferred: the dot writes A and B to shared memory once and, for each k, loads the column
of A and the row of B its elements need, so registers hold the accumulators plus one k-slice, not all
of K. Otherwise the operands arrive in registers whole along K. Dots with an `#mma` result run on
tensor cores (`mma.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ....ir.ops import tt
from ....ir.ops.ttg import ConvertLayoutOp, DotOperandEncoding, MmaEncoding
from ....ir.types import element_type
from ..llvm_types import I32, byte_size, llvm_type
from ..values import TVal
from . import lowers
from .arith import resize_float
from .exchange import _from_shared, _shared_type, remap, strides, write_shared
from .mma import lower_mma


@dataclass
class DeferredOperand:
    """A dot operand still in its source layout; the dot moves it through shared memory itself."""

    src: TVal
    shape: tuple[int, ...]
    element: object
    layout: object  # the dot-operand layout, for materializing it when needed


def defer_conversion(lw, op: ConvertLayoutOp) -> bool:
    """Defer `op` when its result is an FMA dot operand used by dots only."""
    encoding = op.result.type.encoding
    if not isinstance(encoding, DotOperandEncoding) or isinstance(encoding.parent, MmaEncoding):
        return False
    users = lw.users.get(id(op.result), [])
    if not users or not all(isinstance(u, tt.DotOp) and u.c is not op.result for u in users):
        return False
    src = lw.get(op.src)
    lw.set(
        op.result,
        DeferredOperand(src, op.src.type.shape, element_type(op.src.type), lw.layout(op.result)),
    )
    return True


def _materialize(lw, x):
    if isinstance(x, DeferredOperand):
        return remap(lw, x.src, x.shape, x.layout, tuple, x.element)
    return x


@lowers(tt.DotOp)
def lower_dot(lw, op) -> None:
    a, b, c = lw.get(op.a), lw.get(op.b), lw.get(op.c)
    if isinstance(op.result.type.encoding, MmaEncoding):
        return lower_mma(lw, op, a, b, c)
    if isinstance(a, DeferredOperand) and isinstance(b, DeferredOperand):
        return _dot_from_shared(lw, op, a, b, c)
    a, b = _materialize(lw, a), _materialize(lw, b)
    out_layout = lw.layout(op.result)
    acc_type = llvm_type(op.result.type)
    k_size = op.a.type.shape[-1]
    a_regs = {coords: r for r, coords in enumerate(a.layout.all_reg_coords())}
    b_regs = {coords: r for r, coords in enumerate(b.layout.all_reg_coords())}
    a_vals = [convert_operand(lw, v, acc_type, op.a) for v in a.vals]
    b_vals = [convert_operand(lw, v, acc_type, op.b) for v in b.vals]
    out = []
    for r, coords in enumerate(out_layout.all_reg_coords()):
        acc = c.vals[r] if isinstance(c, TVal) else c
        batch, m, n = coords[:-2], coords[-2], coords[-1]
        for k in range(k_size):
            acc = _fma(lw, op, a_vals[a_regs[(*batch, m, k)]], b_vals[b_regs[(*batch, k, n)]], acc)
        out.append(acc)
    lw.set(op.result, TVal(out, out_layout))


def _dot_from_shared(lw, op, a: DeferredOperand, b: DeferredOperand, c) -> None:
    builder = lw.builder
    out_layout = lw.layout(op.result)
    acc_type = llvm_type(op.result.type)
    ea, eb = byte_size(a.element), byte_size(b.element)
    numel_a = a.shape[0] * strides(a.shape)[0]
    numel_b = b.shape[0] * strides(b.shape)[0]
    b_base = (numel_a * ea + 15) // 16 * 16 // eb  # in elements of B
    smem = lw.shared_memory(b_base * eb + numel_b * eb)
    lw.barrier_before_shared()
    write_shared(lw, a.src, a.shape, 0, ea, smem)
    write_shared(lw, b.src, b.shape, b_base, eb, smem)
    lw.barrier()
    sa, sb = strides(a.shape), strides(b.shape)

    def a_index(coords):  # A[batch, m, 0] for an output coordinate (batch, m, n)
        return sum(x * s for x, s in zip((*coords[:-1], 0), sa))

    def b_index(coords):  # B[batch, 0, n]
        return sum(x * s for x, s in zip((*coords[:-2], 0, coords[-1]), sb))

    thread_a = lw.thread_offset(out_layout, a_index)
    thread_b = lw.thread_offset(out_layout, b_index)
    coords = out_layout.all_reg_coords()
    rows = sorted({a_index(cd) for cd in coords})
    cols = sorted({b_index(cd) for cd in coords})
    a_type, b_type = lw.get(op.a).src.vals[0].type, lw.get(op.b).src.vals[0].type
    acc = [c.vals[r] if isinstance(c, TVal) else c for r in range(len(coords))]
    for k in range(a.shape[-1]):
        a_k = {
            row: convert_operand(
                lw,
                _load(lw, smem, builder.add(thread_a, ir.Constant(I32, row + k)), ea, a_type),
                acc_type,
                op.a,
            )
            for row in rows
        }
        b_k = {
            col: convert_operand(
                lw,
                _load(
                    lw,
                    smem,
                    builder.add(thread_b, ir.Constant(I32, b_base + col + k * sb[-2])),
                    eb,
                    b_type,
                ),
                acc_type,
                op.b,
            )
            for col in cols
        }
        for r, cd in enumerate(coords):
            acc[r] = _fma(lw, op, a_k[a_index(cd)], b_k[b_index(cd)], acc[r])
    lw.set(op.result, TVal(acc, out_layout))


def _load(lw, smem, index, nbytes: int, reg_type):
    b = lw.builder
    load = b.load(
        lw.smem_ptr(smem, b.mul(index, ir.Constant(I32, nbytes))), typ=_shared_type(reg_type)
    )
    load.align = nbytes
    return _from_shared(lw, load, reg_type)


def _fma(lw, op, x, y, acc):
    if element_type(op.result.type).is_float:
        return lw.call_intrinsic(f"llvm.fmuladd.{acc.type.intrinsic_name}", acc.type, [x, y, acc])
    return lw.builder.add(lw.builder.mul(x, y), acc)


def convert_operand(lw, v, to, source):
    """`v`, one element of dot operand `source`, as the accumulator's LLVM type `to` (fp8 widened,
    floats resized, integers extended by their signedness or truncated)."""
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
