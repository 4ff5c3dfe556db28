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

`prefetch_next_tma_tile` does the same for a k loop that `pipeline_tma` gave TMA rings: the next
tile's first copies (`ttng.tma_copy`, the prologue) go right after the k loop's drain
(`warp_group_dot_wait {pendings = 0}`; each copy is issued after a barrier, so every warp group's
wgmmas are retired), and the first tile's before the tile loop, with the rings. The epilogue's TMA
store then has a staging tile of its own, beside the rings (not over them), so the engine may still
read it while the next tile's main loop runs: its issuing thread waits for that read before the next
write of the tile (`deferred`), not right after the copy. Only where the rings and the staging tile
fit the block's shared memory (with room for scratch where an op may take some: layout conversions,
reductions); runs after `wgmma_pipeline`, whose drain it reads. In a warp-specialized persistent
kernel the producer already runs ahead into the next tile: only the consumers' stores are deferred.
Only with `TILEWORKBENCH_TMA_TILE_PREFETCH=1` (config.tma_tile_prefetch) until it has run on a GPU:
it is emulated and assembled, not yet timed or checked on a device.
"""

from __future__ import annotations

from ..config import config
from ..ir.ops import arith, scf, tt, ttng
from ..ir.ops.ttg import AsyncCopyGlobalToLocalOp, AsyncWaitOp, LocalAllocOp
from ..ir.ops.wgmma import WarpGroupDotOp, WarpGroupDotWaitOp
from ..ir.types import ScalarType
from ..ir.values import OpResult
from ..target import TargetInfo, target_pass
from .software_pipeline import _SCRATCH_RESERVE, _clone_slice, _Emitter, walk_back

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


def _movable(func: tt.FuncOp, body, prologue, rings):
    """(the tile loop's ops the prologue reads, the prologue's constants other ops read too, which
    stay, and the prologue ops to clone for each tile: its own and the kept constants they read), or
    None where the prologue cannot move: its inputs from the tile loop's body must be pure,
    region-free and not carried, and what else reads it must be constants."""
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
        return None
    tile_ops = walked[0]
    if any(op in prologue or op.regions or isinstance(op, LocalAllocOp) for op in tile_ops):
        return None
    used_after = {id(v) for op in func.walk() if op not in prologue for v in op.operands}
    stay = [op for op in prologue if any(id(r) in used_after for r in op.results)]
    if not all(isinstance(op, arith.ConstantOp) for op in stay):
        return None  # the k loop starts from a prologue value (a carried pointer): not moved
    read = {id(v) for op in prologue if op not in stay for v in op.operands}
    cloned = [op for op in prologue if op not in stay or any(id(r) in read for r in op.results)]
    return tile_ops, stay, cloned


def _prefetch(func: tt.FuncOp, outer: scf.ForOp, stages: int) -> bool:
    body = outer.body.block
    parts = _parts(body)
    if parts is None or stages < 2:
        return False
    barrier, prologue, inner, after, rings = parts
    staging = _staging(body, body.ops.index(after), rings, stages)
    if staging is None:
        return False
    movable = _movable(func, body, prologue, rings)
    if movable is None:
        return False
    tile_ops, stay, cloned = movable  # (the k loop's first slot stays)
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
        _clone_slice(emit, cloned, mapping)
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
    for op in [barrier, *(op for op in prologue if op not in stay)]:
        body.remove(op)
    # the last tile prefetched a tile that does not exist: its zero-fill copies land before the exit
    _Emitter(parent, parent.ops[parent.ops.index(outer) + 1]).add(AsyncWaitOp(num=0), (), loc)
    alloc, placement = staging
    alloc.staging_over = placement  # lowering/shared.py places it over these slots
    return True


# -- TMA rings (`pipeline_tma`) ---------------------------------------------------------------------


@target_pass
def prefetch_next_tma_tile(func: tt.FuncOp, target: TargetInfo) -> bool:
    """The TMA rings' version of `prefetch_next_tile` (see the module docstring). Returns whether any
    tile loop changed."""
    if not config.tma_tile_prefetch:  # (TILEWORKBENCH_TMA_TILE_PREFETCH=1: not yet run on a GPU)
        return False
    changed = False
    for outer in [op for op in func.walk() if isinstance(op, scf.ForOp)]:
        changed |= _prefetch_tma(func, outer, target) or _defer_specialized(func, outer, target)
    return changed


def _tma_parts(body):
    """(rings, prologue ops, k loop, the op after which the next tile's copies go) of a tile loop's
    body as `pipeline_tma` and `wgmma_pipeline` leave it, or None: the rings, the prologue, the k
    loop carrying its read slot, then (where it runs wgmma) its drain."""
    loops = [op for op in body.ops if isinstance(op, scf.ForOp)]
    if len(loops) != 1 or loops[0].body.block.args[-1].name_hint != "slot":
        return None
    inner = loops[0]
    at = body.ops.index(inner)
    rings = [op for op in body.ops[:at] if isinstance(op, ttng.TMARingOp)]
    if not rings or any(r.releases for r in rings):  # (a producer warp group fills them already)
        return None
    prologue = [op for op in body.ops[body.ops.index(rings[0]) : at] if op not in rings]
    if not any(isinstance(op, ttng.TMACopyOp) for op in prologue):
        return None
    last = inner
    if any(isinstance(op, WarpGroupDotOp) for op in inner.body.block.walk()):
        drain = body.ops[at + 1] if at + 1 < len(body.ops) else None
        if not (isinstance(drain, WarpGroupDotWaitOp) and drain.pendings == 0):
            return None
        last = drain  # every wgmma that read the slots retired (for its warp group; then a barrier)
    return rings, prologue, inner, last


def _scratch_free(func: tt.FuncOp) -> bool:
    """Whether no op of `func` may take scratch shared memory: only scalar ops, elementwise ops on
    tensors (`arith`, `math`), loops, wgmma and the TMA ops of rings and stores."""
    return all(
        op is func
        or op.name in ("tt.get_program_id", "tt.return")
        or (op.name.startswith(("arith.", "math.", "scf.", "ttng.")) and op.name != "ttng.tma_load")
        for op in func.walk()
    )


def _tma_bytes(func: tt.FuncOp) -> int:
    """The shared bytes of `func`'s TMA rings, local tiles and TMA stores' staging tiles, each in a
    region of its own (lowering/shared.py's sizes: 1024-byte alignment room per tile)."""
    total = 0
    for op in func.walk():
        if isinstance(op, (ttng.TMARingOp, LocalAllocOp)):
            total += _nbytes(op.result.type) + 1024
        elif isinstance(op, ttng.TMAStoreOp):  # (its own region, or the scratch)
            total += _nbytes(op.value.type) + 1024
    return total


def _prefetch_tma(func: tt.FuncOp, outer: scf.ForOp, target: TargetInfo) -> bool:
    body = outer.body.block
    parts = _tma_parts(body)
    if parts is None or not (
        isinstance(outer.step, OpResult)
        and isinstance(outer.step.op, arith.ConstantOp)
        and outer.step.op.value > 0
    ):
        return False
    rings, prologue, inner, last = parts
    stores = [op for op in body.ops if isinstance(op, ttng.TMAStoreOp)]
    if not _fits(func, target):
        return False
    movable = _movable(func, body, prologue, rings)
    if movable is None:
        return False
    tile_ops, stay, cloned = movable
    iv, loc, parent = body.args[0], outer.loc, outer.parent
    for ring in rings:  # filled before the tile loop now: made there
        body.remove(ring)
        parent.insert(parent.ops.index(outer), ring)

    def issue(emit: _Emitter, tile_index) -> None:
        mapping = {id(iv): tile_index}
        _clone_slice(emit, tile_ops, mapping)
        exists = emit.add(arith.CmpIOp(predicate="slt", lhs=tile_index, rhs=outer.upper), [i1], loc)
        anded: set[int] = set()  # the copies' predicates, each and-ed with `exists` once
        for op in cloned:
            if isinstance(op, ttng.TMACopyOp) and id(op.pred) not in anded:
                pred = mapping.get(id(op.pred), op.pred)
                mapping[id(op.pred)] = emit.add(arith.AndIOp(lhs=pred, rhs=exists), [i1], loc)
                anded.add(id(op.pred))
            _clone_slice(emit, [op], mapping)

    issue(_Emitter(parent, outer), outer.lower)
    emit = _Emitter(body, body.ops[body.ops.index(last) + 1])
    issue(emit, emit.add(arith.AddIOp(lhs=iv, rhs=outer.step), [iv.type], loc))
    for op in prologue:  # (the constants other ops read stay for them; the clones have their own)
        if op not in stay:
            body.remove(op)
    _defer(outer, stores)
    return True


def _fits(func: tt.FuncOp, target: TargetInfo) -> bool:
    """Whether `func`'s rings and tiles, with the TMA stores' staging tiles beside them, fit the
    block's shared memory (with the scratch's reserve where another op may take scratch)."""
    reserve = 0 if _scratch_free(func) else _SCRATCH_RESERVE
    return _tma_bytes(func) + reserve + 1024 <= target.shared_per_block


def _defer(outer: scf.ForOp, stores) -> None:
    """The tile loop's TMA stores wait for the engine's read of their staging tiles before their
    next write and after the loop, not right after each copy."""
    for store in stores:
        store.deferred = True
        _Emitter(outer.body.block, store).add(ttng.TMAStoreWaitOp(), (), store.loc)
    if stores:
        parent = outer.parent
        _Emitter(parent, parent.ops[parent.ops.index(outer) + 1]).add(
            ttng.TMAStoreWaitOp(), (), outer.loc
        )


def _defer_specialized(func: tt.FuncOp, outer: scf.ForOp, target: TargetInfo) -> bool:
    """A warp-specialized persistent kernel's consumers' tile loop: the producer already fills the
    rings for the next tile during the epilogue, so only the stores are deferred (their staging
    tiles would otherwise take the scratch, beside the rings, and hold the first consumer warp
    group at each tile's end until the engine has read it)."""
    body = outer.body.block
    rings = [op for op in func.walk() if isinstance(op, ttng.TMARingOp)]
    stores = [op for op in body.ops if isinstance(op, ttng.TMAStoreOp) and not op.deferred]
    if not (
        stores
        and rings
        and all(r.releases and r.parent is func.body.block for r in rings)
        and any(isinstance(op, scf.ForOp) for op in body.ops)
        and _fits(func, target)
    ):
        return False
    _defer(outer, stores)
    return True
