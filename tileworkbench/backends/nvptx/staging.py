"""Host arrays on the GPU target, for test suites written with NumPy arrays: each NumPy argument's memory
(all of what a strided view views, so the kernel's strides hold) is copied to the GPU before the launch
and back after it. Slow (two copies per array per launch) and off unless `NvptxBackend.stage_host_arrays`
is set, as tests/conftest.py's `target` fixture does on "cuda"."""

from __future__ import annotations

import contextlib

import numpy as np


def _root(array: np.ndarray) -> np.ndarray | None:
    """The array owning `array`'s memory, or None when that is not a C-contiguous ndarray."""
    base = array
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base if base.flags.c_contiguous else None


def _to_device(array: np.ndarray, copies: dict):
    """The device view of `array`. `copies` maps each host memory staged so far (by its root
    array's id) to [its device copy, the host bytes, whether a writeable array views it]: arguments
    that alias one memory (the same array passed twice) share one device copy, as on the host."""
    import cupy

    base = _root(array)
    if base is None:
        base = array = np.ascontiguousarray(array)
    if id(base) not in copies:
        raw = base.view(np.uint8).reshape(-1)
        copies[id(base)] = [cupy.asarray(raw), raw, False]
    entry = copies[id(base)]
    entry[2] = entry[2] or array.flags.writeable
    offset = array.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    bits = (
        np.dtype(f"u{array.dtype.itemsize}") if array.dtype.kind == "V" else array.dtype
    )  # bf16, fp8
    return cupy.ndarray(array.shape, bits, memptr=entry[0].data + offset, strides=array.strides)


class StagingLauncher:
    """Wraps a CudaKernel: NumPy arguments travel to the GPU and back around each launch."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.num_regs = kernel.num_regs

    def fast_launch_ok(self) -> bool:
        return False

    def launch(self, grid, args, stream=None) -> None:
        with self.staged(args) as moved:
            self.kernel.launch(grid, moved, stream)

    @contextlib.contextmanager
    def staged(self, args):
        """`args` with each NumPy array replaced by a GPU copy of its memory, copied back into the
        host array when the block ends without an error (debug mode launches through this: its
        hidden arguments are the device copies' byte ranges, runtime/debug_checks.py)."""
        moved, copies = [], {}
        for value in args:
            if isinstance(value, np.ndarray) and value.ndim > 0:
                moved.append(_to_device(value, copies))
            else:
                moved.append(value[()] if isinstance(value, np.ndarray) else value)
        yield moved
        self.kernel.synchronize()
        for device, raw, written in copies.values():
            if written:
                raw[...] = device.get()
