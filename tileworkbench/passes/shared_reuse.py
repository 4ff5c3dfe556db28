"""Which shared-memory tiles may share space: a tile written after the last use of every earlier
tile in its block (the epilogue's staging tile after a pipelined loop: a `ttg.local_alloc` that
stores its source, or the tile a `ttng.tma_store` writes and the copy engine reads) may start at
offset 0, over the loop's rings, instead of after them. The rings are dead there: every copy into
them is complete (`ttg.async_wait {num = 0}` after a `cp.async` loop; a TMA ring's copies are each
awaited by their own iteration, and none is issued after the loop) and every wgmma that read them
is retired (the last `ttng.warp_group_dot_wait` before the tile has `pendings = 0`); the tile's
store follows a barrier.

The block may be the kernel's top level or a loop body (a persistent kernel's tile loop: rings, inner
k loop, then the epilogue, per tile); in a loop body every earlier tile must be a ring allocated in
that body or a tile written from registers in it (a pointer-fed operand staged in the inner loop),
and the next iteration's writes over the staging tile wait at a barrier: `local_alloc`
stores take one in loops, `pipeline` puts one before a nested loop's first copies
(`needs_barrier_before_copies`), a TMA ring's first copies take one, and a TMA store's issuing
thread waits until the engine has read the tile (`wait_group.read`). Used by the NVPTX lowering's
shared-memory layout and by `pipeline` to size its rings.
"""

from __future__ import annotations

from ..ir.ops import tt, ttng
from ..ir.ops.base import Op
from ..ir.ops.ttg import AsyncCopyGlobalToLocalOp, AsyncWaitOp, LocalAllocOp
from ..ir.ops.wgmma import WarpGroupDotOp, WarpGroupDotWaitOp
from ..ir.types import MemDescType


def reuses_earlier_space(func: tt.FuncOp, tile_op: Op, becoming_rings=None) -> bool:
    """Whether the tile `tile_op` writes (a `local_alloc` with a source, or a `tma_store`'s staging
    tile) may be placed over every tile allocated before it (see the module docstring).
    `becoming_rings`: (loop, ids of its staged allocs) that `pipeline` is about to turn into rings
    allocated just before the loop, judged as those rings."""
    loop, staged = becoming_rings if becoming_rings is not None else (None, set())
    block = tile_op.parent
    writes = isinstance(tile_op, ttng.TMAStoreOp) or getattr(tile_op, "src", None) is not None
    if not writes or block is None:
        return False
    top = block is func.body.block
    index = block.ops.index(tile_op)
    earlier = []
    for op in func.walk():
        if op is tile_op:
            break
        if isinstance(op, ttng.TMARingOp):
            # in a loop body, only the rings of the loops before it in that body
            if not (top or op.parent is block) or not _tma_copies_awaited(func, op.result, block):
                return False
            earlier.append(op.result)
        elif isinstance(op, LocalAllocOp):
            # in a loop body, only over the rings of the loops before it in that body: a tile from
            # outside the loop may be read again in later iterations
            if id(op) in staged:  # its uses will be the loop's, before `tile_op` if the loop is
                if loop.parent is not block and not top:
                    return False
                earlier.append(loop)
                continue
            if (
                not top
                and not (op.src is None and op.parent is block)
                and not _written_each_pass(op, block)
            ):
                return False
            earlier.append(op.result)
    if not earlier or not _async_work_done(func, tile_op):
        return False
    return not any(
        _position_in(block, x) is None or _position_in(block, x) >= index
        if isinstance(x, Op)
        else _used_from(func, x, block, index)
        for x in earlier
    )


def _written_each_pass(alloc: LocalAllocOp, block) -> bool:
    """Whether `alloc` is a tile written from registers inside loop body `block` (at any depth: a
    pointer-fed dot operand staged in the inner k loop). Each write of it waits at a barrier in a loop
    (`lower_local_alloc`), so the next pass's writes cannot overtake readers of a tile over it."""
    return alloc.src is not None and _position_in(block, alloc) is not None


def _async_work_done(func: tt.FuncOp, tile_op: Op) -> bool:
    """Whether no asynchronous reader or writer of shared memory may still run at `tile_op`: after
    the last `cp.async` copy before it comes a `ttg.async_wait {num = 0}`, and after the last wgmma
    a `ttng.warp_group_dot_wait {pendings = 0}` (walk order; loops before their successors)."""
    copy_done = wgmma_done = True
    for op in func.walk():
        if op is tile_op:
            break
        if isinstance(op, AsyncCopyGlobalToLocalOp):
            copy_done = False
        elif isinstance(op, AsyncWaitOp):
            copy_done = copy_done or op.num == 0
        elif isinstance(op, WarpGroupDotOp):
            wgmma_done = False
        elif isinstance(op, WarpGroupDotWaitOp):
            wgmma_done = op.pendings == 0
    return copy_done and wgmma_done


def _tma_copies_awaited(func: tt.FuncOp, ring, block) -> bool:
    """Whether every copy into TMA ring `ring` is awaited before the loop that waits on it ends: no
    `ttng.tma_copy` into it lies after the last op of `block` holding a wait on it (a copy issued
    after the loop, e.g. a prefetch of the next tile's first slots, would still be in flight)."""
    copies, waits = [], []
    for op in func.walk():
        if any(v is ring for v in op.operands):
            kind = copies if isinstance(op, ttng.TMACopyOp) else waits
            kind.append(_position_in(block, op))
    if None in copies or None in waits:
        return False
    return not copies or (bool(waits) and max(copies) <= max(waits))


def needs_barrier_before_copies(loop) -> bool:
    """Whether a pipelined loop's first copies need a barrier ahead of them: the loop is nested in
    another loop, whose previous iteration may have read a staging tile lying over the rings."""
    op = loop.parent_op
    while op is not None:
        if op.regions and op.name in ("scf.for", "scf.while"):
            return True
        op = op.parent_op
    return False


def _position_in(block, op) -> int | None:
    """The index in `block` of `op` or of its ancestor there; None when `op` is not inside `block`."""
    while op is not None and op.parent is not block:
        op = op.parent_op
    return None if op is None else block.ops.index(op)


def _used_from(func: tt.FuncOp, tile, block, index: int) -> bool:
    """Whether `tile` (or a view of it: a slot, a waited TMA slot) is used by an op at or after
    position `index` of `block`, or outside `block`."""
    work = [tile]
    while work:
        value = work.pop()
        for op in func.walk():
            if not any(v is value for v in op.operands):
                continue
            work += [r for r in op.results if isinstance(r.type, MemDescType)]
            position = _position_in(block, op)
            if position is None or position >= index:
                return True
    return False
