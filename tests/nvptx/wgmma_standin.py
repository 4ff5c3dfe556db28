"""A host stand-in for Hopper's `wgmma` for the CPU emulator, written from the PTX ISA (the matrix
descriptor, the canonical K-major / MN-major layouts of swizzle atoms, the swizzle as an XOR of
address bits, the accumulator fragments), independently of the compiler's `#nvmma_shared` and
descriptor code: a wrong swizzle, stride, start address or fragment order gives wrong numbers here.

The emulated kernel calls `emu_wgmma(form, inputs, outputs)` from each of a warp group's 128 threads;
the group's first thread computes D = A @ B + C from the descriptors (or, in the register-A form, A
from the 128 threads' A fragments) and the threads' C registers, and each thread takes its own D
registers. The instruction is asynchronous as on the GPU (`InFlight`):
f32 results come back as NaN tokens that only the next wgmma (chained accumulation) or the
`wgmma.wait_group` retiring their group turns into values, so a kernel that reads an accumulator
before waiting for it stores NaN. `fence` and `fence.proxy.async` do nothing on the host.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np

FORMS: list[tuple] = []  # (n, k, acc, ab, trans_a, trans_b), indexed by the form code; trans_a
# None: A from registers (four words per thread after the accumulators)
_MMA = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k(\d+)\.(\w+)\.(\w+)\.\w+ .*?"
                  r"(?:, 1, 1, (\d), (\d))?;$")
_MMA_REGISTER_A = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k(\d+)\.(\w+)\.(\w+)\.\w+ "
                             r"\{[^}]*\}, \{[^}]*\}, [^,]*, [^,]*, 1, 1(?:, (\d))?;$")
_ELEMENTS = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "tf32": np.float32, "s8": np.int8,
             "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
_SWIZZLE = {1: 128, 2: 64, 3: 32}
MAX_WORDS = 160  # two descriptors (4 words), scale-d, up to 128 accumulator words, 4 A words


def is_wgmma_asm(op: str) -> bool:
    return op.startswith("wgmma.") or op.startswith("fence.proxy.async")


def runs_register_a(module_text: str) -> bool:
    """Whether an emulated module (its inline asm replaced by host functions) holds the stand-in of a
    register-A wgmma: the body that stores A's four words after the accumulators."""
    return "%pa3 = getelementptr i32, ptr %in" in module_text


def asm_body(asm: str, ret: str, arg_types: tuple) -> str:
    """The LLVM IR body of a host function standing in for one wgmma-family inline asm call."""
    op = asm.split(" ")[0]
    if op.startswith("wgmma.commit_group"):
        return "  call void @emu_wgmma_commit()\n  ret void\n}"
    if ret == "void":
        return "  ret void\n}"
    if op.startswith("wgmma.fence"):  # takes and returns A's words and a constant C: passed through
        acc = "undef"
        lines = []
        for i, t in enumerate(arg_types):
            lines.append(f"  %r{i} = insertvalue {ret} {acc}, {t} %a{i}, {i}")
            acc = f"%r{i}"
        return "\n".join(lines) + f"\n  ret {ret} {acc}\n}}"
    if op.startswith("wgmma.wait_group"):  # takes and returns the accumulators
        pendings = int(asm.split(" ")[1].rstrip(";"))
        count = len(arg_types)
        lines = [f"  %w = alloca [{count} x i32]"]
        for i, t in enumerate(arg_types):
            lines.append(f"  %p{i} = getelementptr i32, ptr %w, i32 {i}")
            lines.append(f"  store {t} %a{i}, ptr %p{i}")
        lines.append(f"  call void @emu_wgmma_wait(i32 {pendings}, ptr %w, i32 {count})")
        acc = "undef"
        for i, t in enumerate(arg_types):
            lines.append(f"  %o{i} = load {t}, ptr %p{i}")
            lines.append(f"  %r{i} = insertvalue {ret} {acc}, {t} %o{i}, {i}")
            acc = f"%r{i}"
        return "\n".join(lines) + f"\n  ret {ret} {acc}\n}}"
    register_a = _MMA_REGISTER_A.match(asm)
    m = register_a or _MMA.match(asm)
    if m is None:
        raise ValueError(f"the wgmma stand-in cannot run {asm!r}")
    if register_a:
        n, k, acc_type, ab, tb = m.groups()
        form = (int(n), int(k), acc_type, ab, None, tb == "1")
    else:
        n, k, acc_type, ab, ta, tb = m.groups()
        form = (int(n), int(k), acc_type, ab, ta == "1", tb == "1")
    if form not in FORMS:
        FORMS.append(form)
    code = FORMS.index(form)
    # arguments: A's descriptor or its 4 registers, B's descriptor, scale-d, the accumulators
    a_args = 4 if register_a else 1
    count = len(arg_types) - a_args - 2
    first = a_args + 2
    value = "float" if arg_types[first] == "float" else "i32"
    lines = [f"  %in = alloca [{MAX_WORDS} x i32], align 8", f"  %out = alloca [{count} x i32]",
             "  %pb = getelementptr i32, ptr %in, i32 2", f"  store i64 %a{a_args}, ptr %pb",
             "  %pp = getelementptr i32, ptr %in, i32 4",
             f"  %scale = zext i1 %a{a_args + 1} to i32", "  store i32 %scale, ptr %pp"]
    if register_a:  # words 0-1 (A's descriptor) stay unused; A's registers follow the accumulators
        for i in range(4):
            lines.append(f"  %pa{i} = getelementptr i32, ptr %in, i32 {5 + count + i}")
            lines.append(f"  store i32 %a{i}, ptr %pa{i}")
    else:
        lines.append("  store i64 %a0, ptr %in")
    for i in range(count):
        lines.append(f"  %pi{i} = getelementptr i32, ptr %in, i32 {5 + i}")
        lines.append(f"  store {value} %a{first + i}, ptr %pi{i}")
    lines.append(f"  call void @emu_wgmma(i32 {code}, ptr %in, ptr %out)")
    acc = "undef"
    for i in range(count):
        lines.append(f"  %po{i} = getelementptr i32, ptr %out, i32 {i}")
        lines.append(f"  %o{i} = load {value}, ptr %po{i}")
        lines.append(f"  %r{i} = insertvalue {ret} {acc}, {value} %o{i}, {i}")
        acc = f"%r{i}"
    return "\n".join(lines) + f"\n  ret {ret} {acc}\n}}"


# -- the instruction ------------------------------------------------------------------------------


def decode(desc: int) -> dict:
    """The fields of a shared-memory matrix descriptor (PTX ISA: start address, leading and stride
    dimension byte offsets, each >> 4 in 14 bits; base offset in bits 49-51; swizzle in 62-63)."""
    return {"start": (desc & 0x3FFF) << 4, "leading": ((desc >> 16) & 0x3FFF) << 4,
            "stride": ((desc >> 32) & 0x3FFF) << 4, "base_offset": (desc >> 49) & 7,
            "mode": desc >> 62}


def element_addresses(fields: dict, mn: int, k: int, elem_bytes: int, mn_major: bool,
                      window: int) -> np.ndarray:
    """The address of each (mn, k) element of an operand: `mn` rows of M (A) or N (B), `k` of K, in
    the canonical layout, then swizzled. `window`: the host address of shared address 0's swizzle
    pattern (the shared window's addresses are the low 18 bits of the host's)."""
    if fields["base_offset"] or fields["mode"] == 0:
        raise ValueError(f"stand-in: unsupported descriptor {fields}")
    swizzle = _SWIZZLE[fields["mode"]]
    per_unit = 16 // elem_bytes  # elements per 16-byte unit
    row = np.arange(mn)[:, None]
    col = np.arange(k)[None, :]
    if mn_major:  # atoms: `swizzle` bytes of M/N contiguous x 8 rows of K
        per_row = swizzle // elem_bytes
        offset = ((row % per_row) * elem_bytes + (row // per_row) * fields["leading"]
                  + (col % 8) * swizzle + (col // 8) * fields["stride"])
    else:  # atoms: 8 rows of M/N x `swizzle` bytes of K; leading offset unused
        offset = ((row % 8) * swizzle + (row // 8) * fields["stride"]
                  + (col // per_unit) * 16 + (col % per_unit) * elem_bytes)
    address = window + ((fields["start"] - window) & 0x3FFFF) + offset
    # the swizzle: the 16-byte unit (bits 4..) XORed with the 128-byte row within the pattern (bits 7..)
    return address ^ (((address >> 7) & (swizzle // 16 - 1)) << 4)


def read_operand(memory: np.ndarray, base: int, addresses: np.ndarray, ab: str) -> np.ndarray:
    """The elements at host `addresses` (`memory` is the shared array at host address `base`) as
    float64; tf32 keeps the top 19 bits of each float, as the tensor core reads them."""
    dtype = _ELEMENTS[ab]
    size = np.dtype(dtype).itemsize
    index = (addresses - base).astype(np.int64)
    raw = np.stack([memory[index + j] for j in range(size)], axis=-1).copy()
    if ab == "tf32":
        bits = raw.view(np.uint32)[..., 0] & np.uint32(0xFFFFE000)
        return bits.view(np.float32).astype(np.float64)
    return raw.view(dtype)[..., 0].astype(np.float64)


def register_operand(words: np.ndarray, ab: str) -> np.ndarray:
    """The 64 x K A of the register form from the 128 threads' 4 words each (PTX ISA, wgmma A
    fragments): warp w holds rows 16 w..16 w + 15 as mma.sync's A (m16n8k16 for .f16/.bf16, K = 16;
    m16n8k32 for .e4m3/.e5m2, K = 32), lane l (g = l / 4, t = l % 4) words a0..a3 = (g, c t),
    (g + 8, c t), (g, c t + K / 2), (g + 8, c t + K / 2) with c consecutive K each (2 halves or 4
    bytes), the lowest K in the low bits."""
    if ab in ("f16", "bf16"):
        per_word, size = 2, np.uint16
    elif ab in ("e4m3", "e5m2"):
        per_word, size = 4, np.uint8
    else:
        raise ValueError(f"stand-in: no register-A form for {ab}")
    k = 8 * per_word
    parts = words.astype(np.uint32).copy().view(size).view(_ELEMENTS[ab])  # 128 x 4 per_word
    a = np.zeros((64, k))
    for t in range(128):
        w, lane = t // 32, t % 32
        g, q = lane // 4, lane % 4
        for j in range(4):
            row, col = 16 * w + g + 8 * (j & 1), per_word * q + k // 2 * (j >> 1)
            a[row, col:col + per_word] = parts[t, per_word * j:per_word * (j + 1)].astype(np.float64)
    return a


def fragment(acc: str, n: int) -> list[tuple[int, int, int]]:
    """(register, row, column) of warp 0 lane 0's accumulators, per the PTX ISA's wgmma D layout;
    lane l adds (l // 4, 2 * (l % 4)), warp w of the group 16 w rows. f16: two per register."""
    if acc == "f16":
        return [(j, 8 * (j & 1), 8 * (j >> 1) + e) for j in range(n // 4) for e in range(2)]
    return [(i, 8 * ((i >> 1) & 1), 8 * (i >> 2) + (i & 1)) for i in range(n // 2)]


def warp_group_mma(form: tuple, words: np.ndarray, memory: np.ndarray, base: int) -> np.ndarray:
    """D of the 128 threads (rows of `words`: the inputs each thread passed) as their output words."""
    n, k, acc, ab, trans_a, trans_b = form
    descs = words[:, 0].astype(np.uint64) | (words[:, 1].astype(np.uint64) << np.uint64(32))
    descs_b = words[:, 2].astype(np.uint64) | (words[:, 3].astype(np.uint64) << np.uint64(32))
    if trans_a is None:
        descs = descs[:1]  # no A descriptor
    if len(set(descs.tolist())) != 1 or len(set(descs_b.tolist())) != 1:
        raise ValueError("stand-in: the warp group's threads passed different descriptors")
    elem = np.dtype(_ELEMENTS[ab]).itemsize
    count = n // 4 if acc == "f16" else n // 2
    if trans_a is None:
        a = register_operand(words[:, 5 + count:9 + count], ab)
    else:
        a_at = element_addresses(decode(int(descs[0])), 64, k, elem, trans_a, base)
        a = read_operand(memory, base, a_at, ab)  # 64 x k
    b_at = element_addresses(decode(int(descs_b[0])), n, k, elem, trans_b, base)
    b = read_operand(memory, base, b_at, ab).T  # k x n
    d = a @ b
    scale = words[0, 4]
    out = np.zeros((128, count), dtype=np.uint32)
    places = fragment(acc, n)
    for t in range(128):
        w, lane = t // 32, t % 32
        dr, dc = 16 * w + lane // 4, 2 * (lane % 4)
        regs = words[t, 5:5 + count]
        if acc == "f16":
            c = regs.astype(np.uint32).view(np.float16).astype(np.float64)
            vals = np.array([d[dr + r, dc + col] for _, r, col in places]) + (c if scale else 0)
            out[t] = vals.astype(np.float16).view(np.uint32)
        elif acc == "f32":
            c = regs.astype(np.uint32).view(np.float32).astype(np.float64)
            vals = np.array([d[dr + r, dc + col] for _, r, col in places]) + (c if scale else 0)
            out[t] = vals.astype(np.float32).view(np.uint32)
        else:
            c = regs.astype(np.uint32).view(np.int32).astype(np.int64)
            vals = np.array([d[dr + r, dc + col] for _, r, col in places]).astype(np.int64)
            out[t] = ((vals + (c if scale else 0)) & 0xFFFFFFFF).astype(np.uint32)
    return out


class InFlight:
    """One thread's wgmma groups not yet waited for. f32 results are handed out as NaN tokens
    (0x7FC00000 | thread << 14 | counter); a wgmma whose C is a token reads its value (the tensor core
    chains accumulators in place), and `wait_group n` retires all but the n newest committed groups,
    turning their tokens into values. s32 and packed f16 results are handed out as values."""

    def __init__(self, tid: int):
        self.tid, self.counter = tid, 0
        self.values: dict[int, int] = {}
        self.open: list[int] = []
        self.groups: list[list[int]] = []
        self.retired: set[int] = set()

    def chain(self, words: np.ndarray) -> None:
        """C registers that are tokens of earlier wgmmas become their values (in place)."""
        for i, w in enumerate(words.tolist()):
            if w in self.values:
                words[i] = self.values[w]

    def hand_out(self, words: np.ndarray, acc: str) -> np.ndarray:
        if acc != "f32":
            return words
        tokens = np.zeros_like(words)
        for i, w in enumerate(words.tolist()):
            self.counter = self.counter % 0x3FFF + 1
            token = 0x7FC00000 | (self.tid & 0xFF) << 14 | self.counter
            self.values[token] = w
            self.open.append(token)
            tokens[i] = token
        return tokens

    def commit(self) -> None:
        self.groups.append(self.open)
        self.open = []

    def wait(self, pendings: int, words: np.ndarray) -> None:
        while len(self.groups) > pendings:
            self.retired.update(self.groups.pop(0))
        for i, w in enumerate(words.tolist()):
            if w in self.retired:
                words[i] = self.values[w]
