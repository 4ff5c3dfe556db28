"""Reductions, scans and sorts. `tt.reduce` combines in each thread's registers, then across lanes with
`shfl.sync.bfly`, then (only where the axis spans warps) once through shared memory; the `combine`
region is lowered inline at every step, so any user combine function works (argmax included).
Scans are in `scan.py`, sorts in `sort.py`."""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops import tt
from ....ir.ops.ttg import LinearLayout
from ....ir.types import TensorType, element_type
from ..llvm_types import I32, byte_size
from ..values import TVal
from . import lowers
from .exchange import strides


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
    if lw.hooks.tree_reductions:
        accs = _within_thread_tree(lw, op, srcs, layout, out_index, axis)
    for r, coords in enumerate(layout.all_reg_coords()):
        if lw.hooks.tree_reductions:
            break
        o = out_index[tuple(coords[:axis]) + tuple(coords[axis + 1 :])]
        elems = [s.vals[r] for s in srcs]
        accs[o] = elems if accs[o] is None else combine(lw, op.combine, accs[o], elems)
    # 2. Across the lanes that hold other positions along the axis.
    lane_bits = [j for j, basis in enumerate(layout.lanes) if basis[axis]]
    accs = [_butterfly(lw, op, acc, lane_bits) for acc in accs]
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


def _within_thread_tree(lw, op, srcs, layout, out_index, axis) -> list:
    """Step 1 as a tree for targets with vector units (the cpu's one thread holds whole rows): the
    upper half of each output's registers combined into the lower half, level by level, so each level
    is one vector operation across outputs and elements. Reorders as the lanes' butterfly does."""
    groups: list[list] = [[] for _ in out_index]
    for r, coords in enumerate(layout.all_reg_coords()):
        groups[out_index[tuple(coords[:axis]) + tuple(coords[axis + 1 :])]].append(
            [s.vals[r] for s in srcs]
        )
    while any(len(g) > 1 for g in groups):
        for g in groups:
            half = len(g) // 2
            g[:] = [combine(lw, op.combine, g[i], g[i + half]) for i in range(half)] + g[2 * half :]
    return [g[0] for g in groups]


def _across_warps(lw, op, accs, out_layout: LinearLayout, warp_bits: list[int]) -> list:
    """Each warp's partials to shared memory at [element][warp along axis]; then the partials of each
    element are combined by lanes with shuffles where lanes share elements, else in every thread in
    warp order."""
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
    # outside loops each reduction has scratch of its own (no barrier before writing it); in a loop
    # body the same scratch is reused every iteration, so it is fenced like any other use
    private = lw.loop_depth == 0
    smem = lw.private_shared_memory(total) if private else lw.shared_memory(total)
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
    if not private:
        lw.barrier_before_shared()
    for o, coords in enumerate(out_layout.all_reg_coords()):
        slot = b.add(b.add(thread, ir.Constant(I32, weight(coords))), warp_index)
        for i, size in enumerate(sizes):
            offset = b.add(ir.Constant(I32, bases[i]), b.mul(slot, ir.Constant(I32, size)))
            b.store(_widen(lw, accs[o][i]), lw.smem_ptr(smem, offset)).align = size
    lw.barrier()
    k = len(warp_bits)
    if all(not any(basis) for basis in out_layout.lanes[:k]):
        return _shuffle_partials(lw, op, smem, bases, sizes, thread, weight, out_layout, accs, k)
    out = []
    for o, coords in enumerate(out_layout.all_reg_coords()):
        acc = None
        for w in range(n_warps):
            slot = b.add(thread, ir.Constant(I32, weight(coords) + w))
            elems = _load_partial(lw, smem, bases, sizes, slot, accs[o])
            acc = elems if acc is None else combine(lw, op.combine, acc, elems)
        out.append(acc)
    return out


def _shuffle_partials(lw, op, smem, bases, sizes, thread, weight, out_layout, accs, k: int) -> list:
    """The partials combined by lanes: lanes that differ only in their low `k` bits hold the same
    output elements, so lane l loads warp (l mod 2^k)'s partial and `k` butterfly shuffles combine
    them. One shared load per element instead of 2^k keeps registers free (Triton's second stage)."""
    b = lw.builder
    lane, _ = lw.lane_and_warp()
    lane_part = lw.entry_builder.and_(lane, ir.Constant(I32, (1 << k) - 1))
    out = []
    for o, coords in enumerate(out_layout.all_reg_coords()):
        slot = b.add(b.add(thread, ir.Constant(I32, weight(coords))), lane_part)
        out.append(
            _butterfly(lw, op, _load_partial(lw, smem, bases, sizes, slot, accs[o]), range(k))
        )
    return out


def _butterfly(lw, op, acc: list, lane_bits) -> list:
    """`acc` combined with the copies held by the lanes that differ in `lane_bits` (shfl.sync.bfly)."""
    for j in lane_bits:
        acc = combine(lw, op.combine, acc, [lw.shuffle_xor(v, 1 << j) for v in acc])
    return acc


def _load_partial(lw, smem, bases, sizes, slot, like: list) -> list:
    b = lw.builder
    elems = []
    for i, size in enumerate(sizes):
        offset = b.add(ir.Constant(I32, bases[i]), b.mul(slot, ir.Constant(I32, size)))
        load = b.load(lw.smem_ptr(smem, offset), typ=_stored_type(like[i].type))
        load.align = size
        elems.append(_narrow(lw, load, like[i].type))
    return elems


def _stored_type(t):
    return ir.IntType(8) if isinstance(t, ir.IntType) and t.width == 1 else t


def _widen(lw, v):
    return lw.builder.zext(v, ir.IntType(8)) if v.type == ir.IntType(1) else v


def _narrow(lw, v, t):
    return lw.builder.icmp_unsigned("!=", v, ir.Constant(v.type, 0)) if t == ir.IntType(1) else v
