"""Moving tensor elements between layouts: inside a thread's registers when every element a thread
needs is already its own; bytes that move only within quads of lanes by shuffles, four to a
shuffle (`byte_quad_plan`: a tensor-core accumulator cast to fp8, into the next dot's A fragments);
else through shared memory (each thread writes its elements at their flat index, a barrier, each
reads the elements its new layout gives it, a barrier).

A coordinate map `fmap(coords) -> coords` says which source element a destination element reads. It
must be linear on the bits of the coordinates (dropping, zeroing, permuting or reshaping dimensions):
then `fmap(register part + thread part) = fmap(register part) + fmap(thread part)`.
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops.ttg import LinearLayout
from ..llvm_types import I8, I32, byte_size
from ..values import TVal
from .mma import pack_bits


def strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def flat(coords, shape) -> int:
    return sum(c * s for c, s in zip(coords, strides(shape)))


def unflat(index: int, shape) -> tuple[int, ...]:
    return tuple((index // s) % d for s, d in zip(strides(shape), shape))


def in_registers(src: TVal, dst: LinearLayout, fmap, reg_map=None) -> TVal | None:
    """`dst` from `src` without data exchange, or None if some element lives in another thread.
    `reg_map` (default `fmap`) maps register coordinates where it differs by a constant."""
    src_layout = src.layout
    # Each thread must hold, for its own lane and warp bits, exactly the source elements it needs.
    for dst_b, src_b in ((dst.lanes, src_layout.lanes), (dst.warps, src_layout.warps)):
        if len(dst_b) != len(src_b) or any(tuple(fmap(d)) != s for d, s in zip(dst_b, src_b)):
            return None
    index = {c: r for r, c in enumerate(src_layout.all_reg_coords())}
    out = []
    for coords in dst.all_reg_coords():
        r = index.get(tuple((reg_map or fmap)(coords)))
        if r is None:
            return None
        out.append(src.vals[r])
    return TVal(out, dst)


def write_shared(
    lw, src: TVal, shape, base_index: int, elem_bytes: int, smem, owners_only: bool = False
) -> None:
    """Store every element of `src` (a tensor of `shape`) at `smem[base_index + flat(coords)]`;
    with `owners_only`, threads that merely hold copies do not write (their values may differ)."""
    b = lw.builder
    layout = src.layout
    st = strides(shape)
    thread = lw.thread_offset(layout, lambda v: sum(c * s for c, s in zip(v, st)))
    for r, coords in enumerate(layout.all_reg_coords()):
        index = b.add(thread, ir.Constant(I32, base_index + flat(coords, shape)))
        ptr = lw.smem_ptr(smem, b.mul(index, ir.Constant(I32, elem_bytes)))
        if owners_only and has_copies(layout):
            with b.if_then(lw.owner_predicate(layout)):
                b.store(_to_shared(lw, src.vals[r]), ptr).align = elem_bytes
        else:
            b.store(_to_shared(lw, src.vals[r]), ptr).align = elem_bytes


def has_copies(layout: LinearLayout) -> bool:
    """Whether some lanes or warps hold copies of other threads' elements."""
    return any(not any(b) for b in layout.lanes + layout.warps)


def read_shared(
    lw, dst: LinearLayout, weight, base_index: int, elem_bytes: int, smem, reg_type
) -> list:
    """Load, for each register of `dst`, `smem[base_index + weight(coords)]` (weight linear)."""
    b = lw.builder
    thread = lw.thread_offset(dst, weight)
    out = []
    for coords in dst.all_reg_coords():
        index = b.add(thread, ir.Constant(I32, base_index + weight(coords)))
        ptr = lw.smem_ptr(smem, b.mul(index, ir.Constant(I32, elem_bytes)))
        load = b.load(ptr, typ=_shared_type(reg_type))
        load.align = elem_bytes
        out.append(_from_shared(lw, load, reg_type))
    return out


def _shared_type(t: ir.Type) -> ir.Type:
    return I8 if isinstance(t, ir.IntType) and t.width == 1 else t


def _to_shared(lw, v):
    if isinstance(v.type, ir.IntType) and v.type.width == 1:
        return lw.builder.zext(v, I8)
    return v


def _from_shared(lw, v, reg_type):
    if isinstance(reg_type, ir.IntType) and reg_type.width == 1:
        return lw.builder.icmp_unsigned("!=", v, ir.Constant(I8, 0))
    return v


def remap(lw, src: TVal, src_shape, dst: LinearLayout, fmap, elem_type) -> TVal:
    """`dst`'s elements, element `c` read from source coordinates `fmap(c)`."""
    local = in_registers(src, dst, fmap)
    if local is not None:
        return local
    return remap_shared(lw, [(src, src_shape)], dst, lambda c: flat(fmap(c), src_shape), elem_type)


def remap_shared(lw, sources, dst: LinearLayout, weight, elem_type, read_base: int = 0) -> TVal:
    """Write each (tensor, shape) of `sources` one after another, then read `dst` at
    `read_base + weight(c)` (`weight` linear: it is applied to the lane and warp bases too)."""
    nbytes = byte_size(elem_type)
    total = sum(_numel(shape) for _, shape in sources)
    smem = lw.shared_memory(total * nbytes)
    lw.barrier_before_shared()
    base = 0
    for tensor, shape in sources:
        write_shared(lw, tensor, shape, base, nbytes, smem)
        base += _numel(shape)
    lw.barrier()
    reg_type = sources[0][0].vals[0].type
    return TVal(read_shared(lw, dst, weight, read_base, nbytes, smem, reg_type), dst)


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


# -- bytes within quads of lanes -------------------------------------------------------------------


def byte_quad_plan(src: LinearLayout, dst: LinearLayout) -> list[tuple[int, int]] | None:
    """How `dst`'s bytes come from `src`'s by two shuffles a 32-bit word, or None where they do
    not. The shape this serves: an `#mma` accumulator holds pairs of adjacent columns per lane
    (lane bits 0-1: columns 2 and 4), an 8-bit dot operand A runs of four (`kWidth` 4: columns 4
    and 8), the rows alike. Destination lane (bits l0, l1 of its quad) then gets each word's bytes
    0-1 from lane 2 l0 of its quad and bytes 2-3 from lane 2 l0 + 1, each pair from the source
    register pair given for l1 (0 or 1). Per destination word (registers 4 w .. 4 w + 3): the first
    source register of the pair for l1 = 0 and for l1 = 1; checked for every byte of every lane."""
    if (
        src.warps != dst.warps
        or len(src.lanes) != 5
        or len(dst.lanes) != 5
        or src.lanes[2:] != dst.lanes[2:]
        or src.num_regs != dst.num_regs
        or dst.num_regs % 4
    ):
        return None

    def at(layout: LinearLayout, reg: int, quad: int) -> tuple[int, ...]:
        coords = layout.reg_coords(reg)
        for bit in (0, 1):
            if quad >> bit & 1:
                coords = tuple(c + b for c, b in zip(coords, layout.lanes[bit]))
        return coords

    where = {at(src, r, q): (r, q) for r in range(src.num_regs) for q in range(4)}
    if len(where) != 4 * src.num_regs:  # lanes of a quad holding copies
        return None
    plan = []
    for word in range(0, dst.num_regs, 4):
        pairs = []
        for high in (0, 1):
            found = where.get(at(dst, word, 2 * high))
            if found is None or found[1] != 0 or found[0] % 2:
                return None
            pairs.append(found[0])
        for quad in range(4):
            for byte in range(4):
                want = (pairs[quad >> 1] + byte % 2, 2 * (quad & 1) + byte // 2)
                if where.get(at(dst, word + byte, quad)) != want:
                    return None
        plan.append((pairs[0], pairs[1]))
    return plan


def exchange_byte_quads(lw, src: TVal, dst: LinearLayout, plan) -> TVal:
    """`dst` from `src` by `byte_quad_plan`'s `plan`: each source lane packs a word's two byte
    pairs into 32 bits, each destination lane reads that word from two lanes of its quad
    (`shfl.sync.idx`) and keeps the half its lane bit 1 names of each."""
    b = lw.builder
    lane, _ = lw.lane_and_warp()
    low_bit = b.and_(lane, ir.Constant(I32, 1))
    first = b.or_(b.and_(lane, ir.Constant(I32, 0x1C)), b.shl(low_bit, ir.Constant(I32, 1)))
    second = b.or_(first, ir.Constant(I32, 1))
    shift = b.shl(
        b.and_(b.lshr(lane, ir.Constant(I32, 1)), ir.Constant(I32, 1)), ir.Constant(I32, 4)
    )
    shuffle = lw.intrinsic("llvm.nvvm.shfl.sync.idx.i32", I32, [I32] * 4)
    mask, clamp, half = ir.Constant(I32, -1), ir.Constant(I32, 0x1F), ir.Constant(I32, 0xFFFF)
    out = []
    for low, high in plan:
        word = pack_bits(lw, [src.vals[r] for r in (low, low + 1, high, high + 1)])
        x = b.call(shuffle, [mask, word, first, clamp])
        y = b.call(shuffle, [mask, word, second, clamp])
        merged = b.or_(
            b.and_(b.lshr(x, shift), half),
            b.shl(b.and_(b.lshr(y, shift), half), ir.Constant(I32, 16)),
        )
        out += [
            b.trunc(b.lshr(merged, ir.Constant(I32, 8 * i)) if i else merged, I8) for i in range(4)
        ]
    return TVal(out, dst)
