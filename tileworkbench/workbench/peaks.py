"""A device's ceilings for the roofline: the current GPU's, measured once by microbenchmarks and
cached, or from datasheets; without a GPU, the host CPU's (hostbench.py), labelled as such.

Measured: DRAM and L2 bandwidth (a device-to-device copy; a kernel re-reading an L2-sized
buffer), FP32 FMA rate (a tileworkbench kernel of independent FMA chains) and tensor-core rates for
fp16, bf16 and tf32 (cuBLAS `gemmEx` through CuPy). The ceilings as data, the datasheets and the cache are
ceilings.py; their names are importable from here too.
"""

from __future__ import annotations

from .ceilings import (  # noqa: F401  (this module's public names since the peaks began)
    DATASHEET,
    DEFAULT_DEVICE,
    MEMORY_LEVELS,
    PEAK_NAMES,
    UNITS,
    Peak,
    Peaks,
    cache_path,
    datasheet_entry,
    datasheet_peaks,
    load_cached,
    peaks_html,
    peaks_text,
    save_cached,
)


def current_device() -> str | None:
    """The name of the current CUDA device, or None without CuPy or a GPU."""
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # no CuPy, no driver, no device: all mean "no GPU here"
        return None


def get_peaks(device: str | None = None, measure: bool = False, force: bool = False) -> Peaks:
    """The ceilings for `device` (default: the current GPU, else the H200 datasheet).

    Args:
        device: a device name; None picks the current GPU, or `DEFAULT_DEVICE` without one.
        measure: run the microbenchmarks when nothing is cached (needs the GPU to be `device`).
        force: re-measure even when cached values exist.
    """
    here = current_device()
    device = device or here or DEFAULT_DEVICE
    peaks = Peaks(device, measured=load_cached(device), datasheet=datasheet_peaks(device))
    if (measure and not peaks.measured or force) and here == device:
        from .microbench import measure_all

        peaks.measured = measure_all()
        save_cached(peaks)
    return peaks


def host_peaks(force: bool = False) -> Peaks:
    """The host CPU's ceilings (memory, cache, BLAS GEMM), measured once and cached: what can be
    measured honestly on a machine without a GPU. No datasheet rows: nothing to compare them with."""
    from .hostbench import host_name, measure_host

    device = host_name()
    measured = {} if force else load_cached(device)
    peaks = Peaks(device, measured=measured)
    if not peaks.measured:
        peaks.measured = measure_host()
        save_cached(peaks)
    return peaks
