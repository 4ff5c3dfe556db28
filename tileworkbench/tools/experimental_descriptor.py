"""Triton 3.2's `triton.tools.experimental_descriptor` (host-built TMA descriptors), for code that imports
it. Its raw 128-byte descriptors are not taken; pass a `tileworkbench.tools.tensor_descriptor.
TensorDescriptor` instead (TMA on sm_90+, plain loads elsewhere), or use `tl.make_tensor_descriptor`.
"""

from __future__ import annotations

from typing import Any


class TmaDescKernelParam:
    """Triton's wrapper that marks a host TMA descriptor as a kernel argument (not supported here)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(_MESSAGE)


_MESSAGE = (
    "host-built TMA descriptors (triton.tools.experimental_descriptor) are not supported; pass a "
    "TensorDescriptor (tileworkbench.tools.tensor_descriptor), which uses TMA on sm_90+, or build "
    "the descriptor in the kernel with tl.make_tensor_descriptor"
)


def create_1d_tma_descriptor(*args: Any, **kwargs: Any):
    raise NotImplementedError(_MESSAGE)


def create_2d_tma_descriptor(*args: Any, **kwargs: Any):
    raise NotImplementedError(_MESSAGE)
