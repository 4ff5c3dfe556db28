"""Tensor maps built in the kernel (sm_90a): `ttng.global_scratch` and `ttng.tensormap_create`, the TMA
side of `tl.make_tensor_descriptor` (passes/descriptors.py).

Global scratch: a kernel with `ttng.global_scratch` ops takes one more parameter after its own (before
debug mode's), a `ptr addrspace(1)` to the launch's scratch, which the launcher gets from the
allocator given to `set_allocator` (runtime/allocation.py): `global_scratch_bytes(func)` bytes per
program, program p = ctaid.x + nctaid.x * (ctaid.y + nctaid.y * ctaid.z) owning bytes
[p * size, (p + 1) * size). Each op has its own 128-byte aligned slot.

A map is built as Triton builds its `ttng.tensormap_create` (what the PTX ISA and the CUDA
programming guide recommend): thread 0 zeroes a 128-byte template in shared memory and writes every
field with `tensormap.replace.tile.<field>.shared::cta.b1024` (global address, rank - 1, box and
global dimensions and element strides innermost first, byte strides of the outer dimensions, element
type, interleave none, swizzle, fill); warp 0 then copies it to the scratch with
`tensormap.cp_fenceproxy ... release.gpu.sync.aligned`, which releases it to the tensor-map proxy,
and acquires it with `fence.proxy.tensormap::generic.acquire.gpu`, followed (as in Triton) by an
empty bulk-group commit and wait, the workaround for a ptxas that drops the acquire; then a block
barrier. `ttng.tma_load` / `ttng.tma_store` (lowering/tma.py) take the map's generic address.

`global_stride` is given in bytes, as the PTX ISA says; ptxas 13.0 packs it into the map's 16-byte
units itself (its SASS shifts the value right by 4, the same for PTX 8.4 and 8.7). Triton passes the
stride / 16 instead when its PTX version is 8.5 or older, for a ptxas of CUDA 12.6 or older that
did not; with such a ptxas these maps would have strides 16 times too large.
"""

from __future__ import annotations

from llvmlite import ir

from ....ir.ops import ttng
from ..llvm_types import GLOBAL_PTR, I32, I64
from . import lowers

MAP_BYTES = 128
_SWIZZLE_MODES = {0: 0, 32: 1, 64: 2, 128: 3}  # tensormap.replace .swizzle_mode
_FILL_MODES = {"zero": 0, "nan": 1}  # .fill_mode: zeros, or NaN (NAN_REQUEST_ZERO_FMA)
_REPLACE = "tensormap.replace.tile.{field}.shared::cta.b1024.{width} [$0], {ord}{value};"


def scratch_slots(func) -> tuple[dict[int, int], int]:
    """(op id -> byte offset of each `ttng.global_scratch` in a program's slice, bytes per program)."""
    offsets, size = {}, 0
    for op in func.walk():
        if isinstance(op, ttng.GlobalScratchOp):
            size = (size + op.align - 1) // op.align * op.align
            offsets[id(op)] = size
            size += op.nbytes
    return offsets, (size + MAP_BYTES - 1) // MAP_BYTES * MAP_BYTES if size else 0


def global_scratch_params(func) -> list[ir.Type]:
    """The hidden scratch parameter a kernel takes: one `ptr addrspace(1)` if it uses scratch."""
    return [GLOBAL_PTR] if scratch_slots(func)[1] else []


@lowers(ttng.GlobalScratchOp)
def lower_global_scratch(lw, op) -> None:
    offsets, size = scratch_slots(lw.func)
    b = lw.entry_builder
    nctaid_x, nctaid_y = lw.sreg("nctaid.x"), lw.sreg("nctaid.y")
    program = b.add(
        lw.sreg("ctaid.x"),
        b.mul(nctaid_x, b.add(lw.sreg("ctaid.y"), b.mul(nctaid_y, lw.sreg("ctaid.z")))),
    )
    start = b.add(
        b.mul(b.zext(program, I64), ir.Constant(I64, size)), ir.Constant(I64, offsets[id(op)])
    )
    lw.set(op.result, b.gep(lw.global_scratch, [start], source_etype=ir.IntType(8)))


@lowers(ttng.TensormapCreateOp)
def lower_tensormap_create(lw, op) -> None:
    b = lw.builder
    # a static array of its own (no other use of shared memory to wait for)
    template = lw.private_shared_memory(MAP_BYTES)
    template.align = MAP_BYTES  # a tensor map is 128-byte aligned wherever it lives
    tid = lw.sreg("tid.x")
    destination = lw.get(op.desc_ptr)
    with b.if_then(b.icmp_unsigned("==", tid, ir.Constant(I32, 0))):
        for word in range(MAP_BYTES // 8):
            slot = b.gep(template, [ir.Constant(I32, 8 * word)], source_etype=ir.IntType(8))
            b.store(ir.Constant(I64, 0), slot, align=8)
        for field, ordinal, value in _fields(lw, op):
            _replace(lw, template, field, ordinal, value)
    with b.if_then(b.icmp_unsigned("<", tid, ir.Constant(I32, 32))):
        lw.call_intrinsic("llvm.nvvm.bar.warp.sync", ir.VoidType(), [ir.Constant(I32, -1)])
        lw.asm(
            "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu"
            f".sync.aligned [$0], [$1], {MAP_BYTES};",
            "l,r",
            ir.VoidType(),
            [destination, template],
            side_effect=True,
        )
        lw.asm(
            f"fence.proxy.tensormap::generic.acquire.gpu [$0], {MAP_BYTES};\n"
            "cp.async.bulk.commit_group;\ncp.async.bulk.wait_group.read 0;",
            "l",
            ir.VoidType(),
            [destination],
            side_effect=True,
        )
    lw.barrier()  # every thread past the fences before any TMA copy uses the map
    lw.set(op.result, b.addrspacecast(destination, ir.PointerType()))


def _fields(lw, op) -> list[tuple[str, int | None, ir.Value | int]]:
    """(field, ordinal or None, new value) of every `tensormap.replace`, dimensions innermost first."""
    b = lw.builder
    rank = len(op.box)
    element_bytes = _element_bytes(op.elem_type)
    fields = [("global_address", None, b.ptrtoint(lw.get(op.base), I64)), ("rank", None, rank - 1)]
    fields += [("box_dim", i, box) for i, box in enumerate(reversed(op.box))]
    fields += [
        ("global_dim", i, b.trunc(lw.get(dim), I32)) for i, dim in enumerate(reversed(op.shape))
    ]
    fields += [
        ("global_stride", i, b.mul(lw.get(stride), ir.Constant(I64, element_bytes)))
        for i, stride in enumerate(reversed(op.strides))
    ]
    fields += [("element_stride", i, 1) for i in range(rank)]
    fields += [
        ("elemtype", None, op.elem_type),
        ("interleave_layout", None, 0),
        ("swizzle_mode", None, _SWIZZLE_MODES[op.swizzle]),
        ("fill_mode", None, _FILL_MODES[op.fill]),
    ]
    return fields


def _element_bytes(code: int) -> int:
    """Bytes per element of a `tensormap.replace` element type code (u8 .. bf16)."""
    return {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 4, 9: 8, 10: 2}[code]


def _replace(lw, template, field: str, ordinal: int | None, value) -> None:
    """One `tensormap.replace` of the shared template: a constant goes in the instruction, a runtime
    value (global address, dimensions, strides) in a register."""
    ord_text = "" if ordinal is None else f"{ordinal}, "
    if isinstance(value, int):
        text = _REPLACE.format(field=field, width="b32", ord=ord_text, value=value)
        lw.asm(text, "r", ir.VoidType(), [template], side_effect=True)
        return
    width = "b64" if value.type == I64 else "b32"
    text = _REPLACE.format(field=field, width=width, ord=ord_text, value="$1")
    lw.asm(
        text,
        "r," + ("l" if width == "b64" else "r"),
        ir.VoidType(),
        [template, value],
        side_effect=True,
    )
