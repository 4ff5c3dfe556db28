"""A host stand-in for TMA (`cp.async.bulk.tensor` 2-D tile copies) and the mbarrier ops, for the CPU
emulator, written from the PTX ISA and the CUDA driver API's definitions rather than from the
compiler's lowering, so a wrong box, coordinate order, swizzle or barrier phase gives wrong numbers.

- The tensor map: the emulated host cannot call `cuTensorMapEncodeTiled`, so `host_tensor_map` packs
  the same facts into 128 bytes of our own layout (`_MAP`): the base address, the dimensions
  innermost first, the byte strides of the outer dimensions, the box (`tma_rules.tma_box`, as the
  runtime encodes it), the swizzle span and the out-of-bounds fill.
- A load writes the box densely, row after row (innermost dimension contiguous), each element at its
  shared address with the swizzle applied to the address bits: for a span of S bytes, the 16-byte
  chunk bits [4, 4 + log2(S / 16)) are XORed with bits [7, 7 + log2(S / 16)). Positions outside the
  tensor are filled with zeros, or NaN with the NaN fill; the barrier gets the whole box's bytes,
  however much of it is outside. Stores skip positions outside the tensor, but write whole 16-byte
  chunks, as the hardware does: past an innermost extent that is not a whole number of chunks they
  write what the tile holds (Triton issue 11583; the H200's "stray" writes at a padded stride).
- Faults (recorded, raised by `check` after the launch, as the H200 traps): an innermost coordinate
  that is not on a 16-byte chunk (cudaErrorIllegalInstruction there), a shared tile off its
  swizzle's alignment, a box row wider than the swizzle span, a wait on an uninitialized barrier.
- Tensor maps built in the kernel: `tensormap.replace.tile.<field>` (inline PTX) writes one field of
  a map in that layout, with the PTX ISA's encodings (rank - 1, element type codes, swizzle modes
  0-3, fill mode 1 = NaN); `tensormap.cp_fenceproxy` copies the 128 bytes to global memory; the
  proxy fences have nothing to order on the host.
- mbarrier (count n): `arrive.expect_tx` adds the bytes and arrives, `arrive` arrives; the copy's
  completion subtracts the bytes; a phase completes when the n arrivals are in and no byte is
  owed, and `try_wait.parity p` is true once the phase of parity p has completed (parity 1 of a
  fresh barrier: the phase before its first). Copies are deferred until a thread waits and finds
  the phase incomplete, so a kernel that reads the tile before waiting on the right phase reads
  stale data. A wait that sees no arrival on its barrier for `STUCK_SECONDS` is a fault (the GPU
  would hang): the launch ends and `check` raises.
"""

from __future__ import annotations

import ctypes
import functools
import re
import threading
import time

import numpy as np

from tileworkbench.tma_rules import tma_box

# the host tensor map's fields (our own layout; 124 of the 128 bytes)
_MAP = np.dtype([("base", "<u8"), ("rank", "<u4"), ("element_bytes", "<u4"), ("dims", "<u8", 5),
                 ("strides", "<u8", 5), ("box", "<u4", 5), ("swizzle", "<u4"), ("nan_fill", "<u4")])

_LOAD = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                         ctypes.c_int32)
_STORE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32)
_INIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32)
_WAIT = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32)
_ARRIVE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_NAN_BITS = {2: 0x7FFF, 4: 0x7FFFFFFF, 8: 0x7FFFFFFFFFFFFFFF}
STUCK_SECONDS = 60  # a wait that long without any arrival on its barrier is a deadlock


def host_tensor_map(array: np.ndarray, block_shape, padding: str = "zero") -> np.ndarray:
    """The 128-byte host map of a 2-D NumPy array seen through a descriptor of `block_shape`."""
    rows, cols = array.shape
    nbytes = array.itemsize
    inner, swizzle = tma_box(block_shape, nbytes)
    fields = np.zeros((), _MAP)
    fields["base"] = array.__array_interface__["data"][0]
    fields["rank"], fields["element_bytes"] = 2, nbytes
    fields["dims"][:2] = (cols, rows)
    fields["strides"][0] = array.strides[0]
    fields["box"][:2] = (inner, block_shape[0])
    fields["swizzle"] = swizzle
    fields["nan_fill"] = padding == "nan"
    out = np.zeros(128, np.uint8)
    out[:_MAP.itemsize] = np.frombuffer(fields.tobytes(), np.uint8)
    return out


def _read_map(address: int) -> np.void:
    return np.frombuffer(ctypes.string_at(address, _MAP.itemsize), _MAP)[0]


def _swizzled(address: int, swizzle: int) -> int:
    if not swizzle:
        return address
    bits = (swizzle // 16).bit_length() - 1
    mask = (1 << bits) - 1
    return address ^ (((address >> 7) & mask) << 4)


def _box_positions(tmap: np.void, x: int, y: int, whole_chunks: bool = False):
    """(box row, box column, inside the tensor, global byte address) of each box element;
    `whole_chunks`: the innermost extent rounded up to 16 bytes (what a store writes)."""
    cols, rows = int(tmap["dims"][0]), int(tmap["dims"][1])
    box_cols, box_rows = int(tmap["box"][0]), int(tmap["box"][1])
    nbytes, stride = int(tmap["element_bytes"]), int(tmap["strides"][0])
    if whole_chunks:
        cols = -(-cols * nbytes // 16) * 16 // nbytes
    for i in range(box_rows):
        for j in range(box_cols):
            gy, gx = y + i, x + j
            inside = 0 <= gx < cols and 0 <= gy < rows
            yield i, j, inside, int(tmap["base"]) + gy * stride + gx * nbytes


# tensormap.replace's fields, in the order of the callback's field argument
_FIELDS = ("global_address", "rank", "box_dim", "global_dim", "global_stride", "element_stride",
           "elemtype", "interleave_layout", "swizzle_mode", "fill_mode")
# PTX `.elemtype` codes -> bytes per element (u8 u16 u32 s32 u64 s64 f16 f32 f32.ftz f64 bf16 tf32)
_ELEMENT_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 4, 9: 8, 10: 2, 11: 4}
_REPLACE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int64)
_COPY_MAP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


def tensormap_replace(fault, address: int, field: int, ordinal: int, value: int) -> None:
    """`tensormap.replace.tile.<_FIELDS[field]>` of the map at `address`, as the PTX ISA defines it;
    an illegal value is a fault (`fault(message)`: an assert would vanish in the ctypes callback)."""
    tmap = np.frombuffer((ctypes.c_uint8 * _MAP.itemsize).from_address(address), _MAP)
    name = _FIELDS[field]
    if name == "global_address":
        if value % 16:
            fault("TMA's global address must be 16-byte aligned")
        tmap["base"] = value
    elif name == "rank":
        tmap["rank"] = value + 1
    elif name == "box_dim":
        if not 1 <= value <= 256:
            fault(f"a box dimension is 1 to 256 elements, got {value}")
        tmap["box"][0, ordinal] = value
    elif name == "global_dim":
        tmap["dims"][0, ordinal] = value
    elif name == "global_stride":
        if value % 16:
            fault(f"TMA's global strides are multiples of 16 bytes, got {value}")
        tmap["strides"][0, ordinal] = value
    elif name == "element_stride":
        if value != 1:
            fault("the stand-in copies dense boxes only (element stride 1)")
    elif name == "elemtype":
        tmap["element_bytes"] = _ELEMENT_BYTES[value]
    elif name == "interleave_layout":
        if value:
            fault("the stand-in has no interleaved layouts")
    elif name == "swizzle_mode":
        tmap["swizzle"] = (0, 32, 64, 128)[value]
    elif name == "fill_mode":
        if value and tmap["element_bytes"] < 2:
            fault("TMA fills NaN for float types only")
        tmap["nan_fill"] = value == 1


def copy_map(destination: int, source: int) -> None:
    """`tensormap.cp_fenceproxy`: the 128-byte map from shared to global memory."""
    ctypes.memmove(destination, source, 128)


_REPLACE_ASM = re.compile(r"tensormap\.replace\.tile\.(\w+)\.shared::cta\.b1024\.b(32|64) "
                          r"\[\$0\], (?:(\d+), )?(\$1|-?\d+);")


def is_tensormap_asm(asm: str) -> bool:
    """Whether inline PTX `asm` is one of the in-kernel tensor map instructions."""
    return asm.startswith(("tensormap.", "fence.proxy.tensormap"))


def tensormap_asm_body(asm: str, ret: str, arg_types: tuple) -> str:
    """The host LLVM body of an in-kernel tensor map instruction (after the function's head)."""
    if asm.startswith("fence.proxy.tensormap"):  # the acquire (and the bulk-group no-ops after it)
        return "  ret void\n}"
    if asm.startswith("tensormap.cp_fenceproxy"):
        return ("  %d = addrspacecast ptr addrspace(1) %a0 to ptr\n"
                "  %s = addrspacecast ptr addrspace(3) %a1 to ptr\n"
                "  call void @emu_tensormap_copy(ptr %d, ptr %s)\n  ret void\n}")
    m = _REPLACE_ASM.fullmatch(asm)
    if m is None:
        raise ValueError(f"the tensor map stand-in cannot run {asm!r}")
    field, width, ordinal, value = m.groups()
    body = "  %g = addrspacecast ptr addrspace(3) %a0 to ptr\n"
    if value == "$1":
        body += "  %v = zext i32 %a1 to i64\n" if arg_types[1] == "i32" else ""
        value = "%v" if arg_types[1] == "i32" else "%a1"
    return body + (f"  call void @emu_tensormap_replace(ptr %g, i32 {_FIELDS.index(field)}, "
                   f"i32 {ordinal or 0}, i64 {value})\n  ret void\n}}")


TENSORMAP_DECLARATIONS = ["declare void @emu_tensormap_replace(ptr, i32, i32, i64)",
                          "declare void @emu_tensormap_copy(ptr, ptr)"]


class TMAStandIn:
    """The callbacks' state: mbarriers by address, the copies each one still owes, and the faults
    seen (a callback cannot raise into the kernel; `check` raises them after the launch)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.barriers: dict[int, dict] = {}
        self.faults: list[str] = []

    def check(self) -> None:
        """Raise the first fault the launch made (as the GPU would have trapped)."""
        if self.faults:
            faults, self.faults = self.faults, []
            raise AssertionError(f"TMA fault ({len(faults)} in all): {faults[0]}")

    def _fault(self, message: str) -> bool:
        self.faults.append(message)
        return True

    def callbacks(self) -> dict[str, object]:
        return {"emu_mbar_init": _INIT(self.init), "emu_mbar_expect_tx": _INIT(self.expect_tx),
                "emu_mbar_arrive": _ARRIVE(self.arrive),
                "emu_mbar_try_wait": _WAIT(self.try_wait), "emu_tma_load": _LOAD(self.load),
                "emu_tma_store": _STORE(self.store),
                "emu_tensormap_replace": _REPLACE(functools.partial(tensormap_replace, self._fault)),
                "emu_tensormap_copy": _COPY_MAP(copy_map)}

    def init(self, mbar: int, count: int) -> None:
        with self.lock:
            self.barriers[mbar] = {"count": count, "pending": count, "tx": 0, "phase": 0,
                                   "copies": [], "moved": time.monotonic()}

    def expect_tx(self, mbar: int, nbytes: int) -> None:
        with self.lock:
            barrier = self.barriers[mbar]
            barrier["tx"] += nbytes
            barrier["pending"] -= 1
            barrier["moved"] = time.monotonic()
            self._maybe_complete(barrier)

    def arrive(self, mbar: int) -> None:
        with self.lock:
            barrier = self.barriers.get(mbar)
            if barrier is None:
                self._fault(f"arrive on the uninitialized mbarrier {mbar:#x}")
                return
            barrier["pending"] -= 1
            barrier["moved"] = time.monotonic()
            self._maybe_complete(barrier)

    def load(self, dst: int, mbar: int, tmap_address: int, x: int, y: int) -> None:
        tmap = _read_map(tmap_address)
        if self._bad_box(tmap, dst, x):
            return
        with self.lock:
            self.barriers[mbar]["copies"].append((dst, tmap, x, y))

    def _bad_box(self, tmap: np.void, shared: int, x: int) -> bool:
        """Record a fault for a copy the hardware traps on (or would garble)."""
        nbytes, swizzle = int(tmap["element_bytes"]), int(tmap["swizzle"])
        if x * nbytes % 16:
            return self._fault(f"innermost box coordinate {x} is not on a 16-byte chunk")
        if shared % max(swizzle * 8, 128):
            return self._fault(f"shared tile at {shared:#x} is off the {swizzle}-byte swizzle's "
                               "alignment")
        if swizzle and int(tmap["box"][0]) * nbytes > swizzle:
            return self._fault("a box row is wider than the swizzle span")
        return False

    def try_wait(self, mbar: int, parity: int) -> int:
        with self.lock:
            barrier = self.barriers.get(mbar)
            if barrier is None:
                self._fault(f"wait on the uninitialized mbarrier {mbar:#x}")
            if barrier is None or self.faults:
                return 1  # the GPU would have trapped: let the launch end, `check` raises
            if barrier["phase"] % 2 != parity:
                return 1  # the phase of this parity has completed
            for copy in barrier["copies"]:  # the engine finishes the owed copies now
                barrier["tx"] -= self._copy_in(*copy)
            barrier["copies"] = []
            self._maybe_complete(barrier)
            if barrier["phase"] % 2 != parity:
                return 1
            if time.monotonic() - barrier["moved"] > STUCK_SECONDS:  # a hang on the GPU
                self._fault(f"a wait on mbarrier {mbar:#x} (parity {parity}) saw no arrival for "
                            f"{STUCK_SECONDS} s: a deadlock")
                return 1
            return 0

    @staticmethod
    def _maybe_complete(barrier: dict) -> None:
        if barrier["pending"] == 0 and barrier["tx"] == 0:
            barrier["phase"] += 1
            barrier["pending"] = barrier["count"]
            barrier["moved"] = time.monotonic()

    @staticmethod
    def _copy_in(dst: int, tmap: np.void, x: int, y: int) -> int:
        nbytes, swizzle = int(tmap["element_bytes"]), int(tmap["swizzle"])
        row_bytes = int(tmap["box"][0]) * nbytes
        fill = _NAN_BITS[nbytes] if tmap["nan_fill"] else 0
        for i, j, inside, source in _box_positions(tmap, x, y):
            target = _swizzled(dst + i * row_bytes + j * nbytes, swizzle)
            if inside:
                ctypes.memmove(target, source, nbytes)
            else:
                ctypes.memmove(target, fill.to_bytes(nbytes, "little"), nbytes)
        return int(tmap["box"][0]) * int(tmap["box"][1]) * nbytes

    def store(self, src: int, tmap_address: int, x: int, y: int) -> None:
        tmap = _read_map(tmap_address)
        if self._bad_box(tmap, src, x):
            return
        nbytes, swizzle = int(tmap["element_bytes"]), int(tmap["swizzle"])
        row_bytes = int(tmap["box"][0]) * nbytes
        for i, j, inside, target in _box_positions(tmap, x, y, whole_chunks=True):
            if inside:
                ctypes.memmove(target, _swizzled(src + i * row_bytes + j * nbytes, swizzle), nbytes)


# intrinsic -> (host function, its LLVM signature, how the wrapper calls it)
_WRAPPERS = {
    "llvm.nvvm.mbarrier.init.shared": (
        "void (ptr addrspace(3) %m, i32 %n)", "call void @emu_mbar_init(ptr %gm, i32 %n)", "void"),
    "llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta": (
        "i64 (ptr addrspace(3) %m, i32 %n)", "call void @emu_mbar_expect_tx(ptr %gm, i32 %n)", "i64 0"),
    "llvm.nvvm.mbarrier.arrive.shared": (
        "i64 (ptr addrspace(3) %m)", "call void @emu_mbar_arrive(ptr %gm)", "i64 0"),
    "llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta": (
        "i1 (ptr addrspace(3) %m, i32 %p)",
        "%w = call i32 @emu_mbar_try_wait(ptr %gm, i32 %p)\n  %b = trunc i32 %w to i1", "i1 %b"),
    "llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d": (
        ("void (ptr addrspace(7) %d, ptr addrspace(3) %m, ptr %t, i32 %x, i32 %y, i16 %c, i64 %h, "
         "i1 %uc, i1 %uh, i32 %g)"),
        ("%gd = addrspacecast ptr addrspace(7) %d to ptr\n"
         "  call void @emu_tma_load(ptr %gd, ptr %gm, ptr %t, i32 %x, i32 %y)"), "void"),
    "llvm.nvvm.cp.async.bulk.tensor.s2g.tile.2d": (
        "void (ptr addrspace(3) %m, ptr %t, i32 %x, i32 %y, i64 %h, i1 %uh)",
        "call void @emu_tma_store(ptr %gm, ptr %t, i32 %x, i32 %y)", "void"),
    # the host's copies are done when they return: fences, commits and waits have nothing to do
    "llvm.nvvm.fence.proxy.async.shared_cta": ("void ()", "", "void"),
    "llvm.nvvm.cp.async.bulk.commit.group": ("void ()", "", "void"),
    "llvm.nvvm.cp.async.bulk.wait.group.read": ("void (i32 %n)", "", "void"),
}
_DECLARATIONS = ["declare void @emu_mbar_init(ptr, i32)", "declare void @emu_mbar_expect_tx(ptr, i32)",
                 "declare void @emu_mbar_arrive(ptr)",
                 "declare i32 @emu_mbar_try_wait(ptr, i32)",
                 "declare void @emu_tma_load(ptr, ptr, ptr, i32, i32)",
                 "declare void @emu_tma_store(ptr, ptr, i32, i32)"]


def replace_tma_intrinsics(text: str) -> tuple[str, list[str]]:
    """TMA and mbarrier intrinsic calls become calls of host-callback wrappers; tensor-map parameters
    lose `byval` (the host passes a pointer to the map). Returns the text and the definitions."""
    text = text.replace("byval([128 x i8]) align 64 ", "")
    defs = []
    for intrinsic, (signature, body, ret) in _WRAPPERS.items():
        pattern = f'@"{intrinsic}"'
        if pattern not in text:
            continue
        name = "emu_" + intrinsic.replace(".", "_")
        ret_type, params = signature.split(" ", 1)
        cast = "  %gm = addrspacecast ptr addrspace(3) %m to ptr\n" if "%m" in params else ""
        lines = f"{cast}  {body}\n" if body else cast
        defs.append(f'define internal {ret_type} @"{name}"{params} {{\n{lines}  ret {ret}\n}}')
        text = "\n".join(line for line in text.split("\n")
                         if not (line.startswith("declare") and pattern in line))
        text = text.replace(pattern, f'@"{name}"')
    if defs:
        defs += _DECLARATIONS
    return text, defs

