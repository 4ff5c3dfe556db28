"""`ttng.warp_group_dot` and `ttng.warp_group_dot_wait` on sm_90a: `wgmma.mma_async` on operand tiles
in shared memory, read through 64-bit matrix descriptors, or with A from registers (each warp the
mma.sync m16n8k16 A fragment of its 16 rows), in inline PTX (LLVM has no intrinsic).

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

from ....dtypes import TABLE as DTYPES
from ....ir.ops.ttg import LinearLayout
from ....ir.ops.wgmma import WarpGroupDotOp, WarpGroupDotWaitOp
from ....ir.types import MemDescType, element_type
from ..llvm_types import F16, F32, I1, I32, I64
from ..values import TVal
from . import lowers
from .mma import pack_bits, pack_halves, unpack_halves
from .warp_uniform import uniform_group_origin

SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}  # the descriptor's bits 62-63
# operand element -> the instruction's type name (dtypes.TABLE's `mma`: "tf32" for f32, "e4m3", ...)
AB_TYPES = {row.ir: row.mma for row in DTYPES if row.mma}
ACC_TYPES = {"f32": "f32", "f16": "f16", "i32": "s32"}


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
        return DescriptorTerms(
            rows * sw // width,
            rows * sw,
            8 * sw,
            SWIZZLE_MODE[sw],
            True,
            width,
            rows,
            elem_bytes,
            sw,
        )
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
    groups = LinearLayout(
        layout.shape,
        layout.regs,
        tuple(zero for _ in layout.lanes),
        (zero, zero) + tuple(layout.warps[2:]),
    )
    return lw.thread_offset(groups, lambda v: v[dim])


def _base_descriptor(lw, tile, terms: DescriptorTerms, group_mn: ir.Value) -> tuple:
    """The tile's descriptor at (warp group origin, k = 0) as its start address field (an i64) and
    the constant high fields (`_at` adds them)."""
    b = lw.builder
    address = b.ptrtoint(lw.shared_base(), I32)
    address = b.add(address, b.add(tile.offset, b.mul(group_mn, ir.Constant(I32, terms.mn_stride))))
    # the ISA's matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4; adding an instruction's offset >> 4
    # later cannot carry out of the 14 bits, as shared memory is < 256 KB
    start = b.zext(b.lshr(b.and_(address, ir.Constant(I32, 0x3FFFF)), ir.Constant(I32, 4)), I64)
    return start, _high_bits(terms)


def _at(lw, base: tuple, byte_offset: int) -> ir.Value:
    """One instruction's descriptor: the start field plus the high fields and the offset, as one
    `add.s64` of a constant. In asm because LLVM, knowing the start's low bits and the high fields
    disjoint, makes it an `or.b64`; ptxas recomputes an add at each use in uniform registers (as
    Triton's descriptors are) but keeps an or's result live, in ordinary registers that spill
    (tutorial 06's causal d128 backward: 1,988 / 2,316 bytes of spills -> 1,672 / 1,704)."""
    start, high = base
    return lw.asm(f"add.s64 $0, $1, {high + (byte_offset >> 4)};", "=l,l", I64, [start])


@lowers(WarpGroupDotOp)
def lower_warp_group_dot(lw, op) -> None:
    b_tile = lw.get(op.b)
    layout = lw.layout(op.result)
    enc = op.result.type.encoding
    instr_n, instr_k = enc.instr_shape[1], enc.instr_shape[2]
    c = lw.get(op.c)
    acc = list(c.vals) if isinstance(c, TVal) else [c] * layout.num_regs
    # a constant accumulator (a dot's zero init) is copied into each instruction's registers:
    # through the fence, so the copies come before it, not between wgmmas (ptxas waits there)
    fence_acc = acc if all(isinstance(v, ir.Constant) for v in acc) else []
    regs = {coords: r for r, coords in enumerate(layout.all_reg_coords())}
    origins = sorted(cd for cd in regs if cd[0] % 16 == 0 and cd[1] % instr_n == 0)
    a_in_registers = not isinstance(op.a.type, MemDescType)
    b_terms = descriptor_terms(b_tile.type, 1)
    b_base = _base_descriptor(lw, b_tile, b_terms, _group_origin(lw, layout, 1))
    ab = AB_TYPES[op.a.type.element.name]
    acc_type = ACC_TYPES[element_type(op.result.type).name]
    if a_in_registers:
        a_regs = _a_fragments(lw, lw.get(op.a), origins, op.a.type.shape[1], instr_k)
        text = _instruction(instr_n, instr_k, acc_type, ab, None, b_terms.mn_major)
        # the fence after the last write of A's registers: `_fence` ties them to it
        a_regs, fenced = _fence(lw, a_regs, fence_acc)
    else:
        a_tile = lw.get(op.a)
        a_terms = descriptor_terms(a_tile.type, 0)
        a_base = _base_descriptor(lw, a_tile, a_terms, _group_origin(lw, layout, 0))
        text = _instruction(instr_n, instr_k, acc_type, ab, a_terms.mn_major, b_terms.mn_major)
        _, fenced = _fence(lw, {}, fence_acc)
    if fence_acc:
        acc = fenced
    for k0 in range(0, op.a.type.shape[1], instr_k):
        for m0, n0 in origins:
            slots = [
                regs[(m0 + 8 * ((i >> 1) & 1), n0 + 8 * (i >> 2) + (i & 1))]
                for i in range(instr_n // 2)
            ]
            if a_in_registers:
                a_operand = a_regs[(m0, k0)]
            else:
                a_operand = [_at(lw, a_base, m0 * a_terms.mn_stride + a_terms.k_offset(k0))]
            b_desc = _at(lw, b_base, n0 * b_terms.mn_stride + b_terms.k_offset(k0))
            out = _issue(lw, text, acc_type, [acc[s] for s in slots], a_operand, b_desc)
            for s, v in zip(slots, out):
                acc[s] = v
    lw.asm("wgmma.commit_group.sync.aligned;", "", ir.VoidType(), [], side_effect=True)
    lw.set(op.result, TVal(acc, layout))


def _a_fragments(lw, a: TVal, origins: list, k: int, instr_k: int) -> dict:
    """This thread's A registers of each instruction, keyed by (m0, k0): per warp the mma.sync
    A fragment (m16n8k16 for 16-bit A, m16n8k32 for 8-bit) of rows m0 + 16 * (warp % 4)..+15 (the
    warp part is in the layout's thread offset): a0..a3 = (row g, k w t), (g + 8, w t),
    (g, w t + instr_k / 2), (g + 8, w t + instr_k / 2), each the w = 4 bytes / element size
    consecutive K of one 32-bit register, the lowest K in the low bits."""
    index = {coords: r for r, coords in enumerate(a.layout.all_reg_coords())}
    per_word = instr_k // 8  # 2 halves or 4 bytes
    frags = {}
    for m0 in sorted({m for m, _ in origins}):
        for k0 in range(0, k, instr_k):
            frags[(m0, k0)] = [
                (pack_halves(lw, *word) if per_word == 2 else pack_bits(lw, word))
                for word in (
                    [
                        a.vals[index[(m0 + 8 * (j & 1), k0 + instr_k // 2 * (j >> 1) + e)]]
                        for e in range(per_word)
                    ]
                    for j in range(4)
                )
            ]
    return frags


def _fence(lw, a_regs: dict, acc: list = ()) -> tuple[dict, list]:
    """`wgmma.fence`, taking and returning the A registers (where A comes from registers) and the
    accumulators `acc` (a constant init), so that LLVM computes them before it: a register written
    between the fence and the wgmma reading it makes ptxas serialize the warp group (info C7519)."""
    words = [w for frag in a_regs.values() for w in frag]
    if not words and not acc:
        lw.asm("wgmma.fence.sync.aligned;", "", ir.VoidType(), [], side_effect=True)
        return a_regs, []
    values = words + list(acc)
    count = len(values)
    kinds = ["r" if v.type == I32 else "f" if v.type == F32 else "h" for v in values]
    constraints = ",".join([f"={k}" for k in kinds] + [str(i) for i in range(count)])
    out = lw.asm(
        "wgmma.fence.sync.aligned;",
        constraints,
        ir.LiteralStructType([v.type for v in values]),
        values,
        side_effect=True,
    )
    flat = iter(lw.builder.extract_value(out, i) for i in range(count))
    fenced = {key: [next(flat) for _ in frag] for key, frag in a_regs.items()}
    return fenced, [next(flat) for _ in acc]


def _instruction(n: int, k: int, acc: str, ab: str, trans_a: bool | None, trans_b: bool) -> str:
    """The PTX text of one wgmma with accumulator operands $0..$R-1, then A (a descriptor, or with
    `trans_a` None four registers), the descriptor of B and the scale-d predicate; 16-bit types take
    the transpose flags (B's only for a register A), integers no scales."""
    count = n // 2 if acc != "f16" else n // 4
    regs = ",".join(f"${i}" for i in range(count))
    if trans_a is None:
        a_text = "{" + ",".join(f"${count + i}" for i in range(4)) + "}"
        b_at = count + 4
    else:
        a_text, b_at = f"${count}", count + 1
    text = (
        f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{acc}.{ab}.{ab} {{{regs}}}, {a_text}, "
        f"${b_at}, ${b_at + 1}"
    )
    if trans_a is None:  # only 16-bit types take B's transpose flag
        return text + (f", 1, 1, {int(trans_b)};" if ab in ("f16", "bf16") else ", 1, 1;")
    if ab in ("f16", "bf16"):
        return text + f", 1, 1, {int(trans_a)}, {int(trans_b)};"
    return text + (";" if ab == "s8" else ", 1, 1;")


def _issue(lw, text: str, acc_type: str, values: list, a_operand: list, b_desc) -> list:
    """One wgmma: `values` (the instruction's accumulators in the ISA's order) in, the same out;
    `a_operand`: A's descriptor, or its four registers."""
    b = lw.builder
    packed = acc_type == "f16"
    regs = _pack_halves(lw, values) if packed else values
    reg = "f" if acc_type == "f32" else "r"
    count = len(regs)
    a_constraints = ["r"] * 4 if len(a_operand) == 4 else ["l"]
    constraints = ",".join(
        [f"={reg}"] * count + a_constraints + ["l", "b"] + [str(i) for i in range(count)]
    )
    ret = ir.LiteralStructType([regs[0].type] * count)
    out = lw.asm(
        text, constraints, ret, [*a_operand, b_desc, ir.Constant(I1, 1), *regs], side_effect=True
    )
    words = [b.extract_value(out, i) for i in range(count)]
    return [h for w in words for h in unpack_halves(lw, w, F16)] if packed else words


def _pack_halves(lw, values: list) -> list:
    return [pack_halves(lw, lo, hi) for lo, hi in zip(values[0::2], values[1::2])]


@lowers(WarpGroupDotWaitOp)
def lower_warp_group_dot_wait(lw, op) -> None:
    """`wgmma.wait_group` as one asm that takes and returns every accumulator, so LLVM cannot read
    one before the wait (the plain intrinsic gives no such data dependence). One asm, as Triton's,
    also for the waits of the same count that follow it (a wait for a chained dot left in flight,
    `wgmma_pipeline`): each asm is a WARPGROUP.DEPBAR in the SASS."""
    waits = [op] + waits_lowered_with(op)
    lw.lowered_ahead.update(waits[1:])
    accs = [lw.get(w.acc) for w in waits]
    groups = []
    for acc in accs:
        values = list(acc.vals)
        packed = values[0].type == F16
        groups.append((_pack_halves(lw, values) if packed else values, packed))
    regs = [r for group, _ in groups for r in group]
    constraints = ",".join(
        [f"={_register_class(r)}" for r in regs] + [str(i) for i in range(len(regs))]
    )
    ret = ir.LiteralStructType([r.type for r in regs])
    result = lw.asm(
        f"wgmma.wait_group.sync.aligned {op.pendings};", constraints, ret, regs, side_effect=True
    )
    out = iter([lw.builder.extract_value(result, i) for i in range(len(regs))])
    for wait, acc, (group, packed) in zip(waits, accs, groups):
        values = [next(out) for _ in group]
        if packed:
            values = [h for w in values for h in unpack_halves(lw, w, F16)]
        lw.set(wait.result, TVal(values, acc.layout))


def waits_lowered_with(op) -> list:
    """The waits with `op`'s count right after it, none waiting on another's result: `op`'s asm
    takes them too."""
    ops = op.parent.ops
    found = []
    for after in ops[ops.index(op) + 1 :]:
        if not (
            isinstance(after, WarpGroupDotWaitOp)
            and after.pendings == op.pendings
            and all(after.acc is not w.result for w in [op] + found)
        ):
            break
        found.append(after)
    return found


def _register_class(value) -> str:
    return "f" if value.type == F32 else "r"
