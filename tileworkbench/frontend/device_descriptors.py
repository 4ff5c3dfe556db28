"""Descriptors made in the kernel (`tl.make_tensor_descriptor`) on targets that build TMA tensor maps on
the device (sm_90a): the descriptor gets a tensor map written into 128 bytes of the launch's global
scratch (`ttng.global_scratch` + `ttng.tensormap_create`, as Triton's `set_allocator` memory), and its
loads and stores become TMA copies (tma_calls.py) through it.

The choice is made here, at compile time, from what the specialization proves, because a wrong map
faults or copies the wrong bytes and the kernel cannot check the rules itself cheaply. TMA is used only
when all of these hold; otherwise the descriptor keeps the pointer lowering (descriptors.py):
- the block is one TMA box the back end handles (`tma_rules.box_fits`); NaN padding on a float type
  of 16 bits or more (TMA has no NaN fill for others);
- the base is known 16-byte aligned: a pointer argument specialized as such (`tt.divisibility`), or
  one moved from it by a known multiple of 16 bytes;
- every stride but the last (1) is a known multiple of 16 bytes: a constant, or an integer argument
  specialized as divisible by 16 (times the element size), or products and sums of those;
- the descriptor is made at the kernel's top level, not in a loop or branch (a map rewritten while a
  copy through it is in flight would race).
Not checked, as in Triton: every dimension must be at least 1 and below 2^32 elements and every stride
below 2^40 bytes (the kernel's shape arguments are runtime values); a launch that breaks them gets
what the hardware does with such a map.
"""

from __future__ import annotations

from math import gcd

from ..ir.ops import arith, tt, ttng
from ..ir.types import ScalarType
from ..ir.values import BlockArgument, OpResult, Value
from ..language import core
from ..language.core import pointer_type, tensor
from ..language.descriptor import tensor_descriptor
from .tma_rules import box_fits, swizzle_bytes

MAP_BYTES = 128  # a CUtensorMap, 128-byte aligned (Triton's TMA_SIZE_BYTES / TMA_ALIGN)
# the element type codes of PTX `tensormap.replace ... .elemtype` (bytes are copied as they are; the
# float codes matter for the NaN fill only)
ELEMENT_CODES = {"fp16": 6, "fp32": 7, "fp64": 9, "bf16": 10}
_CODES_BY_BYTES = {1: 0, 2: 1, 4: 2, 8: 4}  # .u8, .u16, .u32, .u64
_UNKNOWN = 1
_ZERO = 1 << 30  # the divisibility of 0: every power of two this cares about


def device_tensormap(cg, desc: tensor_descriptor) -> tensor | None:
    """The tensor map of in-kernel descriptor `desc`, built in global scratch, or None where TMA
    cannot take it (the module docstring's rules) and the pointer lowering stays."""
    if not getattr(cg, "device_tma", False) or not _at_top_level(cg):
        return None
    dtype = desc.dtype
    nbytes = max(1, dtype.primitive_bitwidth // 8)
    if desc.padding == "nan" and (not dtype.is_floating() or dtype.primitive_bitwidth < 16):
        return None
    if not box_fits(desc.block_shape, nbytes, 32 * cg.num_warps):
        return None
    if _known_multiple(desc.base.handle) % 16:
        return None
    if any(_stride_multiple(s) * nbytes % 16 for s in desc.strides[:-1]):
        return None
    scratch = cg.sem.make(ttng.GlobalScratchOp, pointer_type(core.int8), "tensormap_scratch",
                          nbytes=MAP_BYTES, align=MAP_BYTES)
    shape = [cg.sem.cast(cg.sem.to_tensor(s), core.int64).handle for s in desc.shape]
    strides = [cg.sem.cast(cg.sem.to_tensor(s), core.int64).handle for s in desc.strides[:-1]]
    return cg.sem.make(
        ttng.TensormapCreateOp, pointer_type(core.int8), "tensormap", desc_ptr=scratch.handle,
        base=desc.base.handle, shape=shape, strides=strides, box=tuple(desc.block_shape),
        elem_type=element_code(dtype.name, nbytes), swizzle=swizzle_bytes(desc.block_shape, nbytes),
        fill=desc.padding)


def element_code(name: str, nbytes: int) -> int:
    """The `tensormap.replace` element type code of a dtype name ("fp16" -> 6)."""
    return ELEMENT_CODES.get(name, _CODES_BY_BYTES[nbytes])


def _at_top_level(cg) -> bool:
    region = cg.builder.block.parent
    return region is not None and isinstance(region.parent, tt.FuncOp)


def _stride_multiple(stride) -> int:
    if isinstance(stride, tensor):
        return _known_multiple(stride.handle)
    return abs(int(stride)) if stride else _ZERO


def _known_multiple(value: Value) -> int:
    """A number the scalar `value` is known to be a multiple of (bytes for a pointer, else units):
    from the specialization's `tt.divisibility`, constants, and integer products, sums and casts."""
    if isinstance(value, BlockArgument):
        owner = value.block.parent.parent if value.block.parent is not None else None
        if isinstance(owner, tt.FuncOp) and value.index < len(owner.arg_attrs):
            return owner.arg_attrs[value.index].get("tt.divisibility", _UNKNOWN)
        return _UNKNOWN
    if not isinstance(value, OpResult):
        return _UNKNOWN
    op = value.op
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, int):
        return abs(op.value) or _ZERO
    if isinstance(op, arith.MulIOp):
        return min(_ZERO, _known_multiple(op.lhs) * _known_multiple(op.rhs))
    if isinstance(op, (arith.AddIOp, arith.SubIOp)):
        return gcd(_known_multiple(op.lhs), _known_multiple(op.rhs))
    if isinstance(op, (arith.ExtSIOp, arith.ExtUIOp)):
        return _known_multiple(op.operand)
    if isinstance(op, tt.AddPtrOp):
        pointee = getattr(value.type, "pointee", None)
        scale = max(1, pointee.bitwidth // 8) if isinstance(pointee, ScalarType) else _UNKNOWN
        return gcd(_known_multiple(op.ptr), min(_ZERO, _known_multiple(op.offset) * scale))
    return _UNKNOWN
