"""Triton's host-side `TensorDescriptor` (`triton.tools.tensor_descriptor`): a tensor plus the shape,
strides and block shape of the tiles a kernel moves through it.

Passed as a kernel argument, it reaches the kernel as its base, shape and strides; on sm_90+, where the
base and strides are 16-byte aligned and the block is one TMA box, also as a CUtensorMap that the
launcher encodes, and the kernel's loads and stores of it are TMA copies (runtime/tensor_map.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class TensorDescriptor:
    """`base` (a tensor or array) seen as `shape` with `strides` (elements); `block_shape` is the tile
    size of loads and stores; `padding` is "zero" or "nan" for reads outside the shape."""

    base: Any
    shape: list[int]
    strides: list[int]
    block_shape: list[int]
    padding: str = "zero"

    def __post_init__(self) -> None:
        rank = len(self.shape)
        if not 1 <= rank <= 5 or len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(
                f"a TensorDescriptor needs 1 to 5 dimensions and as many strides and block "
                f"sizes: shape {self.shape}, strides {self.strides}, block {self.block_shape}"
            )
        if self.strides[-1] != 1:
            raise ValueError(
                f"the last dimension of a TensorDescriptor must be contiguous (stride 1), "
                f"got strides {self.strides}"
            )
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"padding must be 'zero' or 'nan', got {self.padding!r}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: list[int], padding: str = "zero") -> TensorDescriptor:
        """A descriptor covering all of `tensor` (torch, NumPy or CuPy), with strides in elements."""
        shape = list(tensor.shape)
        strides = (
            tensor.stride()
            if callable(getattr(tensor, "stride", None))
            else [s // tensor.itemsize for s in tensor.strides]
        )
        return TensorDescriptor(tensor, shape, list(strides), list(block_shape), padding)
