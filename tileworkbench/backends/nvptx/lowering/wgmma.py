"""`ttng.warp_group_dot` and `ttng.warp_group_dot_wait` on sm_90a: `wgmma.mma_async` on operand tiles
in shared memory, read through 64-bit matrix descriptors, in inline PTX (LLVM has no intrinsic).

A warp group (4 consecutive warps) computes a 64 x N tile per instruction, N = the `#mma` version-3
`instr_shape[1]`; each thread's accumulator registers of one instruction are, in the PTX ISA's
order, d[i] at row 16 * (warp % 4) + lane / 4 + 8 * ((i >> 1) & 1) and column 8 * (i >> 2) +
2 * (lane % 4) + (i & 1). The tile in shared memory is in its `#nvmma_shared` form: K-major (the
operand's K contiguous) or, for 16-bit types, MN-major; see `descriptor_terms` for the descriptor.
`../shared/TENSOR_CORES.md` records the constraints (the wait takes and returns the accumulators).
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ....ir.ops.ttg import LinearLayout
from ....ir.ops.wgmma import WarpGroupDotOp, WarpGroupDotWaitOp
from ....ir.types import MemDescType, element_type
from ..llvm_types import F16, F32, I1, I32, I64
from ..lower import TVal
from . import lowers
from .mma import unpack_halves
from .warp_uniform import uniform_group_origin

SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}  # the descriptor's bits 62-63
# operand element -> the instruction's type name
AB_TYPES = {"f16": "f16", "bf16": "bf16", "f32": "tf32", "i8": "s8", "f8e4nv": "e4m3", "f8e5": "e5m2"}
ACC_TYPES = {"f32": "f32", "f16": "f16", "i32": "s32"}
WAIT_CHUNK = 64  # accumulators per wait asm (each later wait of the same count returns at once)


@dataclass(frozen=True)
class DescriptorTerms:
    """How to describe an operand tile: the byte offset of the instruction at (mn, k) is
    `mn * mn_stride + offset(k)` (`k_offset`), plus the two strides and the swizzle of the descriptor."""

    mn_stride: int
    leading: int  # leading dimension byte offset
    stride: int  # stride dimension byte offset
    mode: int
    mn_major: bool
    width: int  # elements per swizzled row (a column block)
    rows: int  # rows of the tile (the non-contiguous dimension)
    elem_bytes: int
    swizzle: int

    def k_offset(self, k: int) -> int:
        if self.mn_major:  # rows are K: row k
            return k * self.swizzle
        # rows are M or N; K runs along the row, in column blocks of `width`
        return (k // self.width) * self.rows * self.swizzle + (k % self.width) * self.elem_bytes


def descriptor_terms(t: MemDescType, op_idx: int) -> DescriptorTerms:
    """The canonical layout of the PTX ISA for a tile stored as `#nvmma_shared`: swizzle atoms of 8
    rows x `swizzle` bytes. K-major: the 8-row groups along M (N) are `stride` = 8 rows apart, the
    leading offset is unused (1). MN-major: atoms along M (N) are `leading` = one column block
    apart, the 8-row groups along K `stride` apart."""
    enc = t.encoding
    k_dim = 1 if op_idx == 0 else 0
    mn_major = enc.order[0] != k_dim
    rows = t.shape[1 - enc.order[0]]
    sw = enc.swizzle_bytes
    elem_bytes = enc.element_bits // 8
    width = enc.row_elements
    if mn_major:
        return DescriptorTerms(rows * sw // width, rows * sw, 8 * sw, SWIZZLE_MODE[sw], True, width,
                               rows, elem_bytes, sw)
    return DescriptorTerms(sw, 16, 8 * sw, SWIZZLE_MODE[sw], False, width, rows, elem_bytes, sw)


def _high_bits(terms: DescriptorTerms) -> int:
    return ((terms.leading >> 4) << 16) | ((terms.stride >> 4) << 32) | (terms.mode << 62)


def _group_origin(lw, layout: LinearLayout, dim: int) -> ir.Value:
    """This thread's warp group's offset along `dim` (warps 4g..4g+3 share it), from the uniform warp
    index (warp_uniform.py): the descriptors built on it stay in uniform registers (from tid.x,
    ptxas moved each into one by an R2UR before every HGMMA: 8 per k step at 128x256x64/8 warps)."""
    return uniform_group_origin(lw, layout, dim)


def _group_origin_from_tid(lw, layout: LinearLayout, dim: int) -> ir.Value:
    """The same offset from tid.x (the probe's comparison)."""
    zero = tuple([0] * len(layout.shape))
    groups = LinearLayout(layout.shape, layout.regs, tuple(zero for _ in layout.lanes),
                          (zero, zero) + tuple(layout.warps[2:]))
    return lw.thread_offset(groups, lambda v: v[dim])


def _base_descriptor(lw, tile, terms: DescriptorTerms, group_mn: ir.Value) -> ir.Value:
    """The descriptor of the tile's instruction at (warp group origin, k = 0), as an i64."""
    b = lw.builder
    address = b.ptrtoint(lw.shared_base(), I32)
    address = b.add(address, b.add(tile.offset, b.mul(group_mn, ir.Constant(I32, terms.mn_stride))))
    # the ISA's matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4; adding an instruction's offset >> 4
    # later cannot carry out of the 14 bits, as shared memory is < 256 KB
    start = b.zext(b.lshr(b.and_(address, ir.Constant(I32, 0x3FFFF)), ir.Constant(I32, 4)), I64)
    return b.or_(start, ir.Constant(I64, _high_bits(terms)))


def _at(lw, base: ir.Value, byte_offset: int) -> ir.Value:
    if not byte_offset:
        return base
    return lw.builder.add(base, ir.Constant(I64, byte_offset >> 4))


@lowers(WarpGroupDotOp)
def lower_warp_group_dot(lw, op) -> None:
    a_tile, b_tile = lw.get(op.a), lw.get(op.b)
    layout = lw.layout(op.result)
    enc = op.result.type.encoding
    instr_n, instr_k = enc.instr_shape[1], enc.instr_shape[2]
    c = lw.get(op.c)
    acc = list(c.vals) if isinstance(c, TVal) else [c] * layout.num_regs
    regs = {coords: r for r, coords in enumerate(layout.all_reg_coords())}
    origins = sorted(cd for cd in regs if cd[0] % 16 == 0 and cd[1] % instr_n == 0)
    a_terms, b_terms = descriptor_terms(a_tile.type, 0), descriptor_terms(b_tile.type, 1)
    a_base = _base_descriptor(lw, a_tile, a_terms, _group_origin(lw, layout, 0))
    b_base = _base_descriptor(lw, b_tile, b_terms, _group_origin(lw, layout, 1))
    ab = AB_TYPES[op.a.type.element.name]
    acc_type = ACC_TYPES[element_type(op.result.type).name]
    text = _instruction(instr_n, instr_k, acc_type, ab, a_terms.mn_major, b_terms.mn_major)
    lw.asm("wgmma.fence.sync.aligned;", "", ir.VoidType(), [], side_effect=True)
    for k0 in range(0, op.a.type.shape[1], instr_k):
        for m0, n0 in origins:
            slots = [regs[(m0 + 8 * ((i >> 1) & 1), n0 + 8 * (i >> 2) + (i & 1))]
                     for i in range(instr_n // 2)]
            a_desc = _at(lw, a_base, m0 * a_terms.mn_stride + a_terms.k_offset(k0))
            b_desc = _at(lw, b_base, n0 * b_terms.mn_stride + b_terms.k_offset(k0))
            out = _issue(lw, text, acc_type, [acc[s] for s in slots], a_desc, b_desc)
            for s, v in zip(slots, out):
                acc[s] = v
    lw.asm("wgmma.commit_group.sync.aligned;", "", ir.VoidType(), [], side_effect=True)
    lw.set(op.result, TVal(acc, layout))


def _instruction(n: int, k: int, acc: str, ab: str, trans_a: bool, trans_b: bool) -> str:
    """The PTX text of one wgmma with accumulator operands $0..$R-1, then the descriptors of A and B
    and the scale-d predicate; 16-bit types take the transpose flags, integers no scales."""
    count = n // 2 if acc != "f16" else n // 4
    regs = ",".join(f"${i}" for i in range(count))
    text = (f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{acc}.{ab}.{ab} {{{regs}}}, ${count}, "
            f"${count + 1}, ${count + 2}")
    if ab in ("f16", "bf16"):
        return text + f", 1, 1, {int(trans_a)}, {int(trans_b)};"
    return text + (";" if ab == "s8" else ", 1, 1;")


def _issue(lw, text: str, acc_type: str, values: list, a_desc, b_desc) -> list:
    """One wgmma: `values` (the instruction's accumulators in the ISA's order) in, the same out."""
    b = lw.builder
    packed = acc_type == "f16"
    regs = _pack_halves(lw, values) if packed else values
    reg = "f" if acc_type == "f32" else "r"
    count = len(regs)
    constraints = ",".join([f"={reg}"] * count + ["l", "l", "b"] + [str(i) for i in range(count)])
    ret = ir.LiteralStructType([regs[0].type] * count)
    out = lw.asm(text, constraints, ret, [a_desc, b_desc, ir.Constant(I1, 1), *regs],
                 side_effect=True)
    words = [b.extract_value(out, i) for i in range(count)]
    return [h for w in words for h in unpack_halves(lw, w, F16)] if packed else words


def _pack_halves(lw, values: list) -> list:
    b = lw.builder
    out = []
    for lo, hi in zip(values[0::2], values[1::2]):
        lo_bits = b.zext(b.bitcast(lo, ir.IntType(16)), I32)
        hi_bits = b.zext(b.bitcast(hi, ir.IntType(16)), I32)
        out.append(b.or_(lo_bits, b.shl(hi_bits, ir.Constant(I32, 16))))
    return out


@lowers(WarpGroupDotWaitOp)
def lower_warp_group_dot_wait(lw, op) -> None:
    """`wgmma.wait_group` as asm that takes and returns every accumulator, so LLVM cannot read one
    before the wait (the plain intrinsic gives no such data dependence)."""
    acc = lw.get(op.acc)
    values = list(acc.vals)
    packed = values[0].type == F16
    regs = _pack_halves(lw, values) if packed else values
    reg = "f" if regs[0].type == F32 else "r"
    out = []
    for start in range(0, len(regs), WAIT_CHUNK):
        chunk = regs[start:start + WAIT_CHUNK]
        count = len(chunk)
        constraints = ",".join([f"={reg}"] * count + [str(i) for i in range(count)])
        ret = ir.LiteralStructType([chunk[0].type] * count)
        result = lw.asm(f"wgmma.wait_group.sync.aligned {op.pendings};", constraints, ret, chunk,
                        side_effect=True)
        out += [lw.builder.extract_value(result, i) for i in range(count)]
    if packed:
        out = [h for w in out for h in unpack_halves(lw, w, F16)]
    lw.set(op.result, TVal(out, acc.layout))
