"""Tensor-core choice for `tt.dot`: which dots run on `mma.sync` and with which `#mma` layout.

Used by `dot_layout` (the layout `coalesce` gives a dot when the target has tensor cores) and the
LLVM lowering of `mma.sync`.
A dot runs on tensor cores when its input dtype has an `mma.sync` shape (fp16/bf16 m16n8k16, tf32
m16n8k8, int8 and fp8 m16n8k32), its accumulator type fits, and M, N and K are multiples of the
instruction's; otherwise it stays on the CUDA-core FMA path (fp64, `input_precision="ieee"` on
fp32, odd shapes).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import TABLE as DTYPES
from ..ir.ops import tt
from ..ir.ops.ttg import ConvertLayoutOp, DotOperandEncoding, MmaEncoding
from ..ir.types import element_type


@dataclass(frozen=True)
class MmaKind:
    """One `mma.sync` shape: PTX type names of A/B and C/D, elements per 32-bit register, K."""

    ab: str
    cd: str
    k_width: int

    @property
    def k(self) -> int:
        return 8 * self.k_width


# fp8 IR types -> PTX's mma.sync operand names (dtypes.TABLE's `mma`: "e4m3", "e5m2")
_FP8 = {row.ir: row.mma for row in DTYPES if row.bits == 8 and row.is_float and row.mma}


def mma_kind(op: tt.DotOp, fp8: bool) -> MmaKind | None:
    """The `mma.sync` form of `op`, or None when it must stay on the FMA path. `fp8`: the target's
    `mma.sync` takes fp8 operands (`TargetInfo.fp8_mma`, sm_89+)."""
    a, b = element_type(op.a.type).name, element_type(op.b.type).name
    acc = element_type(op.c.type).name
    if a in ("f16", "bf16") and a == b and (acc == "f32" or (acc == "f16" and a == "f16")):
        return MmaKind(a, acc, 2)
    if a == b == "f32" and acc == "f32" and op.input_precision in ("tf32", "tf32x3"):
        return MmaKind("tf32", "f32", 1)
    if a == b == "i8" and acc == "i32":
        return MmaKind("s8", "s32", 4)
    if a in _FP8 and b in _FP8 and acc == "f32" and fp8:
        return MmaKind(_FP8[a], "f32", 4)
    return None


def fits(op: tt.DotOp, kind: MmaKind) -> bool:
    """Whether M, N and K are whole multiples of the instruction's 16 x 8 x K."""
    m, k = op.a.type.shape[-2:]
    n = op.b.type.shape[-1]
    return m % 16 == 0 and n % 8 == 0 and k % kind.k == 0


def warps_per_cta(shape: tuple[int, ...], num_warps: int, chained: bool) -> tuple[int, ...]:
    """Warps over (M, N), as Triton's `warpsPerTileV2`: double the dimension with more 16x8 tiles
    left per warp. Chained dots (attention) put every warp on M, so the first's result rows are
    the next dot's A rows in the same warp and no data crosses warps."""
    m, n = shape[-2], shape[-1]
    batch = (1,) * (len(shape) - 2)
    if chained and m >= 16 * num_warps:
        return batch + (num_warps, 1)
    wm, wn = 1, 1
    while wm * wn < num_warps:
        if m // 16 // wm >= n // (8 * wn):
            if wm < m // 16:
                wm *= 2
            else:
                wn *= 2
        else:
            wn *= 2
    return batch + (wm, wn)


def fed_by_dot(op, dots: tuple = (tt.DotOp,)) -> bool:
    """Whether the dot's A operand comes from another dot's result (an op of the classes `dots`)
    through elementwise ops and layout conversions (an fp8 p's, into the A fragments)."""
    seen, work = set(), [op.a]
    while work:
        v = work.pop()
        producer = getattr(v, "op", None)
        if producer is None or id(producer) in seen:
            continue
        seen.add(id(producer))
        if isinstance(producer, dots):
            return True
        if (producer.elementwise and not producer.regions) or isinstance(producer, ConvertLayoutOp):
            work.extend(producer.operands)
    return False


def operand_encoding(op_idx: int, parent, element) -> DotOperandEncoding:
    """The dot-operand layout of operand `op_idx` (0: A, 1: B) of a dot whose result has `parent`."""
    if isinstance(parent, MmaEncoding):
        bits = element_type(element).bitwidth
        return DotOperandEncoding(op_idx, parent, max(1, 32 // bits))
    return DotOperandEncoding(op_idx, parent)
