"""A host stand-in for `mma.sync.aligned.m16n8kK.row.col` for the CPU emulator: the fragment tables of
the PTX ISA, written out independently of the compiler's layouts, so a wrong operand or accumulator
layout in the lowering gives wrong numbers here.

The emulated kernel calls `emu_mma(form, inputs, outputs)` from every lane; the emulator gathers the
32 lanes' input registers of a warp and each lane takes its own output registers from
`mma_fragment`. Lane l has g = l // 4 and t = l % 4; a 32-bit register holds kw = 32 / bits
consecutive K elements, the lowest K in the low bits.
"""

from __future__ import annotations

import re

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


# -- ldmatrix, stmatrix and cp.async -----------------------------------------------------------------------

_LDMATRIX = re.compile(r'@"llvm\.nvvm\.ldmatrix\.sync\.aligned\.m8n8\.x(\d)(\.trans)?\.b16"')
_CP_ASYNC = re.compile(r'@"llvm\.nvvm\.cp\.async\.(ca|cg)\.shared\.global\.(\d+)\.s"')


def ldmatrix_rows(addresses: np.ndarray, lane: int, count: int, trans: bool, read) -> np.ndarray:
    """This lane's `count` registers of `ldmatrix`: matrix j's 8 rows start at addresses[8j..8j+7]
    (16 bytes each); without .trans a lane gets row lane/4, columns 2(lane%4)+{0,1}, with .trans
    rows 2(lane%4)+{0,1} of column lane/4. `read(address)` gives the 16-bit word there."""
    out = np.zeros(count, dtype=np.uint32)
    g, t = lane // 4, lane % 4
    for j in range(count):
        rows = addresses[8 * j:8 * j + 8]
        if trans:
            words = [read(int(rows[2 * t + e]) + 2 * g) for e in range(2)]
        else:
            words = [read(int(rows[g]) + 2 * (2 * t + e)) for e in range(2)]
        out[j] = words[0] | (words[1] << 16)
    return out


def stmatrix_writes(addresses: np.ndarray, lane: int, words: np.ndarray) -> list[tuple[int, int]]:
    """(address, 32-bit word) this lane writes by `stmatrix.x4`: its register j is row lane/4,
    columns 2(lane%4)+{0,1} of matrix j, whose 8 rows start at addresses[8j..8j+7] (the inverse of
    `ldmatrix_rows` without .trans)."""
    g, t = lane // 4, lane % 4
    return [(int(addresses[8 * j + g]) + 4 * t, int(words[j])) for j in range(len(words))]


def replace_async_intrinsics(text: str) -> tuple[str, list[str]]:
    """ldmatrix, stmatrix and cp.async intrinsic calls become calls of host-callback wrappers;
    returns the text and the wrapper definitions."""
    defs = []
    for count, trans in sorted(set(_LDMATRIX.findall(text))):
        name = f"emu_ldmatrix_x{count}{'_trans' if trans else ''}"
        code = int(count) | (8 if trans else 0)
        ret = "{" + ", ".join(["i32"] * int(count)) + "}"
        body = [f'define internal {ret} @"{name}"(ptr addrspace(3) %p) {{',
                "  %g = addrspacecast ptr addrspace(3) %p to ptr",
                f"  %out = alloca [{count} x i32]",
                f"  call void @emu_ldmatrix(i32 {code}, ptr %g, ptr %out)"]
        acc = "undef"
        for i in range(int(count)):
            body += [f"  %q{i} = getelementptr [{count} x i32], ptr %out, i32 0, i32 {i}",
                     f"  %v{i} = load i32, ptr %q{i}",
                     f"  %r{i} = insertvalue {ret} {acc}, i32 %v{i}, {i}"]
            acc = f"%r{i}"
        defs.append("\n".join(body + [f"  ret {ret} {acc}", "}"]))
        pattern = f'@"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{trans}.b16"'
        text = _drop_declaration(text, pattern).replace(pattern, f'@"{name}"')
    pattern = '@"llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.b16"'
    if pattern in text:
        defs.append('define internal void @"emu_stmatrix_x4"(ptr addrspace(3) %p, i32 %a, i32 %b, '
                    "i32 %c, i32 %d) {\n  %g = addrspacecast ptr addrspace(3) %p to ptr\n"
                    "  %w = alloca [4 x i32]\n"
                    + "".join(f"  %q{i} = getelementptr [4 x i32], ptr %w, i32 0, i32 {i}\n"
                              f"  store i32 %{r}, ptr %q{i}\n" for i, r in enumerate("abcd"))
                    + "  call void @emu_stmatrix(i32 4, ptr %g, ptr %w)\n  ret void\n}")
        text = _drop_declaration(text, pattern).replace(pattern, '@"emu_stmatrix_x4"')
        defs.append("declare void @emu_stmatrix(i32, ptr, ptr)")
    for kind, size in sorted(set(_CP_ASYNC.findall(text))):
        name = f"emu_cp_async_{kind}_{size}"
        defs.append(f'define internal void @"{name}"(ptr addrspace(3) %d, ptr addrspace(1) %s, i32 %n) {{\n'
                    "  %gd = addrspacecast ptr addrspace(3) %d to ptr\n"
                    "  %gs = addrspacecast ptr addrspace(1) %s to ptr\n"
                    f"  call void @emu_cp_async(ptr %gd, ptr %gs, i32 {size}, i32 %n)\n  ret void\n}}")
        pattern = f'@"llvm.nvvm.cp.async.{kind}.shared.global.{size}.s"'
        text = _drop_declaration(text, pattern).replace(pattern, f'@"{name}"')
    for intrinsic in ("llvm.nvvm.cp.async.commit.group", "llvm.nvvm.cp.async.wait.group"):
        # copies complete at once on the host: committing and waiting do nothing
        pattern = f'@"{intrinsic}"'
        if pattern in text:
            name = "emu_" + intrinsic.rsplit(".", 2)[-2] + "_" + intrinsic.rsplit(".", 1)[-1]
            params = "i32 %n" if intrinsic.endswith("wait.group") else ""
            defs.append(f'define internal void @"{name}"({params}) {{\n  ret void\n}}')
            text = _drop_declaration(text, pattern).replace(pattern, f'@"{name}"')
    if defs:
        defs += ["declare void @emu_ldmatrix(i32, ptr, ptr)",
                 "declare void @emu_cp_async(ptr, ptr, i32, i32)"]
    return text, defs


def _drop_declaration(text: str, pattern: str) -> str:
    return "\n".join(line for line in text.split("\n")
                     if not (line.startswith("declare") and pattern in line))
