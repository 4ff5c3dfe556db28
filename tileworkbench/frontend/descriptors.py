"""Tensor descriptors in the frontend: `tl.make_tensor_descriptor` builds a compile-time
`tensor_descriptor` (IR values for base, shape and strides; a constant block shape), and its `load` /
`store` / `atomic_add` lower to a tile of pointers with a bounds mask, the semantics of a TMA copy:
positions outside the shape read as the padding value and are never written.
"""

from __future__ import annotations

import ast

from ..errors import TileTypeError
from ..language import core
from ..language.core import tensor
from ..language.descriptor import tensor_descriptor
from .calls import BUILTIN_IMPLS, check_shape, impl
from .semantics import unwrap


def _as_list(value, what: str) -> list:
    value = unwrap(value)
    if not isinstance(value, (list, tuple)):
        raise TileTypeError(f"{what} must be a list or tuple, got {type(value).__name__}")
    return [unwrap(v) for v in value]


def _scalar_int(cg, value, what: str):
    """A Python int, or a scalar integer tensor; anything else is a typing error."""
    if isinstance(value, tensor):
        if value.shape or not value.dtype.is_int():
            raise TileTypeError(f"{what} must be a scalar integer, got {value.type}")
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TileTypeError(f"{what} must be an integer, got {value!r}")
    return value


@impl("make_tensor_descriptor")
def make_tensor_descriptor(cg, base, shape, strides, block_shape, padding_option="zero"):
    base = cg.sem.to_tensor(base)
    if not base.dtype.is_ptr() or base.shape:
        raise TileTypeError(
            f"make_tensor_descriptor needs a scalar pointer as base, got {base.type}"
        )
    shape, strides = _as_list(shape, "shape"), _as_list(strides, "strides")
    block = check_shape(block_shape, "descriptor block shape")
    if not len(shape) == len(strides) == len(block) or not 1 <= len(block) <= 5:
        raise TileTypeError(
            f"a tensor descriptor needs 1 to 5 dimensions and equally many shape, stride "
            f"and block entries; got {len(shape)}, {len(strides)} and {len(block)}"
        )
    if isinstance(strides[-1], tensor) or strides[-1] != 1:
        raise TileTypeError(
            "the last dimension of a tensor descriptor must be contiguous: its stride must "
            f"be the constant 1, got {strides[-1]!r}"
        )
    padding = unwrap(padding_option)
    if padding not in ("zero", "nan"):
        raise TileTypeError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
    shape = [_scalar_int(cg, s, "each dimension of a descriptor's shape") for s in shape]
    strides = [_scalar_int(cg, s, "each stride of a descriptor") for s in strides]
    return tensor_descriptor(base, shape, strides, block, padding)


def _block_pointers(cg, desc: tensor_descriptor, offsets) -> tuple[tensor, tensor]:
    """The tile of pointers of the block at `offsets` and the mask of its in-bounds positions.

    Positions are computed in int64 so that large tensors do not wrap (TMA addresses in 64 bits)."""
    if not isinstance(desc, tensor_descriptor):
        raise TileTypeError(f"expected a tensor descriptor, got {type(desc).__name__}")
    offsets = _as_list(offsets, "offsets")
    rank = len(desc.block_shape)
    if len(offsets) != rank:
        raise TileTypeError(f"a descriptor of rank {rank} needs {rank} offsets, got {len(offsets)}")
    pointers, mask = desc.base, None
    for axis, (offset, size) in enumerate(zip(offsets, desc.block_shape)):
        offset = _scalar_int(cg, offset, "each offset")
        position = cg.call_builtin("arange", [0, size], {})
        for other in range(rank):  # shape (1, .., size, .., 1) with the size at `axis`
            if other != axis:
                position = cg.sem.expand_dims(position, other)
        position = cg.binary(ast.Add, cg.sem.cast(position, core.int64), offset)
        extent = desc.shape[axis]
        inside = cg.sem.logical(
            "and", cg.compare(ast.GtE, position, 0), cg.compare(ast.Lt, position, extent)
        )
        mask = inside if mask is None else cg.sem.logical("and", mask, inside)
        pointers = cg.binary(ast.Add, pointers, cg.binary(ast.Mult, position, desc.strides[axis]))
    shape = tuple(desc.block_shape)
    return cg.sem.broadcast_to(pointers, shape), cg.sem.broadcast_to(mask, shape)


@impl("descriptor_load")
def descriptor_load(cg, desc, offsets):
    pointers, mask = _block_pointers(cg, unwrap(desc), offsets)
    other = float("nan") if desc.padding == "nan" else 0
    if other != 0 and not desc.dtype.is_floating():
        raise TileTypeError("padding 'nan' needs a floating-point descriptor")
    return cg.sem.load(pointers, mask, other)


@impl("descriptor_store")
def descriptor_store(cg, desc, offsets, value):
    pointers, mask = _block_pointers(cg, unwrap(desc), offsets)
    value = cg.sem.to_tensor(unwrap(value))
    if value.shape and tuple(value.shape) != tuple(desc.block_shape):
        raise TileTypeError(
            f"a descriptor store takes a tile of its block shape {list(desc.block_shape)}, "
            f"got {list(value.shape)}"
        )
    cg.sem.store(pointers, value, mask)


@impl("descriptor_atomic_add")
def descriptor_atomic_add(cg, desc, offsets, value):
    pointers, mask = _block_pointers(cg, unwrap(desc), offsets)
    BUILTIN_IMPLS["atomic_add"](cg, pointers, value, mask)
