"""Values the same in every lane of a warp, computed so that ptxas knows it: the warp index as lane 0's
`tid.x / 32` (`shfl.sync.idx`, as Triton's warp id), so that what is derived from it (a warp group's
offset in a `wgmma` descriptor) may stay in uniform registers instead of moving there by an R2UR
before every HGMMA (lowering/wgmma.py's descriptors; tools/probe_matmul_hopper.py times them
against descriptors from tid.x).
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops.ttg import LinearLayout
from ..llvm_types import I32


def uniform_warp_id(lw) -> ir.Value:
    """tid.x / 32 broadcast from lane 0 (made once, in the entry block)."""
    cached = getattr(lw, "_uniform_warp_id", None)
    if cached is not None:
        return cached
    _, warp = lw.lane_and_warp()
    builder = lw.entry_builder
    args = [ir.Constant(I32, -1), warp, ir.Constant(I32, 0), ir.Constant(I32, 0x1F)]
    value = builder.call(lw.intrinsic("llvm.nvvm.shfl.sync.idx.i32", I32, [I32] * 4), args)
    lw._uniform_warp_id = value
    return value


def warp_offset(lw, layout: LinearLayout, dim: int, first_bit: int = 0) -> ir.Value:
    """Sum over the warp bits from `first_bit` of bit * basis[dim]: this warp's part of coordinate
    `dim` in `layout`, from the uniform warp index."""
    builder = lw.entry_builder
    warp = uniform_warp_id(lw)
    total = ir.Constant(I32, 0)
    for bit, basis in enumerate(layout.warps):
        if bit < first_bit or not basis[dim]:
            continue
        on = builder.and_(builder.lshr(warp, ir.Constant(I32, bit)), ir.Constant(I32, 1))
        total = builder.add(total, builder.mul(on, ir.Constant(I32, basis[dim])))
    return total


def uniform_group_origin(lw, layout: LinearLayout, dim: int) -> ir.Value:
    """The warp group's offset along `dim` from the uniform warp index (warp bits 2 and up pick the
    group)."""
    return warp_offset(lw, layout, dim, first_bit=2)
