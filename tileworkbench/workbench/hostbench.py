"""Ceilings of the host CPU, measured honestly with NumPy, for machines without a GPU.

- dram: a NumPy copy of 128 MiB (bytes read + written), far larger than any CPU cache;
- l2: a NumPy copy of 256 KiB repeated, which stays in the core's L2 cache;
- fp32, fp64: NumPy's BLAS GEMM (2 n^3 FLOPs), on every core BLAS uses.
They describe the machine the interpreter runs on, and are labelled so: a GPU kernel's roofline is
never drawn against them.
"""

from __future__ import annotations

import platform
import time

import numpy as np

from .ceilings import Peak

DRAM_BYTES = 128 << 20
CACHE_BYTES = 256 << 10


def _best_seconds(fn, reps: int) -> float:
    """The fastest of `reps` timings of `fn()` after one warm-up (the least disturbed run)."""
    fn()
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _copy_bandwidth(nbytes: int, inner: int, reps: int) -> float:
    src = np.random.default_rng().standard_normal(nbytes // 8)
    dst = np.empty_like(src)

    def run():
        for _ in range(inner):
            np.copyto(dst, src)

    return 2 * nbytes * inner / _best_seconds(run, reps)


def _gemm_rate(dtype, n: int = 512) -> float:
    a = np.random.default_rng().standard_normal((n, n)).astype(dtype)
    b = np.random.default_rng().standard_normal((n, n)).astype(dtype)
    return 2.0 * n**3 / _best_seconds(lambda: a @ b, 3)


def host_name() -> str:
    return f"host CPU ({platform.processor() or platform.machine()})"


def measure_host() -> dict[str, Peak]:
    """Every host ceiling, each labelled with how it was measured."""
    dram = _copy_bandwidth(DRAM_BYTES, 1, 2)
    cache = _copy_bandwidth(CACHE_BYTES, 50, 3)
    return {
        "dram": Peak("dram", dram, "B/s", "measured", "host memory, NumPy copy of 128 MiB"),
        "l2": Peak("l2", cache, "B/s", "measured", "host L2 cache, NumPy copy of 256 KiB"),
        "fp32": Peak("fp32", _gemm_rate(np.float32), "FLOP/s", "measured", "host NumPy BLAS sgemm"),
        "fp64": Peak("fp64", _gemm_rate(np.float64), "FLOP/s", "measured", "host NumPy BLAS dgemm"),
    }
