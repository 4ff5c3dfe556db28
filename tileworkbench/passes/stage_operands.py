"""`stage_dot_operands`: a tensor-core dot operand that arrives in a blocked layout goes through shared
memory explicitly: `ttg.convert_layout` to `#dot_op` becomes `ttg.local_alloc` (the tile written with
a `#shared` swizzle) and `ttg.local_load` (read back as `mma.sync` fragments with `ldmatrix`). The
epilogue's conversion of a `#mma` result to the store's blocked layout goes the same way (pairs of
columns written, 16-byte rows read back), so the global store is coalesced.

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
from .dot_layout import shared_for_operand


def _staged(op) -> bool:
    if not isinstance(op, ConvertLayoutOp) or len(op.result.type.shape) != 2:
        return False
    enc, src = op.result.type.encoding, op.src.type.encoding
    operand = (
        isinstance(enc, DotOperandEncoding)
        and isinstance(enc.parent, MmaEncoding)
        and isinstance(src, BlockedEncoding)
    )
    epilogue = isinstance(src, MmaEncoding) and isinstance(enc, BlockedEncoding)
    return operand or epilogue


def stage_dot_operands(func: tt.FuncOp) -> bool:
    """Replace blocked -> mma dot-operand conversions by local_alloc + local_load. Returns changed."""
    changed = False
    for op in [o for o in func.walk() if _staged(o)]:
        src = op.src
        shape = src.type.shape
        blocked = (
            src.type.encoding
            if isinstance(src.type.encoding, BlockedEncoding)
            else op.result.type.encoding
        )  # the rows run along the blocked side's contiguous dimension
        operand = op.result.type.encoding  # a `#dot_op`, or the epilogue's blocked layout
        shared = shared_for_operand(
            shape,
            src.type.element,
            blocked.order,
            operand if isinstance(operand, DotOperandEncoding) else None,
        )
        alloc = LocalAllocOp(src=src)
        alloc.results = [
            OpResult(MemDescType(shape, src.type.element, shared), alloc, 0, src.name_hint)
        ]
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
