"""The `ttg` dialect: GPU layout encodings (blocked, slice, dot-operand) and `ttg.convert_layout`.

An encoding says which thread holds which element of a tensor. Every encoding turns, for a given
shape and warp count, into a `LinearLayout`: the coordinates of an element are the sum of basis
vectors picked by the bits of (register index, lane id, warp id). All sizes are powers of two, so the
bases of one dimension are distinct powers of two and the sum never carries: this is what lets the
NVPTX lowering compute addresses as "per-thread part + per-register constant".
"""

from __future__ import annotations

from dataclasses import dataclass

from ..values import Value
from .base import Op, operand

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
            return b[:dim] + b[dim + 1:]
        regs = tuple(drop(b) for b in self.regs if any(drop(b)))
        return LinearLayout(drop(self.shape), regs, tuple(map(drop, self.lanes)),
                            tuple(map(drop, self.warps)))


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
        return (f"#blocked<{{sizePerThread={_fmt(self.size_per_thread)}, threadsPerWarp="
                f"{_fmt(self.threads_per_warp)}, warpsPerCTA={_fmt(self.warps_per_cta)}, "
                f"order={_fmt(self.order)}}}>")

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
            reps += [_unit(rank, d, tile << k, shape) for k in range(_log2(max(1, shape[d] // tile)))]
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
        parent_shape = tuple(shape[:self.dim]) + (1,) + tuple(shape[self.dim:])
        return self.parent.linear(parent_shape).drop_dim(self.dim)


@dataclass(frozen=True)
class DotOperandEncoding:
    """An FMA `tt.dot` operand: rows (op 0) or columns (op 1) as the `parent` result layout holds them,
    with the whole K dimension in each thread's registers."""

    op_idx: int
    parent: object

    def __str__(self) -> str:
        return f"#dot_op<{{opIdx={self.op_idx}, parent={self.parent}}}>"

    def linear(self, shape: tuple[int, ...]) -> LinearLayout:
        rank = len(shape)
        k_dim = rank - 1 if self.op_idx == 0 else rank - 2
        parent_shape = tuple(1 if d == k_dim else s for d, s in enumerate(shape))
        base = self.parent.linear(parent_shape)
        k_regs = tuple(_unit(rank, k_dim, 1 << k, shape) for k in range(_log2(shape[k_dim])))
        return LinearLayout(tuple(shape), k_regs + base.regs, base.lanes, base.warps)


def linear_layout(encoding, shape: tuple[int, ...]) -> LinearLayout:
    return encoding.linear(tuple(shape))


def blocked_for(shape: tuple[int, ...], num_warps: int, vec: int = 1,
                order: tuple[int, ...] | None = None) -> BlockedEncoding:
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


def one_thread_blocked(shape: tuple[int, ...], order: tuple[int, ...] | None = None) -> BlockedEncoding:
    """A blocked layout that gives one thread every element (the cpu target's): `size_per_thread` is the
    shape, so every lane basis wraps to zero (lanes are copies) and one warp is the whole program."""
    rank = len(shape)
    order = tuple(order) if order is not None else tuple(range(rank - 1, -1, -1))
    tpw = [1] * rank
    tpw[order[-1]] = WARP_SIZE
    return BlockedEncoding(tuple(shape), tuple(tpw), (1,) * rank, order)


def layout_chooser(func) -> object:
    """`blocked_for`, or `one_thread_blocked` for a kernel the cpu backend marked `one_thread`."""
    if getattr(func, "one_thread", False):
        return lambda shape, num_warps, vec=1, order=None: one_thread_blocked(shape, order)
    return blocked_for


@dataclass(eq=False)
class ConvertLayoutOp(Op, name="ttg.convert_layout", pure=True):
    """The same tensor in another layout (through shared memory where threads must exchange data)."""

    src: Value = operand()
