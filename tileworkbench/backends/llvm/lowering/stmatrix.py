"""`stmatrix` (sm_90): a 16-bit tensor-core result stored to a shared tile four 8x8 matrices per
instruction, where `ttg.local_alloc` stages the epilogue of a dot (`#mma` registers -> `#shared`).

A thread of an `mma.sync` or `wgmma` accumulator holds, in each 8x8 block, row lane / 4, columns
2 (lane % 4) + {0, 1}: exactly `stmatrix.m8n8`'s fragment of one matrix (as for `ldmatrix`), so the
pair is one 32-bit register and four such blocks one `stmatrix.x4`, whose lanes 8j..8j+7 give the
row addresses of matrix j. Each row is 16 contiguous bytes, which the `#shared` swizzle (16-byte
chunks) keeps whole. Replaces 4 `st.shared.b32` per x4 (Triton's epilogue stores the same way).
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops.ttg import LinearLayout, NvmmaSharedEncoding, SharedEncoding
from ..llvm_types import I32, byte_size
from .mma import pack_halves

MMA_LANES = ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))  # lane bits: columns 2t, then rows g
PAIR = (0, 1)


def stmatrix_plan(lw, layout: LinearLayout, tile_type) -> list[list[tuple[int, int]]] | None:
    """Per `stmatrix.x4`, the four matrices' origins (row, column in the tile) in this thread's
    register coordinates, or None when the registers or the tile do not fit the instruction:
    16-bit elements, a 2-D tile stored row-major (columns contiguous) in 16-byte chunks, the
    accumulator's lane pattern, and register bases that are the pair plus multiples of 8."""
    if not lw.target.stmatrix or byte_size(tile_type.element) != 2:
        return None
    enc = tile_type.encoding
    if len(tile_type.shape) != 2 or not isinstance(enc, (SharedEncoding, NvmmaSharedEncoding)):
        return None
    if enc.order[0] != 1 or enc.vec < 8 or layout.lanes != MMA_LANES or PAIR not in layout.regs:
        return None
    others = [b for b in layout.regs if b != PAIR]
    if len(others) < 2 or any(b[0] % 8 or b[1] % 8 for b in others):
        return None
    if isinstance(enc, NvmmaSharedEncoding) and enc.row_elements < 8:
        return None
    step_a, step_b = others[0], others[1]
    groups = []
    for g in range(1 << (len(others) - 2)):
        base = [0, 0]
        for bit, basis in enumerate(others[2:]):
            if g >> bit & 1:
                base = [base[0] + basis[0], base[1] + basis[1]]
        groups.append(
            [
                (
                    base[0] + (j & 1) * step_a[0] + (j >> 1) * step_b[0],
                    base[1] + (j & 1) * step_a[1] + (j >> 1) * step_b[1],
                )
                for j in range(4)
            ]
        )
    return groups


def store_with_stmatrix(lw, src, tile, groups, swizzled) -> None:
    """Store `src` (a TVal in an accumulator layout) to `tile` by `stmatrix.x4`, one per group of
    `stmatrix_plan`. `swizzled(lw, type, row, col)` gives an element's index in the tile."""
    b = lw.builder
    layout = src.layout
    index = {c: r for r, c in enumerate(layout.all_reg_coords())}
    lane, _ = lw.lane_and_warp()
    which = b.lshr(lane, ir.Constant(I32, 3))  # the matrix whose row this lane addresses
    row_in = b.and_(lane, ir.Constant(I32, 7))
    warps = LinearLayout(
        layout.shape, layout.regs, tuple((0, 0) for _ in layout.lanes), layout.warps
    )
    warp_row = lw.thread_offset(warps, lambda v: v[0])
    warp_col = lw.thread_offset(warps, lambda v: v[1])
    bit0 = b.and_(which, ir.Constant(I32, 1))
    bit1 = b.lshr(which, ir.Constant(I32, 1))
    for group in groups:
        origin = [_linear(lw, bit0, bit1, [m[d] for m in group]) for d in (0, 1)]
        row = b.add(b.add(warp_row, origin[0]), row_in)
        col = b.add(warp_col, origin[1])
        element = swizzled(lw, tile.type, row, col)
        ptr = lw.smem_ptr(lw.shared_base(), b.add(tile.offset, b.mul(element, ir.Constant(I32, 2))))
        words = [
            pack_halves(lw, src.vals[index[m]], src.vals[index[(m[0], m[1] + 1)]]) for m in group
        ]
        lw.call_intrinsic(
            "llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.b16", ir.VoidType(), [ptr, *words]
        )


def _linear(lw, bit0: ir.Value, bit1: ir.Value, values: list[int]) -> ir.Value:
    """values[j] for j = bit0 + 2 bit1, where values is linear in j's bits (the plan's groups)."""
    b = lw.builder
    out = ir.Constant(I32, values[0])
    for bit, step in ((bit0, values[1] - values[0]), (bit1, values[2] - values[0])):
        if step:
            out = b.add(out, b.mul(bit, ir.Constant(I32, step)))
    return out
