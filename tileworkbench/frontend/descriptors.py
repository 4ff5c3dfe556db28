"""Tensor descriptors in the frontend: `tl.make_tensor_descriptor` builds a compile-time
`tensor_descriptor` (IR values for base, shape and strides; a constant block shape) around a
target-neutral `tt.make_tensor_descriptor`, and its `load` / `store` become `tt.descriptor_load` /
`tt.descriptor_store`. Whether they copy by TMA or through masked pointer tiles is decided later,
by the target (passes/descriptors.py). `atomic_add` and block pointers lower to pointer tiles here,
built as that pass builds them (passes/block_tiles.py): positions outside the shape read as the
padding value and are never written.
"""

from __future__ import annotations

from ..errors import TileTypeError
from ..ir.ops import tt
from ..ir.types import TensorDescType
from ..language import core
from ..language.core import tensor
from ..language.descriptor import block_pointer, tensor_descriptor
from ..passes.block_tiles import block_tile
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


def make_descriptor_op(
    builder, base: tensor, shape: list, strides: list, block, padding: str, host: str = ""
):
    """The `tt.make_tensor_descriptor` of a descriptor (`strides`: all but the innermost, 1)."""
    block_ir = core.block_type(base.dtype.element_ty, tuple(block)).to_ir()
    return builder.value(
        tt.MakeTensorDescOp,
        TensorDescType(block_ir),
        host or None,
        base=base.handle,
        shape=[s.handle for s in shape],
        strides=[s.handle for s in strides],
        padding=padding,
        host=host,
    )


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
    elem_bytes = base.dtype.element_ty.primitive_bitwidth // 8
    if block[-1] * elem_bytes < 16:  # TMA moves at least 16 bytes per row; Triton's words
        raise TileTypeError(
            "Descriptor block shape must have at least 16 bytes in the last dimension, but got "
            f"{block[-1]} * {elem_bytes} = {block[-1] * elem_bytes} bytes",
            hint=f"make the last block dimension at least {-(-16 // max(elem_bytes, 1))}",
        )
    padding = unwrap(padding_option)
    if padding not in ("zero", "nan"):
        raise TileTypeError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
    shape = [_scalar_int(cg, s, "each dimension of a descriptor's shape") for s in shape]
    strides = [_scalar_int(cg, s, "each stride of a descriptor") for s in strides]
    handle = make_descriptor_op(
        cg.sem.builder,
        base,
        [cg.sem.to_tensor(s) for s in shape],
        [cg.sem.to_tensor(s) for s in strides[:-1]],
        block,
        padding,
    )
    return tensor_descriptor(base, shape, strides, block, padding, handle)


def _checked_offsets(cg, desc, offsets) -> list:
    """A descriptor access's offsets as given (Python ints or scalar integer tensors), checked."""
    if not isinstance(desc, tensor_descriptor):
        raise TileTypeError(f"expected a tensor descriptor, got {type(desc).__name__}")
    offsets = _as_list(offsets, "offsets")
    rank = len(desc.block_shape)
    if len(offsets) != rank:
        raise TileTypeError(f"a descriptor of rank {rank} needs {rank} offsets, got {len(offsets)}")
    return [_scalar_int(cg, offset, "each offset") for offset in offsets]


def _block_pointers(cg, desc: tensor_descriptor, offsets) -> tuple[tensor, tensor]:
    """The tile of pointers of a descriptor's block at `offsets`, and its in-bounds mask."""
    offsets = _checked_offsets(cg, desc, offsets)
    return _block_tile(cg, desc.base, desc.shape, desc.strides, offsets, desc.block_shape)


def _block_tile(
    cg, base, shape, strides, offsets, block_shape, checked=None
) -> tuple[tensor, tensor | None]:
    """Pointers to the block of `block_shape` at `offsets`, and the mask of positions inside `shape`
    along the `checked` axes (all when None; the mask is None when no axis is checked), built by
    the descriptor pass's builder (passes/block_tiles.py) so the two cannot drift apart."""
    pointers, mask = block_tile(
        cg.sem.builder,
        base.handle,
        [_index(v) for v in shape],
        [_index(v) for v in strides],
        [_index(v) for v in offsets],
        tuple(block_shape),
        checked,
    )
    pointers = tensor(pointers, core.block_type(base.dtype, tuple(block_shape)))
    return pointers, None if mask is None else tensor(
        mask, core.block_type(core.int1, tuple(block_shape))
    )


def _index(value):
    """A shape, stride or offset as the builder takes it: a Python int, or a scalar's IR value."""
    return value.handle if isinstance(value, tensor) else value


@impl("descriptor_load")
def descriptor_load(cg, desc, offsets):
    desc = unwrap(desc)
    offsets = _checked_offsets(cg, desc, offsets)
    if desc.padding == "nan" and not desc.dtype.is_floating():
        raise TileTypeError("padding 'nan' needs a floating-point descriptor")
    handles = [cg.sem.to_tensor(offset).handle for offset in offsets]
    return cg.sem.make(tt.DescriptorLoadOp, desc.block_type, desc=desc.handle, offsets=handles)


@impl("descriptor_store")
def descriptor_store(cg, desc, offsets, value):
    desc = unwrap(desc)
    offsets = _checked_offsets(cg, desc, offsets)
    value = cg.sem.to_tensor(unwrap(value))
    if value.shape and tuple(value.shape) != tuple(desc.block_shape):
        raise TileTypeError(
            f"a descriptor store takes a tile of its block shape {list(desc.block_shape)}, "
            f"got {list(value.shape)}"
        )
    ops = cg.sem.builder.block.ops
    before = len(ops)
    value = cg.sem.broadcast_to(cg.sem.cast(value, desc.dtype), tuple(desc.block_shape))
    converts = len(ops) - before
    handles = [cg.sem.to_tensor(offset).handle for offset in offsets]
    cg.sem.builder.create(
        tt.DescriptorStoreOp,
        desc=desc.handle,
        value=value.handle,
        offsets=handles,
        converts=converts,
    )


@impl("descriptor_atomic_add")
def descriptor_atomic_add(cg, desc, offsets, value):
    pointers, mask = _block_pointers(cg, unwrap(desc), offsets)
    BUILTIN_IMPLS["atomic_add"](cg, pointers, value, mask)


# -- block pointers --------------------------------------------------------------------------------------


def _int_tuple(cg, values, what: str, dtype) -> tuple:
    """Scalar integers as tensors of `dtype`: a block pointer's fields keep their types through loops."""
    items = [_scalar_int(cg, v, what) for v in _as_list(values, what)]
    return tuple(cg.sem.cast(cg.sem.to_tensor(v), dtype) for v in items)


@impl("make_block_ptr")
def make_block_ptr(cg, base, shape, strides, offsets, block_shape, order):
    base = cg.sem.to_tensor(base)
    if not base.dtype.is_ptr() or base.shape:
        raise TileTypeError(f"make_block_ptr needs a scalar pointer as base, got {base.type}")
    block = check_shape(block_shape, "block shape")
    order = tuple(unwrap(o) for o in _as_list(order, "order"))
    shape = _int_tuple(cg, shape, "each dimension of a block pointer's shape", core.int64)
    strides = _int_tuple(cg, strides, "each stride of a block pointer", core.int64)
    offsets = _int_tuple(cg, offsets, "each offset of a block pointer", core.int32)
    if not len(shape) == len(strides) == len(offsets) == len(block) == len(order):
        raise TileTypeError(
            "make_block_ptr needs equally many shape, strides, offsets, block_shape and order entries; "
            f"got {len(shape)}, {len(strides)}, {len(offsets)}, {len(block)} and {len(order)}"
        )
    if sorted(order) != list(range(len(block))):
        raise TileTypeError(f"order must be a permutation of 0..{len(block) - 1}, got {order}")
    return block_pointer(base, shape, strides, offsets, block, order)


@impl("advance")
def advance(cg, base, offsets):
    pointer = unwrap(base)
    if not isinstance(pointer, block_pointer):
        raise TileTypeError(
            f"tl.advance needs a block pointer (tl.make_block_ptr), got {pointer!r}"
        )
    deltas = _int_tuple(cg, offsets, "each offset of tl.advance", core.int32)
    if len(deltas) != len(pointer.offsets):
        raise TileTypeError(
            f"tl.advance of a rank-{len(pointer.offsets)} block pointer needs as many "
            f"offsets, got {len(deltas)}"
        )
    moved = tuple(cg.sem.add(o, d) for o, d in zip(pointer.offsets, deltas))
    return pointer._replace(offsets=moved)


def _checked_axes(pointer: block_pointer, boundary_check) -> tuple[int, ...]:
    axes = tuple(unwrap(a) for a in (unwrap(boundary_check) or ()))
    rank = len(pointer.block_shape)
    for axis in axes:
        if not isinstance(axis, int) or not 0 <= axis < rank:
            raise TileTypeError(f"boundary_check axes must be in 0..{rank - 1}, got {axes}")
    return axes


def _block_pointer_tile(cg, pointer: block_pointer, checked) -> tuple[tensor, tensor | None]:
    return _block_tile(
        cg,
        pointer.base,
        pointer.shape,
        pointer.strides,
        pointer.offsets,
        pointer.block_shape,
        checked,
    )


def block_load(cg, pointer: block_pointer, boundary_check, padding_option) -> tensor:
    """`tl.load` of a block pointer (calls.load dispatches here)."""
    padding = unwrap(padding_option) or "zero"
    if padding not in ("zero", "nan"):
        raise TileTypeError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
    checked = _checked_axes(pointer, boundary_check)
    pointers, mask = _block_pointer_tile(cg, pointer, checked)
    if mask is None:
        return cg.sem.load(pointers)
    return cg.sem.load(pointers, mask, float("nan") if padding == "nan" else 0)


def block_store(cg, pointer: block_pointer, value, boundary_check) -> None:
    """`tl.store` to a block pointer (calls.store dispatches here)."""
    checked = _checked_axes(pointer, boundary_check)
    value = cg.sem.to_tensor(unwrap(value))
    if value.shape and tuple(value.shape) != tuple(pointer.block_shape):
        raise TileTypeError(
            f"a block pointer store takes a tile of its block shape "
            f"{list(pointer.block_shape)}, got {list(value.shape)}"
        )
    pointers, mask = _block_pointer_tile(cg, pointer, checked)
    cg.sem.store(pointers, value, mask)
