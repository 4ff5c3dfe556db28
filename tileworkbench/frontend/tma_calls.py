"""Descriptor loads and stores through the TMA engine: `desc.load(offsets)` / `desc.store(offsets, v)`
of a host descriptor that came with a tensor map (frontend/descriptor_args.py) become `ttng.tma_load` /
`ttng.tma_store`. Same semantics as the pointer lowering in descriptors.py (zero or NaN padding outside
the shape, clipped stores); the hardware does the bounds checks.
"""

from __future__ import annotations

from ..errors import TileTypeError
from ..ir.ops import ttng
from ..language import core
from ..language.core import block_type
from ..language.descriptor import tensor_descriptor
from .tma_rules import swizzle_bytes


def _coordinates(cg, desc: tensor_descriptor, offsets: list) -> list:
    """The box's offsets as int32 scalars (TMA coordinates are signed 32-bit)."""
    rank = len(desc.block_shape)
    if len(offsets) != rank:
        raise TileTypeError(f"a descriptor of rank {rank} needs {rank} offsets, got {len(offsets)}")
    return [cg.sem.cast(cg.sem.to_tensor(offset), core.int32).handle for offset in offsets]


def _swizzle(desc: tensor_descriptor) -> int:
    return swizzle_bytes(desc.block_shape, desc.dtype.primitive_bitwidth // 8)


def tma_load(cg, desc: tensor_descriptor, offsets: list):
    """`ttng.tma_load` of the box at `offsets` (already checked scalar integers)."""
    out = block_type(desc.dtype, desc.block_shape)
    return cg.sem.make(ttng.TMALoadOp, out, desc=desc.tensormap.handle,
                       offsets=_coordinates(cg, desc, offsets), padding=desc.padding,
                       swizzle=_swizzle(desc))


def tma_store(cg, desc: tensor_descriptor, offsets: list, value) -> None:
    """`ttng.tma_store` of `value` (a tile of the block shape, or a scalar to broadcast)."""
    value = cg.sem.broadcast_to(cg.sem.cast(value, desc.dtype), tuple(desc.block_shape))
    cg.sem.builder.create(ttng.TMAStoreOp, desc=desc.tensormap.handle, value=value.handle,
                          offsets=_coordinates(cg, desc, offsets), swizzle=_swizzle(desc))
