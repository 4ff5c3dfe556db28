"""Tensor descriptors (Triton's `tl.make_tensor_descriptor` / `tl.tensor_descriptor`) and block pointers
(`tl.make_block_ptr` / `tl.advance`): a global tensor's base, shape and strides plus the block shape that
a load or store moves. Block pointers lower to masked pointer tiles (frontend/descriptors.py);
descriptors to target-neutral `tt.descriptor_*` ops, which the descriptor pass
(passes/descriptors.py) makes TMA copies where the target and the alignment allow (host descriptors
on sm_90+, descriptors made in the kernel on sm_90a through a tensor map built in scratch memory
from `set_allocator`), and masked pointer tiles otherwise.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

from .core import builtin, dtype


class tensor_descriptor:
    """A descriptor value inside a kernel (made by `tl.make_tensor_descriptor`).

    `desc.load([o0, o1, ...])` reads the block at those element offsets: positions outside the tensor's
    shape read as zero (or NaN with padding_option="nan"). `desc.store(offsets, value)` writes a block;
    positions outside the shape are not written. Offsets may be negative.
    """

    # attribute -> builtin: the frontend turns `desc.load(...)` into `descriptor_load(desc, ...)`
    __tile_methods__: ClassVar[dict[str, str]] = {
        "load": "descriptor_load",
        "store": "descriptor_store",
        "atomic_add": "descriptor_atomic_add",
    }

    def __init__(
        self,
        base,
        shape: list,
        strides: list,
        block_shape: tuple[int, ...],
        padding: str,
        handle=None,
    ):
        self.base = base
        self.shape = list(shape)
        self.strides = list(strides)
        self.block_shape = tuple(block_shape)
        self.padding = padding
        # the `!tt.tensordesc` value its loads and stores take (`tt.make_tensor_descriptor`)
        self.handle = handle

    @property
    def dtype(self) -> dtype:
        """The element type."""
        return self.base.dtype.element_ty

    @property
    def block_type(self):
        from .core import block_type

        return block_type(self.dtype, self.block_shape)

    def __repr__(self) -> str:
        return f"tensor_descriptor<{self.dtype}, block {list(self.block_shape)}>"


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """A descriptor of the tensor at `base` (a pointer) with `shape` and `strides` (in elements; the
    last stride must be 1) whose loads and stores move tiles of `block_shape`."""


class block_pointer(NamedTuple):
    """A block pointer inside a kernel (made by `tl.make_block_ptr`, moved by `tl.advance`).

    `tl.load(ptr, boundary_check=(0, 1), padding_option="zero")` reads the block at `offsets`; only the
    dimensions in `boundary_check` are checked against `shape` (positions outside them read as the
    padding value, zero unless "nan"); `tl.store(ptr, value, boundary_check=...)` skips them. A tuple,
    so loops and branches carry it like any tuple of tensors.
    """

    base: Any
    shape: tuple
    strides: tuple
    offsets: tuple
    block_shape: tuple[int, ...]
    order: tuple[int, ...]

    # `ptr.advance(offsets)` is `tl.advance(ptr, offsets)` (a plain class attribute, not a field)
    __tile_methods__ = {"advance": "advance"}

    @property
    def dtype(self) -> dtype:
        from .core import pointer_type

        return pointer_type(self.base.dtype.element_ty)

    @property
    def type(self) -> dtype:
        return self.dtype


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    """A pointer to the block of `block_shape` at `offsets` in the tensor at `base` with `shape` and
    `strides` (elements). `order` (fastest dimension first) is a layout hint."""


@builtin
def advance(base, offsets):
    """The block pointer `base` moved by `offsets` (elements, one per dimension)."""
