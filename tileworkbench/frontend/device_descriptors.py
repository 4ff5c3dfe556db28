"""Descriptors made in the kernel (`tl.make_tensor_descriptor`) on targets that build TMA tensor maps on
the device (sm_90a): the descriptor gets a tensor map written into 128 bytes of the launch's global
scratch (`ttng.global_scratch` + `ttng.tensormap_create`, as Triton's `set_allocator` memory), and its
loads and stores become TMA copies (tma_calls.py) through it.

The choice is made here, at compile time, from what the specialization proves, because a wrong map
faults or writes past the tensor and the kernel cannot check the rules itself cheaply. TMA is used
only when all of these hold (tma_rules.py, the rules host descriptors follow at launch); otherwise the
descriptor keeps the pointer lowering (descriptors.py), after a `ttng.tma_fallback` saying why:
- TMA can copy the block (`tma_rules.box_fits`); NaN padding is on a float type of 16 bits or more;
- the base is known 16-byte aligned: a pointer argument specialized as such (`tt.divisibility`), or
  one moved from it by a known multiple of 16 bytes;
- every stride but the last (1), and the innermost extent, are known multiples of 16 bytes:
  constants, integer arguments specialized as divisible by 16 (times the element size), or products
  and sums of those (`tma_calls.known_multiple`). TMA stores write whole 16-byte chunks, so an
  innermost extent of part of a chunk would get the columns past it written;
- the descriptor is made at the kernel's top level, not in a loop or branch (a map rewritten while a
  copy through it is in flight would race).
Each access then also needs its innermost offset on a 16-byte chunk (`tma_calls.takes_tma`), or it
takes the pointer lowering. Where the kernel's TMA rings do not fit in shared memory, the compiler
builds it again with none of these maps (`device_tma_refusal`, runtime/compiler.py). Not checked,
as in Triton: every dimension must be at least 1 and below 2^32 elements and every stride below
2^40 bytes (they are runtime values); a launch that breaks them gets what the hardware does with
such a map.
"""

from __future__ import annotations

from math import gcd

from ..dtypes import tma_element_code
from ..ir.ops import tt, ttng
from ..ir.types import ScalarType
from ..ir.values import BlockArgument, OpResult, Value
from ..language import core
from ..language.core import pointer_type, tensor
from ..language.descriptor import tensor_descriptor
from .tma_calls import known_multiple
from .tma_rules import CHUNK, box_fits, tma_box

MAP_BYTES = 128  # a CUtensorMap, 128-byte aligned (Triton's TMA_SIZE_BYTES / TMA_ALIGN)


def device_tensormap(cg, desc: tensor_descriptor) -> tensor | None:
    """The tensor map of in-kernel descriptor `desc`, built in global scratch, or None where TMA
    cannot take it (the module docstring's rules) and the pointer lowering stays."""
    if not getattr(cg, "device_tma", False):
        return None
    reason = _refusal(cg, desc) or getattr(cg, "device_tma_refusal", None)
    if reason is not None:
        cg.sem.builder.create(ttng.TMAFallbackOp, reason=f"descriptor made in the kernel: {reason}")
        return None
    nbytes = _element_bytes(desc)
    inner, swizzle = tma_box(desc.block_shape, nbytes)
    scratch = cg.sem.make(ttng.GlobalScratchOp, pointer_type(core.int8), "tensormap_scratch",
                          nbytes=MAP_BYTES, align=MAP_BYTES)
    shape = [cg.sem.cast(cg.sem.to_tensor(s), core.int64).handle for s in desc.shape]
    strides = [cg.sem.cast(cg.sem.to_tensor(s), core.int64).handle for s in desc.strides[:-1]]
    return cg.sem.make(
        ttng.TensormapCreateOp, pointer_type(core.int8), "tensormap", desc_ptr=scratch.handle,
        base=desc.base.handle, shape=shape, strides=strides,
        box=(*desc.block_shape[:-1], inner),
        elem_type=tma_element_code(desc.dtype.name, in_kernel=True),  # PTX's codes (dtypes.TABLE)
        swizzle=swizzle, fill=desc.padding)


def _element_bytes(desc: tensor_descriptor) -> int:
    return max(1, desc.dtype.primitive_bitwidth // 8)


def _refusal(cg, desc: tensor_descriptor) -> str | None:
    """Why TMA cannot take in-kernel descriptor `desc` (the module docstring's rules), or None."""
    dtype, nbytes = desc.dtype, _element_bytes(desc)
    if not _at_top_level(cg):
        return "made inside a loop or branch (its map would be rewritten while copies read it)"
    if desc.padding == "nan" and (not dtype.is_floating() or dtype.primitive_bitwidth < 16):
        return "TMA fills NaN for 16- to 64-bit floats only"
    if not box_fits(desc.block_shape, nbytes):
        return (f"TMA cannot copy a {'x'.join(map(str, desc.block_shape))} block of {dtype} (rank 2, "
                "at most 256 per dimension, rows of whole 16-byte chunks)")
    if _pointer_multiple(cg, desc.base.handle) % CHUNK:
        return "the base is not known to be 16-byte aligned"
    for what, value in [("a stride", s) for s in desc.strides[:-1]] + [
            ("the innermost extent", desc.shape[-1])]:
        multiple = known_multiple(cg, value)
        if multiple * nbytes % CHUNK:
            return (f"{what} is not known to be a multiple of {CHUNK} bytes (known multiple: "
                    f"{multiple} elements of {nbytes} bytes)")
    return None


def _at_top_level(cg) -> bool:
    region = cg.builder.block.parent
    return region is not None and isinstance(region.parent, tt.FuncOp)


def _pointer_multiple(cg, value: Value) -> int:
    """A number of bytes the scalar pointer `value` is known to be a multiple of: a pointer
    argument's `tt.divisibility`, or such a pointer moved by a known multiple of elements."""
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op
        if isinstance(owner, tt.FuncOp) and value.index < len(owner.arg_attrs):
            return (owner.arg_attrs[value.index] or {}).get("tt.divisibility", 1)
        return 1
    if isinstance(value, OpResult) and isinstance(value.op, tt.AddPtrOp):
        pointee = getattr(value.type, "pointee", None)
        if not isinstance(pointee, ScalarType):
            return 1
        offset = known_multiple(cg, value.op.offset)
        return gcd(_pointer_multiple(cg, value.op.ptr), offset * max(1, pointee.bitwidth // 8))
    return 1
