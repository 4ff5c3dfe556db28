"""Which shared-memory tiles may share space: a `ttg.local_alloc` that stores its source after the last
use of every earlier tile in its block (the epilogue's staging tile after a pipelined loop) may start
at offset 0, over the loop's rings, instead of after them. Its store follows a barrier that every
thread reaches only after its own copies and wgmma reads of those tiles are complete
(`ttg.async_wait {num = 0}` and the final `ttng.warp_group_dot_wait`, both ahead of it).

The block may be the kernel's top level or a loop body (a persistent kernel's tile loop: rings, inner
k loop, then the epilogue, per tile); in a loop body every earlier tile must be a `pipeline` ring
allocated in that body, and the next iteration's writes over the staging tile wait at a barrier: `local_alloc` stores
take one in loops, and `pipeline` puts one before a nested loop's first copies
(`needs_barrier_before_copies`). Used by the NVPTX lowering's shared-memory layout and by `pipeline`
to size its rings.
"""

from __future__ import annotations

from ..ir.ops import tt
from ..ir.ops.base import Op
from ..ir.ops.ttg import LocalAllocOp, MemDescIndexOp


def reuses_earlier_space(func: tt.FuncOp, alloc: LocalAllocOp, becoming_rings=None) -> bool:
    """Whether `alloc` may be placed over every tile allocated before it (see the module docstring).
    `becoming_rings`: (loop, ids of its staged allocs) that `pipeline` is about to turn into rings
    allocated just before the loop, judged as those rings."""
    loop, staged = becoming_rings if becoming_rings is not None else (None, set())
    block = alloc.parent
    if alloc.src is None or block is None:
        return False
    top = block is func.body.block
    index = block.ops.index(alloc)
    earlier = []
    for op in func.walk():
        if op is alloc:
            break
        if op.name == "ttng.tma_ring":  # the copy engine writes rings asynchronously: never reuse them
            return False
        if isinstance(op, LocalAllocOp):
            # in a loop body, only over the rings of the loops before it in that body: a tile from
            # outside the loop may be read again in later iterations
            if id(op) in staged:  # its uses will be the loop's, before `alloc` if the loop is
                if loop.parent is not block and not top:
                    return False
                earlier.append(loop)
                continue
            if not top and not (op.src is None and op.parent is block):
                return False
            earlier.append(op.result)
    return bool(earlier) and not any(
        _position_in(block, x) is None or _position_in(block, x) >= index if isinstance(x, Op)
        else _used_from(func, x, block, index) for x in earlier)


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
    """Whether `tile` (or a slot view of it) is used by an op at or after position `index` of `block`,
    or outside `block`."""
    work = [tile]
    while work:
        value = work.pop()
        for op in func.walk():
            if not any(v is value for v in op.operands):
                continue
            if isinstance(op, MemDescIndexOp):
                work.append(op.result)
            position = _position_in(block, op)
            if position is None or position >= index:
                return True
    return False
