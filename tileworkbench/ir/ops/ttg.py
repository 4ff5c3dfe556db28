"""The `ttg` dialect: GPU layout encodings (blocked, slice, mma, dot-operand, shared) and the ops that
move tiles between them (`ttg.convert_layout`, `ttg.local_alloc`, `ttg.local_load`).

An encoding says which thread holds which element of a tensor. Every encoding turns, for a given
shape and warp count, into a `LinearLayout`: the coordinates of an element are the sum of basis
vectors picked by the bits of (register index, lane id, warp id). All sizes are powers of two, so the
bases of one dimension are distinct powers of two and the sum never carries: this is what lets the
NVPTX lowering compute addresses as "per-thread part + per-register constant".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..types import MemDescType
from ..values import Value
from .base import Op, attribute, operand

WARP_SIZE = 32


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _fmt(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


@dataclass(frozen=True)
class LinearLayout:
    """Basis vectors for the register, lane and warp bits of an element's coordinates.

    Register bases are all nonzero (a thread holds no duplicate); a zero lane or warp basis means that
    lanes (warps) differing in that bit hold the same elements (broadcast)."""

    shape: tuple[int, ...]
    regs: tuple[tuple[int, ...], ...]
    lanes: tuple[tuple[int, ...], ...]
    warps: tuple[tuple[int, ...], ...]

    @property
    def num_regs(self) -> int:
        return 1 << len(self.regs)

    def reg_coords(self, r: int) -> tuple[int, ...]:
        """The constant (per-register) part of the coordinates of register `r`."""
        coords = [0] * len(self.shape)
        for bit, basis in enumerate(self.regs):
            if r >> bit & 1:
                coords = [c + b for c, b in zip(coords, basis)]
        return tuple(coords)

    def all_reg_coords(self) -> list[tuple[int, ...]]:
        return [self.reg_coords(r) for r in range(self.num_regs)]

    def same_threads(self, other: LinearLayout) -> bool:
        return self.lanes == other.lanes and self.warps == other.warps

    def drop_dim(self, dim: int) -> LinearLayout:
        """The layout with coordinate `dim` removed (bases along it become zero)."""

        def drop(b):
            return b[:dim] + b[dim + 1 :]

        regs = tuple(drop(b) for b in self.regs if any(drop(b)))
        return LinearLayout(
            drop(self.shape), regs, tuple(map(drop, self.lanes)), tuple(map(drop, self.warps))
        )


def _unit(rank: int, dim: int, value: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """`value` along `dim` reduced modulo the dimension (wrapping layouts duplicate elements)."""
    v = [0] * rank
    v[dim] = value % shape[dim] if value < shape[dim] else 0
    return tuple(v)


@dataclass(frozen=True)
class BlockedEncoding:
    """Each thread holds `size_per_thread` contiguous elements per dimension; `threads_per_warp` lanes
    and `warps_per_cta` warps tile the tensor, fastest dimension first in `order`; the tile repeats (or
    wraps, duplicating elements) to cover the shape."""

    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]

    def __str__(self) -> str:
        return (
            f"#blocked<{{sizePerThread={_fmt(self.size_per_thread)}, threadsPerWarp="
            f"{_fmt(self.threads_per_warp)}, warpsPerCTA={_fmt(self.warps_per_cta)}, "
            f"order={_fmt(self.order)}}}>"
        )

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def num_warps(self) -> int:
        n = 1
        for w in self.warps_per_cta:
            n *= w
        return n

    def linear(self, shape: tuple[int, ...]) -> LinearLayout:
        rank = len(shape)
        spt, tpw, wpc = self.size_per_thread, self.threads_per_warp, self.warps_per_cta
        regs, reps, lanes, warps = [], [], [], []
        for d in self.order:
            regs += [_unit(rank, d, 1 << k, shape) for k in range(_log2(spt[d]))]
            lanes += [_unit(rank, d, spt[d] << k, shape) for k in range(_log2(tpw[d]))]
            warps += [_unit(rank, d, spt[d] * tpw[d] << k, shape) for k in range(_log2(wpc[d]))]
            tile = spt[d] * tpw[d] * wpc[d]
            reps += [
                _unit(rank, d, tile << k, shape) for k in range(_log2(max(1, shape[d] // tile)))
            ]
        regs = tuple(b for b in regs + reps if any(b))
        return LinearLayout(tuple(shape), regs, tuple(lanes), tuple(warps))


@dataclass(frozen=True)
class SliceEncoding:
    """The layout of a tensor that is `parent` with dimension `dim` removed (reductions, expand_dims)."""

    dim: int
    parent: object

    def __str__(self) -> str:
        return f"#slice<{{dim={self.dim}, parent={self.parent}}}>"

    def linear(self, shape: tuple[int, ...]) -> LinearLayout:
        parent_shape = tuple(shape[: self.dim]) + (1,) + tuple(shape[self.dim :])
        return self.parent.linear(parent_shape).drop_dim(self.dim)


@dataclass(frozen=True)
class MmaEncoding:
    """The result layout of tensor-core `mma.sync` (version 2): each warp computes 16x8 tiles of the
    output (`instr_shape`), a lane holding two adjacent columns of row g and g+8 (g = lane / 4, the
    columns 2 * (lane % 4)); `warps_per_cta` warps tile M and N; the warp tile repeats over the shape.
    The last two dimensions are M and N; a leading batch dimension is repeated per thread.

    Version 3 is Hopper's warp-group `wgmma` (`instr_shape` = (16, N, K) per warp, m64nNkK per group
    of 4 consecutive warps): a warp holds mma v2's C fragment repeated over the instruction's N / 8
    column blocks; the first 4 warps (one warp group) stack along M, 16 rows each, then further
    warps (`warps_per_cta` = (4 * groups along M, groups along N)) tile M and N by whole groups."""

    version: int
    warps_per_cta: tuple[int, ...]
    instr_shape: tuple[int, ...] = (16, 8)

    def __str__(self) -> str:
        return (
            f"#mma<{{versionMajor={self.version}, versionMinor=0, warpsPerCTA="
            f"{_fmt(self.warps_per_cta)}, instrShape={_fmt(self.instr_shape)}}}>"
        )

    @property
    def num_warps(self) -> int:
        n = 1
        for w in self.warps_per_cta:
            n *= w
        return n

    def warp_bases(self) -> list[tuple[int, int]]:
        """(dimension, stride) per warp-id bit, low bit first: N's warps, then M's (row-major warps);
        version 3: M's first, so warps 4g..4g+3 form warp group g."""
        rank = len(self.warps_per_cta)
        m, n = rank - 2, rank - 1
        on_n = [(n, self.instr_shape[1] << k) for k in range(_log2(self.warps_per_cta[n]))]
        on_m = [(m, self.instr_shape[0] << k) for k in range(_log2(self.warps_per_cta[m]))]
        return on_m + on_n if self.version == 3 else on_n + on_m

    def linear(self, shape: tuple[int, ...]) -> LinearLayout:
        rank = len(shape)
        m, n = rank - 2, rank - 1

        def u(dim, value):
            return _unit(rank, dim, value, shape)

        regs = [u(n, 1), u(m, 8)]
        # version 3: a warp's 16 x N of the instruction is N / 8 such 16 x 8 blocks side by side
        regs += [u(n, 8 << k) for k in range(_log2(self.instr_shape[1] // 8))]
        lanes = (u(n, 2), u(n, 4), u(m, 1), u(m, 2), u(m, 4))
        warps = tuple(u(d, s) for d, s in self.warp_bases())
        tile_m = 16 * self.warps_per_cta[m]
        tile_n = self.instr_shape[1] * self.warps_per_cta[n]
        regs += [u(n, tile_n << k) for k in range(_log2(max(1, shape[n] // tile_n)))]
        regs += [u(m, tile_m << k) for k in range(_log2(max(1, shape[m] // tile_m)))]
        for d in range(rank - 2):
            regs += [u(d, 1 << k) for k in range(_log2(shape[d]))]
        return LinearLayout(tuple(shape), tuple(b for b in regs if any(b)), lanes, warps)


@dataclass(frozen=True)
class DotOperandEncoding:
    """A `tt.dot` operand (op 0: A, M x K; op 1: B, K x N) for the result layout `parent`.

    With a blocked parent (CUDA-core FMA dot): rows or columns as the parent holds them, with the
    whole K dimension in each thread's registers. With an `#mma` parent: the register fragments of
    `mma.sync`, `k_width` consecutive K elements per 32-bit register (2 for 16-bit types, 4 for
    8-bit, 1 for tf32): for A, lane holds rows g, g+8 and K columns kw*(lane % 4) + (0, 4kw); for
    B, column g and the same K rows. Warps along the other operand's dimension hold copies."""

    op_idx: int
    parent: object
    k_width: int = 0

    def __str__(self) -> str:
        k_width = f", kWidth={self.k_width}" if self.k_width else ""
        return f"#dot_op<{{opIdx={self.op_idx}, parent={self.parent}{k_width}}}>"

    def linear(self, shape: tuple[int, ...]) -> LinearLayout:
        if isinstance(self.parent, MmaEncoding):
            return self._mma_linear(tuple(shape))
        rank = len(shape)
        k_dim = rank - 1 if self.op_idx == 0 else rank - 2
        parent_shape = tuple(1 if d == k_dim else s for d, s in enumerate(shape))
        base = self.parent.linear(parent_shape)
        k_regs = tuple(_unit(rank, k_dim, 1 << k, shape) for k in range(_log2(shape[k_dim])))
        return LinearLayout(tuple(shape), k_regs + base.regs, base.lanes, base.warps)

    def _mma_linear(self, shape: tuple[int, ...]) -> LinearLayout:
        rank = len(shape)
        kw = self.k_width
        k = rank - 1 if self.op_idx == 0 else rank - 2
        other = rank - 2 if self.op_idx == 0 else rank - 1  # M for A, N for B
        parent_other = rank - 2 if self.op_idx == 0 else rank - 1

        def u(dim, value):
            return _unit(rank, dim, value, shape)

        regs = [u(k, 1 << j) for j in range(_log2(kw))]
        if self.op_idx == 0:
            regs.append(u(other, 8))
        regs.append(u(k, 4 * kw))
        lanes = (u(k, kw), u(k, 2 * kw), u(other, 1), u(other, 2), u(other, 4))
        warps = tuple(
            u(other, s) if d == parent_other else tuple([0] * rank)
            for d, s in self.parent.warp_bases()
        )
        warp_other = 16 if self.op_idx == 0 else self.parent.instr_shape[1]
        regs += [u(other, 8 << j) for j in range(_log2(warp_other // 8)) if self.op_idx == 1]
        tile_other = warp_other * self.parent.warps_per_cta[parent_other]
        regs += [u(k, 8 * kw << j) for j in range(_log2(max(1, shape[k] // (8 * kw))))]
        regs += [
            u(other, tile_other << j) for j in range(_log2(max(1, shape[other] // tile_other)))
        ]
        for d in range(rank - 2):
            regs += [u(d, 1 << j) for j in range(_log2(shape[d]))]
        return LinearLayout(tuple(shape), tuple(b for b in regs if any(b)), lanes, warps)


@dataclass(frozen=True)
class SharedEncoding:
    """A tile in shared memory, rows along `order[0]` contiguous, with Triton's XOR swizzle: the
    `vec`-element chunk index of row r is XORed with (r // per_phase) % max_phase, so that the
    8 rows one `ldmatrix` reads fall in 8 different 16-byte bank groups."""

    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, ...]

    def __str__(self) -> str:
        return (
            f"#shared<{{vec={self.vec}, perPhase={self.per_phase}, maxPhase={self.max_phase}, "
            f"order={_fmt(self.order)}}}>"
        )


@dataclass(frozen=True)
class NvmmaSharedEncoding:
    """A `wgmma` operand tile in shared memory in the tensor core's canonical swizzled form (Triton's
    NVMMA shared layout; also TMA's SWIZZLE_128B/64B/32B): the `order[0]` dimension is contiguous in
    rows of `swizzle_bytes` (the tile split into column blocks of that width, each block's rows
    dense), and the 16-byte chunks of row r are XORed with (r // (128 / swizzle_bytes)) %
    (swizzle_bytes / 16), which is the hardware's XOR of address bits 4-6 with bits 7-9 when the tile
    starts on a 1024-byte boundary. `transposed`: the first dimension is the contiguous one."""

    swizzle_bytes: int
    element_bits: int
    order: tuple[int, ...]

    def __str__(self) -> str:
        transposed = "true" if self.transposed else "false"
        return (
            f"#nvmma_shared<{{swizzlingByteWidth={self.swizzle_bytes}, transposed={transposed}, "
            f"elementBitWidth={self.element_bits}}}>"
        )

    @property
    def transposed(self) -> bool:
        return self.order[0] != len(self.order) - 1

    @property
    def vec(self) -> int:
        """Elements per 16-byte chunk (the unit the swizzle moves)."""
        return max(1, 128 // self.element_bits)

    @property
    def per_phase(self) -> int:
        return 128 // self.swizzle_bytes

    @property
    def max_phase(self) -> int:
        return self.swizzle_bytes // 16

    @property
    def row_elements(self) -> int:
        """Elements of one swizzled row (a column block's width)."""
        return self.swizzle_bytes * 8 // self.element_bits


def linear_layout(encoding, shape: tuple[int, ...]) -> LinearLayout:
    return encoding.linear(tuple(shape))


def blocked_for(
    shape: tuple[int, ...], num_warps: int, vec: int = 1, order: tuple[int, ...] | None = None
) -> BlockedEncoding:
    """A blocked layout for `shape`: `vec` contiguous elements per thread along the fastest dimension,
    then lanes and warps along dimensions in `order`; lanes or warps left over wrap (duplicate)."""
    rank = len(shape)
    order = tuple(order) if order is not None else tuple(range(rank - 1, -1, -1))
    spt = [1] * rank
    spt[order[0]] = max(1, min(vec, shape[order[0]]))
    tpw, wpc = [1] * rank, [1] * rank
    lanes_left, warps_left = WARP_SIZE, num_warps
    for d in order:
        room = max(1, shape[d] // spt[d])
        tpw[d] = min(room, lanes_left)
        lanes_left //= tpw[d]
    tpw[order[-1]] *= lanes_left
    for d in order:
        room = max(1, shape[d] // (spt[d] * tpw[d]))
        wpc[d] = min(room, warps_left)
        warps_left //= wpc[d]
    wpc[order[-1]] *= warps_left
    return BlockedEncoding(tuple(spt), tuple(tpw), tuple(wpc), order)


def one_thread_blocked(
    shape: tuple[int, ...], order: tuple[int, ...] | None = None
) -> BlockedEncoding:
    """A blocked layout that gives one thread every element (the cpu target's): `size_per_thread` is the
    shape, so every lane basis wraps to zero (lanes are copies) and one warp is the whole program."""
    rank = len(shape)
    order = tuple(order) if order is not None else tuple(range(rank - 1, -1, -1))
    tpw = [1] * rank
    tpw[order[-1]] = WARP_SIZE
    return BlockedEncoding(tuple(shape), tuple(tpw), (1,) * rank, order)


def layout_chooser(one_thread: bool) -> object:
    """`blocked_for`, or `one_thread_blocked` on a one-thread target (the cpu's)."""
    if one_thread:
        return lambda shape, num_warps, vec=1, order=None: one_thread_blocked(shape, order)
    return blocked_for


@dataclass(eq=False)
class ConvertLayoutOp(Op, name="ttg.convert_layout", pure=True):
    """The same tensor in another layout (through shared memory where threads must exchange data)."""

    src: Value = operand()


@dataclass(eq=False)
class LocalAllocOp(Op, name="ttg.local_alloc"):
    """A shared-memory buffer (`!ttg.memdesc`), written with `src` when given: a dot operand staged for
    `ldmatrix`, or (no `src`) a ring of `num_stages` slots that async copies fill."""

    src: Value | None = operand(optional=True)


@dataclass(eq=False)
class LocalLoadOp(Op, name="ttg.local_load", pure=True):
    """The tile in shared memory read into registers in the result's layout (`ldmatrix` for the
    16-bit `#dot_op` fragments of `mma.sync`)."""

    src: Value = operand()


@dataclass(eq=False)
class MemDescIndexOp(Op, name="ttg.memdesc_index", pure=True):
    """Slot `index` of a ring buffer: the memdesc without its leading dimension."""

    src: Value = operand()
    index: Value = operand()


@dataclass(eq=False)
class MemDescTransOp(Op, name="ttg.memdesc_trans", pure=True):
    """The tile read with its dimensions permuted (result dim i is source dim `order[i]`): the same
    bytes, its layout's `order` permuted alike (`trans_memdesc`); `tl.trans` of a staged operand."""

    src: Value = operand()
    order: tuple = attribute()


def trans_memdesc(t, order: tuple[int, ...]):
    """The `!ttg.memdesc` type of `t` read through `ttg.memdesc_trans {order}`: the shape permuted,
    and the same dimension still contiguous (the layout's `order` renamed to the new dimensions)."""
    shape = tuple(t.shape[d] for d in order)
    enc = replace(t.encoding, order=tuple(order.index(d) for d in t.encoding.order))
    return MemDescType(shape, t.element, enc)


@dataclass(eq=False)
class AsyncCopyGlobalToLocalOp(Op, name="ttg.async_copy_global_to_local"):
    """`cp.async` of the tile at `ptr` into the shared slot `dst`; lanes where `mask` is false (or
    `pred`, the whole copy, is false) fill zeros and read nothing."""

    ptr: Value = operand()
    dst: Value = operand()
    mask: Value | None = operand(optional=True)
    pred: Value | None = operand(optional=True)


@dataclass(eq=False)
class AsyncCommitGroupOp(Op, name="ttg.async_commit_group"):
    """Closes the group of async copies issued since the last commit."""


@dataclass(eq=False)
class AsyncWaitOp(Op, name="ttg.async_wait"):
    """Waits until at most `num` committed groups are still in flight, then a barrier, so the slots
    they filled are visible to every thread of the program."""

    num: int = attribute(0)
    # the slots feed `wgmma` (the async proxy): `fence.proxy.async.shared::cta` before the barrier
    fence_async: bool = attribute(False)
