"""`pipeline_tma`: the TMA loads of an `scf.for` body become a ring of `num_stages` shared slots with one
mbarrier per slot, so the tiles of the next iterations load while this one computes (issue 11's TMA
pipeline; `software_pipeline.py` does the same for `cp.async`).

Before the loop, the copies of iterations 0..S-2 are issued (`ttng.tma_copy`, each slot's mbarrier
armed with its bytes); iteration i waits for slot i % S (`ttng.tma_wait_read`: the next phase of the
slot's mbarrier, then the tile into registers), computes, and issues iteration i+S-1 into the slot
iteration i-1 read (after a barrier, so no thread still reads it). Copies past the end are skipped.
A load that only feeds a wgmma operand tile (`ttg.local_alloc` of the `wgmma` pass) in the slot's
own `#nvmma_shared` layout becomes `ttng.tma_wait`: wgmma reads the slot by descriptor, no copy
(Triton's TMA-to-wgmma path); its slot is refilled only after the group that read it has completed
(`wgmma_pipeline` waits with pendings 1 before the refills, a barrier before them). The ops
computing the loads' offsets run S-1 iterations ahead, as in `software_pipeline.py` (cloned where
other ops of the body read them too, unless they read carried values: such loops are left alone,
as are loops with a non-constant or negative step). A loop after another in the same block takes
over that loop's rings of the same shape (attention's causal off-band and on-band loops share their
K and V rings: the shared memory of one pair, not two). A ring has at
least 2 slots (`num_stages` 1 too: the next tile loads while this one computes). Runs after the
layout passes (the read takes the load's layout) and `wgmma`; reads the target's `num_stages`.
"""

from __future__ import annotations

from ..ir.ops import arith, scf, tt, ttng
from ..ir.ops.ttg import LocalAllocOp
from ..ir.ops.wgmma import WarpGroupDotOp
from ..ir.types import MemDescType, ScalarType
from ..ir.values import OpResult, Value
from ..target import TargetInfo, target_pass
from .software_pipeline import _clone_slice, _Emitter, walk_back
from . import warp_specialize
from .tma import tma_shared_encoding
from .wgmma import nvmma_for_operand

i32 = ScalarType("i32")
i1 = ScalarType("i1")


@target_pass
def pipeline_tma(func: tt.FuncOp, target: TargetInfo) -> bool:
    """Pipeline the TMA loads of every eligible loop; returns whether any loop changed."""
    stages = max(2, target.num_stages)
    changed = False
    rings: list[tuple[scf.ForOp, Value, bool]] = []  # the rings so far: loop, ring, thread reads
    for loop in [op for op in func.walk() if isinstance(op, scf.ForOp)]:
        changed |= _pipeline_loop(func, loop, stages, rings, target)
    return changed


def _free_ring(
    loop: scf.ForOp, t: MemDescType, thread_reads: bool, rings: list, taken: list
) -> Value | None:
    """A ring of type `t` that a loop before `loop` in the same block used, and that no load of
    `loop` has taken: that loop is over, every copy it issued awaited (the copies past its end are
    skipped) and its wgmma waited for (`pendings = 0` after it), and the barrier before `loop`'s
    first copies orders every thread's reads before them. The phase bits of the slots stay right: each
    copy into a slot is awaited once. Where threads read the earlier loop's slots, they must read
    this loop's too (its copies then fence those reads first). Attention's causal loops share their
    K and V rings so."""
    block = loop.parent
    for earlier, ring, read_by_threads in rings:
        if (
            earlier.parent is block
            and block.ops.index(earlier) < block.ops.index(loop)
            and ring.type == t
            and (thread_reads or not read_by_threads)
            and all(ring is not r for r in taken)
        ):
            return ring
    return None


def _wgmma_tile(func: tt.FuncOp, load: ttng.TMALoadOp) -> LocalAllocOp | None:
    """The `local_alloc` through which `load` feeds a wgmma operand, where wgmma can read the TMA
    slot in its place: the slot's layout (transposed where the load is) is the `#nvmma_shared` a
    descriptor of that operand takes."""
    users = [op for op in func.walk() if any(v is load.result for v in op.operands)]
    if len(users) != 1 or not isinstance(users[0], LocalAllocOp):
        return None
    alloc = users[0]
    dots = [
        op for op in func.walk() if isinstance(op, WarpGroupDotOp) and alloc.result in (op.a, op.b)
    ]
    if len(dots) != 1:
        return None
    dot = dots[0]
    view = _slot_view(load)
    want = nvmma_for_operand(
        0 if dot.a is alloc.result else 1,
        view.shape,
        view.element,
        view.encoding.order,
        dot.result.type.encoding,
    )
    return alloc if want == view.encoding else None


def _slot_view(load: ttng.TMALoadOp) -> MemDescType:
    """A ring slot of `load`'s box as the load's result sees it (transposed where `trans`)."""
    t = load.result.type
    return MemDescType(
        tuple(t.shape),
        t.element,
        tma_shared_encoding(load.swizzle, t.element.bitwidth // 8, load.trans),
    )


def _positive_constant(v: Value) -> bool:
    return isinstance(v, OpResult) and isinstance(v.op, arith.ConstantOp) and v.op.value > 0


def _offset_slice(body, loads) -> tuple[list, list[int], bool] | None:
    """The body ops the loads' offsets need, in order, the carried values they read, and whether
    other ops of the body use the slice too (then it stays in the body for them, and its copies
    run ahead: attention's on-band loop reads the key offset in its mask); None when they do and the
    slice reads carried values (those would run S-1 iterations ahead), or one is impure."""
    walked = walk_back(body, [v for load in loads for v in load.offsets])
    if walked is None:
        return None
    ops, carried = walked
    in_slice, yield_op = {id(op) for op in ops}, body.ops[-1]
    ahead = {id(r) for op in ops for r in op.results} | {id(body.args[i + 1]) for i in carried}
    skip = in_slice | {id(load) for load in loads}
    shared = False
    for op in body.ops:
        if id(op) in skip:
            continue
        rest = [v for i, v in enumerate(op.operands) if op is not yield_op or i not in carried]
        if any(id(v) in ahead for v in rest):
            if carried:
                return None
            shared = True
    return ops, sorted(carried), shared


def _used(block, value: Value) -> bool:
    return any(v is value for op in block.walk() for v in op.operands)


def _pipeline_loop(
    func: tt.FuncOp, loop: scf.ForOp, stages: int, made: list, target: TargetInfo
) -> bool:
    body = loop.body.block
    loads = [op for op in body.ops if isinstance(op, ttng.TMALoadOp)]
    marked = warp_specialize.specialized_loop(loop) if loads else None
    if not loads or body.args[0].type != i32 or not _positive_constant(loop.step):
        nested = any(isinstance(op, ttng.TMALoadOp) for op in body.walk())
        if marked is not None or (loop.warp_specialize and not nested):
            warp_specialize.note(marked or loop, _not_pipelined(loads))
        return False
    sliced = _offset_slice(body, loads)
    if sliced is None:
        if marked is not None:
            warp_specialize.note(marked, "the TMA coordinates read values the loop carries")
        return False
    slice_ops, carried, shared_slice = sliced
    parent, loc = loop.parent, loop.loc
    iv, yield_op = body.args[0], body.ops[-1]
    outside = _Emitter(parent, loop)
    # threads read a slot (not wgmma alone): their reads are ordered before the refill by a fence
    thread_reads = any(_wgmma_tile(func, load) is None for load in loads)
    producer_inputs = _specializable(func, loop, loads, slice_ops, carried, thread_reads, target)
    specialized = producer_inputs is not None
    if specialized:  # the producer, first in the kernel, names the rings
        outside = _Emitter(func.body.block, func.body.block.ops[0])
    rings = []
    for load in loads:
        t = load.result.type
        box = (t.shape[1], t.shape[0]) if load.trans else tuple(t.shape)
        encoding = tma_shared_encoding(load.swizzle, t.element.bitwidth // 8, False)
        ring_type = MemDescType((stages, *box), t.element, encoding)
        ring = None if specialized else _free_ring(loop, ring_type, thread_reads, made, rings)
        if ring is None:
            ring_op = ttng.TMARingOp(releases=target.num_warps // 4 if specialized else 0)
            ring = outside.add(ring_op, [ring_type], load.loc, [load.result.name_hint])
        rings.append(ring)
    made.extend((loop, ring, thread_reads) for ring in rings)
    if specialized:
        warp_specialize.build_producer(
            func, loop, loads, rings, slice_ops, carried, stages, producer_inputs
        )

    def issue(emit: _Emitter, iv_value: Value, carried_values: dict[int, Value], slot: Value):
        """Clone the offsets' slice for iteration `iv_value`, copy its boxes into `slot`; returns the
        slice's next carried values."""
        mapping = {id(iv): iv_value}
        mapping.update({id(body.args[i + 1]): carried_values[i] for i in carried})
        _clone_slice(emit, slice_ops, mapping)
        in_range = emit.add(arith.CmpIOp(predicate="slt", lhs=iv_value, rhs=loop.upper), [i1], loc)
        for load, ring in zip(loads, rings):
            offsets = [mapping.get(id(v), v) for v in load.offsets]
            emit.add(
                ttng.TMACopyOp(
                    desc=load.desc,
                    ring=ring,
                    slot=slot,
                    pred=in_range,
                    offsets=offsets,
                    thread_reads=thread_reads,
                ),
                (),
                load.loc,
            )
        return {i: mapping.get(id(yield_op.operands[i]), yield_op.operands[i]) for i in carried}

    ahead = {i: loop.init_args[i] for i in carried}
    for s in range(0 if specialized else stages - 1):  # the prologue: iterations 0..S-2
        offset = outside.add(arith.MulIOp(lhs=loop.step, rhs=outside.const(s, loc=loc)), [i32], loc)
        iv_s = outside.add(arith.AddIOp(lhs=loop.lower, rhs=offset), [i32], loc)
        ahead = issue(outside, iv_s, ahead, outside.const(s, loc=loc))
    for i in carried:
        loop.init_args[i] = ahead[i]
    first_slot = outside.const(0, loc=loc)
    if specialized and producer_inputs.marked is not loop:  # the tile loop carries the slot too
        first_slot = _carry_slot(producer_inputs.marked, loop, first_slot)
    loop.init_args.append(first_slot)  # the loop carries the slot it reads next
    read_slot = body.add_arg(i32, "slot")
    loop.results.append(OpResult(i32, loop, len(loop.results), "slot"))

    for load, ring in zip(loads, rings):  # each load becomes a wait (and read) of its slot
        here = _Emitter(body, load)
        alloc = _wgmma_tile(func, load)
        if alloc is not None:  # wgmma reads the slot itself
            view = here.add(
                ttng.TMAWaitOp(ring=ring, slot=read_slot, trans=load.trans),
                [_slot_view(load)],
                load.loc,
                [load.result.name_hint],
            )
            for op in list(body.walk()):
                op.replace_operand(alloc.result, view)
            alloc.erase()
        else:
            read = here.add(
                ttng.TMAWaitReadOp(ring=ring, slot=read_slot, trans=load.trans),
                [load.result.type],
                load.loc,
                [load.result.name_hint],
            )
            for op in list(body.walk()):
                op.replace_operand(load.result, read)
        body.remove(load)
    for op in reversed(slice_ops):  # what the rest of the body does not read
        if specialized and carried:
            break  # the yield keeps the slice's carried values (the producer has its own)
        if not shared_slice or not any(_used(body, r) for r in op.results):
            body.remove(op)

    end = _Emitter(body, yield_op)  # iteration i + S - 1 into the slot iteration i - 1 read
    if specialized:  # the producer does: release that slot to it
        warp_specialize.release_previous_slot(loop, rings, read_slot, stages)
        yield_op.values.append(warp_specialize.next_slot(end, read_slot, stages, loc))
        if producer_inputs.marked is not loop:
            warp_specialize.release_after_tile(loop, rings, stages)
            producer_inputs.marked.body.block.ops[-1].values.append(loop.results[-1])
        return True
    span = end.add(arith.MulIOp(lhs=loop.step, rhs=end.const(stages - 1, loc=loc)), [i32], loc)
    iv_next = end.add(arith.AddIOp(lhs=iv, rhs=span), [i32], loc)
    size = end.const(stages, loc=loc)
    write_slot = end.add(
        arith.RemUIOp(
            lhs=end.add(
                arith.AddIOp(lhs=read_slot, rhs=end.const(stages - 1, loc=loc)), [i32], loc
            ),
            rhs=size,
        ),
        [i32],
        loc,
    )
    nxt = issue(end, iv_next, {i: body.args[i + 1] for i in carried}, write_slot)
    for i in carried:
        yield_op.values[i] = nxt[i]
    next_slot = end.add(
        arith.RemUIOp(
            lhs=end.add(arith.AddIOp(lhs=read_slot, rhs=end.const(1, loc=loc)), [i32], loc),
            rhs=size,
        ),
        [i32],
        loc,
    )
    yield_op.values.append(next_slot)
    return True


def _carry_slot(tiles: scf.ForOp, loop: scf.ForOp, first: Value) -> Value:
    """The tile loop `tiles` carries the slot its k loop `loop` starts at (from `first`); returns
    the tile body's slot (the tile loop yields the k loop's, appended with it)."""
    tiles.init_args.append(first)
    slot = tiles.body.block.add_arg(i32, "tile_slot")
    tiles.results.append(OpResult(i32, tiles, len(tiles.results), "tile_slot"))
    return slot


def _not_pipelined(loads) -> str:
    if not loads:
        return "the loop has no TMA descriptor loads (pointer loads, or descriptors on pointers)"
    return "the loop's induction variable is not i32 or its step not a positive constant"


def _specializable(func, loop, loads, slice_ops, carried, thread_reads, target):
    """For a loop that asks for warp specialization, itself or through its tile loop: what its
    producer recomputes (`warp_specialize.Plan`), or None (with a note saying why) where it cannot
    have one (passes/warp_specialize.py)."""
    marked = warp_specialize.specialized_loop(loop)
    if marked is None:
        return None
    reason = warp_specialize.why_not(func, loop, marked, thread_reads, target)
    if reason is None:
        inputs = warp_specialize.loop_inputs(loop, loads, slice_ops, carried)
        found = warp_specialize.plan(func, loop, marked, inputs)
        if not isinstance(found, str):
            return found
        reason = found
    warp_specialize.note(marked, reason)
    return None
