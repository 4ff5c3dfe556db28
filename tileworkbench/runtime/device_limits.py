"""Triton's `triton.testing` helpers that need the GPU: `do_bench_cudagraph` (time a function replayed
from a CUDA graph, without launch overhead) and the theoretical limits `get_dram_gbps`,
`get_max_tensorcore_tflops`, `get_max_simd_tflops`, computed from the device's properties as Triton
computes them (4 sub-cores per SM; operations per sub-core per clock by architecture and dtype).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .device import DeviceProperties, device_properties

# (major >= , dtype name) -> dense tensor-core operations (2 per FMA) per sub-core per clock
_TENSOR_CORE_OPS = {
    7: {"float16": 256},
    8: {"float32": 256, "float16": 512, "bfloat16": 512, "int8": 1024},
    9: {"float32": 512, "float16": 1024, "bfloat16": 1024, "int8": 2048, "float8_e4m3fn": 2048,
        "float8_e5m2": 2048},
}
_SIMD_OPS = {7: {"float32": 32, "float16": 64}, 8: {"float32": 32, "float16": 64, "bfloat16": 64}}
_SUB_CORES_PER_SM = 4
_ALIASES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16", "i8": "int8",
            "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}


def _dtype_name(dtype: Any) -> str:
    """"float16" for torch.float16, tl.float16, numpy.float16 or "fp16"."""
    name = str(getattr(dtype, "name", None) or dtype).removeprefix("torch.")
    return _ALIASES.get(name, name)


def _ops_per_clock(table: dict[int, dict[str, int]], props: DeviceProperties, dtype: Any,
                   what: str) -> int:
    generation = max((g for g in table if g <= props.major), default=None)
    ops = table[generation].get(_dtype_name(dtype)) if generation is not None else None
    if ops is None:
        raise ValueError(f"{what}: no figure for {_dtype_name(dtype)} on sm_{props.major}{props.minor}")
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


def get_max_tensorcore_tflops(dtype, clock_rate: float | None = None, device: int | None = None) -> float:
    """Dense tensor-core TFLOP/s for `dtype` at `clock_rate` kHz (default: the device's clock)."""
    return tensorcore_tflops(device_properties(device), dtype, clock_rate)


def get_max_simd_tflops(dtype, clock_rate: float | None = None, device: int | None = None) -> float:
    """CUDA-core (FMA) TFLOP/s for `dtype` at `clock_rate` kHz (default: the device's clock)."""
    return simd_tflops(device_properties(device), dtype, clock_rate)


def do_bench_cudagraph(fn: Callable[[], Any], rep: float = 20,
                       grad_to_none: Sequence[Any] | None = None,
                       quantiles: Sequence[float] | None = None, return_mode: str = "mean"):
    """Time `fn()` in ms as Triton's `do_bench_cudagraph` does: its launches are captured into a CUDA
    graph (on a CuPy stream, which tileworkbench kernels launch on) and the graph is replayed, so launch
    overhead is not counted. Without a GPU it times on the host, as `do_bench` does there.

    Raises:
        LaunchError: `fn` launched work that a CUDA graph cannot capture (e.g. on torch's stream).
    """
    from .testing import _gpu_timing, _summarize, do_bench

    if not _gpu_timing():
        return do_bench(fn, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles,
                        return_mode=return_mode, timer="host")
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        fn()  # compile and warm up outside the capture
        stream.synchronize()
        estimate = _graph_time(stream, fn, 5) / 5
        repeats = max(1, int(rep / max(estimate, 1e-3)))
        graph_ms = [_graph_time(stream, fn, repeats) / repeats for _ in range(10)]
    return _summarize(graph_ms, quantiles, return_mode)


def _graph_time(stream, fn: Callable[[], Any], repeats: int) -> float:
    """ms for one replay of a graph holding `repeats` calls of `fn`."""
    import cupy

    from ..errors import LaunchError

    stream.begin_capture()
    try:
        for _ in range(repeats):
            fn()
    finally:
        graph = stream.end_capture()
    if graph is None:
        raise LaunchError("do_bench_cudagraph captured nothing: launch on CuPy's current stream")
    graph.upload(stream)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    graph.launch(stream)
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end)
