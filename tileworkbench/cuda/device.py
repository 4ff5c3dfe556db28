"""What the compiler, runtime and workbench know about the GPU: whether one is usable, and its
properties (cached per device).

Everything here imports CuPy lazily, so the module loads on a machine without CuPy or a GPU; there
`gpu_available()` is False and `device_properties()` raises LaunchError.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from tileworkbench.errors import LaunchError


@dataclass(frozen=True)
class DeviceProperties:
    """The properties of one CUDA device that the compiler, launcher and workbench use.

    Clock rates are in kHz and sizes in bytes, as CUDA reports them.
    """

    device_id: int
    name: str
    major: int
    minor: int
    sm_count: int
    max_threads_per_block: int
    max_shared_per_block: int
    max_shared_per_block_optin: int
    max_shared_per_sm: int
    max_regs_per_block: int
    max_regs_per_sm: int
    max_grid: tuple[int, int, int]
    warp_size: int
    l2_size: int
    total_memory: int
    clock_khz: int
    memory_clock_khz: int
    memory_bus_width: int

    @property
    def arch(self) -> str:
        """The PTX target name, e.g. "sm_90" (the back end adds the "a" suffix when it needs one)."""
        return f"sm_{self.major}{self.minor}"

    @property
    def compute_capability(self) -> tuple[int, int]:
        return (self.major, self.minor)

    @property
    def dram_bandwidth(self) -> float:
        """Datasheet DRAM bandwidth in bytes/s: two transfers per memory clock over the whole bus."""
        return 2.0 * self.memory_clock_khz * 1e3 * self.memory_bus_width / 8.0


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device. Never raises; cached.

    Call `gpu_available.cache_clear()` to ask again (tests do).
    """
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device: all mean "no GPU here"
        return False


def current_device() -> int:
    """The id of CuPy's current device."""
    import cupy

    return cupy.cuda.runtime.getDevice()


def device_count() -> int:
    """How many CUDA devices CuPy sees (0 when there is no CuPy or driver)."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def device_properties(device: int | None = None) -> DeviceProperties:
    """The properties of `device` (default: CuPy's current device), read once and cached.

    Raises:
        LaunchError: there is no usable GPU.
    """
    if not gpu_available():
        raise LaunchError("no CUDA GPU is available (CuPy is missing or sees no device)")
    if device is None:
        device = current_device()
    return _read_properties(device)


@functools.cache
def _read_properties(device: int) -> DeviceProperties:
    from cupy.cuda import runtime

    props = runtime.getDeviceProperties(device)

    def attribute(name: str) -> int:
        return runtime.deviceGetAttribute(getattr(runtime, name), device)

    name = props["name"]
    return DeviceProperties(
        device_id=device,
        name=name.decode() if isinstance(name, bytes) else str(name),
        major=int(props["major"]),
        minor=int(props["minor"]),
        sm_count=int(props["multiProcessorCount"]),
        max_threads_per_block=int(props["maxThreadsPerBlock"]),
        max_shared_per_block=int(props["sharedMemPerBlock"]),
        max_shared_per_block_optin=attribute("cudaDevAttrMaxSharedMemoryPerBlockOptin"),
        max_shared_per_sm=attribute("cudaDevAttrMaxSharedMemoryPerMultiprocessor"),
        max_regs_per_block=attribute("cudaDevAttrMaxRegistersPerBlock"),
        max_regs_per_sm=attribute("cudaDevAttrMaxRegistersPerMultiprocessor"),
        max_grid=(
            attribute("cudaDevAttrMaxGridDimX"),
            attribute("cudaDevAttrMaxGridDimY"),
            attribute("cudaDevAttrMaxGridDimZ"),
        ),
        warp_size=int(props["warpSize"]),
        l2_size=attribute("cudaDevAttrL2CacheSize"),
        total_memory=int(props["totalGlobalMem"]),
        # CUDA 13 dropped these from cudaDeviceProp; the attributes remain
        clock_khz=attribute("cudaDevAttrClockRate"),
        memory_clock_khz=attribute("cudaDevAttrMemoryClockRate"),
        memory_bus_width=attribute("cudaDevAttrGlobalMemoryBusWidth"),
    )
