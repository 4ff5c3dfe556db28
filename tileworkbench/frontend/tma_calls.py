"""Descriptor loads and stores through the TMA engine: `desc.load(offsets)` / `desc.store(offsets, v)`
of a host descriptor that came with a tensor map (frontend/descriptor_args.py) become `ttng.tma_load` /
`ttng.tma_store`. Same semantics as the pointer lowering in descriptors.py (zero or NaN padding outside
the shape, clipped stores); the hardware does the bounds checks. An access whose innermost offset is
not provably on a 16-byte chunk (TMA traps on one that is not) keeps the pointer lowering, after a
`ttng.tma_fallback` that says why.
"""

from __future__ import annotations

from math import gcd

from ..errors import TileTypeError
from ..ir.ops import arith, tt, ttng
from ..ir.values import BlockArgument, OpResult, Value
from ..language import core
from ..language.core import block_type, tensor
from ..language.descriptor import tensor_descriptor
from .tma_rules import CHUNK, inner_offset_aligned, swizzle_bytes

_UNBOUNDED = 1 << 30  # the multiple of 0


def _coordinates(cg, desc: tensor_descriptor, offsets: list) -> list:
    """The box's offsets as int32 scalars (TMA coordinates are signed 32-bit)."""
    rank = len(desc.block_shape)
    if len(offsets) != rank:
        raise TileTypeError(f"a descriptor of rank {rank} needs {rank} offsets, got {len(offsets)}")
    return [cg.sem.cast(cg.sem.to_tensor(offset), core.int32).handle for offset in offsets]


def _element_bytes(desc: tensor_descriptor) -> int:
    return max(1, desc.dtype.primitive_bitwidth // 8)


def _swizzle(desc: tensor_descriptor) -> int:
    return swizzle_bytes(desc.block_shape, _element_bytes(desc))


def takes_tma(cg, desc: tensor_descriptor, offsets: list) -> bool:
    """Whether this access of a descriptor that has a tensor map can be a TMA copy: its innermost
    offset is a known multiple of 16 bytes. Otherwise a `ttng.tma_fallback` records why not."""
    multiple = known_multiple(cg, offsets[-1])
    if inner_offset_aligned(multiple, _element_bytes(desc)):
        return True
    cg.sem.builder.create(ttng.TMAFallbackOp, reason=(
        f"innermost offset not provably a multiple of {CHUNK} bytes (known multiple: {multiple} "
        f"elements of {_element_bytes(desc)} bytes); TMA traps on an unaligned box"))
    return False


def known_multiple(cg, value) -> int:
    """A number the scalar integer `value` is known to be a multiple of (a large power of two for
    0), from constants, products, sums, casts, `tt.divisibility` parameters and loop induction
    variables (lower and step); 1 where nothing is known."""
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return abs(value) or _UNBOUNDED
    if isinstance(value, tensor):
        value = value.handle
    return min(_UNBOUNDED, _multiple(cg.sem.builder.loop_bounds, value, 0))


def _multiple(loops: dict, v: Value, depth: int) -> int:
    if depth > 32:
        return 1
    if isinstance(v, BlockArgument):
        return _argument_multiple(loops, v, depth)
    if not isinstance(v, OpResult):
        return 1
    op = v.op
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, int):
        return abs(op.value) or _UNBOUNDED
    parts = [_multiple(loops, x, depth + 1) for x in op.operands]
    if isinstance(op, arith.MulIOp):
        return min(_UNBOUNDED, parts[0] * parts[1])
    if isinstance(op, (arith.AddIOp, arith.SubIOp)):
        return gcd(parts[0], parts[1])
    if isinstance(op, (arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)):
        return parts[0]
    return 1


def _argument_multiple(loops: dict, arg: BlockArgument, depth: int) -> int:
    bounds = loops.get(id(arg))
    if bounds is not None:  # an induction variable: lower + i * step
        return gcd(_multiple(loops, bounds[0], depth + 1), _multiple(loops, bounds[1], depth + 1))
    owner = arg.block.parent_op
    if isinstance(owner, tt.FuncOp) and owner.arg_attrs:
        return (owner.arg_attrs[arg.index] or {}).get("tt.divisibility", 1)
    return 1


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
