"""The cpu target's own lowering of the ops that move whole tensors, on `<N x T>` vectors
(vectors.py): elementwise ops by widening the shared rule, ranges as constant vectors, loads and
stores as vector (masked) accesses per contiguous run or gathers/scatters, reductions as a tree of
half-vector combines, register renamings (broadcast, expand_dims, reshape, trans, layout
conversions) as one shufflevector, and dots as a loop over k. A rule returns NotImplemented where
the shared rule (on the per-register scalars `VTVal.vals` hands out) is to run instead.
"""

from __future__ import annotations

from llvmlite import ir

from ...ir.ops import arith, tt
from ...ir.ops.ttg import ConvertLayoutOp
from ...ir.types import ScalarType, TensorType, element_type
from ..llvm.llvm_types import I1, I8, I32, byte_size, llvm_type, memory_type
from ..llvm.values import TVal
from .vectors import VTVal, concat, packed, shuffle, splat, type_bytes, type_suffix, widen

RULES: dict[type, object] = {}


def _rule(*classes):
    def register(fn):
        for cls in classes:
            RULES[cls] = fn
        return fn

    return register


def _count(value) -> int | None:
    if isinstance(value, VTVal):
        return value.vec.type.count
    if isinstance(value, TVal):
        return len(value.vals)
    if isinstance(getattr(value, "type", None), ir.VectorType):
        return value.type.count
    return None


def lower_elementwise(lw, op):
    """One widened copy of the shared per-element rule (raw vectors too: a combine region's)."""
    from ..llvm.lowering import ELEMENTWISE

    args = [lw.get(v) for v in op.operands]
    counts = [c for c in map(_count, args) if c is not None]
    if not counts or len(op.results) != 1:
        return NotImplemented
    vecs = [packed(lw, a) if isinstance(a, TVal) else a for a in args]
    rule = ELEMENTWISE[type(op)]
    out = widen(lw, lambda *scalars: rule(lw, op, *scalars), vecs, counts[0])
    if isinstance(op.result.type, TensorType):
        lw.set(op.result, VTVal(out, lw.layout(op.result), lw))
    else:
        lw.set(op.result, out)
    return None


@_rule(tt.MakeRangeOp)
def lower_make_range(lw, op):
    layout = lw.layout(op.result)
    lanes = [ir.Constant(I32, op.start + c[0]) for c in layout.all_reg_coords()]
    lw.set(op.result, VTVal(ir.Constant(ir.VectorType(I32, len(lanes)), lanes), layout, lw))


# -- loads and stores ------------------------------------------------------------------------------
def _run(lw, op, layout) -> int:
    """Registers per access: a run of consecutive registers along one dim that the pointers' axis
    info calls contiguous (any length: the host has no 16-byte limit, and masks are per lane)."""
    if not layout.regs:
        return 1
    basis = layout.regs[0]
    dim = next(d for d, b in enumerate(basis) if b)
    run = 0
    while run < len(layout.regs) and layout.regs[run] == tuple(
        (1 << run) if d == dim else 0 for d in range(len(basis))
    ):
        run += 1
    vec = min(1 << run, lw.axis.info(op.ptr).contiguity[dim])
    return max(1, 1 << (vec.bit_length() - 1))


def _memory_access(lw, op):
    """(pointer vector, memory element type, element bytes, pointee) or None (the shared rule)."""
    ptr = lw.get(op.ptr)
    if lw.bounds is not None or not isinstance(ptr, TVal):
        return None
    pointee = element_type(op.ptr.type).pointee
    if not isinstance(pointee, ScalarType):
        return None
    return packed(lw, ptr), memory_type(pointee), byte_size(pointee), pointee


def _lane_vector(lw, value, count: int):
    if value is None:
        return None
    return packed(lw, value) if isinstance(value, TVal) else splat(lw, value, count)


def _vtype_name(etype, count: int) -> str:
    return f"v{count}{type_suffix(etype)}"


@_rule(tt.LoadOp)
def lower_load(lw, op):
    access = _memory_access(lw, op)
    if access is None:
        return NotImplemented
    ptrs, etype, nbytes, pointee = access
    layout = lw.get(op.ptr).layout
    n = ptrs.type.count
    b = lw.builder
    mask = _lane_vector(lw, lw.get(op.mask) if op.mask is not None else None, n)
    other = _lane_vector(lw, lw.get(op.other) if op.other is not None else None, n)
    if other is not None and pointee.is_bool:
        other = b.zext(other, ir.VectorType(I8, n))
    vec = _run(lw, op, layout)
    align = ir.Constant(I32, nbytes)
    if vec == 1 and n > 1:
        vtype = ir.VectorType(etype, n)
        passthru = other if other is not None else ir.Constant(vtype, None)
        all_lanes = mask if mask is not None else splat(lw, ir.Constant(I1, 1), n)
        fn = lw.intrinsic(
            f"llvm.masked.gather.{_vtype_name(etype, n)}.v{n}p1",
            vtype,
            [ptrs.type, I32, all_lanes.type, vtype],
        )
        value = b.call(fn, [ptrs, align, all_lanes, passthru])
    elif mask is None:
        value = _load_runs(lw, ptrs, None, None, etype, nbytes, vec)
    else:
        # plain loads when every lane is on (every program but a masked tail's last): LLVM keeps
        # masked loads masked, and they cost more than plain ones (Zen 3's vmaskmovps)
        every = lw.call_intrinsic(f"llvm.vector.reduce.and.v{n}i1", I1, [mask])
        with b.if_else(every, likely=True) as (whole, partial):
            with whole:
                plain = _load_runs(lw, ptrs, None, None, etype, nbytes, vec)
                plain_block = b.block
            with partial:
                masked = _load_runs(lw, ptrs, mask, other, etype, nbytes, vec)
                masked_block = b.block
        value = b.phi(plain.type)
        value.add_incoming(plain, plain_block)
        value.add_incoming(masked, masked_block)
    if pointee.is_bool:
        value = b.icmp_unsigned("!=", value, ir.Constant(value.type, None))
    lw.set(op.result, VTVal(value, layout, lw))
    return None


def _load_runs(lw, ptrs, mask, other, etype, nbytes: int, vec: int):
    """One (masked) vector load per run of `vec` lanes, joined."""
    b = lw.builder
    chunks = []
    vtype = ir.VectorType(etype, vec)
    for start in range(0, ptrs.type.count, vec):
        lanes = list(range(start, start + vec))
        address = b.extract_element(ptrs, ir.Constant(I32, start))
        if mask is None:
            load = b.load(address, typ=vtype)
            load.align = nbytes
            chunks.append(load)
            continue
        passthru = shuffle(lw, other, lanes) if other is not None else ir.Constant(vtype, None)
        fn = lw.intrinsic(
            f"llvm.masked.load.{_vtype_name(etype, vec)}.p1",
            vtype,
            [address.type, I32, ir.VectorType(I1, vec), vtype],
        )
        chunks.append(
            b.call(fn, [address, ir.Constant(I32, nbytes), shuffle(lw, mask, lanes), passthru])
        )
    return concat(lw, chunks)


@_rule(tt.StoreOp)
def lower_store(lw, op):
    access = _memory_access(lw, op)
    if access is None:
        return NotImplemented
    ptrs, etype, nbytes, pointee = access
    layout = lw.get(op.ptr).layout
    n = ptrs.type.count
    b = lw.builder
    mask = _lane_vector(lw, lw.get(op.mask) if op.mask is not None else None, n)
    data = _lane_vector(lw, lw.get(op.value), n)
    if pointee.is_bool:
        data = b.zext(data, ir.VectorType(I8, n))
    vec = _run(lw, op, layout)
    align = ir.Constant(I32, nbytes)
    if vec == 1 and n > 1:
        all_lanes = mask if mask is not None else splat(lw, ir.Constant(I1, 1), n)
        fn = lw.intrinsic(
            f"llvm.masked.scatter.{_vtype_name(etype, n)}.v{n}p1",
            ir.VoidType(),
            [data.type, ptrs.type, I32, all_lanes.type],
        )
        b.call(fn, [data, ptrs, align, all_lanes])
        return None
    if mask is None:
        _store_runs(lw, ptrs, data, None, etype, nbytes, vec)
        return None
    # AMD's masked stores are microcoded (Zen 3: one per ~20 cycles): plain stores when every lane
    # is on, which is every program but the last of a masked tail
    every = lw.call_intrinsic(f"llvm.vector.reduce.and.v{n}i1", I1, [mask])
    with b.if_else(every, likely=True) as (whole, partial):
        with whole:
            _store_runs(lw, ptrs, data, None, etype, nbytes, vec)
        with partial:
            _store_runs(lw, ptrs, data, mask, etype, nbytes, vec)
    return None


def _store_runs(lw, ptrs, data, mask, etype, nbytes: int, vec: int) -> None:
    b = lw.builder
    vtype = ir.VectorType(etype, vec)
    for start in range(0, ptrs.type.count, vec):
        lanes = list(range(start, start + vec))
        address = b.extract_element(ptrs, ir.Constant(I32, start))
        chunk = shuffle(lw, data, lanes)
        if mask is None:
            b.store(chunk, address).align = nbytes
            continue
        fn = lw.intrinsic(
            f"llvm.masked.store.{_vtype_name(etype, vec)}.p1",
            ir.VoidType(),
            [vtype, address.type, I32, ir.VectorType(I1, vec)],
        )
        b.call(fn, [chunk, address, ir.Constant(I32, nbytes), shuffle(lw, mask, lanes)])


# -- reductions ------------------------------------------------------------------------------------
@_rule(tt.ReduceOp)
def lower_reduce(lw, op):
    """Pairwise like the shared tree (element i with element i + half, level by level), each level
    one combine of two half-length vectors."""
    from ..llvm.lowering import ELEMENTWISE
    from ..llvm.lowering.reduce import combine

    srcs = [lw.get(v) for v in op.srcs]
    body = [o for o in op.combine.block.ops if not o.is_terminator]
    if not all(isinstance(s, TVal) for s in srcs) or not all(
        type(o) in ELEMENTWISE or isinstance(o, arith.ConstantOp) for o in body
    ):
        return NotImplemented
    layout, axis = srcs[0].layout, op.axis
    if any(basis[axis] for basis in layout.lanes + layout.warps):
        return NotImplemented
    out_layout = layout.drop_dim(axis)
    out_index = {c: r for r, c in enumerate(out_layout.all_reg_coords())}
    positions: list[list[int]] = [[] for _ in out_index]
    for r, coords in enumerate(layout.all_reg_coords()):
        positions[out_index[tuple(coords[:axis]) + tuple(coords[axis + 1 :])]].append(r)
    vecs = [packed(lw, s) for s in srcs]
    while len(positions[0]) > 1:
        half = len(positions[0]) // 2
        if half * 2 != len(positions[0]):
            return NotImplemented
        firsts = sorted((g[i], o, i) for o, g in enumerate(positions) for i in range(half))
        lows = [lane for lane, _, _ in firsts]
        highs = [positions[o][i + half] for _, o, i in firsts]
        moved = [[0] * half for _ in positions]
        for j, (_, o, i) in enumerate(firsts):
            moved[o][i] = j
        vecs = combine(
            lw,
            op.combine,
            [shuffle(lw, v, lows) for v in vecs],
            [shuffle(lw, v, highs) for v in vecs],
        )
        positions = moved
    vecs = [shuffle(lw, v, [g[0] for g in positions]) for v in vecs]
    for res, vec in zip(op.results, vecs):
        if isinstance(res.type, TensorType):
            lw.set(res, VTVal(vec, out_layout, lw))
        else:
            lw.set(res, lw.builder.extract_element(vec, ir.Constant(I32, 0)))
    return None


# -- register renamings ----------------------------------------------------------------------------
class _Lane:
    """A placeholder register: lane `index` of operand `source` (no `.type`: any IR use fails)."""

    __slots__ = ("source", "index")

    def __init__(self, source: int, index: int):
        self.source, self.index = source, index


@_rule(
    tt.BroadcastOp,
    tt.ExpandDimsOp,
    tt.ReshapeOp,
    tt.TransOp,
    ConvertLayoutOp,
    tt.JoinOp,
    tt.SplitOp,
    tt.CatOp,
)
def lower_renaming(lw, op):
    """Run the shared rule on placeholder registers: where it only renames them, its output is the
    lane map of one shufflevector."""
    from ..llvm.lowering import LOWERINGS

    operands = [v for v in op.operands if isinstance(lw.get(v), TVal)]
    if not operands or len(operands) > 2 or len(op.operands) != len(operands):
        return NotImplemented
    saved = {id(v): lw.get(v) for v in operands}
    vecs = [packed(lw, lw.get(v)) for v in operands]
    if len(vecs) == 2 and vecs[0].type != vecs[1].type:
        return NotImplemented
    builder = lw.builder
    lw.builder = ir.IRBuilder(
        ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "x").append_basic_block()
    )
    try:
        for k, v in enumerate(operands):
            real = saved[id(v)]
            lw.set(v, TVal([_Lane(k, r) for r in range(_count(real))], real.layout))
        LOWERINGS[type(op)](lw, op)
        outs = [lw.get(res) for res in op.results]
    except Exception:  # the rule computes (shared memory, arithmetic): it runs on the real values
        outs = None
    finally:
        lw.builder = builder
        for v in operands:
            lw.set(v, saved[id(v)])
    if outs is None or not all(
        isinstance(o, TVal) and all(isinstance(x, _Lane) for x in o.vals) for o in outs
    ):
        return NotImplemented
    width = vecs[0].type.count
    for res, out in zip(op.results, outs):
        lanes = [x.index + x.source * width for x in out.vals]
        lw.set(
            res,
            VTVal(shuffle(lw, vecs[0], lanes, vecs[1] if len(vecs) == 2 else None), out.layout, lw),
        )
    return None


# -- dot -------------------------------------------------------------------------------------------
@_rule(tt.DotOp)
def lower_dot(lw, op):
    """acc[m, :] += a[m, k] * b[k, :]: A (transposed: its columns) and B go to stack buffers, and a
    loop over k loads a column of A and a row of B per step, the accumulator's rows its phis. The
    code is one step long whatever K is (unrolled, a 16x64x16 dot took LLVM 45 s to compile)."""
    from ..llvm.lowering.dot import DeferredOperand, convert_operand

    a, b, c = lw.get(op.a), lw.get(op.b), lw.get(op.c)
    a = a.src if isinstance(a, DeferredOperand) else a
    b = b.src if isinstance(b, DeferredOperand) else b
    if not (isinstance(a, TVal) and isinstance(b, TVal)):
        return NotImplemented
    out_layout = lw.layout(op.result)
    acc_type = llvm_type(op.result.type)
    a_vec = widen(lw, lambda v: convert_operand(lw, v, acc_type, op.a), [packed(lw, a)], _count(a))
    b_vec = widen(lw, lambda v: convert_operand(lw, v, acc_type, op.b), [packed(lw, b)], _count(b))
    a_lane = {cd: r for r, cd in enumerate(a.layout.all_reg_coords())}
    b_lane = {cd: r for r, cd in enumerate(b.layout.all_reg_coords())}
    out_coords = out_layout.all_reg_coords()
    rows: dict[tuple, list[int]] = {}
    for r, cd in enumerate(out_coords):
        rows.setdefault(tuple(cd[:-1]), []).append(r)
    for lanes in rows.values():
        lanes.sort(key=lambda r: out_coords[r][-1])
    keys = list(rows)
    ns = [out_coords[r][-1] for r in rows[keys[0]]]
    if any([out_coords[r][-1] for r in rows[key]] != ns for key in keys):
        return NotImplemented
    batches = sorted({key[:-1] for key in keys})
    k_size, width = op.a.type.shape[-1], len(ns)
    # A's columns: buffer row k holds a[key, k] for every accumulator row key; B's rows: buffer row
    # (k, batch) holds b[batch, k, :] in the accumulator's column order
    columns = shuffle(lw, a_vec, [a_lane[(*key, k)] for k in range(k_size) for key in keys])
    b_rows = shuffle(
        lw, b_vec, [b_lane[(*batch, k, n)] for k in range(k_size) for batch in batches for n in ns]
    )
    a_buf, b_buf = _stack(lw, columns), _stack(lw, b_rows)
    c_vec = _lane_vector(lw, c, len(out_coords))
    accs = [shuffle(lw, c_vec, rows[key]) for key in keys]
    accs = _k_loop(lw, op, accs, keys, batches, a_buf, b_buf, k_size, width, acc_type)
    order = [r for key in keys for r in rows[key]]
    where = {r: i for i, r in enumerate(order)}
    joined = concat(lw, accs)
    lw.set(
        op.result,
        VTVal(shuffle(lw, joined, [where[r] for r in range(len(out_coords))]), out_layout, lw),
    )
    return None


def _stack(lw, vec):
    """`vec` stored to a stack buffer of its elements."""
    buffer = lw.entry_builder.alloca(ir.ArrayType(vec.type.element, vec.type.count))
    buffer.align = 64
    lw.builder.store(vec, lw.builder.bitcast(buffer, vec.type.as_pointer())).align = 64
    return buffer


def _k_loop(lw, op, accs, keys, batches, a_buf, b_buf, k_size, width, acc_type) -> list:
    b = lw.builder
    is_float = element_type(op.result.type).is_float
    row_type = ir.VectorType(acc_type, width)
    col_type = ir.VectorType(acc_type, len(keys))
    before = b.block
    loop = lw.function.append_basic_block("dot.k")
    done = lw.function.append_basic_block("dot.done")
    b.branch(loop)
    b.position_at_end(loop)
    k = b.phi(I32)
    k.add_incoming(ir.Constant(I32, 0), before)
    phis = [b.phi(row_type) for _ in accs]
    for phi, acc in zip(phis, accs):
        phi.add_incoming(acc, before)
    column = _load_row(b, a_buf, b.mul(k, ir.Constant(I32, len(keys))), col_type)
    b_rows = {
        batch: _load_row(
            b,
            b_buf,
            b.mul(
                b.add(b.mul(k, ir.Constant(I32, len(batches))), ir.Constant(I32, i)),
                ir.Constant(I32, width),
            ),
            row_type,
        )
        for i, batch in enumerate(batches)
    }
    new = []
    for i, (key, acc) in enumerate(zip(keys, phis)):
        x = splat(lw, b.extract_element(column, ir.Constant(I32, i)), width)
        y = b_rows[key[:-1]]
        if is_float:
            new.append(
                lw.call_intrinsic(
                    f"llvm.fmuladd.{_vtype_name(acc_type, width)}", row_type, [x, y, acc]
                )
            )
        else:
            new.append(b.add(b.mul(x, y), acc))
    following = b.add(k, ir.Constant(I32, 1))
    k.add_incoming(following, b.block)
    for phi, value in zip(phis, new):
        phi.add_incoming(value, b.block)
    b.cbranch(b.icmp_unsigned("<", following, ir.Constant(I32, k_size)), loop, done)
    b.position_at_end(done)
    return new


def _load_row(b, buffer, start, vtype):
    pointer = b.gep(buffer, [ir.Constant(I32, 0), start])
    load = b.load(b.bitcast(pointer, vtype.as_pointer()), typ=vtype)
    load.align = type_bytes(vtype.element)
    return load


def own_rule(op):
    """The cpu rule for `op`, or None (then the shared rule)."""
    from ..llvm.lowering import ELEMENTWISE

    rule = RULES.get(type(op))
    if rule is None and type(op) in ELEMENTWISE:
        return lower_elementwise
    return rule
