"""Triton 3.2's `triton.tools.experimental_descriptor` (host-built TMA descriptors), for code that imports
it. Building host TMA descriptors needs a GPU driver call that tileworkbench does not make; kernels here
use `tl.make_tensor_descriptor` (device-side descriptors) instead, which works on every target.
"""

from __future__ import annotations

from typing import Any


class TmaDescKernelParam:
    """Triton's wrapper that marks a host TMA descriptor as a kernel argument (not supported here)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(_MESSAGE)


_MESSAGE = (
    "host-built TMA descriptors (triton.tools.experimental_descriptor) are not supported; "
    "build the descriptor in the kernel with tl.make_tensor_descriptor"
)


def create_1d_tma_descriptor(*args: Any, **kwargs: Any):
    raise NotImplementedError(_MESSAGE)


def create_2d_tma_descriptor(*args: Any, **kwargs: Any):
    raise NotImplementedError(_MESSAGE)
