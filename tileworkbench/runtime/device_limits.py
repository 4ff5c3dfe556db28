"""Triton's `triton.testing` limits that need the GPU: `get_dram_gbps`,
`get_max_tensorcore_tflops`, `get_max_simd_tflops`, computed from the device's properties as Triton
computes them (4 sub-cores per SM; operations per sub-core per clock by architecture and dtype).
"""

from __future__ import annotations

from typing import Any

from ..cuda.device import DeviceProperties, device_properties
from ..dtypes import lookup

# (major >= , dtype name) -> dense tensor-core operations (2 per FMA) per sub-core per clock
_TENSOR_CORE_OPS = {
    7: {"float16": 256},
    8: {"float32": 256, "float16": 512, "bfloat16": 512, "int8": 1024},
    9: {
        "float32": 512,
        "float16": 1024,
        "bfloat16": 1024,
        "int8": 2048,
        "float8_e4m3fn": 2048,
        "float8_e5m2": 2048,
    },
}
_SIMD_OPS = {7: {"float32": 32, "float16": 64}, 8: {"float32": 32, "float16": 64, "bfloat16": 64}}
_SUB_CORES_PER_SM = 4


def _dtype_name(dtype: Any) -> str:
    """ "float16" for torch.float16, tl.float16, numpy.float16 or "fp16" (the NumPy name of any of a
    dtype's names, dtypes.TABLE); tf32 runs on float32 data."""
    name = str(getattr(dtype, "name", None) or dtype).removeprefix("torch.")
    row = lookup("fp32" if name == "tf32" else name)
    return row.numpy if row is not None else name


def _ops_per_clock(
    table: dict[int, dict[str, int]], props: DeviceProperties, dtype: Any, what: str
) -> int:
    generation = max((g for g in table if g <= props.major), default=None)
    ops = table[generation].get(_dtype_name(dtype)) if generation is not None else None
    if ops is None:
        raise ValueError(
            f"{what}: no figure for {_dtype_name(dtype)} on sm_{props.major}{props.minor}"
        )
    return ops


def dram_gbps(props: DeviceProperties) -> float:
    """Theoretical DRAM bandwidth in GB/s (double data rate over the whole bus)."""
    return props.dram_bandwidth / 1e9


def tensorcore_tflops(props: DeviceProperties, dtype: Any, clock_khz: float | None = None) -> float:
    ops = _ops_per_clock(_TENSOR_CORE_OPS, props, dtype, "get_max_tensorcore_tflops")
    clock = props.clock_khz if clock_khz is None else clock_khz
    return props.sm_count * _SUB_CORES_PER_SM * clock * 1e3 * ops / 1e12


def simd_tflops(props: DeviceProperties, dtype: Any, clock_khz: float | None = None) -> float:
    ops = _ops_per_clock(_SIMD_OPS, props, dtype, "get_max_simd_tflops")
    clock = props.clock_khz if clock_khz is None else clock_khz
    return props.sm_count * _SUB_CORES_PER_SM * clock * 1e3 * ops / 1e12


def get_dram_gbps(device: int | None = None) -> float:
    """The current (or given) GPU's theoretical DRAM bandwidth in GB/s (Triton's name)."""
    return dram_gbps(device_properties(device))


def get_max_tensorcore_tflops(
    dtype, clock_rate: float | None = None, device: int | None = None
) -> float:
    """Dense tensor-core TFLOP/s for `dtype` at `clock_rate` kHz (default: the device's clock)."""
    return tensorcore_tflops(device_properties(device), dtype, clock_rate)


def get_max_simd_tflops(dtype, clock_rate: float | None = None, device: int | None = None) -> float:
    """CUDA-core (FMA) TFLOP/s for `dtype` at `clock_rate` kHz (default: the device's clock)."""
    return simd_tflops(device_properties(device), dtype, clock_rate)
