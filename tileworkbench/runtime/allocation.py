"""Triton's `triton.set_allocator`: the function kernels would call for global scratch memory.

Triton's device-side tensor descriptors (and some other features) need per-launch scratch on the GPU,
obtained through this allocator. tileworkbench's kernels need none yet (descriptors made in the kernel
lower to plain masked pointer tiles; host descriptors bring their TMA tensor maps as parameters), so
the allocator is recorded, for code that sets one, and not called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Allocator = Callable[[int, int, Any | None], Any]

_ALLOCATOR: list[Allocator | None] = [None]


def set_allocator(allocator: Allocator | None) -> None:
    """Set the scratch allocator, called as allocator(size_bytes, alignment, stream) -> buffer."""
    _ALLOCATOR[0] = allocator


def get_allocator() -> Allocator | None:
    """The allocator last given to `set_allocator` (None if none was)."""
    return _ALLOCATOR[0]
