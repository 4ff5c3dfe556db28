"""The `ttng` dialect (Triton's TritonNvidiaGPU): tensor-descriptor copies by the TMA engine of sm_90+.

The descriptor pass (passes/descriptors.py) makes these from the target-neutral `tt.descriptor_*`
ops, for host descriptors that take a tensor map and for descriptors made in the kernel whose tensor
map the kernel builds in global scratch (`ttng.global_scratch` + `ttng.tensormap_create`); every
other descriptor access becomes plain pointer loads and stores. The NVPTX lowering
(`lowering/tma.py`) moves the box through a shared tile swizzled as `swizzle` says, completing on an
mbarrier (loads) or a bulk group (stores).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..values import Region, Value
from .base import Op, attribute, operand, operands, region


@dataclass(eq=False)
class TMALoadOp(Op, name="ttng.tma_load"):
    """The box at `offsets` (elements, outermost dimension first) of the tensor that the tensor map
    `desc` describes; positions outside it read as zero (`padding` "zero") or NaN ("nan")."""

    desc: Value = operand()
    offsets: list[Value] = operands()
    padding: str = attribute("zero")
    swizzle: int = attribute(0)  # bytes: 0, 32, 64 or 128 (tma_rules.swizzle_bytes)
    trans: bool = attribute(False)  # the result is the box transposed (passes/tma.py)


@dataclass(eq=False)
class TMAStoreOp(Op, name="ttng.tma_store"):
    """Writes the tile `value` as the box at `offsets` of the tensor map `desc`'s tensor; positions
    outside the tensor are not written."""

    desc: Value = operand()
    value: Value = operand()
    offsets: list[Value] = operands()
    swizzle: int = attribute(0)
    # the staging tile is its own (not over rings, not the scratch) and the engine's read of it is
    # awaited by a `ttng.tma_store_wait` before the tile is written again, not right after the copy
    # (passes/prefetch_tiles.py: the next tile's main loop runs meanwhile)
    deferred: bool = attribute(False)


@dataclass(eq=False)
class TMAStoreWaitOp(Op, name="ttng.tma_store_wait"):
    """The issuing thread waits until the copy engine has read the staging tiles of every earlier
    `deferred` TMA store (`cp.async.bulk.wait_group.read 0`): before such a tile is written again,
    and before the program exits (its shared memory goes with it)."""


# -- the num_stages ring of TMA loads in a loop (passes/tma_pipeline.py) --------------------------------


@dataclass(eq=False)
class TMARingOp(Op, name="ttng.tma_ring"):
    """A ring of `!ttg.memdesc<S x box>` shared slots that TMA fills, with one mbarrier per slot.
    `releases` > 0 (warp specialization): each slot has a second mbarrier, which that many arrivals
    (`ttng.tma_release`, one per consumer warp group) complete once the slot's readers are done."""

    releases: int = attribute(0)


@dataclass(eq=False)
class TMACopyOp(Op, name="ttng.tma_copy"):
    """Thread 0 arms slot `slot`'s mbarrier and copies the box at `offsets` of tensor map `desc` into
    the slot; nothing when `pred` is false (an iteration past the loop's end). The slot's last readers
    are done first (a barrier); `thread_reads`: threads read the slots (`tma_wait_read`), so each
    first orders its reads before the engine's write (`fence.proxy.async`)."""

    desc: Value = operand()
    ring: Value = operand()
    slot: Value = operand()
    pred: Value = operand()
    offsets: list[Value] = operands()
    thread_reads: bool = attribute(False)
    # in a producer warp group (`ttng.warp_specialize`): wait until the consumers have released the
    # slot (`ttng.tma_release`) instead of a barrier of every thread
    after_release: bool = attribute(False)


@dataclass(eq=False)
class TMAWaitReadOp(Op, name="ttng.tma_wait_read"):
    """Waits for slot `slot`'s copy (the next phase of its mbarrier), then reads the tile into the
    result's layout (transposed where `trans`)."""

    ring: Value = operand()
    slot: Value = operand()
    trans: bool = attribute(False)


@dataclass(eq=False)
class TMAReleaseOp(Op, name="ttng.tma_release"):
    """The consumer warp groups are done with slot `slot` of `ring` (its wgmma reads retired): one
    thread of each arrives on the slot's release mbarrier, when `pred`, so the producer may refill it."""

    ring: Value = operand()
    slot: Value = operand()
    pred: Value = operand()


@dataclass(eq=False)
class WarpSpecializeOp(Op, name="ttng.warp_specialize"):
    """Warp specialization (`tl.range(..., warp_specialize=True)`, passes/warp_specialize.py): the
    program gets `producer_warps` more warps, which run `producer` (the loop's TMA copies, each after
    its slot is released) and exit; the kernel's `num_warps` warps run the rest of the function, the
    consumers, with the registers the producers give up (`setmaxnreg`). First in the function."""

    producer: Region = region()
    producer_warps: int = attribute(4)


@dataclass(eq=False)
class WarpSpecializeNoteOp(Op, name="ttng.warp_specialize_note"):
    """A loop asked for warp specialization and runs without it; `reason` says why (lowers to
    nothing, for the reader of the IR)."""

    reason: str = attribute("")


@dataclass(eq=False)
class TMAFallbackOp(Op, name="ttng.tma_fallback"):
    """Marks a descriptor access on a TMA target that takes the pointer lowering instead, and why
    (the plain loads or stores follow it); lowers to nothing."""

    reason: str = attribute("")


@dataclass(eq=False)
class TMAWaitOp(Op, name="ttng.tma_wait"):
    """Waits for slot `slot`'s copy (the next phase of its mbarrier) and gives the slot itself, a
    `!ttg.memdesc` (transposed where `trans`) that wgmma reads by descriptor: no copy out of it."""

    ring: Value = operand()
    slot: Value = operand()
    trans: bool = attribute(False)


# -- tensor maps built in the kernel (passes/descriptors.py, lowering/tensormap_device.py) --------


@dataclass(eq=False)
class GlobalScratchOp(Op, name="ttng.global_scratch"):
    """This program's `nbytes` of the launch's global scratch (Triton's `set_allocator` memory), at
    an offset aligned to `align`: a `!tt.ptr<i8>`. Each op has its own bytes; the kernel's metadata
    says how many bytes a program needs, and the launcher asks the allocator for them."""

    nbytes: int = attribute(128)
    align: int = attribute(128)


@dataclass(eq=False)
class TensormapCreateOp(Op, name="ttng.tensormap_create"):
    """Writes at `desc_ptr` (128 bytes of global scratch) the CUtensorMap of a tiled box copy of the
    tensor at `base`: `shape` (elements, outermost first), `strides` (elements, every dimension but
    the innermost, whose stride is 1), a box of `box` (outermost first), element type `elem_type`
    (the PTX `tensormap.replace` code), `swizzle` (bytes: 0, 32, 64 or 128) and `fill` ("zero" or
    "nan"). The result is the map's address, made visible to the TMA engine (the proxy fences), which
    `ttng.tma_load` / `ttng.tma_store` take as their `desc`."""

    desc_ptr: Value = operand()
    base: Value = operand()
    shape: list[Value] = operands()
    strides: list[Value] = operands()
    box: tuple = attribute(())
    elem_type: int = attribute(0)
    swizzle: int = attribute(0)
    fill: str = attribute("zero")
