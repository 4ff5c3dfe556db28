"""Shape ops: ranges, splat, broadcast, expand_dims, layout conversion, reshape, trans, join, split,
cat, gather and histogram. Most are register renamings; the rest go through shared memory
(`exchange`)."""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops import tt
from ....ir.ops.ttg import ConvertLayoutOp
from ....ir.types import TensorType, element_type
from ..llvm_types import I8, I32, llvm_type
from ..values import TVal
from . import lowers
from .exchange import (
    byte_quad_plan,
    exchange_byte_quads,
    flat,
    in_registers,
    read_shared,
    remap,
    remap_shared,
    strides,
    unflat,
    write_shared,
)


@lowers(tt.MakeRangeOp)
def lower_make_range(lw, op) -> None:
    layout = lw.layout(op.result)
    thread = lw.thread_offset(layout, lambda b: b[0])
    b = lw.builder
    vals = [b.add(thread, ir.Constant(I32, op.start + c[0])) for c in layout.all_reg_coords()]
    lw.set(op.result, TVal(vals, layout))


@lowers(tt.SplatOp)
def lower_splat(lw, op) -> None:
    layout = lw.layout(op.result)
    lw.set(op.result, TVal([lw.get(op.operand)] * layout.num_regs, layout))


def _splat_like(lw, op, value) -> None:
    layout = lw.layout(op.result)
    lw.set(op.result, TVal([value] * layout.num_regs, layout))


@lowers(tt.BroadcastOp)
def lower_broadcast(lw, op) -> None:
    src = lw.get(op.operand)
    if not isinstance(src, TVal):
        return _splat_like(lw, op, src)
    src_shape = op.operand.type.shape
    ones = [d for d, s in enumerate(src_shape) if s == 1]

    def fmap(c):
        return tuple(0 if d in ones else x for d, x in enumerate(c))

    lw.set(op.result, remap(lw, src, src_shape, lw.layout(op.result), fmap, _elem(op)))


@lowers(tt.ExpandDimsOp)
def lower_expand_dims(lw, op) -> None:
    src = lw.get(op.src)
    if not isinstance(src, TVal):
        return _splat_like(lw, op, src)
    axis = op.axis

    def fmap(c):
        return tuple(c[:axis]) + tuple(c[axis + 1 :])

    lw.set(op.result, remap(lw, src, op.src.type.shape, lw.layout(op.result), fmap, _elem(op)))


@lowers(ConvertLayoutOp)
def lower_convert_layout(lw, op) -> None:
    from .dot import defer_conversion

    if defer_conversion(lw, op):
        return
    src, dst = lw.get(op.src), lw.layout(op.result)
    if isinstance(src, TVal) and src.vals[0].type == I8 and in_registers(src, dst, tuple) is None:
        plan = byte_quad_plan(src.layout, dst)
        if plan is not None:
            lw.set(op.result, exchange_byte_quads(lw, src, dst, plan))
            return
    lw.set(op.result, remap(lw, src, op.src.type.shape, dst, tuple, _elem(op)))


@lowers(tt.ReshapeOp)
def lower_reshape(lw, op) -> None:
    src = lw.get(op.src)
    if not isinstance(src, TVal):
        return _splat_like(lw, op, src)
    src_shape, dst_shape = op.src.type.shape, op.result.type.shape

    def fmap(c):
        return unflat(flat(c, dst_shape), src_shape)

    lw.set(op.result, remap(lw, src, src_shape, lw.layout(op.result), fmap, _elem(op)))


@lowers(tt.TransOp)
def lower_trans(lw, op) -> None:
    src = lw.get(op.src)
    order = op.order

    def fmap(c):
        out = [0] * len(c)
        for i, d in enumerate(order):
            out[d] = c[i]
        return tuple(out)

    lw.set(op.result, remap(lw, src, op.src.type.shape, lw.layout(op.result), fmap, _elem(op)))


@lowers(tt.JoinOp)
def lower_join(lw, op) -> None:
    lhs, rhs = _as_tensor(lw, op.lhs), _as_tensor(lw, op.rhs)
    shape = op.lhs.type.shape if isinstance(op.lhs.type, TensorType) else ()
    numel = _numel(shape)
    st = strides(shape)

    def weight(c):
        return sum(x * s for x, s in zip(c[:-1], st)) + c[-1] * numel

    dst = lw.layout(op.result)
    out = remap_shared(lw, [(lhs, shape or (1,)), (rhs, shape or (1,))], dst, weight, _elem(op))
    lw.set(op.result, out)


def _as_tensor(lw, v) -> TVal:
    x = lw.get(v)
    if isinstance(x, TVal):
        return x
    from ....ir.ops.ttg import LinearLayout

    return TVal([x], LinearLayout((1,), (), ((0,),) * 5, ((0,),) * (lw.num_warps.bit_length() - 1)))


@lowers(tt.SplitOp)
def lower_split(lw, op) -> None:
    src = lw.get(op.src)
    src_shape = op.src.type.shape
    for k, res in enumerate(op.results):
        if not isinstance(res.type, TensorType):
            lw.set(res, _split_scalar(lw, src, k))
            continue
        dst = lw.layout(res)

        def thread_map(c):
            return tuple(c) + (0,)

        def reg_map(c, k=k):
            return tuple(c) + (k,)

        local = in_registers(src, dst, thread_map, reg_map)
        if local is None:
            st = strides(src_shape)
            local = remap_shared(
                lw,
                [(src, src_shape)],
                dst,
                lambda c, st=st: sum(x * s for x, s in zip(tuple(c) + (0,), st)),
                element_type(op.src.type),
                read_base=k * st[-1],
            )
        lw.set(res, local)


def _split_scalar(lw, src: TVal, k: int):
    index = {c: r for r, c in enumerate(src.layout.all_reg_coords())}
    return src.vals[index[(k,)]]


@lowers(tt.CatOp)
def lower_cat(lw, op) -> None:
    lhs, rhs = lw.get(op.lhs), lw.get(op.rhs)
    shape = op.lhs.type.shape
    dst_shape = op.result.type.shape
    out = remap_shared(
        lw,
        [(lhs, shape), (rhs, shape)],
        lw.layout(op.result),
        lambda c: flat(c, dst_shape),
        _elem(op),
    )
    lw.set(op.result, out)


@lowers(tt.GatherOp)
def lower_gather(lw, op) -> None:
    """`src` to shared memory, then each element reads `src[.., index, ..]`."""
    src, idx = lw.get(op.src), lw.get(op.indices)
    src_shape = op.src.type.shape
    nbytes = _bytes(op)
    smem = lw.shared_memory(_numel(src_shape) * nbytes)
    b = lw.builder
    lw.barrier_before_shared()
    write_shared(lw, src, src_shape, 0, nbytes, smem)
    lw.barrier()
    st = strides(src_shape)
    axis = op.axis
    dst = lw.layout(op.result)

    def weight(c):
        return sum(x * s for d, (x, s) in enumerate(zip(c, st)) if d != axis)

    thread = lw.thread_offset(dst, weight)
    out = []
    reg_type = src.vals[0].type
    for r, coords in enumerate(dst.all_reg_coords()):
        index = (
            b.sext(idx.vals[r], I32)
            if idx.vals[r].type.width < 32
            else b.trunc(idx.vals[r], I32)
            if idx.vals[r].type.width > 32
            else idx.vals[r]
        )
        offset = b.add(
            b.add(thread, ir.Constant(I32, weight(coords))),
            b.mul(index, ir.Constant(I32, st[axis])),
        )
        ptr = lw.smem_ptr(smem, b.mul(offset, ir.Constant(I32, nbytes)))
        out.append(_load_shared(lw, ptr, reg_type, nbytes))
    lw.set(op.result, TVal(out, dst))


def _load_shared(lw, ptr, reg_type, nbytes):
    from .exchange import _from_shared, _shared_type

    load = lw.builder.load(ptr, typ=_shared_type(reg_type))
    load.align = nbytes
    return _from_shared(lw, load, reg_type)


@lowers(tt.HistogramOp)
def lower_histogram(lw, op) -> None:
    """Counts in shared memory: zeroed, one `atom.shared.add` per owned in-range element, read back."""
    src = lw.get(op.src)
    bins = op.result.type.shape[0]
    b = lw.builder
    smem = lw.shared_memory(bins * 4)
    lw.barrier_before_shared()
    tid = lw.sreg("tid.x")
    threads = lw.hooks.threads(lw)
    for start in range(0, bins, threads):
        i = b.add(tid, ir.Constant(I32, start))
        with b.if_then(b.icmp_unsigned("<", i, ir.Constant(I32, bins))):
            b.store(ir.Constant(I32, 0), lw.smem_ptr(smem, b.mul(i, ir.Constant(I32, 4))))
    lw.barrier()
    owner = lw.owner_predicate(src.layout)
    for v in src.vals:
        v32 = b.sext(v, I32) if v.type.width < 32 else b.trunc(v, I32) if v.type.width > 32 else v
        ok = b.and_(owner, b.icmp_unsigned("<", v32, ir.Constant(I32, bins)))
        with b.if_then(ok):
            ptr = lw.smem_ptr(smem, b.mul(v32, ir.Constant(I32, 4)))
            b.atomic_rmw("add", ptr, ir.Constant(I32, 1), "monotonic")
    lw.barrier()
    dst = lw.layout(op.result)
    vals = read_shared(lw, dst, lambda c: c[0], 0, 4, smem, I32)
    out_type = llvm_type(op.result.type)
    if out_type != I32:
        vals = [b.sext(v, out_type) if out_type.width > 32 else b.trunc(v, out_type) for v in vals]
    lw.set(op.result, TVal(vals, dst))


def _elem(op):
    return element_type(op.results[0].type)


def _bytes(op) -> int:
    from ..llvm_types import byte_size

    return byte_size(_elem(op))


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
