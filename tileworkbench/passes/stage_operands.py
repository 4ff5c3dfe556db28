"""`stage_dot_operands`: a tensor-core dot operand that arrives in a blocked layout goes through shared
memory explicitly: `ttg.convert_layout` to `#dot_op` becomes `ttg.local_alloc` (the tile written with
a `#shared` swizzle) and `ttg.local_load` (read back as `mma.sync` fragments with `ldmatrix`).

Runs after `remove_layout_conversions`, so only conversions that really move data are staged; the
`pipeline` pass then turns staged loads in loops into async copies.
"""

from __future__ import annotations

from ..ir.ops import tt
from ..ir.ops.ttg import (
    BlockedEncoding,
    ConvertLayoutOp,
    DotOperandEncoding,
    LocalAllocOp,
    LocalLoadOp,
    MmaEncoding,
)
from ..ir.types import MemDescType
from ..ir.values import OpResult
from .mma import shared_for_operand


def _staged(op) -> bool:
    if not isinstance(op, ConvertLayoutOp) or len(op.result.type.shape) != 2:
        return False
    enc = op.result.type.encoding
    return (isinstance(enc, DotOperandEncoding)
            and isinstance(enc.parent, MmaEncoding)
            and isinstance(op.src.type.encoding, BlockedEncoding))


def stage_dot_operands(func: tt.FuncOp) -> bool:
    """Replace blocked -> mma dot-operand conversions by local_alloc + local_load. Returns changed."""
    changed = False
    for op in [o for o in func.walk() if _staged(o)]:
        src = op.src
        shape = src.type.shape
        shared = shared_for_operand(shape, src.type.element, src.type.encoding.order)
        alloc = LocalAllocOp(src=src)
        alloc.results = [OpResult(MemDescType(shape, src.type.element, shared), alloc, 0,
                                  src.name_hint)]
        alloc.loc = op.loc
        load = LocalLoadOp(src=alloc.result)
        load.results = [OpResult(op.result.type, load, 0, op.result.name_hint)]
        load.loc = op.loc
        block = op.parent
        index = block.ops.index(op)
        block.insert(index, alloc)
        block.insert(index + 1, load)
        for user in func.walk():
            user.replace_operand(op.result, load.result)
        op.erase()
        changed = True
    return changed
