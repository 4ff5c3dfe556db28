"""`tt.dot` on tensor cores: one `mma.sync` per 16 x 8 x K tile of the output, on operands that are
already in the `#dot_op` register fragments (a `ttg.local_load` or conversion put them there).

Each thread's registers of A, B and C are found by their coordinates in the operand layouts, so the
fragment order of the PTX ISA (`../shared/TENSOR_CORES.md`) is the only layout fact used here: A
registers a0..a3 hold rows (g, g+8) x K halves (0, 1), B registers b0, b1 the K halves, C registers
c0..c3 rows (g, g+8) x columns (0, 1). The instruction is inline PTX (as Triton's): fp8 and
tf32x3 have no NVVM intrinsic in every LLVM, and one form keeps every dtype alike.
"""

from __future__ import annotations

from llvmlite import ir

from ....passes.mma import MmaKind, mma_kind
from ..llvm_types import F16, F32, I32
from ..values import TVal

# (A/B type, C/D type) -> the instruction's type suffix, as .dtype.atype.btype.ctype
_SUFFIX = {
    ("f16", "f32"): "f32.f16.f16.f32",
    ("bf16", "f32"): "f32.bf16.bf16.f32",
    ("f16", "f16"): "f16.f16.f16.f16",
    ("tf32", "f32"): "f32.tf32.tf32.f32",
    ("s8", "s32"): "s32.s8.s8.s32",
    ("e4m3", "f32"): "f32.e4m3.e4m3.f32",
    ("e5m2", "f32"): "f32.e5m2.e5m2.f32",
}


def _index(layout) -> dict[tuple[int, ...], int]:
    return {coords: r for r, coords in enumerate(layout.all_reg_coords())}


def lower_mma(lw, op, a: TVal, b: TVal, c) -> None:
    """`op`'s result (an `#mma` tensor) = a @ b + c, tile by tile."""
    kind = mma_kind(op, lw.target.fp8_mma)  # as the layout pass chose
    layout = lw.layout(op.result)
    c_vals = list(c.vals) if isinstance(c, TVal) else [c] * layout.num_regs
    a_reg, b_reg, c_reg = _index(a.layout), _index(b.layout), _index(layout)
    kw = kind.k_width
    origins = [cd for cd in layout.all_reg_coords() if cd[-1] % 2 == 0 and cd[-2] % 16 == 0]
    a_frags: dict = {}
    b_frags: dict = {}

    def a_frag(batch, m0, k0):
        key = (batch, m0, k0)
        if key not in a_frags:
            a_frags[key] = [
                _pack(
                    lw,
                    kind,
                    [
                        a.vals[a_reg[(*batch, m0 + 8 * (j & 1), k0 + 4 * kw * (j >> 1) + e)]]
                        for e in range(kw)
                    ],
                )
                for j in range(4)
            ]
        return a_frags[key]

    def b_frag(batch, n0, k0):
        key = (batch, n0, k0)
        if key not in b_frags:
            b_frags[key] = [
                _pack(
                    lw, kind, [b.vals[b_reg[(*batch, k0 + 4 * kw * j + e, n0)]] for e in range(kw)]
                )
                for j in range(2)
            ]
        return b_frags[key]

    # K outermost: consecutive mma instructions of one k-step are independent of each other
    for k0 in range(0, op.a.type.shape[-1], kind.k):
        for origin in origins:
            batch, m0, n0 = origin[:-2], origin[-2], origin[-1]
            slots = [c_reg[(*batch, m0 + 8 * (j >> 1), n0 + (j & 1))] for j in range(4)]
            acc = [c_vals[s] for s in slots]
            acc = _mma_step(lw, op, kind, a_frag(batch, m0, k0), b_frag(batch, n0, k0), acc)
            for s, v in zip(slots, acc):
                c_vals[s] = v
    lw.set(op.result, TVal(c_vals, layout))


def _mma_step(lw, op, kind: MmaKind, a_regs, b_regs, acc):
    if op.input_precision != "tf32x3" or kind.ab != "tf32":
        return _mma(
            lw,
            kind,
            [_tf32(lw, r, kind) for r in a_regs],
            [_tf32(lw, r, kind) for r in b_regs],
            acc,
        )
    # tf32x3: x = big + small with both parts tf32; a*b ~ a_big*b_small + a_small*b_big + a_big*b_big
    a_big, a_small = zip(*[_split_tf32(lw, r) for r in a_regs])
    b_big, b_small = zip(*[_split_tf32(lw, r) for r in b_regs])
    acc = _mma(lw, kind, list(a_big), list(b_small), acc)
    acc = _mma(lw, kind, list(a_small), list(b_big), acc)
    return _mma(lw, kind, list(a_big), list(b_big), acc)


def _pack(lw, kind: MmaKind, values) -> ir.Value:
    """`k_width` consecutive K elements in one 32-bit register, the lowest K in the low bits."""
    if kind.k_width == 1:
        return values[0]  # fp32, rounded to tf32 per use (`_tf32`)
    return pack_bits(lw, values)


def pack_bits(lw, values) -> ir.Value:
    """Values of 32 / len(values) bits in one 32-bit register, the first in the low bits. Integer
    shifts rather than a <2 x bfloat> vector: hosts without bfloat (the emulator's x86) would
    convert through float; on NVPTX both fold into one mov.b32 {lo, hi}."""
    b = lw.builder
    bits = 32 // len(values)
    word = None
    for i, v in enumerate(values):
        part = b.zext(v if isinstance(v.type, ir.IntType) else b.bitcast(v, ir.IntType(bits)), I32)
        part = b.shl(part, ir.Constant(I32, i * bits)) if i else part
        word = part if word is None else b.or_(word, part)
    return word


def pack_halves(lw, lo: ir.Value, hi: ir.Value) -> ir.Value:
    """Two 16-bit values in one 32-bit register, `lo` in the low half. Where both were just rounded
    from fp32 (an epilogue's `acc.to(fp16)`, attention's `p.to(fp16)`), one vector fptrunc, which
    NVPTX makes one `cvt.rn.f16x2.f32` (`bf16x2`), rounds and packs them: not two cvt and a prmt."""
    b = lw.builder
    halves = [lo, hi]
    sources = [
        getattr(h, "operands", [None])[0] if getattr(h, "opname", "") == "fptrunc" else None
        for h in halves
    ]
    if all(s is not None and s.type == F32 for s in sources) and lo.type == hi.type:
        vector = ir.Constant(ir.VectorType(F32, 2), ir.Undefined)
        for i, s in enumerate(sources):
            vector = b.insert_element(vector, s, ir.Constant(I32, i))
        return b.bitcast(b.fptrunc(vector, ir.VectorType(lo.type, 2)), I32)
    return pack_bits(lw, halves)


def unpack_halves(lw, word: ir.Value, elem: ir.Type) -> list[ir.Value]:
    """The two 16-bit values of a 32-bit register, low half first, as `elem` (half or bfloat)."""
    b = lw.builder
    low = b.trunc(word, ir.IntType(16))
    high = b.trunc(b.lshr(word, ir.Constant(I32, 16)), ir.IntType(16))
    return [b.bitcast(low, elem), b.bitcast(high, elem)]


def _tf32(lw, reg, kind: MmaKind) -> ir.Value:
    if kind.k_width != 1:
        return reg
    return lw.asm("cvt.rna.tf32.f32 $0, $1;", "=r,f", I32, [reg])


def _split_tf32(lw, x) -> tuple[ir.Value, ir.Value]:
    big = lw.asm("cvt.rna.tf32.f32 $0, $1;", "=r,f", I32, [x])
    rest = lw.builder.fsub(x, lw.builder.bitcast(big, F32))
    small = lw.asm("cvt.rna.tf32.f32 $0, $1;", "=r,f", I32, [rest])
    return big, small


def _mma(lw, kind: MmaKind, a_regs, b_regs, acc) -> list:
    """One `mma.sync.aligned.m16n8kK.row.col` on this warp's fragments; returns c0..c3."""
    b = lw.builder
    shape = f"m16n8k{kind.k}"
    text = f"mma.sync.aligned.{shape}.row.col.{_SUFFIX[(kind.ab, kind.cd)]} "
    if kind.cd == "f16":
        # C and D are two registers of f16 pairs: (row g, columns 0-1) and (row g+8, columns 0-1)
        c_regs = [_pack(lw, kind, acc[0:2]), _pack(lw, kind, acc[2:4])]
        text += "{$0,$1}, {$2,$3,$4,$5}, {$6,$7}, {$8,$9};"
        out = lw.asm(
            text,
            "=r,=r,r,r,r,r,r,r,0,1",
            ir.LiteralStructType([I32, I32]),
            [*a_regs, *b_regs, *c_regs],
        )
        return [half for i in range(2) for half in unpack_halves(lw, b.extract_value(out, i), F16)]
    reg = "f" if kind.cd == "f32" else "r"
    elem = F32 if kind.cd == "f32" else I32
    text += "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};"
    constraints = ",".join([f"={reg}"] * 4 + ["r"] * 6 + ["0", "1", "2", "3"])
    out = lw.asm(text, constraints, ir.LiteralStructType([elem] * 4), [*a_regs, *b_regs, *acc])
    return [b.extract_value(out, i) for i in range(4)]
