"""Shared-memory tiles (`!ttg.memdesc`): `ttg.local_alloc`, `ttg.local_load` (`ldmatrix` for the
16-bit `mma.sync` fragments), `ttg.memdesc_index`, `ttg.memdesc_trans` and the `cp.async` ops of
the pipeline.

Every `local_alloc` and TMA ring owns a fixed region at the start of the dynamic shared memory
(`assign_shared_offsets`, before lowering); the scratch of other ops (conversions, scans) starts after
them. Two regions share bytes only when the first is done before the second is written
(`passes/shared_reuse.py`): the epilogue's staging tile (a `local_alloc`'s or a TMA store's) reuses
the pipeline's rings, after a barrier. A tile is stored row by row, its
`order[0]` dimension contiguous, each row's 16-byte chunks XORed with `(row // per_phase) % max_phase` (the `#shared` swizzle).
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ....ir.ops import ttg, ttng
from ....ir.ops.ttg import DotOperandEncoding, LinearLayout, MmaEncoding, NvmmaSharedEncoding
from ....ir.types import MemDescType
from ....passes.shared_reuse import reuses_earlier_space
from ..llvm_types import I32, byte_size, llvm_type
from ..values import TVal
from . import lowers
from .mma import unpack_halves
from .stmatrix import stmatrix_plan, store_with_stmatrix

NVMMA_ALIGN = 1024  # the 128-byte swizzle's pattern repeats every 8 rows of 128 bytes


@dataclass
class SharedTile:
    """A memdesc in registers: its byte offset in the dynamic shared memory (an i32 value)."""

    offset: ir.Value
    type: MemDescType


def assign_shared_offsets(lw, func) -> None:
    """Give each `local_alloc` and TMA ring its own region, except that a tile stored after every
    earlier tile's last use starts over them (`passes/shared_reuse.py`: the epilogue's staging tile,
    of a `local_alloc` or a `tma_store`, over the loop's rings); the scratch of other ops starts
    after all of them."""
    total = end = 0
    lw.reused_allocs = set()
    lw.threads_over_tma_rings = False
    for op in func.walk():
        if isinstance(op, ttg.LocalAllocOp) and getattr(op, "staging_over", None) is not None:
            _place_over_slots(lw, op)  # passes/prefetch_tiles.py: an epilogue over free ring slots
        elif isinstance(op, ttg.LocalAllocOp):
            t = op.result.type
            if reuses_earlier_space(func, op):
                end = 0
                lw.reused_allocs.add(id(op))
                # threads' reads of it come before the engine's next writes there (lowering/tma.py)
                lw.threads_over_tma_rings |= op.parent is not func.body.block
            if isinstance(t.encoding, NvmmaSharedEncoding):
                # wgmma's swizzle is on address bits: its tiles start on a 1024-byte boundary
                end = (end + NVMMA_ALIGN - 1) // NVMMA_ALIGN * NVMMA_ALIGN
                lw.smem_align = NVMMA_ALIGN
            lw.alloc_offsets[id(op)] = end
            size = (t.numel * byte_size(t.element) + 127) // 128 * 128
            lw.alloc_regions.append(
                (op, end, size)
            )  # the resource panel's plan (nvptx/inventory.py)
            end += size
            total = max(total, end)
        elif isinstance(op, ttng.TMARingOp):  # TMA rings: 1024-byte aligned (lowering/tma.py)
            end = _place_tma_tile(lw, op, end, ring_bytes(op.result.type))
            total = max(total, end)
        elif isinstance(op, ttng.TMAStoreOp) and op.deferred:
            # its own tile: the engine may still read it while the next tile's loop runs
            end = _place_tma_tile(lw, op, end, staging_bytes(op.value.type))
            total = max(total, end)
        elif isinstance(op, ttng.TMAStoreOp) and reuses_earlier_space(func, op):
            # the store's staging tile over the dead rings; elsewhere it takes the scratch (tma.py)
            lw.reused_allocs.add(id(op))
            end = _place_tma_tile(lw, op, 0, staging_bytes(op.value.type))
            total = max(total, end)
    lw.smem_base = total
    if total:
        lw.smem_bytes = max(lw.smem_bytes, total)


# TMA tiles (rings, store staging tiles; lowering/tma.py) start 1024-byte aligned: the 128-byte
# swizzle's pattern repeats every 1024 bytes
TILE_ALIGN = 1024


def ring_bytes(t) -> int:
    """The shared bytes a TMA ring takes (`assign_shared_offsets`): its slots plus `_align_up`'s
    room (tma.py)."""
    return t.numel * byte_size(t.element) + TILE_ALIGN


def staging_bytes(t) -> int:
    """The shared bytes a TMA store's staging tile takes where it has a region (over dead rings, or
    its own where `deferred`; `assign_shared_offsets`): the tile plus `_align_up`'s room."""
    return t.numel * byte_size(t.element) + TILE_ALIGN


def _place_tma_tile(lw, op, end: int, size: int) -> int:
    """Place a TMA tile (a ring, a store's staging tile) of `size` bytes at the first 1024-byte
    boundary from `end`; returns the end of its region."""
    end = (end + TILE_ALIGN - 1) // TILE_ALIGN * TILE_ALIGN
    lw.alloc_offsets[id(op)] = end
    lw.alloc_regions.append((op, end, size))
    return end + size


def _place_over_slots(lw, op) -> None:
    """The staging tile of a prefetching tile loop over slots `first..` of a ring (which the next
    tile's prefetched copies leave alone); its store waits at a barrier as any reused space."""
    ring, first = op.staging_over
    slots = ring.result.type.shape[0]
    slot_bytes = ring.result.type.numel * byte_size(ring.result.type.element) // slots
    offset = lw.alloc_offsets[id(ring)] + first * slot_bytes
    size = (op.result.type.numel * byte_size(op.result.type.element) + 127) // 128 * 128
    lw.alloc_offsets[id(op)] = offset
    lw.alloc_regions.append((op, offset, size))
    lw.reused_allocs.add(id(op))


@lowers(ttg.LocalAllocOp)
def lower_local_alloc(lw, op) -> None:
    tile = SharedTile(ir.Constant(I32, lw.alloc_offsets[id(op)]), op.result.type)
    if op.src is not None:
        # after earlier shared-memory use (or the last iteration's readers of this region): a barrier,
        # as before any reuse of shared memory; always where the tile lies over earlier tiles
        if id(op) in lw.reused_allocs:
            lw.barrier()
        lw.barrier_before_shared()
        _store_tile(lw, lw.get(op.src), tile)
        if isinstance(tile.type.encoding, NvmmaSharedEncoding):
            fence_async_shared(lw)  # read next by wgmma (the async proxy)
        lw.barrier()
    lw.set(op.result, tile)


@lowers(ttg.MemDescIndexOp)
def lower_memdesc_index(lw, op) -> None:
    src = lw.get(op.src)
    slot = op.result.type
    slot_bytes = slot.numel * byte_size(slot.element)
    b = lw.builder
    offset = b.add(src.offset, b.mul(lw.get(op.index), ir.Constant(I32, slot_bytes)))
    lw.set(op.result, SharedTile(offset, slot))


@lowers(ttg.MemDescTransOp)
def lower_memdesc_trans(lw, op) -> None:
    """The same bytes: the result type says how they are read (addresses and wgmma descriptors
    follow the layout's `order`, which the view permutes with the shape)."""
    lw.set(op.result, SharedTile(lw.get(op.src).offset, op.result.type))


@lowers(ttg.LocalLoadOp)
def lower_local_load(lw, op) -> None:
    tile = lw.get(op.src)
    layout = lw.layout(op.result)
    enc = op.result.type.encoding
    if (
        isinstance(enc, DotOperandEncoding)
        and isinstance(enc.parent, MmaEncoding)
        and byte_size(tile.type.element) == 2
        and len(tile.type.shape) == 2
    ):
        return lw.set(op.result, TVal(_ldmatrix_operand(lw, tile, enc, layout), layout))
    lw.set(op.result, TVal(_load_elements(lw, tile, layout), layout))


@lowers(ttg.AsyncCopyGlobalToLocalOp)
def lower_async_copy(lw, op) -> None:
    ptrs = lw.get(op.ptr)
    tile = lw.get(op.dst)
    mask = lw.get(op.mask) if op.mask is not None else None
    pred = lw.get(op.pred) if op.pred is not None else None
    nbytes = byte_size(tile.type.element)
    b = lw.builder
    # threads holding copies of an element (a row of 32 over 128 threads) copy it alike: the same
    # bytes, zeros alike where masked (the mask is per element), so no thread needs to be left out
    for first, count in _vector_runs(ptrs.layout, tile.type, nbytes):
        coords = ptrs.layout.reg_coords(first)
        dst = _address(lw, tile, ptrs.layout, coords)
        src = ptrs.vals[first]
        size = count * nbytes
        ok = mask.vals[first] if isinstance(mask, TVal) else mask
        if pred is not None:
            ok = pred if ok is None else b.and_(ok, pred)
        src_size = (
            ir.Constant(I32, size)
            if ok is None
            else b.select(ok, ir.Constant(I32, size), ir.Constant(I32, 0))
        )
        kind = "cg" if size == 16 else "ca"
        lw.call_intrinsic(
            f"llvm.nvvm.cp.async.{kind}.shared.global.{size}.s", ir.VoidType(), [dst, src, src_size]
        )


@lowers(ttg.AsyncCommitGroupOp)
def lower_async_commit(lw, op) -> None:
    lw.call_intrinsic("llvm.nvvm.cp.async.commit.group", ir.VoidType(), [])


@lowers(ttg.AsyncWaitOp)
def lower_async_wait(lw, op) -> None:
    lw.call_intrinsic("llvm.nvvm.cp.async.wait.group", ir.VoidType(), [ir.Constant(I32, op.num)])
    if op.fence_async:
        fence_async_shared(lw)
    lw.barrier()


def fence_async_shared(lw) -> None:
    """Orders this thread's shared-memory writes before the async proxy's reads (wgmma, TMA stores)
    that follow the next barrier (HOPPER.md)."""
    lw.asm("fence.proxy.async.shared::cta;", "", ir.VoidType(), [], side_effect=True)


# -- addresses ------------------------------------------------------------------------------------


def _row_col(t: MemDescType, coords) -> tuple[int, int]:
    """(row, column) of a tile's element: the column runs along the contiguous dimension (a 1-D
    tile is one row)."""
    col_dim = t.encoding.order[0]
    return (coords[1 - col_dim] if len(coords) == 2 else 0), coords[col_dim]


def _swizzled(lw, t: MemDescType, row: ir.Value, col: ir.Value) -> ir.Value:
    """The element index of (row, col) in the swizzled tile."""
    b = lw.builder
    enc = t.encoding
    row_len = t.shape[enc.order[0]]
    block_start = None
    if isinstance(enc, NvmmaSharedEncoding) and row_len > enc.row_elements:
        # column blocks of one swizzled row's width, each stored whole (rows x width) in turn
        width = enc.row_elements
        rows = t.shape[1 - enc.order[0]]
        block_start = b.mul(
            b.lshr(col, ir.Constant(I32, _log2(width))), ir.Constant(I32, rows * width)
        )
        col = b.and_(col, ir.Constant(I32, width - 1))
        row_len = width
    phase = b.and_(
        b.lshr(row, ir.Constant(I32, _log2(enc.per_phase))), ir.Constant(I32, enc.max_phase - 1)
    )
    chunk = b.xor(b.lshr(col, ir.Constant(I32, _log2(enc.vec))), phase)
    within = b.and_(col, ir.Constant(I32, enc.vec - 1))
    index = b.add(
        b.mul(row, ir.Constant(I32, row_len)),
        b.add(b.mul(chunk, ir.Constant(I32, enc.vec)), within),
    )
    return index if block_start is None else b.add(block_start, index)


def _thread_row_col(lw, layout: LinearLayout, t: MemDescType):
    col_dim = t.encoding.order[0]
    if len(t.shape) == 1:  # one row
        return ir.Constant(I32, 0), lw.thread_offset(layout, lambda v: v[0])
    row = lw.thread_offset(layout, lambda v: v[1 - col_dim])
    col = lw.thread_offset(layout, lambda v: v[col_dim])
    return row, col


def _address(lw, tile: SharedTile, layout: LinearLayout, coords) -> ir.Value:
    """The shared pointer of this thread's element at register coordinates `coords`."""
    b = lw.builder
    row_t, col_t = _thread_row_col(lw, layout, tile.type)
    row_c, col_c = _row_col(tile.type, coords)
    index = _swizzled(
        lw, tile.type, b.add(row_t, ir.Constant(I32, row_c)), b.add(col_t, ir.Constant(I32, col_c))
    )
    nbytes = byte_size(tile.type.element)
    return lw.smem_ptr(lw.shared_base(), b.add(tile.offset, b.mul(index, ir.Constant(I32, nbytes))))


def _vector_runs(layout: LinearLayout, t: MemDescType, nbytes: int) -> list[tuple[int, int]]:
    """(first register, count) runs of a thread's consecutive columns inside one 16-byte chunk
    (4, 8 or 16 bytes) that one vector access moves; other registers go one by one."""
    index = {c: r for r, c in enumerate(layout.all_reg_coords())}
    col_dim = t.encoding.order[0]
    limit = min(t.encoding.vec, 16 // nbytes)
    runs, done = [], set()
    for r, coords in enumerate(layout.all_reg_coords()):
        if r in done:
            continue
        count = 1
        if coords[col_dim] % limit == 0:
            while count < limit and _shift(coords, col_dim, count) in index:
                count += 1
            while count > 1 and (count & (count - 1) or count * nbytes not in (4, 8, 16)):
                count -= 1
        for j in range(count):
            done.add(index[_shift(coords, col_dim, j)])
        runs.append((r, count))
    return runs


def _shift(coords, dim: int, by: int) -> tuple[int, ...]:
    out = list(coords)
    out[dim] += by
    return tuple(out)


def _store_tile(lw, src: TVal, tile: SharedTile) -> None:
    groups = stmatrix_plan(lw, src.layout, tile.type)
    if groups is not None:  # a 16-bit tensor-core result (the epilogue), on sm_90
        return store_with_stmatrix(lw, src, tile, groups, _swizzled)
    b = lw.builder
    nbytes = byte_size(tile.type.element)
    index = {c: r for r, c in enumerate(src.layout.all_reg_coords())}
    col_dim = tile.type.encoding.order[0]
    for first, count in _vector_runs(src.layout, tile.type, nbytes):
        coords = src.layout.reg_coords(first)
        ptr = _address(lw, tile, src.layout, coords)
        values = [src.vals[index[_shift(coords, col_dim, j)]] for j in range(count)]
        if count == 1:
            b.store(values[0], ptr).align = nbytes
            continue
        vec = ir.Constant(ir.VectorType(values[0].type, count), None)
        for j, v in enumerate(values):
            vec = b.insert_element(vec, v, ir.Constant(I32, j))
        b.store(vec, ptr).align = count * nbytes


def _load_elements(lw, tile: SharedTile, layout: LinearLayout) -> list:
    """Each register's element by shared loads, a vector per run of a thread's consecutive columns
    (8-bit and 32-bit dot operands, the epilogue's blocked tile)."""
    b = lw.builder
    reg_type = llvm_type(tile.type.element)
    nbytes = byte_size(tile.type.element)
    index = {c: r for r, c in enumerate(layout.all_reg_coords())}
    col_dim = tile.type.encoding.order[0]
    out: list = [None] * layout.num_regs
    for first, count in _vector_runs(layout, tile.type, nbytes):
        coords = layout.reg_coords(first)
        ptr = _address(lw, tile, layout, coords)
        if count == 1:
            load = b.load(ptr, typ=reg_type)
            load.align = nbytes
            out[first] = load
            continue
        load = b.load(ptr, typ=ir.VectorType(reg_type, count))
        load.align = count * nbytes
        for j in range(count):
            out[index[_shift(coords, col_dim, j)]] = b.extract_element(load, ir.Constant(I32, j))
    return out


# -- ldmatrix ---------------------------------------------------------------------------------------


def _ldmatrix_operand(lw, tile: SharedTile, enc: DotOperandEncoding, layout: LinearLayout) -> list:
    """The `#dot_op` registers of a 16-bit operand, four 8x8 matrices per `ldmatrix.x4`.

    A fragment register holds 2 consecutive K elements of one row (A) or column (B) of an 8x8
    matrix; `ldmatrix` gives exactly that from 8 row addresses per matrix, `.trans` when the
    tile's contiguous dimension is not K. Matrix j of an x4 sits at (j & 1) * d1 + (j >> 1) * d2."""
    op_idx = enc.op_idx
    k_dim = 1 if op_idx == 0 else 0
    other = 1 - k_dim
    trans = tile.type.encoding.order[0] != k_dim
    index = {c: r for r, c in enumerate(layout.all_reg_coords())}
    vals: list = [None] * layout.num_regs
    coords = layout.all_reg_coords()
    if op_idx == 0:
        origins = sorted({(c[0], c[1]) for c in coords if c[0] % 16 == 0 and c[1] % 16 == 0})
        groups = [[((m0 + 8 * (j & 1), k0 + 8 * (j >> 1))) for j in range(4)] for m0, k0 in origins]
    else:
        n_tiles = sorted({c[1] for c in coords})
        k_tiles = sorted({c[0] for c in coords if c[0] % 16 == 0})
        groups = []
        for k0 in k_tiles:
            for i in range(0, len(n_tiles), 2):
                pair = n_tiles[i : i + 2]
                groups.append([(k0 + 8 * (j & 1), pair[j >> 1]) for j in range(2 * len(pair))])
    for group in groups:
        regs = _ldmatrix(lw, tile, layout, group, other, trans)
        for (c0, c1), reg in zip(group, regs):
            halves = unpack_halves(lw, reg, llvm_type(tile.type.element))
            for e in range(2):
                key = (c0, c1 + e) if op_idx == 0 else (c0 + e, c1)
                vals[index[key]] = halves[e]
    return vals


def _ldmatrix(lw, tile: SharedTile, layout: LinearLayout, group, other: int, trans: bool) -> list:
    """One `ldmatrix.x4` (or x2) of the 8x8 matrices at operand coordinates `group` (origins)."""
    b = lw.builder
    count = len(group)
    lane, _ = lw.lane_and_warp()
    which = b.lshr(lane, ir.Constant(I32, 3))  # the matrix whose row this lane addresses
    if count == 2:
        which = b.and_(which, ir.Constant(I32, 1))
    # the matrix's origin, row and column, as this lane's: linear in `which`'s two bits
    origin = [_select_linear(lw, which, [g[d] for g in group]) for d in (0, 1)]
    # the warp's part of the operand's "other" dimension (lanes only address; warps offset)
    warp_part = lw.thread_offset(_warps_only(layout), lambda v: v[other])
    origin[other] = b.add(origin[other], warp_part)
    row_in = b.and_(lane, ir.Constant(I32, 7))
    # matrix rows run along the tile's rows: the row dimension of the operand coordinates
    col_dim = tile.type.encoding.order[0]
    row = b.add(origin[1 - col_dim], row_in)
    col = origin[col_dim]
    index = _swizzled(lw, tile.type, row, col)
    ptr = lw.smem_ptr(lw.shared_base(), b.add(tile.offset, b.mul(index, ir.Constant(I32, 2))))
    shape = f"x{count}{'.trans' if trans else ''}"
    ret = ir.LiteralStructType([I32] * count)
    out = lw.call_intrinsic(f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.{shape}.b16", ret, [ptr])
    return [b.extract_value(out, i) for i in range(count)]


def _select_linear(lw, which: ir.Value, values: list[int]) -> ir.Value:
    """values[which] for which in 0..len-1, where values is linear in which's bits (x4: v0 + bit0 *
    (v1 - v0) + bit1 * (v2 - v0)), computed without branches."""
    b = lw.builder
    out = ir.Constant(I32, values[0])
    for bit in range((len(values) - 1).bit_length()):
        step = values[1 << bit] - values[0]
        if step:
            on = b.and_(b.lshr(which, ir.Constant(I32, bit)), ir.Constant(I32, 1))
            out = b.add(out, b.mul(on, ir.Constant(I32, step)))
    return out


def _warps_only(layout: LinearLayout) -> LinearLayout:
    zero = tuple([0] * len(layout.shape))
    return LinearLayout(layout.shape, layout.regs, tuple(zero for _ in layout.lanes), layout.warps)


def _log2(n: int) -> int:
    return n.bit_length() - 1
