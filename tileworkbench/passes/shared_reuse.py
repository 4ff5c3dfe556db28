"""Which shared-memory tiles may share space: a `ttg.local_alloc` that stores its source at the kernel's
top level after the last use of every earlier tile (the epilogue's staging tile after a pipelined
loop) may start at offset 0, over the loop's rings, instead of after them. Its store follows a barrier
that every thread reaches only after its own copies and wgmma reads of those tiles are complete
(`ttg.async_wait {num = 0}` and the final `ttng.warp_group_dot_wait`, both ahead of it). Used by the
NVPTX lowering's shared-memory layout and by `pipeline` to size its rings.
"""

from __future__ import annotations

from ..ir.ops import tt
from ..ir.ops.ttg import LocalAllocOp, MemDescIndexOp


def reuses_earlier_space(func: tt.FuncOp, alloc: LocalAllocOp) -> bool:
    """Whether `alloc` may be placed over every tile allocated before it (see the module docstring)."""
    top = func.body.block
    if alloc.src is None or alloc.parent is not top:
        return False
    index = top.ops.index(alloc)
    earlier = []
    for op in func.walk():
        if op is alloc:
            break
        if op.name == "ttng.tma_ring":  # the copy engine writes rings asynchronously: never reuse them
            return False
        if isinstance(op, LocalAllocOp):
            earlier.append(op)
    return bool(earlier) and not any(_used_from(func, op.result, index) for op in earlier)


def _used_from(func: tt.FuncOp, tile, index: int) -> bool:
    """Whether `tile` (or a slot view of it) is used by an op at or after top-level position `index`."""
    top = func.body.block
    work = [tile]
    while work:
        value = work.pop()
        for op in func.walk():
            if not any(v is value for v in op.operands):
                continue
            if isinstance(op, MemDescIndexOp):
                work.append(op.result)
            ancestor = op
            while ancestor.parent is not top:
                ancestor = ancestor.parent_op
            if top.ops.index(ancestor) >= index:
                return True
    return False
