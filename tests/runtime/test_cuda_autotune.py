"""autotune over real CudaKernels on the GPU: CUDA-event timing, and a config that needs more shared
memory than the device has recorded as an error. Skipped where there is no GPU."""

from __future__ import annotations

import numpy as np
import pytest

from tileworkbench.runtime.autotuner import Config, autotune
from tileworkbench.cuda.device import device_properties, gpu_available
from tileworkbench.cuda.launcher import CudaKernel

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU with CuPy"),
]


def add_f32(x_ptr, y_ptr, out_ptr, n, SHARED):
    """What the fake JIT's `.fn` (the user's Python function) would be."""


class PTXJit:
    """A stand-in for the JIT: each config loads the hand-written add kernel with its num_warps and
    SHARED bytes of (unused) dynamic shared memory."""

    def __init__(self):
        from ptx_samples import ADD_KINDS, ADD_PTX  # tests/runtime, on sys.path under pytest

        self.ptx, self.kinds = ADD_PTX, ADD_KINDS
        self.arg_names = ["x_ptr", "y_ptr", "out_ptr", "n", "SHARED"]
        self.fn = add_f32
        self.kernels: dict[tuple, CudaKernel] = {}

    def run(self, *args, grid, warmup=False, num_warps=4, num_stages=3, SHARED=0):
        key = (num_warps, SHARED)
        if key not in self.kernels:
            self.kernels[key] = CudaKernel(
                self.ptx, "add_f32", num_warps=num_warps, shared=SHARED, param_kinds=self.kinds
            )
        kernel = self.kernels[key]
        if not warmup:
            kernel.launch(grid(num_warps) if callable(grid) else grid, args)


def test_autotune_times_real_kernels_and_records_out_of_resources():
    import cupy as cp

    too_much = device_properties().max_shared_per_block_optin + 4096
    configs = [Config({"SHARED": 0}, num_warps=w) for w in (1, 4, 8)]
    configs.append(Config({"SHARED": too_much}, num_warps=4))
    tuned = autotune(configs, key=["n"], warmup=5, rep=20)(PTXJit())
    n = 1 << 22
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = cp.full(n, np.nan, dtype=cp.float32)

    def grid(num_warps):
        return ((n + 32 * num_warps - 1) // (32 * num_warps),)

    tuned[grid](cp.asarray(x), cp.asarray(y), out, n)
    cp.cuda.Device().synchronize()
    np.testing.assert_allclose(out.get(), x.astype(np.float64) + y, rtol=2.0**-23)
    results = tuned.last_results
    assert results[configs[3]]["error"].startswith("OutOfResources: out of resource: shared")
    times = {config: results[config]["ms"] for config in configs[:3]}
    assert all(0 < ms < 10 for ms in times.values())
    assert tuned.best_config == min(times, key=times.get)
    print({str(config): result for config, result in results.items()})
