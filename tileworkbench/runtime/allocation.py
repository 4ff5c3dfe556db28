"""Triton's `triton.set_allocator`: where kernels get per-launch global scratch memory.

A kernel that builds TMA tensor maps on the device (`tl.make_tensor_descriptor` on sm_90a,
backends/llvm/lowering/tensormap_device.py) needs 128 bytes of global memory per descriptor per
program; its metadata says how many bytes a program needs (`global_scratch`). Each launch of such a
kernel calls the allocator as `allocator(size_bytes, alignment, stream)` for that size times the
number of programs, and passes the buffer's address as a hidden parameter after the kernel's own.
The allocator returns an object with `data_ptr()` (a torch tensor) or a GPU array (CuPy). There is
no default, as in Triton. Unlike Triton's (a context variable), the setting is one per process:
Jupyter kernels do not keep a context variable from one cell to the next (ipykernel 7.0, and cells
with `await`), and a workbench sets the allocator in one cell and launches in another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import LaunchError

Allocator = Callable[[int, int, Any | None], Any]

_ALLOCATOR: list[Allocator | None] = [None]


def set_allocator(allocator: Allocator | None) -> None:
    """Set the scratch allocator, called as allocator(size_bytes, alignment, stream) -> buffer."""
    _ALLOCATOR[0] = allocator


def get_allocator() -> Allocator | None:
    """The allocator last given to `set_allocator` (None if none was)."""
    return _ALLOCATOR[0]


def launch_scratch(
    kernel: str, per_program: int, align: int, grid3: tuple[int, int, int], stream: int | None
) -> tuple[Any, int]:
    """(the buffer, its address) of one launch's global scratch: `per_program` bytes for each of the
    grid's programs, from the allocator, its address checked against `align`.

    Raises:
        LaunchError: no allocator is set, or it returned something without a GPU address, or an
            address off `align`.
    """
    allocator = get_allocator()
    if allocator is None:
        raise LaunchError(
            f"kernel {kernel} requires a runtime memory allocation ({per_program} bytes of global "
            "scratch per program, for the tensor descriptors it makes), but no allocator was set; "
            "use tileworkbench.set_allocator (triton.set_allocator), e.g. "
            "set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, "
            "device='cuda'))"
        )
    size = per_program * grid3[0] * grid3[1] * grid3[2]
    buffer = allocator(size, align, stream)
    address = _address(buffer, kernel)
    if address % align:
        raise LaunchError(
            f"kernel {kernel}: the allocator gave scratch at {address:#x}, which is not "
            f"{align}-byte aligned as asked"
        )
    return buffer, address


def _address(buffer: Any, kernel: str) -> int:
    if hasattr(buffer, "data_ptr"):
        return int(buffer.data_ptr())
    from ..cuda.arguments import pointer_value

    return pointer_value(buffer, "global scratch (from the allocator)", kernel)
