"""Host time per launch without a GPU: the JIT's launch paths run against a stand-in CUDA kernel whose
driver call does nothing (tests/runtime/test_warm_launch.py's `stand_in_gpu`), on stand-in device
arrays shaped like torch tensors. It times what a launch costs in Python, which is what a change to
the launch path changes; bench/warm_launch.py is the same on a real GPU.

Three paths, each over the vector-add-like `tiny_kernel(x, n, BLOCK)`:
  launcher  `kernel[(1,)](x, n, BLOCK=128)`: the generated warm launcher
  run       `kernel.run(x, n, BLOCK=128, grid=(1,), num_warps=4)`: the warm path of calls with options
  full      the full path (bind, specialize, cache lookup, launch), as a cache hit

    PYTHONPATH=. python bench/warm_launch_host.py [launches per sample] [rounds]

Prints one JSON line: microseconds per launch, the median of rounds in which the paths alternate.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import types

import numpy as np

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.config import config
from tileworkbench.runtime import arguments, jit, launcher
from tileworkbench.runtime import compiler as compiler_module

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7


class DeviceArray:
    """A CUDA array as the warm path sees a torch tensor."""

    def __init__(self, address: int, dtype="float32"):
        self.address, self.dtype, self.is_cuda = address, np.dtype(dtype), True

    def data_ptr(self) -> int:
        return self.address

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.address, False), "typestr": self.dtype.str, "shape": (1,), "version": 3}


class StandInKernel(launcher.CudaKernel):
    """CudaKernel without CUDA: the driver's launch call does nothing."""

    def __init__(self, ptx, kernel_name, *, num_warps, shared, cubin=None, param_kinds=None,
                 param_names=None):
        self.name, self.num_warps, self.shared, self.device_id = kernel_name, num_warps, shared, 0
        self._max_grid = launcher.DEFAULT_MAX_GRID
        self._function_address, self.num_regs = 1, 10
        self._threads, self._check_current = 32 * num_warps, False
        self._block = (self._threads, 1, 1)
        self._params = arguments.ParamBuffer(param_kinds, param_names, kernel_name, None)
        self._launch_kernel = lambda *args: None
        stream = types.SimpleNamespace(ptr=0)
        self._current_stream = lambda: stream


def stand_in() -> None:
    """What `stand_in_gpu` patches, done by hand (this script runs on the tree before and after the
    launch specialization moved to runtime/specialize.py, so it finds the table where it is)."""
    launcher.CudaKernel = StandInKernel
    config.target, config.interpret = "cuda", False
    original = compiler_module.compile
    jit.compile = lambda *a, **k: original(*a, **{**k, "target": "sm_90", "use_cache": False})
    try:
        from tileworkbench.runtime import specialize

        specialize.SPECIALIZE[DeviceArray] = specialize.SPECIALIZE_TORCH
    except ImportError:  # the tree before runtime/specialize.py
        from tileworkbench.runtime import binder

        jit._POINTER_OF[DeviceArray] = jit._interface_pointer
        binder.SPECIALIZE[DeviceArray] = binder._torch


@tw.jit
def tiny_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


def main() -> None:
    stand_in()
    x = DeviceArray(1 << 20)
    no_options = (None,) * 6
    launches = {
        "launcher": lambda: tiny_kernel[(1,)](x, 128, BLOCK=128),
        "run": lambda: tiny_kernel.run(x, 128, BLOCK=128, grid=(1,), num_warps=4),
        "full": lambda: tiny_kernel._run((x, 128), {"BLOCK": 128}, (1,), False, no_options, None),
    }
    for fn in launches.values():
        for _ in range(2000):
            fn()
    samples = {name: [] for name in launches}
    for _ in range(ROUNDS):
        for name, fn in launches.items():
            start = time.perf_counter()
            for _ in range(COUNT):
                fn()
            samples[name].append((time.perf_counter() - start) / COUNT * 1e6)
    print(json.dumps({name: round(statistics.median(v), 4) for name, v in samples.items()}))


if __name__ == "__main__":
    main()
