"""Warp specialization of a TMA-pipelined loop (`tl.range(..., warp_specialize=True)`): which loops
take it, and the producer's code. `pipeline_tma` calls it for the loop it is making rings for.

The program gets one more warp group, the producer (`ttng.warp_specialize`, first in the function):
it runs a copy of the loop that only computes the TMA coordinates and issues the copies, each into
its ring slot once the consumers have released that slot (`ttng.tma_copy {after_release}`), and
exits. The kernel's own warps, the consumers, run the function as before without any copy: each
iteration waits for its slot's copies (`ttng.tma_wait`), runs its wgmmas, and releases the slot
that the previous iteration's wgmmas read (`ttng.tma_release`, after `wgmma_pipeline`'s wait(1)
has retired them). Nothing of the copies is left in the consumers' loop (no coordinates, no
barrier of every thread before each refill, no prologue), and the producer hands its registers
to the consumers (`setmaxnreg`, lowering/warp_specialize.py). Triton 3.6 ignores the option on
Hopper (tutorial 09 says it works on Blackwell only). On the H100 this is correct and, as built,
0.89-0.98x the unspecialized loop: the refill of a slot waits for the same wgmma retirement as
there, plus the hop from the consumers' arrival to the producer (docs/PERFORMANCE.md).

A persistent kernel marks its tile loop (tutorial 09): the producer then runs a copy of the tile
loop around the k loop's copies, the ring's slot carried through both, so it issues the next
tile's first copies while the consumers run this tile's epilogue; the consumers release the last
slot of each tile after the wait that retires the tile's last wgmma.

Taken where the copies can run ahead on their own: a wgmma target, the marked loop at the kernel's
top level, the k loop the kernel's only TMA-pipelined loop, every loaded tile read by wgmma alone
(no thread reads a slot), and the coordinates computed by scalar arithmetic from the kernel's
arguments and the tile loop's induction variable (the producer recomputes them). Elsewhere the
loop is pipelined as without the option and a `ttng.warp_specialize_note` in the `tile-gpu` IR
says why (also under `TILEWORKBENCH_WARP_SPECIALIZE=0`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import config
from ..ir.ops import arith, scf, tt, ttng
from ..ir.types import ScalarType, TensorType
from ..ir.values import Block, BlockArgument, Region, Value
from ..target import TargetInfo
from .software_pipeline import _clone_slice, _Emitter

PRODUCER_WARPS = 4  # one warp group: setmaxnreg acts on whole warp groups
I1 = ScalarType("i1")


def specialized_loop(loop: scf.ForOp) -> scf.ForOp | None:
    """The loop that asks for warp specialization on behalf of TMA loop `loop`: `loop` itself, or
    the tile loop directly around it (a persistent kernel's, as tutorial 09 marks it)."""
    if loop.warp_specialize:
        return loop
    outer = loop.parent_op
    if isinstance(outer, scf.ForOp) and outer.warp_specialize and loop.parent is outer.body.block:
        return outer
    return None


def why_not(
    func: tt.FuncOp, loop: scf.ForOp, marked: scf.ForOp, thread_reads: bool, target: TargetInfo
) -> str | None:
    """Why TMA loop `loop` (in or as the loop `marked`) cannot be warp-specialized; None where it can."""
    if not config.warp_specialize:
        return "TILEWORKBENCH_WARP_SPECIALIZE=0"
    if not target.wgmma:
        return "warp specialization needs wgmma (sm_90a)"
    if target.num_warps % 4 or target.num_warps + PRODUCER_WARPS > 32:
        return "num_warps must be whole warp groups (4, 8 or 16) for the consumers"
    if thread_reads:
        return "a loaded tile is read by threads, not only by tl.dot (wgmma)"
    if marked.parent is not func.body.block:
        return "the loop is inside another loop or branch"
    tma_loops = [
        op
        for op in func.walk()
        if isinstance(op, scf.ForOp)
        and any(isinstance(inner, ttng.TMALoadOp) for inner in op.body.block.ops)
    ]
    if tma_loops != [loop]:
        return "the kernel has another loop of TMA loads"
    return None


@dataclass
class Plan:
    """What the producer recomputes: the top-level ops, and (a tile loop around the k loop) the tile
    loop's body ops before the k loop, each in order."""

    marked: scf.ForOp
    top_ops: list
    tile_ops: list


def plan(func: tt.FuncOp, loop: scf.ForOp, marked: scf.ForOp, values: list[Value]) -> Plan | str:
    """The ops the producer runs again to compute `values` (what `loop`'s copies read from outside
    it) and the tile loop's bounds, or why it cannot: an op that is not scalar arithmetic, or a
    value the tile loop carries."""
    top = func.body.block
    tile_body = marked.body.block if marked is not loop else None
    if tile_body is not None:
        values = [*values, marked.lower, marked.upper, marked.step]
    needed: set[int] = set()
    work = list(values)
    while work:
        v = work.pop()
        if isinstance(v, BlockArgument):
            if v.block is top or (v.block is tile_body and v.index == 0):
                continue
            return "a TMA coordinate depends on a value the tile loop carries"
        op = v.op
        if id(op) in needed:
            continue
        if op.parent is not top and op.parent is not tile_body:
            return f"a TMA coordinate depends on `{op.name}` inside a region"
        if not op.pure or op.regions or any(isinstance(r.type, TensorType) for r in op.results):
            return f"a TMA coordinate depends on `{op.name}`, which the producer cannot recompute"
        needed.add(id(op))
        work.extend(op.operands)
    tile_ops = [op for op in tile_body.ops if id(op) in needed] if tile_body is not None else []
    return Plan(marked, [op for op in top.ops if id(op) in needed], tile_ops)


def loop_inputs(loop: scf.ForOp, loads, slice_ops, carried: list[int]) -> list[Value]:
    """The values from outside `loop` its copies read: bounds, the slice's carried inits, the
    descriptors, and what the slice and the coordinates read from outside the body."""
    body = loop.body.block
    inside = {id(r) for op in body.ops for r in op.results} | {id(a) for a in body.args}
    reads = [loop.lower, loop.upper, loop.step, *(loop.init_args[i] for i in carried)]
    reads += [v for op in slice_ops for v in op.operands]
    reads += [v for load in loads for v in (load.desc, *load.offsets)]
    return [v for v in reads if id(v) not in inside]


def build_producer(
    func: tt.FuncOp,
    loop: scf.ForOp,
    loads,
    rings,
    slice_ops,
    carried: list[int],
    stages: int,
    how: Plan,
) -> ttng.WarpSpecializeOp:
    """The producer (see the module docstring), inserted after the rings at the top of `func`: the
    plan's top-level ops cloned, then `loop`'s iterations (inside a copy of the tile loop, where
    `loop` is a persistent kernel's k loop), each cloning the coordinates' slice and copying its
    boxes into the next slot of the ring once the consumers released it."""
    top = func.body.block
    loc = loop.loc
    block = Block([])
    producer = ttng.WarpSpecializeOp(producer=Region([block]), producer_warps=PRODUCER_WARPS)
    producer.results = []
    producer.loc = loc
    top.insert(max(top.ops.index(r.op) for r in rings) + 1, producer)
    emit = _Emitter(block)
    mapping: dict[int, Value] = {}
    _clone_slice(emit, how.top_ops, mapping)
    slot = emit.const(0, loc=loc)
    if how.marked is not loop:  # the tile loop, carrying the slot its tile's copies start at
        tiles, emit, slot = _copy_of_loop(emit, how.marked, mapping, [slot], loc)
        _clone_slice(emit, how.tile_ops, mapping)
    copies, at, _ = _copy_of_loop(
        emit,
        loop,
        mapping,
        [mapping.get(id(loop.init_args[i]), loop.init_args[i]) for i in carried] + [slot],
        loc,
        carried,
    )
    body = loop.body.block
    _clone_slice(at, slice_ops, mapping)
    true = at.const(1, t=I1, loc=loc)
    for load, ring in zip(loads, rings):
        at.add(
            ttng.TMACopyOp(
                desc=mapping.get(id(load.desc), load.desc),
                ring=ring,
                slot=copies.body.block.args[-1],
                pred=true,
                offsets=[mapping.get(id(v), v) for v in load.offsets],
                after_release=True,
            ),
            (),
            load.loc,
        )
    yield_op = body.ops[-1]
    nxt = [mapping.get(id(yield_op.operands[i]), yield_op.operands[i]) for i in carried]
    nxt.append(next_slot(at, copies.body.block.args[-1], stages, loc))
    _end(copies.body.block, nxt, loc)
    if how.marked is not loop:
        _end(tiles.body.block, [copies.results[-1]], loc)
    return producer


def _copy_of_loop(emit: _Emitter, loop: scf.ForOp, mapping: dict, inits: list, loc, carried=()):
    """A new loop over `loop`'s bounds (through `mapping`) carrying `inits`, its induction variable
    and carried values (those of `carried`, then the slot) mapped to `loop`'s; returns the loop, an
    emitter into its body, and its slot argument."""
    i32 = loop.body.block.args[0].type
    inner = Block([i32] + [v.type for v in inits])
    copy = scf.ForOp(
        lower=mapping.get(id(loop.lower), loop.lower),
        upper=mapping.get(id(loop.upper), loop.upper),
        step=mapping.get(id(loop.step), loop.step),
        init_args=inits,
        body=Region([inner]),
    )
    emit.add(copy, [v.type for v in inits], loc)
    body = loop.body.block
    mapping[id(body.args[0])] = inner.args[0]
    mapping.update({id(body.args[i + 1]): inner.args[k + 1] for k, i in enumerate(carried)})
    return copy, _Emitter(inner), inner.args[-1]


def _end(block: Block, values: list, loc) -> None:
    end = scf.YieldOp(values=values)
    end.results = []
    end.loc = loc
    block.append(end)


def next_slot(emit: _Emitter, slot: Value, stages: int, loc) -> Value:
    """(slot + 1) % stages."""
    return _slot_after(emit, slot, 1, stages, loc)


def _slot_after(emit: _Emitter, slot: Value, step: int, stages: int, loc) -> Value:
    """(slot + step) % stages (step stages - 1: the slot before)."""
    ahead = emit.add(arith.AddIOp(lhs=slot, rhs=emit.const(step, loc=loc)), [slot.type], loc)
    return emit.add(arith.RemUIOp(lhs=ahead, rhs=emit.const(stages, loc=loc)), [slot.type], loc)


def _release(emit: _Emitter, rings, slot: Value, stages: int, pred_op, loc) -> None:
    """Release the slot before `slot` of every ring, when `pred_op` (an i1 comparison) holds."""
    before = _slot_after(emit, slot, stages - 1, stages, loc)
    pred = emit.add(pred_op, [I1], loc)
    for ring in rings:
        emit.add(ttng.TMAReleaseOp(ring=ring, slot=before, pred=pred), (), loc)


def release_after_tile(loop: scf.ForOp, rings, stages: int) -> None:
    """After a persistent kernel's k loop (and the wait that retires its last wgmma, which
    `wgmma_pipeline` puts right after it): release the slot its last iteration read, where it ran."""
    block = loop.parent
    emit = _Emitter(block, block.ops[block.ops.index(loop) + 1])
    ran = arith.CmpIOp(predicate="slt", lhs=loop.lower, rhs=loop.upper)
    _release(emit, rings, loop.results[-1], stages, ran, loop.loc)


def release_previous_slot(loop: scf.ForOp, rings, read_slot: Value, stages: int) -> None:
    """At the end of `loop`'s body, release the slot the previous iteration read (its wgmmas are
    retired by then), from the second iteration on."""
    body = loop.body.block
    later = arith.CmpIOp(predicate="ne", lhs=body.args[0], rhs=loop.lower)
    _release(_Emitter(body, body.ops[-1]), rings, read_slot, stages, later, loop.loc)


def note(loop: scf.ForOp, reason: str) -> None:
    """Say, before `loop`, why it runs without warp specialization."""
    op = ttng.WarpSpecializeNoteOp(reason=reason)
    op.results = []
    op.loc = loop.loc
    loop.parent.insert(loop.parent.ops.index(loop), op)
