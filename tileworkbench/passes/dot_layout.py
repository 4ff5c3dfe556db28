"""The layouts a `tt.dot` gets: its result's `#mma` (version 3 for `wgmma` where it fits, else
version 2 for `mma.sync`) and its operand tiles' shared-memory swizzle. Above both `mma.py` (the
`mma.sync` shapes) and `wgmma.py` (Hopper's layouts), which is why it is a module of its own: the
choice asks both, and neither needs to ask the other back.

Used by `coalesce` (the result layout) and `stage_operands` (the operand tiles).
"""

from __future__ import annotations

from ..ir.ops import tt
from ..ir.ops.ttg import MmaEncoding, SharedEncoding
from ..ir.types import element_type
from .mma import fed_by_dot, fits, mma_kind, warps_per_cta
from .wgmma import nvmma_for_operand, wgmma_encoding


def _feeds_dot(op: tt.DotOp, users: dict[int, list]) -> bool:
    """Whether the dot's result reaches another dot's A operand through elementwise ops."""
    seen, work = set(), [op.result]
    while work:
        v = work.pop()
        for user in users.get(id(v), []):
            if isinstance(user, tt.DotOp) and user.a is v:
                return True
            if id(user) not in seen and user.elementwise and user.results and not user.regions:
                seen.add(id(user))
                work.extend(user.results)
    return False


def dot_encoding(
    op: tt.DotOp,
    num_warps: int,
    fp8: bool,
    users: dict[int, list],
    wgmma_orders: tuple | None = None,
) -> MmaEncoding | None:
    """The `#mma` layout of `op`'s result, or None for the FMA path. `fp8`: as `mma_kind`.
    `wgmma_orders`: the target has `wgmma` (sm_90a) and the operands arrive in these memory orders;
    version 3 where it fits."""
    kind = mma_kind(op, fp8)
    if kind is None or not fits(op, kind):
        return None
    shape = op.result.type.shape
    # both dots of a chain (attention: p = f(q @ k), p @ v) put every warp on M, so the first's
    # result is the second's A operand in the same threads and needs no exchange
    a_from_dot = fed_by_dot(op)
    chained = _feeds_dot(op, users) or a_from_dot
    if wgmma_orders is not None:
        # on wgmma too, with the second dot's A (the first's result) read from registers
        v3 = wgmma_encoding(op, num_warps, wgmma_orders, chained, a_in_registers=a_from_dot)
        if v3 is not None:
            return v3
    return MmaEncoding(2, warps_per_cta(shape, num_warps, chained))


def shared_for_operand(
    shape: tuple[int, ...], element, order: tuple[int, ...], operand=None
) -> SharedEncoding:
    """The `#shared` swizzle of an operand tile whose `order[0]` dimension is contiguous: 16-byte
    chunks, XORed by row so that the 8 rows an `ldmatrix` (or a warp's stores) touch hit 8 different
    bank groups, as Triton's mma v2 swizzle. A `wgmma` operand (`operand`, its `#dot_op` encoding,
    has a version-3 parent) gets an `#nvmma_shared` layout instead (`wgmma.py`)."""
    if (
        operand is not None
        and isinstance(operand.parent, MmaEncoding)
        and operand.parent.version == 3
    ):
        shared = nvmma_for_operand(operand.op_idx, shape, element, order, operand.parent)
        if shared is None:  # staged in another order than the choice saw: store it K-major
            k_major = (1, 0) if operand.op_idx == 0 else (0, 1)
            shared = nvmma_for_operand(operand.op_idx, shape, element, k_major, operand.parent)
        return shared
    elem_bytes = max(1, element_type(element).bitwidth // 8)
    row_bytes = shape[order[0]] * elem_bytes
    vec = max(1, 16 // elem_bytes)
    per_phase = max(1, 128 // row_bytes)
    max_phase = max(1, min(8 // per_phase, row_bytes // 16))
    return SharedEncoding(vec, per_phase, max_phase, tuple(order))
