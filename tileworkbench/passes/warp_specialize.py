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
to the consumers (`setmaxnreg`, lowering/warp_specialize.py). Triton's automatic warp
specialization on Hopper does the same for this loop shape.

Taken where the copies can run ahead on their own: a wgmma target, the loop at the kernel's top
level and the kernel's only TMA-pipelined loop, every loaded tile read by wgmma alone (no thread
reads a slot), and the coordinates computed from the kernel's arguments by scalar arithmetic (the
producer recomputes them). Elsewhere the loop is pipelined as without the option and a
`ttng.warp_specialize_note` in the `tile-gpu` IR says why.
"""

from __future__ import annotations

from ..ir.ops import arith, scf, tt, ttng
from ..ir.types import ScalarType, TensorType
from ..ir.values import Block, BlockArgument, Region, Value
from ..target import TargetInfo
from .software_pipeline import _clone_slice, _Emitter

PRODUCER_WARPS = 4  # one warp group: setmaxnreg acts on whole warp groups
I1 = ScalarType("i1")


def why_not(func: tt.FuncOp, loop: scf.ForOp, thread_reads: bool, target: TargetInfo) -> str | None:
    """Why `loop` (pipelined on TMA) cannot be warp-specialized; None where it can."""
    if not target.wgmma:
        return "warp specialization needs wgmma (sm_90a)"
    if target.num_warps % 4 or target.num_warps + PRODUCER_WARPS > 32:
        return "num_warps must be whole warp groups (4, 8 or 16) for the consumers"
    if thread_reads:
        return "a loaded tile is read by threads, not only by tl.dot (wgmma)"
    if loop.parent is not func.body.block:
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


def outside_slice(func: tt.FuncOp, values: list[Value]) -> list | str:
    """The ops of the kernel's top level that compute `values` (in order), which the producer runs
    again; or why it cannot: an op that is not scalar arithmetic (a tensor, a load, a region)."""
    top = func.body.block
    needed: set[int] = set()
    work = list(values)
    while work:
        v = work.pop()
        if isinstance(v, BlockArgument):
            if v.block is func.body.block:
                continue
            return "a coordinate depends on a value of an enclosing loop"
        op = v.op
        if id(op) in needed:
            continue
        if op.parent is not top:
            return f"a coordinate depends on `{op.name}` inside a region"
        if not op.pure or op.regions or any(isinstance(r.type, TensorType) for r in op.results):
            return f"a coordinate depends on `{op.name}`, which the producer cannot recompute"
        needed.add(id(op))
        work.extend(op.operands)
    return [op for op in top.ops if id(op) in needed]


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
    outside_ops: list,
) -> ttng.WarpSpecializeOp:
    """The producer (see the module docstring), inserted after the rings at the top of `func`:
    `outside_ops` cloned, then a loop over `loop`'s iterations that clones the coordinates' slice
    and copies iteration i's boxes into slot i % stages once the consumers released it."""
    top = func.body.block
    loc = loop.loc
    block = Block([])
    producer = ttng.WarpSpecializeOp(producer=Region([block]), producer_warps=PRODUCER_WARPS)
    producer.results = []
    producer.loc = loc
    top.insert(max(top.ops.index(r.op) for r in rings) + 1, producer)
    emit = _Emitter(block)
    mapping: dict[int, Value] = {}
    _clone_slice(emit, outside_ops, mapping)

    def outer(v: Value) -> Value:
        return mapping.get(id(v), v)

    i32 = loop.body.block.args[0].type
    body = loop.body.block
    inits = [outer(loop.init_args[i]) for i in carried] + [emit.const(0, loc=loc)]
    inner = Block([i32] + [v.type for v in inits])
    copies = scf.ForOp(
        lower=outer(loop.lower),
        upper=outer(loop.upper),
        step=outer(loop.step),
        init_args=inits,
        body=Region([inner]),
    )
    emit.add(copies, [v.type for v in inits], loc)
    inner_map = dict(mapping)
    inner_map[id(body.args[0])] = inner.args[0]
    inner_map.update({id(body.args[i + 1]): inner.args[k + 1] for k, i in enumerate(carried)})
    slot = inner.args[-1]
    at = _Emitter(inner)
    _clone_slice(at, slice_ops, inner_map)
    true = at.const(1, t=I1, loc=loc)
    for load, ring in zip(loads, rings):
        at.add(
            ttng.TMACopyOp(
                desc=inner_map.get(id(load.desc), load.desc),
                ring=ring,
                slot=slot,
                pred=true,
                offsets=[inner_map.get(id(v), v) for v in load.offsets],
                after_release=True,
            ),
            (),
            load.loc,
        )
    yield_op = body.ops[-1]
    nxt = [inner_map.get(id(yield_op.operands[i]), yield_op.operands[i]) for i in carried]
    one = at.add(arith.AddIOp(lhs=slot, rhs=at.const(1, loc=loc)), [i32], loc)
    nxt.append(at.add(arith.RemUIOp(lhs=one, rhs=at.const(stages, loc=loc)), [i32], loc))
    end = scf.YieldOp(values=nxt)
    end.results = []
    end.loc = loc
    inner.append(end)
    return producer


def release_previous_slot(loop: scf.ForOp, rings, read_slot: Value, stages: int) -> None:
    """At the end of `loop`'s body, release the slot the previous iteration read (its wgmmas are
    retired by then), from the second iteration on."""
    body = loop.body.block
    loc = loop.loc
    end = _Emitter(body, body.ops[-1])
    i32 = read_slot.type
    back = end.add(arith.AddIOp(lhs=read_slot, rhs=end.const(stages - 1, loc=loc)), [i32], loc)
    previous = end.add(arith.RemUIOp(lhs=back, rhs=end.const(stages, loc=loc)), [i32], loc)
    later = end.add(arith.CmpIOp(predicate="ne", lhs=body.args[0], rhs=loop.lower), [I1], loc)
    for ring in rings:
        end.add(ttng.TMAReleaseOp(ring=ring, slot=previous, pred=later), (), loc)


def note(loop: scf.ForOp, reason: str) -> None:
    """Say, before `loop`, why it runs without warp specialization."""
    op = ttng.WarpSpecializeNoteOp(reason=reason)
    op.results = []
    op.loc = loop.loc
    loop.parent.insert(loop.parent.ops.index(loop), op)
