"""A host stand-in for `mma.sync.aligned.m16n8kK.row.col` for the CPU emulator: the fragment tables of
the PTX ISA, written out independently of the compiler's layouts, so a wrong operand or accumulator
layout in the lowering gives wrong numbers here.

The emulated kernel calls `emu_mma(form, inputs, outputs)` from every lane; the emulator gathers the
32 lanes' input registers of a warp and each lane takes its own output registers from
`mma_fragment`. Lane l has g = l // 4 and t = l % 4; a 32-bit register holds kw = 32 / bits
consecutive K elements, the lowest K in the low bits.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

# form index -> (PTX type suffix, input registers, output registers)
_SUFFIXES = ("f32.f16.f16.f32", "f32.bf16.bf16.f32", "f16.f16.f16.f16", "f32.tf32.tf32.f32",
             "s32.s8.s8.s32", "f32.e4m3.e4m3.f32", "f32.e5m2.e5m2.f32")
MMA_FORMS = [(s, 8 if s.startswith("f16") else 10, 2 if s.startswith("f16") else 4)
             for s in _SUFFIXES]

_ELEMENTS = {"f16": (np.float16, 2), "bf16": (ml_dtypes.bfloat16, 2), "tf32": (np.float32, 1),
             "s8": (np.int8, 4), "e4m3": (ml_dtypes.float8_e4m3fn, 4),
             "e5m2": (ml_dtypes.float8_e5m2, 4)}


def _unpack(reg: np.uint32, ab: str) -> np.ndarray:
    dtype, kw = _ELEMENTS[ab]
    word = np.array([reg], dtype=np.uint32)
    if ab == "tf32":  # the tensor core reads the top 19 bits
        word &= np.uint32(0xFFFFE000)
    return word.view(dtype)[:kw].astype(np.float64)


def mma_fragment(suffix: str, lanes: np.ndarray, lane: int) -> np.ndarray:
    """This lane's D registers of D = A @ B + C, from the 32 lanes' input registers (rows of
    `lanes`: a0..a3, b0, b1, then c)."""
    cd, ab = suffix.split(".")[0], suffix.split(".")[1]
    kw = _ELEMENTS[ab][1]
    k_size = 8 * kw
    a = np.zeros((16, k_size))
    b = np.zeros((k_size, 8))
    c = np.zeros((16, 8))
    for src in range(32):
        g, t = src // 4, src % 4
        regs = lanes[src]
        for j in range(4):
            k0 = kw * t + 4 * kw * (j >> 1)
            a[g + 8 * (j & 1), k0:k0 + kw] = _unpack(regs[j], ab)
        for j in range(2):
            k0 = kw * t + 4 * kw * j
            b[k0:k0 + kw, g] = _unpack(regs[4 + j], ab)
        if cd == "f16":
            for j in range(2):
                c[g + 8 * j, 2 * t:2 * t + 2] = np.array([regs[6 + j]], np.uint32).view(np.float16)
        else:
            view = np.float32 if cd == "f32" else np.int32
            for j in range(4):
                c[g + 8 * (j >> 1), 2 * t + (j & 1)] = np.array([regs[6 + j]], np.uint32).view(view)[0]
    d = a @ b + c
    g, t = lane // 4, lane % 4
    if cd == "f16":
        rows = [d[g + 8 * j, 2 * t:2 * t + 2].astype(np.float16) for j in range(2)]
        return np.concatenate(rows).view(np.uint32)
    values = np.array([d[g + 8 * (j >> 1), 2 * t + (j & 1)] for j in range(4)])
    if cd == "f32":
        return values.astype(np.float32).view(np.uint32)
    return (values.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)


def mma_body(op: str, ret: str, arg_types: tuple) -> str:
    """The LLVM IR body of a host function standing in for one `mma.sync` inline-asm call: its
    registers go through memory to the `emu_mma` callback."""
    form = _SUFFIXES.index(op.split(".row.col.")[1])
    n_in, n_out = MMA_FORMS[form][1:]
    out_type = "float" if "float" in ret else "i32"
    lines = [f"  %in = alloca [{n_in} x i32]", f"  %out = alloca [{n_out} x i32]"]
    for i, t in enumerate(arg_types):
        value = f"%a{i}"
        if t == "float":
            lines.append(f"  %w{i} = bitcast float %a{i} to i32")
            value = f"%w{i}"
        lines.append(f"  %pi{i} = getelementptr [{n_in} x i32], ptr %in, i32 0, i32 {i}")
        lines.append(f"  store i32 {value}, ptr %pi{i}")
    lines.append(f"  call void @emu_mma(i32 {form}, ptr %in, ptr %out)")
    acc = "undef"
    for i in range(n_out):
        lines.append(f"  %po{i} = getelementptr [{n_out} x i32], ptr %out, i32 0, i32 {i}")
        lines.append(f"  %o{i} = load i32, ptr %po{i}")
        value = f"%o{i}"
        if out_type == "float":
            lines.append(f"  %f{i} = bitcast i32 %o{i} to float")
            value = f"%f{i}"
        lines.append(f"  %r{i} = insertvalue {ret} {acc}, {out_type} {value}, {i}")
        acc = f"%r{i}"
    return "\n".join(lines) + f"\n  ret {ret} {acc}\n}}"
