"""`pipeline`: software pipelining of the loads that feed tensor-core dots in a loop (`num_stages`).

A load in an `scf.for` body whose only use is a `ttg.local_alloc` read by `ttg.local_load` or wgmma
(a dot operand staged by `stage_dot_operands`), directly or through a `ttg.memdesc_trans` view,
becomes a `cp.async` copy into a ring of `num_stages` shared slots; so does a load read in
registers whose value reaches a dot (attention backward's rows of M and D), staged through shared
memory first (`pipeline_register_loads.py`). The loop is then software-pipelined as Triton's
(`Pipeliner/`): before the loop the copies of iterations 0..S-2 are issued, each load's its own
commit group (L loads: L groups per iteration); iteration i waits until the groups of iteration i
are complete (`ttg.async_wait {num = (S-2)*L}`, which ends in a barrier), reads slot i % S,
computes, and issues the copies of iteration i+S-1 into the slot that iteration i-1 read (the
barrier ordered those reads first; in attention's loops at 2 stages `wgmma_pipeline` moves them up
to its first wait). Copies for iterations past the end are skipped.
Slots read by `wgmma` (`ttng.warp_group_dot`) get a fence for the async proxy, and a spare slot
where shared memory has room (`_ring_slots`), so the wgmma of iteration i-1 may still be running.

The ops that compute the loads' pointers and masks (the "address slice": pointer increments
carried by the loop, masks from the induction variable) run S-1 iterations ahead: their carried
values start S-1 iterations in. Slice values the rest of the body reads too (a mask's bound that a
load left in registers shares, as tutorial 03's `K - k * BK` when only A can take cp.async) stay in
the body for the current iteration where they derive from the induction variable and loop
invariants alone; loops where the rest of the body reads a value that runs ahead (a carried
address, or one computed from it), or where the slice reads something else the loop carries, are
left alone, and so is a loop admitted that way whose rings would not fit in shared memory. A loop
after another at the kernel's top level takes over that loop's rings of its tiles' type (the
causal attention's off-band and on-band loops share one K and one V ring, as on TMA); where the
compiler's retry keeps descriptors off TMA for shared memory, loads get rings only while they fit.
Needs `stage_dot_operands`; reads the target's `num_stages` (1 = no pipelining) and shared memory.
"""

from __future__ import annotations

import copy

from ..config import config
from ..ir.ops import arith, scf, tt
from ..ir.ops.ttg import (
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncWaitOp,
    LocalAllocOp,
    LocalLoadOp,
    MemDescIndexOp,
    MemDescTransOp,
    NvmmaSharedEncoding,
)
from ..ir.ops.wgmma import WarpGroupDotOp
from ..ir.types import MemDescType, ScalarType
from ..ir.values import BlockArgument, OpResult, Value
from ..target import NO_FALLBACK, TargetInfo, target_pass
from .pipeline_register_loads import derive_counters, register_loads, stage_in_shared
from .shared_reuse import needs_barrier_before_copies, reuses_earlier_space

i32 = ScalarType("i32")
i1 = ScalarType("i1")


@target_pass
def pipeline(func: tt.FuncOp, target: TargetInfo) -> bool:
    """Pipeline every eligible loop with `target.num_stages` stages. Returns whether any changed."""
    stages = target.num_stages
    if stages < 2:
        return False
    changed = False
    made: list[tuple[scf.ForOp, Value]] = []  # the rings so far, each with its loop
    for loop in [op for op in func.walk() if isinstance(op, scf.ForOp)]:
        changed |= _pipeline_loop(func, loop, stages, target, made)
    return changed


# -- analysis -----------------------------------------------------------------------------------------


_VALUE_PRESERVING = (tt.SplatOp, arith.TruncFOp, arith.ExtFOp, arith.SIToFPOp, arith.UIToFPOp)


def _is_zero(v: Value | None) -> bool:
    """Whether a load's `other` is absent or zero (the zero fill of cp.async), seen through splats
    and conversions of a constant (bf16's 0.0 is a truncf of an f32 constant)."""
    while isinstance(v, OpResult) and isinstance(v.op, _VALUE_PRESERVING):
        v = v.op.operands[0]
    return v is None or (
        isinstance(v, OpResult) and isinstance(v.op, arith.ConstantOp) and v.op.value in (0, 0.0)
    )


def _staged_loads(body) -> list[tuple[tt.LoadOp, LocalAllocOp]]:
    """(load, its local_alloc) for loads whose only use is one local_alloc read only by local_loads,
    with a zero or absent `other` and at least 4 contiguous bytes per thread (cp.async's least)."""
    uses: dict[int, list] = {}
    for op in body.walk():
        for v in op.operands:
            uses.setdefault(id(v), []).append(op)
    found = []
    for op in body.ops:
        if not isinstance(op, tt.LoadOp) or op.is_volatile or not _is_zero(op.other):
            continue
        users = uses.get(id(op.result), [])
        if len(users) != 1 or not isinstance(users[0], LocalAllocOp) or users[0].parent is not body:
            continue
        alloc = users[0]
        readers = uses.get(id(alloc.result), [])
        # a transposed view is read as the tile is (tl.trans of an operand also used as it is)
        views = [r for r in readers if isinstance(r, MemDescTransOp)]
        readers = [r for r in readers if r not in views]
        readers += [r for view in views for r in uses.get(id(view.result), [])]
        if not readers or not all(isinstance(r, (LocalLoadOp, WarpGroupDotOp)) for r in readers):
            continue
        enc = op.result.type.encoding
        if alloc.result.type.encoding.order[0] != enc.order[0]:
            continue  # stored transposed (a K-major wgmma tile of an MN-major load): no cp.async
        contiguous = enc.size_per_thread[enc.order[0]] * max(
            1, op.result.type.element.bitwidth // 8
        )
        if contiguous < 4:
            continue
        found.append((op, alloc))
    return found


def walk_back(body, roots: list) -> tuple[list, set[int]] | None:
    """The body ops `roots` depend on within one iteration (in order) and the indices of the carried
    values they read, following carried values through the yield; None when one is impure or has
    regions (it cannot run iterations ahead)."""
    in_slice: set[int] = set()
    carried: set[int] = set()
    work = list(roots)
    yield_op = body.ops[-1]
    while work:
        v = work.pop()
        if isinstance(v, BlockArgument) and v.block is body:
            if v.index > 0 and v.index - 1 not in carried:
                carried.add(v.index - 1)
                work.append(yield_op.operands[v.index - 1])
            continue
        if not isinstance(v, OpResult) or v.op.parent is not body or id(v.op) in in_slice:
            continue
        if not v.op.pure or v.op.regions:
            return None
        in_slice.add(id(v.op))
        work.extend(v.op.operands)
    return [op for op in body.ops if id(op) in in_slice], carried


def _address_slice(body, loads, loop) -> tuple[list, set[int], list] | None:
    """The body ops that the loads' pointers and masks need, in order, the indices of the carried
    values they read, and the slice ops the rest of the body reads too (kept in the body for the
    current iteration); None when the slice is not closed (see the module docstring)."""
    args = body.args
    walked = walk_back(body, [v for load in loads for v in (load.ptr, load.mask) if v is not None])
    if walked is None:
        return None
    ops, carried = walked
    in_slice, yield_op = {id(op) for op in ops}, body.ops[-1]
    # values that run ahead: the carried address values and what the slice computes from them
    ahead = {id(args[i + 1]) for i in carried}
    for op in ops:
        if any(id(v) in ahead for v in op.operands):
            ahead |= {id(r) for r in op.results}
    results = {id(r) for op in ops for r in op.results}
    load_ids = {id(load) for load in loads}
    read: list = []  # slice values of this iteration the rest of the body reads (e.g. a mask's bound)
    for op in body.ops:
        if id(op) in in_slice or id(op) in load_ids:
            continue
        if op is yield_op:
            rest = [v for i, v in enumerate(op.operands) if i not in carried]
        else:
            rest = op.operands
        if any(id(v) in ahead for v in rest):
            return None
        read += [v for v in rest if id(v) in results]
    # those are functions of the induction variable and loop invariants: their ops stay in the body
    kept = walk_back(body, read)[0] if read else []
    return ops, carried, kept


# -- rewriting ----------------------------------------------------------------------------------------


class _Emitter:
    """Inserts new ops into a block before a given op (or at the end)."""

    def __init__(self, block, before=None):
        self.block = block
        self.before = before

    def add(self, op, result_types=(), loc=None, names=()):
        op.results = [
            OpResult(t, op, i, n)
            for i, (t, n) in enumerate(zip(result_types, list(names) + [None] * len(result_types)))
        ]
        op.loc = loc if loc is not None else op.loc
        index = (
            self.block.ops.index(self.before) if self.before is not None else len(self.block.ops)
        )
        self.block.insert(index, op)
        return op.results[0] if op.results else op

    def const(self, value: int, t=i32, loc=None):
        return self.add(arith.ConstantOp(value=value), [t], loc)


def _clone_slice(emit: _Emitter, ops, mapping: dict[int, Value]) -> None:
    """Clone `ops` (in order) through `emit`, reading operands through `mapping` (updated)."""
    for op in ops:
        clone = copy.copy(op)
        for name, value in vars(op).items():
            if isinstance(value, list) and name != "results":
                setattr(clone, name, list(value))
        for v in op.operands:
            if id(v) in mapping:
                clone.replace_operand(v, mapping[id(v)])
        emit.add(clone, [r.type for r in op.results], op.loc, [r.name_hint for r in op.results])
        for old, new in zip(op.results, clone.results):
            mapping[id(old)] = new


def _ring_slots(
    func: tt.FuncOp, loop: scf.ForOp, found, stages: int, wgmma_reads: bool, target: TargetInfo
) -> int:
    """`stages` slots, or one more (the spare) where wgmma reads them, the spare fits the block's
    shared memory (`target.shared_per_block`), and it costs no block per SM
    (`target.shared_per_sm`) or the loop is a persistent kernel's k loop.

    With `stages` slots `wgmma_pipeline` keeps one wgmma group in flight as Triton does: a barrier
    between wait(1) and the copies that refill the slot the previous iteration read. With the spare,
    the slot refilled in iteration i is the one iteration i - 2 read, retired before the barrier
    that starts iteration i, so no second barrier is needed. On the H200 the spare won where the
    blocks per SM stay the same (256x128x64/8w/3s 1.04x Triton against 0.95x without) and lost
    where it halved them (128x128x64/8w/3s 0.77x against 0.99x; bench/results/*-s8-ring-probe.log).
    `TILEWORKBENCH_SPARE_SLOT=1` (config.spare_slot) takes the spare wherever it fits."""
    if not wgmma_reads:
        return stages
    shared = _shared_estimate(func, loop, found)
    if not _fits(target, shared(stages + 1)):
        return stages
    # a k loop inside a tile loop (a persistent kernel: about one program per SM) keeps the spare:
    # `prefetch_next_tile` places the epilogue's staging tile over the slots the next tile's
    # prologue leaves free
    if config.spare_slot or isinstance(loop.parent_op, scf.ForOp):
        return stages + 1
    per_sm, reserved = target.shared_per_sm, target.shared_reserved_per_block
    blocks = [per_sm // (shared(n) + reserved) for n in (stages, stages + 1)]
    return stages + 1 if blocks[1] >= blocks[0] else stages


def _shared_estimate(func: tt.FuncOp, loop: scf.ForOp, found, free=None):
    """shared(slots): the kernel's shared bytes with `found`'s loads in rings of `slots` slots (those
    taking over an earlier loop's ring, `free`, in its space), the other tiles as they are (those
    that will lie over the rings counted apart)."""
    staged = {id(alloc) for _, alloc in found}
    own, over = [], [0]  # tiles with their own space; tiles placed over earlier ones (the epilogue)
    for op in func.walk():
        if isinstance(op, LocalAllocOp) and id(op) not in staged:
            over_rings = reuses_earlier_space(func, op, (loop, staged))
            (over if over_rings else own).append(_tile_bytes(op.result.type))
    slot = sum(
        _tile_bytes(alloc.result.type) for _, alloc in found if id(alloc) not in (free or {})
    )

    def shared(slots: int) -> int:
        return max(sum(own) + slots * slot, max(over)) + _ALIGN_SLACK * (len(own) + len(found))

    return shared


def _placed_bytes(func: tt.FuncOp, loop: scf.ForOp, found, slots: int) -> int:
    """The shared bytes the NVPTX lowering will lay out (`assign_shared_offsets`) with `found`'s
    tiles in rings of `slots` slots before `loop`: tiles in program order, 1024-byte aligned where
    wgmma reads them, starting over at 0 from a tile placed over every earlier one."""
    staged = {id(alloc) for _, alloc in found}
    end = total = 0

    def place(t, count: int = 1) -> None:
        nonlocal end, total
        if isinstance(t.encoding, NvmmaSharedEncoding):
            end = -(-end // _ALIGN_SLACK) * _ALIGN_SLACK
        end += -(-count * _tile_bytes(t) // 128) * 128
        total = max(total, end)

    for op in func.walk():
        if op is loop:
            for _, alloc in found:
                place(alloc.result.type, slots)
        elif isinstance(op, LocalAllocOp) and id(op) not in staged:
            if reuses_earlier_space(func, op, (loop, staged)):
                end = 0
            place(op.result.type)
    return total


def _with_register_loads(func, loop, found, sliced, stages: int, target: TargetInfo):
    """(address slice, register loads): loads read in registers that reach a dot take rings too,
    where they fit and their addresses can run ahead with the others' (pipeline_register_loads.py);
    else `sliced` (`found`'s), and none. A counter their addresses share with the rest of the body
    is read from the induction variable first (`derive_counters`)."""
    body = loop.body.block
    loads = [load for load, _ in found]
    extra = register_loads(body, found, _is_zero)
    more = stages * sum(_tile_bytes(x.result.type) + 128 for x in extra)
    if not extra or not _fits(target, _placed_bytes(func, loop, found, stages) + more):
        return sliced, []
    with_extra = _address_slice(body, loads + extra, loop)
    roots = [v for load in extra for v in (load.ptr, load.mask) if v is not None]
    if with_extra is None and derive_counters(loop, roots):
        sliced = _address_slice(body, loads, loop)
        with_extra = _address_slice(body, loads + extra, loop)
    # kept slice values (see the module docstring) only where the rings fit
    if with_extra is not None and (
        not with_extra[2] or _fits(target, _shared_estimate(func, loop, found)(stages))
    ):
        return with_extra, extra
    return sliced, []


def _read_transposed(body, alloc: LocalAllocOp) -> bool:
    return any(isinstance(op, MemDescTransOp) and op.src is alloc.result for op in body.walk())


def _tile_bytes(t) -> int:
    return t.numel * t.element.bitwidth // 8


def _fits(target: TargetInfo, nbytes: int) -> bool:
    """Whether `nbytes` of tiles (a `_shared_estimate`), with room for alignment and the scratch, fit
    the block's shared memory (`target.shared_per_block`)."""
    return nbytes + _ALIGN_SLACK + _SCRATCH_RESERVE <= target.shared_per_block


_ALIGN_SLACK = 1024  # per shared tile: wgmma tiles start on 1024-byte boundaries
# left for the scratch of conversions and scans, which is sized only when lowering: the spare slot
# must not turn a kernel that fits into one that does not
_SCRATCH_RESERVE = 16 * 1024


def _fitting(func: tt.FuncOp, loop: scf.ForOp, found, free, stages: int, target: TargetInfo):
    """`found` less its last loads (staged once each instead) until the rings fit in shared memory."""
    found = list(found)
    while _new_rings(found, free) and not _fits(
        target, _shared_estimate(func, loop, found, free)(stages)
    ):
        found.pop()
    return found


def _new_rings(found, free) -> bool:
    """Whether some of `found`'s loads need a ring of their own: loads that all take over earlier
    rings need no more shared memory (their staging tiles go)."""
    return any(id(alloc) not in free for _, alloc in found)


def _free_rings(loop: scf.ForOp, found, stages: int, made: list) -> dict[int, Value]:
    """id(alloc) -> a ring of `stages` slots of its tile that a loop before `loop` at the kernel's
    top level filled, one per load: that loop is over, every copy into it complete and every wgmma
    that read it retired (its drain, then `async_wait {num = 0}` and its barrier, come right after
    it), so `loop`'s first copies may refill it. Attention's causal off-band and on-band loops share
    their K and V rings so, as on TMA (tma_pipeline.py): the shared memory of one pair, not two."""
    block, free = loop.parent, {}
    if not isinstance(loop.parent_op, tt.FuncOp):
        return free  # in a tile loop `prefetch_next_tile` moves prologues: not judged here
    for _, alloc in found:
        t = alloc.result.type
        ring_type = MemDescType((stages, *t.shape), t.element, t.encoding)
        for earlier, ring in made:
            if (
                earlier.parent is block
                and block.ops.index(earlier) < block.ops.index(loop)
                and ring.type == ring_type
                and all(ring is not r for r in free.values())
                and not _tiles_between(block, earlier, loop)
            ):
                free[id(alloc)] = ring
                break
    return free


def _tiles_between(block, earlier: scf.ForOp, loop: scf.ForOp) -> bool:
    """Whether shared tiles are made between the two loops (attention backward's dK and dV
    epilogues): they lie over the earlier loop's rings once it is done (shared_reuse.py), which a
    ring kept alive for the later loop would forbid."""
    ops = block.ops[block.ops.index(earlier) + 1 : block.ops.index(loop)]
    return any(isinstance(inner, LocalAllocOp) for op in ops for inner in op.walk())


def _pipeline_loop(
    func: tt.FuncOp, loop: scf.ForOp, stages: int, target: TargetInfo, made: list
) -> bool:
    body = loop.body.block
    if body.args[0].type != i32:
        return False
    found = _staged_loads(body)
    if not _fits(target, _placed_bytes(func, loop, found, stages)):
        # tiles also read transposed (through memdesc_trans) stay out of rings that would not fit,
        # rather than fail to compile (the tests' causal attention at head dim 128 on the pointer
        # path: K's ring besides V's)
        found = [(load, alloc) for load, alloc in found if not _read_transposed(body, alloc)]
    free = _free_rings(loop, found, stages, made)
    if target.tma_fallback != NO_FALLBACK:
        # the compiler's retry of a kernel with descriptors that did not fit shared memory, TMA or
        # not (runtime/compiler.py): pointer tiles take only the rings that fit
        found = _fitting(func, loop, found, free, stages, target)
    if not found:
        return False
    loads = [load for load, _ in found]
    sliced = _address_slice(body, loads, loop)
    if sliced is None:
        return False
    sliced, extra = _with_register_loads(func, loop, found, sliced, stages, target)
    if sliced is None:
        return False
    slice_ops, carried, kept = sliced
    if (
        kept
        and _new_rings(found, free)
        and not _fits(target, _shared_estimate(func, loop, found, free)(stages))
    ):
        # a loop admitted by keeping shared slice values (pipelined since session 10) stays as it was
        # where its rings would not fit, rather than fail to compile (the causal attention's second
        # key loop on the pointer path at head dim 128)
        return False
    found = found + [(load, stage_in_shared(func, load)) for load in extra]
    carried = sorted(carried)
    parent = loop.parent
    loc = loop.loc
    iv, yield_op = body.args[0], body.ops[-1]
    outside = _Emitter(parent, loop)

    # the rings, one per load; wgmma reads its slots through the async proxy (see the fence below)
    read = {id(alloc.result) for _, alloc in found}  # the tiles and their transposed views
    read |= {
        id(op.result) for op in body.walk() if isinstance(op, MemDescTransOp) and id(op.src) in read
    }
    wgmma_reads = any(
        isinstance(r, WarpGroupDotOp) and any(id(v) in read for v in r.operands)
        for r in body.walk()
    )
    # the spare slot serves `wgmma_pipeline`, which keeps a group in flight only where the loop has
    # one wgmma: attention's two would pay for it in occupancy (144 KB instead of 112 at head dim 128)
    one_wgmma = sum(isinstance(op, WarpGroupDotOp) for op in body.walk()) == 1
    spare = wgmma_reads and one_wgmma and not free  # a ring taken over has `stages` slots
    slots = _ring_slots(func, loop, found, stages, spare, target)
    rings = []
    for load, alloc in found:
        t = alloc.result.type
        ring_type = MemDescType((slots, *t.shape), t.element, t.encoding)
        # the ring takes the load's place (its source line is the load's)
        ring = free.get(id(alloc))
        if ring is None:
            ring = outside.add(LocalAllocOp(), [ring_type], load.loc, [alloc.result.name_hint])
        rings.append(ring)
    made.extend((loop, ring) for ring in rings if all(ring is not r for _, r in made))

    def issue(emit: _Emitter, iv_value: Value, carried_values: dict[int, Value], slot: Value):
        """Clone the address slice for iteration `iv_value` and copy its tiles into `slot`;
        returns the slice's next carried values."""
        mapping = {id(iv): iv_value}
        mapping.update({id(body.args[i + 1]): carried_values[i] for i in carried})
        _clone_slice(emit, slice_ops, mapping)
        in_range = emit.add(arith.CmpIOp(predicate="slt", lhs=iv_value, rhs=loop.upper), [i1], loc)
        for (load, _), ring in zip(found, rings):
            view = emit.add(
                MemDescIndexOp(src=ring, index=slot),
                [MemDescType(ring.type.shape[1:], ring.type.element, ring.type.encoding)],
                load.loc,
            )
            mask = mapping.get(id(load.mask), load.mask) if load.mask is not None else None
            emit.add(
                AsyncCopyGlobalToLocalOp(
                    ptr=mapping.get(id(load.ptr), load.ptr), dst=view, mask=mask, pred=in_range
                ),
                (),
                load.loc,
            )
            emit.add(AsyncCommitGroupOp(), (), loc)
        return {i: mapping.get(id(yield_op.operands[i]), yield_op.operands[i]) for i in carried}

    # prologue: iterations 0..S-2; in a tile loop, after every thread's reads of the previous
    # tile's epilogue, which may lie over the rings (passes/shared_reuse.py)
    if needs_barrier_before_copies(loop):
        outside.add(AsyncWaitOp(num=0), (), loc)
    ahead = {i: loop.init_args[i] for i in carried}
    for s in range(stages - 1):
        offset = outside.add(arith.MulIOp(lhs=loop.step, rhs=outside.const(s, loc=loc)), [i32], loc)
        iv_s = outside.add(arith.AddIOp(lhs=loop.lower, rhs=offset), [i32], loc)
        ahead = issue(outside, iv_s, ahead, outside.const(s, loc=loc))
    for i in carried:
        loop.init_args[i] = ahead[i]

    # the loop carries the slot it reads next
    loop.init_args.append(outside.const(0, loc=loc))
    read_slot = body.add_arg(i32, "slot")
    loop.results.append(OpResult(i32, loop, len(loop.results), "slot"))

    first = body.ops[0]
    top = _Emitter(body, first)
    # wgmma reads the slots through the async proxy: each thread fences its copies before the barrier
    # each load is its own group, as in Triton (whose PTX test_core reads): the S-2 iterations
    # issued after iteration i may still be in flight, L groups each
    top.add(AsyncWaitOp(num=(stages - 2) * len(found), fence_async=wgmma_reads), (), loc)
    for (load, alloc), ring in zip(found, rings):
        view = top.add(
            MemDescIndexOp(src=ring, index=read_slot),
            [MemDescType(ring.type.shape[1:], ring.type.element, ring.type.encoding)],
            alloc.loc,
            [alloc.result.name_hint],
        )
        for op in list(body.walk()):
            op.replace_operand(alloc.result, view)
    kept_ids = {id(op) for op in kept}
    moved = [op for op in slice_ops if id(op) not in kept_ids]  # to the copies issued ahead
    for op in [op for pair in found for op in pair] + moved:
        body.remove(op)

    # issue iteration i + S - 1 at the end of iteration i, into the slot iteration i - 1 read
    end = _Emitter(body, yield_op)
    span = end.add(arith.MulIOp(lhs=loop.step, rhs=end.const(stages - 1, loc=loc)), [i32], loc)
    iv_next = end.add(arith.AddIOp(lhs=iv, rhs=span), [i32], loc)
    size = end.const(slots, loc=loc)
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

    # nothing may still write the rings once the loop is done (the skipped copies commit empty groups)
    after = _Emitter(parent, parent.ops[parent.ops.index(loop) + 1])
    after.add(AsyncWaitOp(num=0), (), loc)
    return True
