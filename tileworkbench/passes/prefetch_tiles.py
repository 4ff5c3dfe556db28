"""`prefetch_next_tile`: in a persistent kernel's tile loop (an `scf.for` over output tiles around a
k loop that `pipeline` has pipelined), the next tile's first copies (the k loop's prologue) are
issued before this tile's epilogue instead of after it, so the epilogue's stores overlap the next
tile's loads. The first tile's prologue moves in front of the tile loop; the rings move there too.

The prologue for tile t + step is the prologue's ops, and the tile loop's ops they read, cloned with
the tile index advanced by one step; its copies are also predicated on that tile existing. They go
right after the k loop's `ttg.async_wait {num = 0}` (every copy and wgmma read of this tile done,
then a barrier) and write the slots 0..S-2 of each ring; the epilogue's staging tile, which lay over
the rings from offset 0 (`shared_reuse.py`), is placed over the remaining slots of one ring instead
(`staging_over`, read by the shared-memory layout), and the pass does nothing where it does not fit
there. Runs after `pipeline`, before `wgmma_pipeline`.
"""

from __future__ import annotations

from ..ir.ops import arith, scf, tt
from ..ir.ops.ttg import AsyncCopyGlobalToLocalOp, AsyncWaitOp, LocalAllocOp
from ..ir.types import ScalarType
from ..ir.values import OpResult
from ..target import TargetInfo, target_pass
from .software_pipeline import _clone_slice, _Emitter, walk_back

i1 = ScalarType("i1")


@target_pass
def prefetch_next_tile(func: tt.FuncOp, target: TargetInfo) -> bool:
    """Prefetch across tile boundaries in every tile loop that fits. Returns whether any changed."""
    changed = False
    for outer in [op for op in func.walk() if isinstance(op, scf.ForOp)]:
        changed |= _prefetch(func, outer, target.num_stages)
    return changed


def _nbytes(t) -> int:
    return t.numel * t.element.bitwidth // 8


def _parts(body):
    """(barrier, prologue ops, k loop, wait after it, ring allocs) of a tile loop's body as `pipeline`
    leaves it, or None: rings, a barrier (`needs_barrier_before_copies`), the prologue, the k loop
    carrying its read slot, then `ttg.async_wait {num = 0}`."""
    ops = body.ops
    loops = [op for op in ops if isinstance(op, scf.ForOp)]
    if len(loops) != 1:  # one k loop per tile (two pipelined loops would share the free slots)
        return None
    for i, op in enumerate(ops):
        if not (isinstance(op, scf.ForOp) and op.body.block.args[-1].name_hint == "slot"):
            continue
        after = ops[i + 1] if i + 1 < len(ops) else None
        barriers = [j for j in range(i) if isinstance(ops[j], AsyncWaitOp) and ops[j].num == 0]
        if not barriers or not (isinstance(after, AsyncWaitOp) and after.num == 0):
            return None
        start = barriers[-1]
        prologue = ops[start + 1 : i]
        rings = {
            id(c.dst.op.src.op): c.dst.op.src.op
            for c in prologue
            if isinstance(c, AsyncCopyGlobalToLocalOp)
        }
        if not rings or any(r.parent is not body for r in rings.values()):
            return None
        return ops[start], prologue, op, after, list(rings.values())
    return None


def _staging(body, after_index: int, rings, stages: int):
    """The epilogue's staging alloc after the k loop and the (ring, first free slot) it fits over,
    or None."""
    allocs = [
        op for op in body.ops[after_index:] if isinstance(op, LocalAllocOp) and op.src is not None
    ]
    if len(allocs) != 1:
        return None
    size = _nbytes(allocs[0].result.type)
    for ring in sorted(rings, key=lambda r: -_nbytes(r.result.type)):
        slots = ring.result.type.shape[0]
        slot_bytes = _nbytes(ring.result.type) // slots
        if (slots - (stages - 1)) * slot_bytes >= size:
            return allocs[0], (ring, stages - 1)
    return None


def _prefetch(func: tt.FuncOp, outer: scf.ForOp, stages: int) -> bool:
    body = outer.body.block
    parts = _parts(body)
    if parts is None or stages < 2:
        return False
    barrier, prologue, inner, after, rings = parts
    staging = _staging(body, body.ops.index(after), rings, stages)
    if staging is None:
        return False
    # the prologue's inputs from the tile loop's body: pure, region-free, not carried values
    roots = [
        v
        for op in prologue
        for v in op.operands
        if isinstance(v, OpResult)
        and v.op.parent is body
        and v.op not in prologue
        and v.op not in rings
    ]
    walked = walk_back(body, roots)
    if walked is None or walked[1]:
        return False
    tile_ops = walked[0]
    if any(op in prologue or isinstance(op, (LocalAllocOp, scf.ForOp)) for op in tile_ops):
        return False
    used_after = {id(v) for op in func.walk() if op not in prologue for v in op.operands}
    stay = [op for op in prologue if any(id(r) in used_after for r in op.results)]
    if not all(isinstance(op, arith.ConstantOp) for op in stay):
        return False  # the k loop starts from a prologue value (a carried pointer): not moved
    prologue = [op for op in prologue if op not in stay]  # the k loop's first slot stays
    iv = body.args[0]
    loc = outer.loc
    parent = outer.parent
    for ring in rings:  # the rings are filled before the tile loop now: allocate them there
        body.remove(ring)
        parent.insert(parent.ops.index(outer), ring)

    def issue(emit: _Emitter, tile_index) -> None:
        mapping = {id(iv): tile_index}
        _clone_slice(emit, tile_ops, mapping)
        exists = emit.add(arith.CmpIOp(predicate="slt", lhs=tile_index, rhs=outer.upper), [i1], loc)
        _clone_slice(emit, prologue, mapping)
        for op in emit.block.ops:  # the clones' copies: only for a tile that exists
            if (
                isinstance(op, AsyncCopyGlobalToLocalOp)
                and id(op) not in seen
                and op.pred is not None
            ):
                seen.add(id(op))
                pred = _Emitter(emit.block, op).add(
                    arith.AndIOp(lhs=op.pred, rhs=exists), [i1], loc
                )
                op.pred = pred

    seen = {id(op) for op in func.walk() if isinstance(op, AsyncCopyGlobalToLocalOp)}
    issue(_Emitter(parent, outer), outer.lower)
    emit = _Emitter(body, body.ops[body.ops.index(after) + 1])
    advanced = emit.add(arith.AddIOp(lhs=iv, rhs=outer.step), [iv.type], loc)
    issue(emit, advanced)
    for op in [barrier, *prologue]:
        body.remove(op)
    # the last tile prefetched a tile that does not exist: its zero-fill copies land before the exit
    _Emitter(parent, parent.ops[parent.ops.index(outer) + 1]).add(AsyncWaitOp(num=0), (), loc)
    alloc, placement = staging
    alloc.staging_over = placement  # lowering/shared.py places it over these slots
    return True
