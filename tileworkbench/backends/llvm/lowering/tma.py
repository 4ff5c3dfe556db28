"""TMA (sm_90+): `ttng.tma_load` / `ttng.tma_store` as `cp.async.bulk.tensor` copies between global
memory and a shared tile, the rings of pipelined loops (`ttng.tma_ring` / `tma_copy` / `tma_wait_read`
/ `tma_wait`), and the kernel parameters they read (128-byte CUtensorMaps).

A load: thread 0 arms the op's mbarrier with the block's byte count (`arrive.expect_tx`) and issues
one copy per box (a block whose rows are wider than the swizzle span is several 128-byte column
blocks, `box_copies`); every thread waits on the barrier's current phase (`try_wait.parity`; the
phase bit is a local that flips at each use, which O3 turns into a loop-carried register), then reads
the tile into the result's layout (`ldmatrix` for an `mma` operand), or, for `tma_wait`, hands the
slot itself to wgmma. A store: every thread writes its part of the tile, `fence.proxy.async` makes
those writes visible to the copy engine, a barrier, then thread 0 issues the copies and waits until
the engine has read the tile (`wait_group.read`) before it may be reused. The store's tile lies over
the rings of the loop before it where they are dead (`passes/shared_reuse.py`, placed by
`assign_shared_offsets`; a fence and a barrier come first), else in the scratch.

Tiles live at addresses aligned to 1024 bytes, which the swizzle patterns repeat on (the scratch
offset is rounded up at run time, `_align_up`), so TMA's address-based swizzle equals the tile's
`#nvmma_shared` swizzle. Each op or ring slot has its own mbarrier (a static shared word),
initialized once by thread 0 in the kernel's prologue (`finish_tensor_maps`). The tensor map operand
may be a kernel parameter (grid-constant) or any global address of a map.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ....ir.ops import ttng
from ....ir.ops.ttg import DotOperandEncoding, MmaEncoding, NvmmaSharedEncoding
from ....ir.types import MemDescType
from ....tma_rules import tma_box
from ....passes.tma import tma_shared_encoding
from ..llvm_types import I1, I8, I16, I32, I64, byte_size
from ..values import TVal
from . import lowers
from .shared import (
    TILE_ALIGN,
    SharedTile,
    _ldmatrix_operand,
    _load_elements,
    _store_tile,
    fence_async_shared,
)

TENSOR_MAP_BYTES = 128
CLUSTER_PTR = ir.PointerType(addrspace=7)  # shared::cluster, where cp.async.bulk.tensor writes


def tensor_map_param_types(func, params: list[ir.Type]) -> list[ir.Type]:
    """The kernel's LLVM parameter types with each tensor map a `ptr` to `[128 x i8]` (passed
    `byval`, see `finish_tensor_maps`)."""
    out = list(params)
    for index, attrs in enumerate(func.arg_attrs):
        if attrs.get("tt.tensormap"):
            pointer = ir.PointerType()
            pointer.pointee = ir.ArrayType(
                I8, TENSOR_MAP_BYTES
            )  # what llvmlite prints in byval(...)
            out[index] = pointer
    return out


def finish_tensor_maps(lw) -> None:
    """Mark the tensor-map parameters `byval align 64` and grid-constant, and add the prologue that
    initializes the mbarriers (thread 0, then a barrier). Without grid_constant LLVM copies the map
    to local memory and hands TMA a local address, which ptxas accepts and the hardware faults on."""
    constant = [i for i, attrs in enumerate(lw.func.arg_attrs) if attrs.get("tt.tensormap")]
    for index in constant:
        param = lw.function.args[index]
        param.add_attribute("byval")
        param.attributes.align = 64
    if constant:
        indices = lw.module.add_metadata([ir.Constant(I32, i + 1) for i in constant])
        annotations = lw.module.add_named_metadata("nvvm.annotations")
        annotations.add(lw.module.add_metadata([lw.function, "grid_constant", indices]))
    barriers = getattr(lw, "tma_mbarriers", [])
    if not barriers:
        return
    b = lw.entry_builder
    first = b.icmp_unsigned("==", lw.sreg("tid.x"), ir.Constant(I32, 0))
    init = lw.function.append_basic_block("mbarrier_init")
    ready = lw.function.append_basic_block("mbarrier_ready")
    b.cbranch(first, init, ready)
    b.position_at_end(init)
    for mbar, count in barriers:
        _call(
            lw, b, "llvm.nvvm.mbarrier.init.shared", ir.VoidType(), [mbar, ir.Constant(I32, count)]
        )
    b.branch(ready)
    b.position_at_end(ready)
    _call(lw, b, "llvm.nvvm.barrier0", ir.VoidType(), [])  # every thread sees them initialized


def _call(lw, builder, name: str, ret: ir.Type, args: list) -> ir.Value:
    return builder.call(lw.intrinsic(name, ret, [a.type for a in args]), args)


def _tile(lw, shape: tuple[int, ...], element, swizzle: int, trans: bool = False) -> SharedTile:
    """The op's shared tile: 1024-aligned scratch, swizzled as TMA's `swizzle`-byte mode; `trans`:
    `shape` is the transposed box, read as a column-major view of it."""
    nbytes = byte_size(element)
    offset = (lw.smem_base + TILE_ALIGN - 1) // TILE_ALIGN * TILE_ALIGN
    # room for `_align_up`'s shift, should the dynamic shared memory start off a 1024-byte boundary
    lw.smem_bytes = max(lw.smem_bytes, offset + TILE_ALIGN + shape[0] * shape[1] * nbytes)
    lw.scratch_users.append(lw.current_op)  # the resource panel names the scratch's users
    encoding = tma_shared_encoding(swizzle, nbytes, trans)
    offset_value = lw.entry_builder.add(_align_up(lw), ir.Constant(I32, offset))
    return SharedTile(offset_value, MemDescType(tuple(shape), element, encoding))


def _align_up(lw) -> ir.Value:
    """The bytes from the dynamic shared memory's start to its first 1024-byte boundary, computed at
    run time: the start follows the static shared arrays (the mbarriers, reductions' partials), so
    no alignment is promised to LLVM, which would fold this to 0."""
    key = ("tma_align_up",)
    if key not in lw._cache:
        b = lw.entry_builder
        address = b.ptrtoint(lw.shared_base(), I32)
        lw._cache[key] = b.and_(
            b.sub(ir.Constant(I32, 0), address), ir.Constant(I32, TILE_ALIGN - 1)
        )
    return lw._cache[key]


def _mbarrier(lw) -> ir.Value:
    """A fresh mbarrier (8 bytes of static shared memory) that the prologue initializes."""
    mbar = lw.private_shared_memory(8)
    if not hasattr(lw, "tma_mbarriers"):
        lw.tma_mbarriers = []
    lw.tma_mbarriers.append((mbar, 1))
    return mbar


def _first_thread(lw):
    """The thread that issues copies: thread 0, or a producer warp group's first
    (lowering/warp_specialize.py)."""
    return lw.builder.icmp_unsigned("==", lw.sreg("tid.x"), ir.Constant(I32, lw.first_thread))


def _coordinates(lw, op) -> list[ir.Value]:
    """The box coordinates innermost first, as TMA takes them (the op's offsets are outermost first)."""
    return [lw.get(v) for v in reversed(op.offsets)]


@lowers(ttng.TMALoadOp)
def lower_tma_load(lw, op) -> None:
    t = op.result.type
    block = (t.shape[1], t.shape[0]) if op.trans else tuple(t.shape)
    tile = _tile(lw, t.shape, t.element, op.swizzle, op.trans)
    mbar = _mbarrier(lw)
    phase = lw.entry_builder.alloca(I32)
    lw.entry_builder.store(ir.Constant(I32, 0), phase)
    b = lw.builder
    # the scratch's last readers are done, their reads ordered before the engine's write (a read by
    # `ldmatrix` may still be in flight when its thread reaches the barrier; the H200 gave a wrong
    # 2048^3 matmul at num_stages=1 when A's and B's loads shared this scratch without the fence)
    fence_async_shared(lw)
    lw.barrier_before_shared()
    with b.if_then(_first_thread(lw)):
        _issue(lw, op, tile.offset, mbar, block, t.element)
    parity = b.load(phase)
    _wait(lw, mbar, parity)
    b.store(b.xor(parity, ir.Constant(I32, 1)), phase)
    _read(lw, tile, op.result)


def box_copies(block: tuple[int, ...], element) -> list[tuple[int, int]]:
    """(column offset in elements, byte offset in the tile) of each TMA box that moves a `block`
    (rows x columns) tile: one per swizzle-wide column block (`tma_rules.tma_box`), one after
    another in shared memory as `#nvmma_shared` has them."""
    nbytes = byte_size(element)
    inner, _ = tma_box(block, nbytes)
    return [(c, c * block[0] * nbytes) for c in range(0, block[1], inner)]


def _issue(lw, op, offset: ir.Value, mbar: ir.Value, block: tuple[int, ...], element) -> None:
    """(Thread 0:) arm `mbar` with the block's bytes, then copy the block at `op.offsets` (of tensor
    map `op.desc`, which may be a kernel parameter or a global address) to the shared tile at byte
    `offset`, one box per column block."""
    b = lw.builder
    x, *outer = _coordinates(lw, op)
    lw.call_intrinsic(
        "llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta",
        I64,
        [mbar, ir.Constant(I32, block[0] * block[1] * byte_size(element))],
    )
    for column, byte_offset in box_copies(block, element):
        dst = lw.smem_ptr(lw.shared_base(), b.add(offset, ir.Constant(I32, byte_offset)))
        coords = [b.add(x, ir.Constant(I32, column)), *outer]
        lw.call_intrinsic(
            f"llvm.nvvm.cp.async.bulk.tensor.g2s.tile.{len(coords)}d",
            ir.VoidType(),
            [
                b.addrspacecast(dst, CLUSTER_PTR),
                mbar,
                lw.get(op.desc),
                *coords,
                ir.Constant(I16, 0),
                ir.Constant(I64, 0),
                ir.Constant(I1, 0),
                ir.Constant(I1, 0),
                ir.Constant(I32, 0),
            ],
        )


def _read(lw, tile: SharedTile, result) -> None:
    """The tile into `result`'s layout: `ldmatrix` for a 16-bit mma operand, else shared loads."""
    layout = lw.layout(result)
    enc = result.type.encoding
    if (
        isinstance(enc, DotOperandEncoding)
        and isinstance(enc.parent, MmaEncoding)
        and byte_size(result.type.element) == 2
    ):
        return lw.set(result, TVal(_ldmatrix_operand(lw, tile, enc, layout), layout))
    lw.set(result, TVal(_load_elements(lw, tile, layout), layout))


def _wait(lw, mbar: ir.Value, parity: ir.Value) -> None:
    """Spin until the mbarrier's phase `parity` has completed."""
    b = lw.builder
    spin = lw.function.append_basic_block("tma_wait")
    done = lw.function.append_basic_block("tma_ready")
    b.branch(spin)
    b.position_at_end(spin)
    ok = lw.call_intrinsic(
        "llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta", I1, [mbar, parity]
    )
    b.cbranch(ok, done, spin)
    b.position_at_end(done)


@lowers(ttng.TMAFallbackOp)
def lower_tma_fallback(lw, op) -> None:
    """A marker for the reader of the IR: the pointer loads or stores after it do the work."""


def _staging_tile(lw, op) -> SharedTile:
    """The tile a TMA store writes: over the rings where they are dead (`alloc_offsets`, placed by
    `assign_shared_offsets`), else the scratch."""
    t = op.value.type
    if id(op) not in lw.alloc_offsets:
        return _tile(lw, t.shape, t.element, op.swizzle)
    offset = lw.entry_builder.add(_align_up(lw), ir.Constant(I32, lw.alloc_offsets[id(op)]))
    encoding = tma_shared_encoding(op.swizzle, byte_size(t.element))
    return SharedTile(offset, MemDescType(tuple(t.shape), t.element, encoding))


@lowers(ttng.TMAStoreOp)
def lower_tma_store(lw, op) -> None:
    t = op.value.type
    tile = _staging_tile(lw, op)
    b = lw.builder
    over_rings = id(op) in lw.reused_allocs
    if over_rings:
        # over the rings (passes/shared_reuse.py): their copies are awaited and the wgmmas that read
        # them retired, in this thread; the engine's and wgmma's accesses are ordered before these
        # writes, and (the barrier) every thread is done with the rings before any thread writes
        fence_async_shared(lw)
    # deferred: the issuing thread's `tma_store_wait` (the engine has read the tile's last contents)
    # comes before every thread's writes
    lw.barrier_before_shared(always=over_rings or op.deferred)
    _store_tile(lw, lw.get(op.value), tile)
    # the engine reads through the async proxy: each writer fences its own writes, then a barrier
    lw.call_intrinsic("llvm.nvvm.fence.proxy.async.shared_cta", ir.VoidType(), [])
    lw.barrier()
    x, *outer = _coordinates(lw, op)
    with b.if_then(_first_thread(lw)):
        for column, byte_offset in box_copies(tuple(t.shape), t.element):
            src = lw.smem_ptr(lw.shared_base(), b.add(tile.offset, ir.Constant(I32, byte_offset)))
            coords = [b.add(x, ir.Constant(I32, column)), *outer]
            lw.call_intrinsic(
                f"llvm.nvvm.cp.async.bulk.tensor.s2g.tile.{len(coords)}d",
                ir.VoidType(),
                [src, lw.get(op.desc), *coords, ir.Constant(I64, 0), ir.Constant(I1, 0)],
            )
        lw.call_intrinsic("llvm.nvvm.cp.async.bulk.commit.group", ir.VoidType(), [])
        if not op.deferred:  # (deferred: a `tma_store_wait` before the tile's next write)
            _wait_store_read(lw)


@lowers(ttng.TMAStoreWaitOp)
def lower_tma_store_wait(lw, op) -> None:
    with lw.builder.if_then(_first_thread(lw)):
        _wait_store_read(lw)


def _wait_store_read(lw) -> None:
    """(The issuing thread:) the engine has read every staging tile this thread's stores copy from, so
    they may be written again (the next use's barrier waits for this thread)."""
    lw.call_intrinsic(
        "llvm.nvvm.cp.async.bulk.wait.group.read", ir.VoidType(), [ir.Constant(I32, 0)]
    )


# -- the ring of a pipelined loop (passes/tma_pipeline.py) ----------------------------------------------


@dataclass
class _Ring:
    """A lowered `ttng.tma_ring`: slot 0's tile, the slots' mbarriers (8 bytes apart) and the phase
    bits of the slots (bit s flips at each wait on slot s); with `releases`, the slots' release
    mbarriers and the producer's phase bits of them (all ones first: a slot starts free)."""

    tile: SharedTile
    mbarriers: ir.Value
    phases: ir.Value
    slot_bytes: int
    released: ir.Value | None = None
    release_phases: ir.Value | None = None


@lowers(ttng.TMARingOp)
def lower_tma_ring(lw, op) -> None:
    t = op.result.type
    offset = lw.entry_builder.add(_align_up(lw), ir.Constant(I32, lw.alloc_offsets[id(op)]))
    slot = MemDescType(t.shape[1:], t.element, t.encoding)
    mbarriers = _slot_barriers(lw, t.shape[0], 1)
    phases = lw.entry_builder.alloca(I32)
    lw.entry_builder.store(ir.Constant(I32, 0), phases)
    ring = _Ring(SharedTile(offset, slot), mbarriers, phases, slot.numel * byte_size(t.element))
    if op.releases:
        ring.released = _slot_barriers(lw, t.shape[0], op.releases)
        ring.release_phases = lw.entry_builder.alloca(I32)
        lw.entry_builder.store(ir.Constant(I32, -1), ring.release_phases)
    lw.set(op.result, ring)


def _slot_barriers(lw, slots: int, count: int) -> ir.Value:
    """`slots` mbarriers, 8 bytes apart, that `count` arrivals complete (the prologue inits them)."""
    mbarriers = lw.private_shared_memory(8 * slots)
    if not hasattr(lw, "tma_mbarriers"):
        lw.tma_mbarriers = []
    lw.tma_mbarriers += [
        (lw.entry_builder.gep(mbarriers, [ir.Constant(I32, 8 * s)], source_etype=I8), count)
        for s in range(slots)
    ]
    return mbarriers


def _slot(lw, ring: _Ring, slot: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(the slot's byte offset, its mbarrier)."""
    b = lw.builder
    offset = b.add(ring.tile.offset, b.mul(slot, ir.Constant(I32, ring.slot_bytes)))
    mbar = b.gep(ring.mbarriers, [b.mul(slot, ir.Constant(I32, 8))], source_etype=I8)
    return offset, mbar


@lowers(ttng.TMACopyOp)
def lower_tma_copy(lw, op) -> None:
    ring = lw.get(op.ring)
    block = op.parent.ops
    previous = block[block.index(op) - 1] if block.index(op) else None
    if op.after_release:  # a producer's copy: once the consumers have released the slot
        b = lw.builder
        offset, mbar = _slot(lw, ring, lw.get(op.slot))
        slot = op.ring.type
        with b.if_then(b.and_(_first_thread(lw), lw.get(op.pred))):
            _wait_released(lw, ring, lw.get(op.slot))
            _issue(lw, op, offset, mbar, tuple(slot.shape[1:]), slot.element)
        return
    if not isinstance(previous, ttng.TMACopyOp):  # one barrier for a run of copies
        # the reads by threads (generic proxy) before the engine's writes: of the slots, or of a
        # staging tile that lay over them in the previous iteration of a tile loop
        if op.thread_reads or lw.threads_over_tma_rings:
            fence_async_shared(lw)
        lw.barrier()  # every thread is done reading the slots these copies overwrite
    b = lw.builder
    offset, mbar = _slot(lw, ring, lw.get(op.slot))
    slot = op.ring.type
    with b.if_then(b.and_(_first_thread(lw), lw.get(op.pred))):
        _issue(lw, op, offset, mbar, tuple(slot.shape[1:]), slot.element)


def _release_barrier(lw, ring: _Ring, slot: ir.Value) -> ir.Value:
    b = lw.builder
    return b.gep(ring.released, [b.mul(slot, ir.Constant(I32, 8))], source_etype=I8)


def _wait_released(lw, ring: _Ring, slot: ir.Value) -> None:
    """(The producer:) wait for the next phase of the slot's release mbarrier; the first wait on a
    slot passes at once (parity 1 of a fresh barrier: its phase before the first)."""
    b = lw.builder
    phases = b.load(ring.release_phases)
    _wait(lw, _release_barrier(lw, ring, slot), b.and_(b.lshr(phases, slot), ir.Constant(I32, 1)))
    b.store(b.xor(phases, b.shl(ir.Constant(I32, 1), slot)), ring.release_phases)


@lowers(ttng.TMAReleaseOp)
def lower_tma_release(lw, op) -> None:
    """One thread per consumer warp group arrives on the slot's release mbarrier: the group's wgmma
    reads of the slot are retired (its `wgmma.wait_group` came first)."""
    ring = lw.get(op.ring)
    b = lw.builder
    group_first = b.icmp_unsigned(
        "==", b.and_(lw.sreg("tid.x"), ir.Constant(I32, 127)), ir.Constant(I32, 0)
    )
    with b.if_then(b.and_(group_first, lw.get(op.pred))):
        lw.call_intrinsic(
            "llvm.nvvm.mbarrier.arrive.shared", I64, [_release_barrier(lw, ring, lw.get(op.slot))]
        )


def _wait_slot(lw, op) -> ir.Value:
    """Wait for the next phase of slot `op.slot`'s mbarrier; returns the slot's byte offset."""
    ring = lw.get(op.ring)
    b = lw.builder
    slot = lw.get(op.slot)
    offset, mbar = _slot(lw, ring, slot)
    phases = b.load(ring.phases)
    _wait(lw, mbar, b.and_(b.lshr(phases, slot), ir.Constant(I32, 1)))
    b.store(b.xor(phases, b.shl(ir.Constant(I32, 1), slot)), ring.phases)
    return offset


@lowers(ttng.TMAWaitReadOp)
def lower_tma_wait_read(lw, op) -> None:
    offset = _wait_slot(lw, op)
    t = op.result.type
    view = MemDescType(
        tuple(t.shape),
        t.element,
        tma_shared_encoding(_swizzle_of(op.ring.type), byte_size(t.element), op.trans),
    )
    _read(lw, SharedTile(offset, view), op.result)


@lowers(ttng.TMAWaitOp)
def lower_tma_wait(lw, op) -> None:
    lw.set(op.result, SharedTile(_wait_slot(lw, op), op.result.type))


def _swizzle_of(t: MemDescType) -> int:
    """The swizzle span (bytes) of a TMA tile's `#shared` layout."""
    enc = t.encoding
    return enc.swizzle_bytes if isinstance(enc, NvmmaSharedEncoding) else 0
