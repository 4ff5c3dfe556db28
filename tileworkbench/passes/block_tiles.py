"""The pointer form of a block of a strided tensor: the tile of pointers to the block at some
offsets and its in-bounds mask, built as Tile IR ops (int64 positions, so large tensors do not
wrap). The one builder of it: the descriptor pass (descriptors.py) writes descriptor loads and
stores that do not take TMA this way, and the frontend its block pointers (`tl.make_block_ptr`)
and descriptor atomics (frontend/descriptors.py).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ..ir.builder import Builder
from ..ir.ops import arith, tt
from ..ir.types import PointerType, ScalarType, TensorType, f32, i1, i32, i64
from ..ir.values import Value

BlockTile = tuple[Value, Value | None]  # (pointers, mask), both of the block's shape
Index = Value | int  # a scalar integer Value, or a Python int made a constant where it is used


def block_tile(
    builder: Builder,
    base: Value,
    shape: Sequence[Index],
    strides: Sequence[Index],
    offsets: Sequence[Index],
    block_shape: tuple[int, ...],
    checked: Collection[int] | None = None,
    shape_fits_i32: bool = False,
) -> BlockTile:
    """Pointers to the block of `block_shape` at `offsets` in the tensor at `base` (`strides`: one
    per dimension), and the mask of positions inside `shape` along the `checked` axes (all when
    None; the mask is None when no axis is checked).

    `shape_fits_i32`: every extent of `shape` is below 2**31 (a descriptor's, as Triton's). An
    axis whose offset is int32 then adds and compares its positions in 32 bits, widened only for
    the address: a sum past 2**31 - 1 wraps negative and is masked, as its true position lies
    outside the tensor. Tutorial 06's loop off TMA keeps 32-bit rows live, not 64-bit ones (at head
    dim 128 its spills went from 360 / 464 bytes to none)."""
    rank = len(block_shape)
    pointers, mask = base, None
    for axis, (offset, size) in enumerate(zip(offsets, block_shape)):
        narrow = shape_fits_i32 and isinstance(offset, Value) and offset.type == i32
        position = _position(builder, axis, size, rank, i32 if narrow else i64)
        if narrow:
            offset = builder.value(tt.SplatOp, position.type, operand=offset)
            position = builder.value(arith.AddIOp, position.type, lhs=position, rhs=offset)
        else:
            position = _binary(builder, arith.AddIOp, position, offset)
        if checked is None or axis in checked:
            extent = _narrowed(builder, shape[axis]) if narrow else shape[axis]
            lower = _compare(builder, "sge", position, 0)
            inside = _binary(
                builder, arith.AndIOp, lower, _compare(builder, "slt", position, extent)
            )
            mask = inside if mask is None else _binary(builder, arith.AndIOp, mask, inside)
        if narrow:
            position = builder.value(
                arith.ExtSIOp, _like(position.type.shape, i64), operand=position
            )
        pointers = _add_pointer(
            builder, pointers, _binary(builder, arith.MulIOp, position, strides[axis])
        )
    return _broadcast(builder, pointers, block_shape), _broadcast(builder, mask, block_shape)


def padding_value(builder: Builder, element: ScalarType, padding: str, shape) -> Value:
    """The tile a masked load reads outside the tensor: zeros, or NaNs (`padding` "nan"); an int32
    0 or float32 NaN cast to the element type, as the frontend's `other` was (fp8 has no constants
    of its own in the lowering)."""
    source = f32 if padding == "nan" else i32
    scalar = builder.value(arith.ConstantOp, source, value=float("nan") if padding == "nan" else 0)
    if element != source:
        scalar = builder.value(_cast_op(source, element), element, operand=scalar)
    return builder.value(tt.SplatOp, TensorType(tuple(shape), element), operand=scalar)


def _cast_op(source: ScalarType, element: ScalarType):
    if source.is_float:
        return arith.ExtFOp if element.bitwidth > source.bitwidth else arith.TruncFOp
    if element.is_float:
        return arith.SIToFPOp
    if element.bitwidth == source.bitwidth:  # u32
        return arith.BitcastOp
    if element.bitwidth > source.bitwidth:
        return arith.ExtSIOp
    return arith.TruncIOp


def _position(builder: Builder, axis: int, size: int, rank: int, element=i64) -> Value:
    """0..size-1 along `axis` of a rank-`rank` tile of ones elsewhere, as `element` (int64 or int32)."""
    position = builder.value(tt.MakeRangeOp, TensorType((size,), i32), start=0, end=size)
    shape = [size]
    for other in range(rank):
        if other != axis:
            shape.insert(other, 1)
            position = builder.value(tt.ExpandDimsOp, _like(shape, i32), src=position, axis=other)
    if element == i32:
        return position
    return builder.value(arith.ExtSIOp, _like(shape, i64), operand=position)


def _narrowed(builder: Builder, extent: Index) -> Index:
    """An extent known below 2**31 as int32 (a Python int stays one)."""
    if isinstance(extent, int) or extent.type == i32:
        return extent
    return builder.value(arith.TruncIOp, i32, operand=extent)


def _like(shape, element) -> TensorType:
    return TensorType(tuple(shape), element)


def _as_i64_tile(builder: Builder, value: Index, shape) -> Value:
    """A scalar integer widened to int64 and splatted to `shape` (the frontend's promotion; a
    Python int is first its constant, int32 where it fits)."""
    if isinstance(value, int):
        small = -(2**31) <= value < 2**31
        value = builder.value(arith.ConstantOp, i32 if small else i64, value=value)
    if value.type != i64:
        unsigned = value.type.name.startswith("u") or value.type == i1
        ext = arith.ExtUIOp if unsigned else arith.ExtSIOp
        value = builder.value(ext, i64, operand=value)
    return builder.value(tt.SplatOp, _like(shape, i64), operand=value)


def _binary(builder: Builder, cls, lhs: Value, rhs: Index) -> Value:
    """`lhs <op> rhs` with a scalar right side splatted and unequal shapes broadcast."""
    if isinstance(rhs, int) or not isinstance(rhs.type, TensorType):
        rhs = _as_i64_tile(builder, rhs, lhs.type.shape)
    lhs, rhs = _broadcast_pair(builder, lhs, rhs)
    return builder.value(cls, lhs.type, lhs=lhs, rhs=rhs)


def _compare(builder: Builder, predicate: str, lhs: Value, rhs: Index) -> Value:
    if lhs.type.element == i32:  # 32-bit positions (`shape_fits_i32`): the extent is int32 too
        if isinstance(rhs, int):
            rhs = builder.value(arith.ConstantOp, i32, value=rhs)
        rhs = builder.value(tt.SplatOp, _like(lhs.type.shape, i32), operand=rhs)
    else:
        rhs = _as_i64_tile(builder, rhs, lhs.type.shape)
    return builder.value(
        arith.CmpIOp, _like(lhs.type.shape, i1), predicate=predicate, lhs=lhs, rhs=rhs
    )


def _add_pointer(builder: Builder, pointers: Value, offsets: Value) -> Value:
    if not isinstance(pointers.type, TensorType):
        pointers = builder.value(
            tt.SplatOp, _like(offsets.type.shape, pointers.type), operand=pointers
        )
    pointers, offsets = _broadcast_pair(builder, pointers, offsets)
    return builder.value(tt.AddPtrOp, pointers.type, ptr=pointers, offset=offsets)


def _broadcast_pair(builder: Builder, lhs: Value, rhs: Value) -> tuple[Value, Value]:
    shape = tuple(max(a, b) for a, b in zip(lhs.type.shape, rhs.type.shape))
    return _broadcast(builder, lhs, shape), _broadcast(builder, rhs, shape)


def _broadcast(builder: Builder, value: Value | None, shape) -> Value | None:
    if value is None or tuple(value.type.shape) == tuple(shape):
        return value
    element: ScalarType | PointerType = value.type.element
    return builder.value(tt.BroadcastOp, _like(shape, element), operand=value)
