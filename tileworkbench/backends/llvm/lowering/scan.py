"""`tt.scan` as a butterfly over the bits of the scanned coordinate, least significant first. After the
level of bit b every element holds the scan of its aligned block of 2^(b+1) positions and that block's
total; the partner block's total comes from another register, a lane (`shfl.sync.bfly`) or a warp
(shared memory). The lower block always combines first, so non-commutative combines work."""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops import tt
from ....ir.types import element_type
from ..llvm_types import I32, byte_size
from ..values import TVal
from . import lowers
from .exchange import _from_shared, _shared_type, _to_shared, strides
from .reduce import combine


def _levels(layout, axis: int) -> list[tuple[int, str, int]]:
    """(basis value along the axis, "reg"/"lane"/"warp", bit index), least significant first."""
    levels = []
    for kind, bases in (("reg", layout.regs), ("lane", layout.lanes), ("warp", layout.warps)):
        for j, basis in enumerate(bases):
            if basis[axis]:
                levels.append((basis[axis], kind, j))
    return sorted(levels)


def _select(b, cond, a: list, c: list) -> list:
    return [b.select(cond, x, y) for x, y in zip(a, c)]


@lowers(tt.ScanOp)
def lower_scan(lw, op) -> None:
    srcs = [lw.get(v) for v in op.srcs]
    layout = srcs[0].layout
    axis, n = op.axis, layout.num_regs
    prefix = [[s.vals[r] for s in srcs] for r in range(n)]
    total = [list(p) for p in prefix]
    b = lw.builder
    lane, warp = lw.lane_and_warp()
    for value, kind, j in _levels(layout, axis):
        if kind == "reg":
            prefix, total = _register_level(lw, op, prefix, total, j)
            continue
        if kind == "lane":
            partner = [[lw.shuffle_xor(v, 1 << j) for v in t] for t in total]
            bit = b.trunc(b.lshr(lane, ir.Constant(I32, j)), ir.IntType(1))
        else:
            partner = _warp_partner(lw, op, layout, total, value)
            bit = b.trunc(b.lshr(warp, ir.Constant(I32, j)), ir.IntType(1))
        upper = b.not_(bit) if op.reverse else bit
        for r in range(n):
            from_lower = combine(lw, op.combine, partner[r], prefix[r])
            total_upper = combine(lw, op.combine, partner[r], total[r])
            total_lower = combine(lw, op.combine, total[r], partner[r])
            prefix[r] = _select(b, upper, from_lower, prefix[r])
            total[r] = _select(b, upper, total_upper, total_lower)
    for i, res in enumerate(op.results):
        lw.set(res, TVal([p[i] for p in prefix], lw.layout(res)))


def _register_level(lw, op, prefix, total, j: int):
    """Partners differ in register bit j: known at compile time, no selects."""
    new_prefix, new_total = list(prefix), list(total)
    for r in range(len(prefix)):
        partner = r ^ (1 << j)
        upper = bool(r >> j & 1) != op.reverse
        if upper:
            new_prefix[r] = combine(lw, op.combine, total[partner], prefix[r])
            new_total[r] = combine(lw, op.combine, total[partner], total[r])
        else:
            new_total[r] = combine(lw, op.combine, total[r], total[partner])
    return new_prefix, new_total


def _warp_partner(lw, op, layout, total, value: int) -> list:
    """Every element's total through shared memory at its flat index; read the element `value` away
    along the axis (down for upper warps, up for lower ones)."""
    b = lw.builder
    shape = layout.shape
    st = strides(shape)
    sizes = [byte_size(element_type(v.type)) for v in op.srcs]
    numel = st[0] * shape[0]
    bases, offset = [], 0
    for size in sizes:
        offset = (offset + size - 1) // size * size
        bases.append(offset)
        offset += numel * size
    smem = lw.shared_memory(offset)
    thread = lw.thread_offset(layout, lambda v: sum(c * s for c, s in zip(v, st)))
    _, warp = lw.lane_and_warp()
    lw.barrier_before_shared()
    index = [
        b.add(thread, ir.Constant(I32, sum(c * s for c, s in zip(coords, st))))
        for coords in layout.all_reg_coords()
    ]
    for r, t in enumerate(total):
        for i, v in enumerate(t):
            ptr = lw.smem_ptr(
                smem, b.add(ir.Constant(I32, bases[i]), b.mul(index[r], ir.Constant(I32, sizes[i])))
            )
            b.store(_to_shared(lw, v), ptr).align = sizes[i]
    lw.barrier()
    step = value * st[op.axis]
    warp_bit = next(k for k, basis in enumerate(layout.warps) if basis[op.axis] == value)
    is_upper = b.trunc(b.lshr(warp, ir.Constant(I32, warp_bit)), ir.IntType(1))
    delta = b.select(is_upper, ir.Constant(I32, -step), ir.Constant(I32, step))
    out = []
    for r, t in enumerate(total):
        elems = []
        for i, v in enumerate(t):
            ptr = lw.smem_ptr(
                smem,
                b.add(
                    ir.Constant(I32, bases[i]),
                    b.mul(b.add(index[r], delta), ir.Constant(I32, sizes[i])),
                ),
            )
            load = b.load(ptr, typ=_shared_type(v.type))
            load.align = sizes[i]
            elems.append(_from_shared(lw, load, v.type))
        out.append(elems)
    return out
