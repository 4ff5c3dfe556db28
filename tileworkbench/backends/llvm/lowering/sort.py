"""`tt.sort` and `tt.topk` along the last dimension: the tensor goes to shared memory, the threads run a
bitonic network over it (each thread a share of the compare-exchanges of a stage, a barrier between
stages), and the result layout reads the sorted rows back (`topk` reads the first k of each row)."""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops import tt
from ....ir.types import element_type
from ..llvm_types import I32, byte_size
from ..values import TVal
from . import lowers
from .exchange import _from_shared, _shared_type, _to_shared, read_shared, strides, write_shared


def _out_of_order(b, x, y, ascending: bool, signed: bool):
    pred = ">" if ascending else "<"
    if isinstance(x.type, ir.IntType):
        return (b.icmp_signed if signed else b.icmp_unsigned)(pred, x, y)
    return b.fcmp_ordered(pred, x, y)


def _sort_in_shared(lw, op, descending: bool):
    """Write `op.src` to shared memory and sort every row in place; returns the shared array."""
    shape = op.src.type.shape
    if isinstance(op, tt.SortOp) and op.axis != len(shape) - 1:
        raise lw.error(op, "sort is supported along the last dimension only (as in Triton)")
    t = element_type(op.src.type)
    src = lw.get(op.src)
    n, numel, nbytes = shape[-1], shape[0] * strides(shape)[0], byte_size(t)
    smem = lw.shared_memory(numel * nbytes)
    lw.barrier_before_shared()
    write_shared(lw, src, shape, 0, nbytes, smem)
    lw.barrier()
    b = lw.builder
    threads = lw.hooks.threads(lw)
    tid = lw.sreg("tid.x")
    pairs = numel // 2
    reg_type = src.vals[0].type
    k = 2
    while k <= n:
        j = k // 2
        while j >= 1:
            for first in range(0, pairs, threads):
                pair = b.add(tid, ir.Constant(I32, first))
                if first + threads > pairs:
                    with b.if_then(b.icmp_unsigned("<", pair, ir.Constant(I32, pairs))):
                        _exchange(lw, smem, pair, j, k, n, descending, t, reg_type, nbytes)
                else:
                    _exchange(lw, smem, pair, j, k, n, descending, t, reg_type, nbytes)
            lw.barrier()
            j //= 2
        k *= 2
    return smem, shape, t, nbytes


def _exchange(lw, smem, pair, j: int, k: int, n: int, descending: bool, t, reg_type, nbytes):
    """Compare-exchange elements lo and lo + j of pair number `pair` (stage k, distance j)."""
    b = lw.builder
    log_j = j.bit_length() - 1
    low_bits = b.and_(pair, ir.Constant(I32, j - 1))
    lo = b.or_(b.shl(b.lshr(pair, ir.Constant(I32, log_j)), ir.Constant(I32, log_j + 1)), low_bits)
    hi = b.add(lo, ir.Constant(I32, j))
    ptrs = [lw.smem_ptr(smem, b.mul(i, ir.Constant(I32, nbytes))) for i in (lo, hi)]
    x, y = (_from_shared(lw, b.load(p, typ=_shared_type(reg_type)), reg_type) for p in ptrs)
    signed = t.is_signed if t.is_int else False
    if k == n:  # the last merge: one direction for every row
        swap = _out_of_order(b, x, y, not descending, signed)
    else:  # bit k of the in-row index picks the direction of this bitonic half
        up = b.icmp_unsigned("==", b.and_(lo, ir.Constant(I32, k)), ir.Constant(I32, 0))
        asc = _out_of_order(b, x, y, True, signed)
        desc = _out_of_order(b, x, y, False, signed)
        if descending:
            asc, desc = desc, asc
        swap = b.select(up, asc, desc)
    b.store(_to_shared(lw, b.select(swap, y, x)), ptrs[0])
    b.store(_to_shared(lw, b.select(swap, x, y)), ptrs[1])


@lowers(tt.SortOp)
def lower_sort(lw, op) -> None:
    smem, shape, _, nbytes = _sort_in_shared(lw, op, op.descending)
    st = strides(shape)
    dst = lw.layout(op.result)
    vals = read_shared(
        lw,
        dst,
        lambda c: sum(x * s for x, s in zip(c, st)),
        0,
        nbytes,
        smem,
        lw.get(op.src).vals[0].type,
    )
    lw.set(op.result, TVal(vals, dst))


@lowers(tt.TopKOp)
def lower_topk(lw, op) -> None:
    """Sort each row (largest first when `largest`) and read back the first k."""
    smem, shape, _, nbytes = _sort_in_shared(lw, op, op.largest)
    st = strides(shape)
    dst = lw.layout(op.result)
    vals = read_shared(
        lw,
        dst,
        lambda c: sum(x * s for x, s in zip(c, st)),
        0,
        nbytes,
        smem,
        lw.get(op.src).vals[0].type,
    )
    lw.set(op.result, TVal(vals, dst))
