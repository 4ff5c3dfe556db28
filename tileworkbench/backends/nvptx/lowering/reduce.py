"""Reductions, scans and sorts. `tt.reduce` combines in each thread's registers, then across lanes with
`shfl.sync.bfly`, then (only where the axis spans warps) once through shared memory; the `combine`
region is lowered inline at every step, so any user combine function works (argmax included).
`tt.sort` and `tt.topk` move each row into one thread's registers (through shared memory), work
there, and move the result back; scans are in `scan.py`."""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops import tt
from ....ir.ops.ttg import BlockedEncoding, LinearLayout, blocked_for
from ....ir.types import TensorType, element_type
from ..llvm_types import I32, byte_size
from ..lower import TVal
from . import lowers
from .exchange import remap, strides


def combine(lw, region, acc: list, new: list) -> list:
    """The `combine` region applied to (acc..., new...): its ops lowered inline, here."""
    block = region.block
    for arg, value in zip(block.args, list(acc) + list(new)):
        lw.set(arg, value)
    saved = lw.current_op
    result = lw.lower_block(block)
    lw.current_op = saved
    return result


@lowers(tt.ReduceOp)
def lower_reduce(lw, op) -> None:
    srcs = [lw.get(v) for v in op.srcs]
    axis = op.axis
    layout = srcs[0].layout
    out_layout = layout.drop_dim(axis)
    out_index = {c: r for r, c in enumerate(out_layout.all_reg_coords())}
    # 1. Within the thread: registers that differ only along the axis.
    accs: list[list | None] = [None] * out_layout.num_regs
    for r, coords in enumerate(layout.all_reg_coords()):
        o = out_index[tuple(coords[:axis]) + tuple(coords[axis + 1:])]
        elems = [s.vals[r] for s in srcs]
        accs[o] = elems if accs[o] is None else combine(lw, op.combine, accs[o], elems)
    # 2. Across the lanes that hold other positions along the axis.
    for j, basis in enumerate(layout.lanes):
        if basis[axis]:
            for o, acc in enumerate(accs):
                other = [lw.shuffle_xor(v, 1 << j) for v in acc]
                accs[o] = combine(lw, op.combine, acc, other)
    # 3. Across warps, through shared memory.
    warp_bits = [j for j, basis in enumerate(layout.warps) if basis[axis]]
    if warp_bits:
        accs = _across_warps(lw, op, accs, out_layout, warp_bits)
    for i, res in enumerate(op.results):
        if isinstance(res.type, TensorType):
            out = lw.layout(res)
            if out != out_layout:
                raise lw.error(op, "internal: reduce result layout is not the slice of its input")
            lw.set(res, TVal([acc[i] for acc in accs], out))
        else:
            lw.set(res, accs[0][i])


def _across_warps(lw, op, accs, out_layout: LinearLayout, warp_bits: list[int]) -> list:
    """Each warp's partials to shared memory at [element][warp along axis]; then every thread
    combines the partials of the elements it holds, in warp order."""
    b = lw.builder
    n_warps = 1 << len(warp_bits)
    numel = 1
    for s in out_layout.shape:
        numel *= s
    sizes = [byte_size(element_type(v.type)) for v in op.srcs]
    bases, total = [], 0
    for size in sizes:
        total = (total + size - 1) // size * size
        bases.append(total)
        total += numel * n_warps * size
    smem = lw.shared_memory(total)
    _, warp = lw.lane_and_warp()
    eb = lw.entry_builder
    warp_index = ir.Constant(I32, 0)
    for k, j in enumerate(warp_bits):
        bit = eb.and_(eb.lshr(warp, ir.Constant(I32, j)), ir.Constant(I32, 1))
        warp_index = eb.add(warp_index, eb.shl(bit, ir.Constant(I32, k))) if k else bit
    st = strides(out_layout.shape)

    def weight(c):
        return sum(x * s for x, s in zip(c, st)) * n_warps
    thread = lw.thread_offset(out_layout, weight)
    lw.barrier_before_shared()
    for o, coords in enumerate(out_layout.all_reg_coords()):
        slot = b.add(b.add(thread, ir.Constant(I32, weight(coords))), warp_index)
        for i, size in enumerate(sizes):
            offset = b.add(ir.Constant(I32, bases[i]), b.mul(slot, ir.Constant(I32, size)))
            b.store(_widen(lw, accs[o][i]), lw.smem_ptr(smem, offset)).align = size
    lw.barrier()
    out = []
    for o, coords in enumerate(out_layout.all_reg_coords()):
        acc = None
        for w in range(n_warps):
            slot = b.add(thread, ir.Constant(I32, weight(coords) + w))
            elems = []
            for i, size in enumerate(sizes):
                offset = b.add(ir.Constant(I32, bases[i]), b.mul(slot, ir.Constant(I32, size)))
                load = b.load(lw.smem_ptr(smem, offset), typ=_stored_type(accs[o][i].type))
                load.align = size
                elems.append(_narrow(lw, load, accs[o][i].type))
            acc = elems if acc is None else combine(lw, op.combine, acc, elems)
        out.append(acc)
    return out


def _stored_type(t):
    return ir.IntType(8) if isinstance(t, ir.IntType) and t.width == 1 else t


def _widen(lw, v):
    return lw.builder.zext(v, ir.IntType(8)) if v.type == ir.IntType(1) else v


def _narrow(lw, v, t):
    return lw.builder.icmp_unsigned("!=", v, ir.Constant(v.type, 0)) if t == ir.IntType(1) else v


# -- scan, sort, topk: one row per thread ---------------------------------------------------------
def row_layout(shape: tuple[int, ...], axis: int, num_warps: int) -> LinearLayout:
    """A layout holding all of dimension `axis` in each thread's registers."""
    rest = tuple(1 if d == axis else s for d, s in enumerate(shape))
    base = blocked_for(rest, num_warps)
    spt = tuple(shape[axis] if d == axis else 1 for d in range(len(shape)))
    order = (axis,) + tuple(d for d in base.order if d != axis)
    return BlockedEncoding(spt, base.threads_per_warp, base.warps_per_cta, order).linear(shape)


def _rows(layout: LinearLayout, axis: int) -> list[list[int]]:
    """Register indices grouped by row (same coordinates off the axis), ordered along the axis."""
    groups: dict[tuple, list[tuple[int, int]]] = {}
    for r, c in enumerate(layout.all_reg_coords()):
        key = tuple(c[:axis]) + tuple(c[axis + 1:])
        groups.setdefault(key, []).append((c[axis], r))
    return [[r for _, r in sorted(g)] for g in groups.values()]


def _to_rows(lw, values: list[TVal], shape, axis: int, element_types) -> list[TVal]:
    rows = row_layout(shape, axis, lw.num_warps)
    return [remap(lw, v, shape, rows, tuple, t) for v, t in zip(values, element_types)]


def _compare_exchange(lw, vals, i: int, j: int, ascending: bool, signed: bool) -> None:
    """Order vals[i], vals[j] (ascending or descending) with two selects."""
    b = lw.builder
    x, y = vals[i], vals[j]
    pred = ">" if ascending else "<"
    if isinstance(x.type, ir.IntType):
        out_of_order = (b.icmp_signed if signed else b.icmp_unsigned)(pred, x, y)
    else:
        out_of_order = b.fcmp_ordered(pred, x, y)
    vals[i], vals[j] = b.select(out_of_order, y, x), b.select(out_of_order, x, y)


def _bitonic(lw, vals: list, ascending: bool, signed: bool) -> list:
    """Sort `vals` (a power-of-two count) with a bitonic network of compare-exchanges."""
    vals = list(vals)
    n = len(vals)
    k = 2
    while k <= n:
        j = k // 2
        while j >= 1:
            for i in range(n):
                partner = i ^ j
                if partner > i:
                    up = ((i & k) == 0) == ascending
                    _compare_exchange(lw, vals, i, partner, up, signed)
            j //= 2
        k *= 2
    return vals


def _sorted_rows(lw, op, descending: bool):
    shape = op.src.type.shape
    axis = op.axis if isinstance(op, tt.SortOp) else len(shape) - 1
    t = element_type(op.src.type)
    [rows] = _to_rows(lw, [lw.get(op.src)], shape, axis, [t])
    out = list(rows.vals)
    for regs in _rows(rows.layout, axis):
        ordered = _bitonic(lw, [rows.vals[r] for r in regs], not descending, t.is_signed)
        for r, v in zip(regs, ordered):
            out[r] = v
    return TVal(out, rows.layout), shape, t


@lowers(tt.SortOp)
def lower_sort(lw, op) -> None:
    rows, shape, t = _sorted_rows(lw, op, op.descending)
    lw.set(op.result, remap(lw, rows, shape, lw.layout(op.result), tuple, t))


@lowers(tt.TopKOp)
def lower_topk(lw, op) -> None:
    """Sort each row (largest first when `largest`) and keep the first k."""
    rows, shape, t = _sorted_rows(lw, op, op.largest)
    from .exchange import flat, remap_shared
    dst = lw.layout(op.result)
    lw.set(op.result, remap_shared(lw, [(rows, shape)], dst, lambda c: flat(c, shape), t))
