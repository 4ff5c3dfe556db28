"""The microbenchmarks behind measured roofline ceilings (GPU only; imported when measuring).

- dram: a 1 GiB device-to-device copy (cudaMemcpy or CuPy's copy, the faster; read + written bytes);
- l2: a tileworkbench kernel re-reading windows of a buffer half the size of L2 (l2_kernel.py);
- fp32: a tileworkbench kernel running independent FMA chains (2 FLOPs per FMA);
- fp16, bf16, tf32: cuBLAS `gemmEx` (8192^3, fp32 accumulation) through CuPy's cuBLAS bindings.
Each time is the median of CUDA-event timings after a warm-up.
"""

from __future__ import annotations

import statistics

import numpy as np

from .ceilings import Peak

# cudaDataType / cublasComputeType_t values from cuBLAS's headers.
CUDA_R_16F, CUDA_R_32F, CUDA_R_16BF = 2, 0, 14
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 77
CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99


def time_ms(fn, reps: int = 20, warmup: int = 3) -> float:
    """Median milliseconds of `fn()` on the current stream, timed with CUDA events."""
    import cupy

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def measure_dram(nbytes: int = 1 << 30) -> Peak:
    """Device-to-device copy bandwidth (bytes read + written): the better of cudaMemcpy and CuPy's
    copy kernel, since either can be the faster on a given driver."""
    import cupy

    src = cupy.ones(nbytes // 4, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    kind = cupy.cuda.runtime.memcpyDeviceToDevice
    timings = {
        "cudaMemcpy": time_ms(
            lambda: cupy.cuda.runtime.memcpyAsync(
                dst.data.ptr, src.data.ptr, nbytes, kind, cupy.cuda.get_current_stream().ptr
            )
        ),
        "CuPy copy": time_ms(lambda: cupy.copyto(dst, src)),
    }
    how = min(timings, key=timings.get)
    return Peak("dram", 2 * nbytes / (timings[how] * 1e-3), "B/s", "measured", f"{how}, 1 GiB")


def measure_gemm(kind: str, size: int = 8192) -> Peak:
    """Tensor-core FLOP/s of an fp16 / bf16 / tf32 GEMM through cuBLAS gemmEx."""
    import cupy
    from cupy_backends.cuda.libs import cublas

    dtype, data_type, compute = {
        "fp16": (cupy.float16, CUDA_R_16F, CUBLAS_COMPUTE_32F),
        "bf16": (cupy.uint16, CUDA_R_16BF, CUBLAS_COMPUTE_32F),  # bf16 bits; cuBLAS reads them
        "tf32": (cupy.float32, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32),
    }[kind]
    a = cupy.full((size, size), 0x3C00 if dtype is cupy.uint16 else 1, dtype=dtype)
    out_type = CUDA_R_32F if kind == "tf32" else data_type
    c = cupy.empty((size, size), dtype=cupy.float32 if kind == "tf32" else dtype)
    alpha = np.ones(1, np.float32)
    beta = np.zeros(1, np.float32)
    handle = cupy.cuda.device.get_cublas_handle()

    def run():
        cublas.gemmEx(
            handle,
            0,
            0,
            size,
            size,
            size,
            alpha.ctypes.data,
            a.data.ptr,
            data_type,
            size,
            a.data.ptr,
            data_type,
            size,
            beta.ctypes.data,
            c.data.ptr,
            out_type,
            size,
            compute,
            CUBLAS_GEMM_DEFAULT_TENSOR_OP,
        )

    ms = time_ms(run, reps=10)
    return Peak(kind, 2.0 * size**3 / (ms * 1e-3), "FLOP/s", "measured", f"cuBLAS gemmEx {size}^3")


def measure_fp32_fma() -> Peak:
    """FP32 FMA rate of a tileworkbench kernel: 8 independent chains per element hide FMA latency."""
    import cupy

    from .fma_kernel import CHAINS, fma_kernel

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    block, iters = 1024, 4096
    programs = props["multiProcessorCount"] * 16
    x = cupy.ones(programs * block, dtype=cupy.float32)

    def run():
        fma_kernel[(programs,)](x, iters, BLOCK=block, num_warps=8)

    ms = time_ms(run, reps=10)
    flops = 2.0 * CHAINS * iters * programs * block
    return Peak("fp32", flops / (ms * 1e-3), "FLOP/s", "measured", "tileworkbench FMA kernel")


def measure_l2() -> Peak:
    """L2 read bandwidth: a kernel re-reading windows of a buffer half the size of L2."""
    import cupy

    from .l2_kernel import l2_read_kernel

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    n = props["l2CacheSize"] // 2 // 4
    block, reps = 1024, 256
    programs = props["multiProcessorCount"] * 8
    x = cupy.ones(n, dtype=cupy.float32)
    out = cupy.empty(programs * block, dtype=cupy.float32)

    def run():
        l2_read_kernel[(programs,)](x, out, n, REPS=reps, BLOCK=block, num_warps=8)

    ms = time_ms(run, reps=10)
    nbytes = 4.0 * programs * block * reps
    size = props["l2CacheSize"] // 2 >> 20
    return Peak("l2", nbytes / (ms * 1e-3), "B/s", "measured", f"L2 re-read, {size} MiB buffer")


def measure_all() -> dict[str, Peak]:
    """Every ceiling this device can measure; one that fails is left out (the datasheet remains)."""
    peaks: dict[str, Peak] = {}
    for name, fn in (
        ("dram", measure_dram),
        ("l2", measure_l2),
        ("fp32", measure_fp32_fma),
        ("fp16", lambda: measure_gemm("fp16")),
        ("bf16", lambda: measure_gemm("bf16")),
        ("tf32", lambda: measure_gemm("tf32")),
    ):
        try:
            peaks[name] = fn()
        except Exception as exc:  # noqa: BLE001 - a missing library must not hide the other peaks
            peaks.setdefault("_errors", Peak(name, 0.0, "", "error", ""))
            peaks["_errors"].detail += f"{name}: {type(exc).__name__}: {exc}; "
    return peaks
