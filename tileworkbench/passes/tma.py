"""`fold_tma_transpose`: a TMA load whose only user is a 2-D `tt.trans` reads its tile transposed,
`%b = ttng.tma_load ... : tensor<NxK>; %t = tt.trans %b {order = [1, 0]}  ->
%t = ttng.tma_load ... {trans = true} : tensor<KxN>`. The shared tile is the same box; read as a
column-major view it gives `tl.dot(a, b.T)` its operand by `ldmatrix` with no trip through registers
and shared memory again (tutorial 09's B, attention's K). Runs before the layout passes; only TMA
targets have `ttng` ops.
"""

from __future__ import annotations

from ..ir.ops import tt, ttng
from ..ir.ops.ttg import NvmmaSharedEncoding, SharedEncoding
from ..ir.types import TensorType


def fold_tma_transpose(func: tt.FuncOp) -> bool:
    """Fold single-use transposes of TMA loads into the loads; returns whether any was folded."""
    users: dict[int, list] = {}
    for op in func.walk():
        for v in op.operands:
            users.setdefault(id(v), []).append(op)
    changed = False
    for op in list(func.walk()):
        if not (isinstance(op, tt.TransOp) and tuple(op.order) == (1, 0)):
            continue
        load = getattr(op.src, "op", None)
        if not isinstance(load, ttng.TMALoadOp) or load.trans or users.get(id(op.src)) != [op]:
            continue
        load.trans = True
        t = op.result.type
        load.result.type = TensorType(t.shape, t.element)
        for user in users.get(id(op.result), []):
            user.replace_operand(op.result, load.result)
        op.erase()
        changed = True
    return changed


def tma_shared_encoding(
    swizzle: int, element_bytes: int, trans: bool = False
) -> SharedEncoding | NvmmaSharedEncoding:
    """The layout of a tile TMA wrote with a `swizzle`-byte span: `#nvmma_shared` (column blocks of
    `swizzle` bytes one after another, one box each; 16-byte chunk c of row r holds chunk
    c ^ ((r // per_phase) % max_phase), as TMA swizzles the address bits), which wgmma can read by
    descriptor; for no swizzle, dense rows (`#shared`). `trans`: the tile read as a column-major
    view (its rows run along dimension 0)."""
    order = (0, 1) if trans else (1, 0)
    if not swizzle:
        return SharedEncoding(16 // element_bytes, 1, 1, order)
    return NvmmaSharedEncoding(swizzle, 8 * element_bytes, order)
