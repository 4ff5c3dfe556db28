"""`TensorWrapper` and `reinterpret` (Triton's `triton.runtime.jit` names): a torch tensor seen by a
kernel as another dtype of the same width, e.g. an int8 tensor passed as `*u8` or `*fp8e4b15`.

torch has no uint16/uint32/uint64 tensors that do arithmetic, nor every fp8 format; Triton's tests build
such arguments by wrapping a same-width tensor. A launch reads the wrapper's `dtype` (a tl dtype) and
`data_ptr()`; the interpreter reads `host_array()`, a NumPy view of the same memory.
"""

from __future__ import annotations

import numpy as np


class TensorWrapper:
    """`base` (a torch tensor) viewed as `dtype` (a tl dtype of the same element width)."""

    __tile_tensor_wrapper__ = True

    def __init__(self, base, dtype):
        self.dtype = dtype
        self.base = base
        self.data = base.data
        self.device = base.device
        self.shape = self.base.shape

    def data_ptr(self) -> int:
        return self.base.data_ptr()

    def stride(self, *args):
        return self.base.stride(*args)

    def element_size(self) -> int:
        return self.base.element_size()

    def numel(self) -> int:
        return self.base.numel()

    def cpu(self) -> TensorWrapper:
        return TensorWrapper(self.base.cpu(), self.dtype)

    def copy_(self, other: TensorWrapper) -> None:
        self.base.copy_(other.base)

    def clone(self) -> TensorWrapper:
        return TensorWrapper(self.base.clone(), self.dtype)

    def to(self, device) -> TensorWrapper:
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes) -> TensorWrapper:
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.base.__cuda_array_interface__  # only its address is read

    def host_array(self) -> np.ndarray:
        """A NumPy view of the (CPU) base tensor's memory with this wrapper's dtype."""
        import torch

        from ..dtypes import numpy_dtype_of

        base = self.base.detach()
        same_width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[
            base.element_size()
        ]
        return base.view(same_width).numpy().view(numpy_dtype_of(str(self.dtype)))

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor, dtype):
    """`tensor` viewed as `dtype`: a TensorWrapper, or the base itself when `dtype` is the base's own.

    Raises:
        TypeError: `tensor` is not a torch tensor (or TensorWrapper).
    """
    if isinstance(tensor, TensorWrapper):
        if dtype == tensor.base.dtype:
            return tensor.base
        return TensorWrapper(tensor.base, dtype)
    if hasattr(tensor, "data_ptr"):
        return TensorWrapper(tensor, dtype)
    raise TypeError(f"cannot reinterpret a {type(tensor).__name__}: expected a torch tensor")
