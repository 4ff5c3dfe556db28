"""Triton's `triton.runtime.driver`: `driver.active` tells a program which device its kernels run on.

Kernels written for Triton pick their torch device and read device properties through it, e.g.
`DEVICE = triton.runtime.driver.active.get_active_torch_device()` or
`driver.active.utils.get_device_properties(DEVICE.index)["multiprocessor_count"]`. This module is that
object's home: `tileworkbench.runtime.driver.active` is a `Driver` for the target `@jit` launches use now.

On a GPU the answers are the GPU's. In the interpreter (no GPU, or TILEWORKBENCH_INTERPRET=1) the torch
device is the CPU, the target's backend is "interpreter", and the properties describe the GPU the
interpreter stands in for (an sm_90-class part), so occupancy arithmetic written for GPUs still gives
sensible launch sizes. Triton has no CPU driver; this is our addition.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

# What the interpreter reports as its device: an sm_90-class GPU (H100/H200 per-SM limits). The
# program count comes from the host, since the interpreter runs programs on the host's cores.
INTERPRETER_PROPERTIES = {
    "max_shared_mem": 232448,
    "max_num_regs": 65536,
    "warpSize": 32,
    "sm_clock_rate": 1980000,
    "mem_clock_rate": 3201000,
    "mem_bus_width": 6144,
    "max_threads_per_sm": 2048,
}


@dataclass(frozen=True)
class GPUTarget:
    """What a kernel is compiled for, as Triton's `GPUTarget`: backend ("cuda" or "interpreter"),
    arch (the compute capability as an int, e.g. 90, for "cuda"; "cpu" for the interpreter) and warp
    size."""

    backend: str
    arch: int | str
    warp_size: int


def _on_gpu() -> bool:
    from ..backends import is_gpu

    return is_gpu(None)


class DriverUtils:
    """`driver.active.utils`: device queries."""

    def get_device_properties(self, device: int | None = None) -> dict[str, Any]:
        """The properties Triton's driver reports, by its key names (`multiprocessor_count`,
        `max_shared_mem`, `max_num_regs`, `warpSize`, clocks in kHz, bus width in bits).

        `device` is a device index; None (what `torch.device("cpu").index` is) means the current one.
        """
        if not _on_gpu():
            return {**INTERPRETER_PROPERTIES, "multiprocessor_count": os.cpu_count() or 1}
        from ..cuda.device import device_properties

        props = device_properties(device)
        return {
            "max_shared_mem": props.max_shared_per_block_optin,
            "max_num_regs": props.max_regs_per_block,
            "multiprocessor_count": props.sm_count,
            "warpSize": props.warp_size,
            "sm_clock_rate": props.clock_khz,
            "mem_clock_rate": props.memory_clock_khz,
            "mem_bus_width": props.memory_bus_width,
            "max_threads_per_sm": 2048,
        }


class Driver:
    """Triton's active driver: the target, the current device and its torch device."""

    def __init__(self) -> None:
        self.utils = DriverUtils()

    def is_active(self) -> bool:
        return True

    def get_current_target(self) -> GPUTarget:
        if not _on_gpu():
            return GPUTarget("interpreter", "cpu", 32)
        from ..cuda.device import device_properties

        props = device_properties()
        return GPUTarget("cuda", props.major * 10 + props.minor, props.warp_size)

    def get_current_device(self) -> int:
        if not _on_gpu():
            return 0
        from ..cuda.device import current_device

        return current_device()

    def get_active_torch_device(self):
        """The torch device kernels take tensors on: cuda:N on a GPU, the CPU in the interpreter."""
        import torch

        if not _on_gpu():
            return torch.device("cpu")
        return torch.device("cuda", self.get_current_device())

    def get_current_stream(self, device: int | None = None) -> int:
        """The raw CUDA stream handle launches go to (0, the default stream, in the interpreter)."""
        if not _on_gpu():
            return 0
        import cupy

        return cupy.cuda.get_current_stream().ptr

    def get_device_interface(self):
        """torch's module for this device kind (`torch.cuda`, or `torch.cpu` in the interpreter)."""
        import torch

        return torch.cuda if _on_gpu() else torch.cpu


active = Driver()
default = active


def set_active(driver: Driver) -> None:
    """Replace the active driver (Triton's `driver.set_active`)."""
    global active
    active = driver


def reset_active() -> None:
    global active
    active = default
