"""Host time per launch without a GPU: the JIT's launch paths run against a stand-in CUDA kernel
whose driver call does nothing (tests/runtime/test_warm_launch.py's `stand_in_gpu`), on stand-in
device arrays shaped like torch tensors. It times what a launch costs in Python, which is what a
change to the launch path changes; bench/warm_launch.py is the same on a real GPU.

Three paths, each over the vector-add-like `tiny_kernel(x, n, BLOCK)`:
  launcher  `kernel[(1,)](x, n, BLOCK=128)`: the generated warm launcher
  run       `kernel.run(x, n, BLOCK=128, grid=(1,), num_warps=4)`: warm, a call with options
  full      the full path (bind, specialize, cache lookup, launch), as a cache hit

    PYTHONPATH=. python bench/warm_launch_host.py [launches per sample] [rounds]
    PYTHONPATH=. python bench/warm_launch_host.py --cold

Prints one JSON line: microseconds per launch, the median of rounds in which the paths alternate,
in wall time and (`_cpu`) in this process's CPU time, which a busy machine moves less.
With `--cold`, the milliseconds of this process's first launch instead (the cold path: bind,
specialize, compile the kernel to PTX with no cache, load on the stand-in, launch), and of the
second (warm), and the microseconds of a cold launch without the compiler (a new @jit of the same
function whose compile returns the kernel compiled already); run it in fresh processes, alternating
trees, for a before/after ratio.
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
from tileworkbench.launch_checks import DEFAULT_MAX_GRID
from tileworkbench.cuda import arguments, launcher
from tileworkbench.runtime import jit
from tileworkbench.runtime import compiler as compiler_module

_NUMBERS = [int(a) for a in sys.argv[1:] if a.isdigit()]
COUNT = _NUMBERS[0] if _NUMBERS else 20000
ROUNDS = _NUMBERS[1] if len(_NUMBERS) > 1 else 7


class DeviceArray:
    """A CUDA array as the warm path sees a torch tensor."""

    def __init__(self, address: int, dtype="float32"):
        self.address, self.dtype, self.is_cuda = address, np.dtype(dtype), True

    def data_ptr(self) -> int:
        return self.address

    @property
    def __cuda_array_interface__(self):
        return {
            "data": (self.address, False),
            "typestr": self.dtype.str,
            "shape": (1,),
            "version": 3,
        }


class StandInKernel(launcher.CudaKernel):
    """CudaKernel without CUDA: the driver's launch call does nothing."""

    def __init__(
        self, ptx, kernel_name, *, num_warps, shared, cubin=None, param_kinds=None, param_names=None
    ):
        self.name, self.num_warps, self.shared, self.device_id = kernel_name, num_warps, shared, 0
        self._max_grid = DEFAULT_MAX_GRID
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


def cold() -> None:
    stand_in()
    x = DeviceArray(1 << 20)
    times, cpu = [], []
    for _ in range(2):
        start, start_cpu = time.perf_counter(), time.process_time()
        tiny_kernel[(1,)](x, 128, BLOCK=128)
        cpu.append((time.process_time() - start_cpu) * 1e3)
        times.append((time.perf_counter() - start) * 1e3)
    # the cold launch path without the compiler: a new @jit of the same function whose compile
    # returns the kernel compiled above (binding, key, signature, bound kernel, warm entry, launch)
    compiled = tiny_kernel.cache[next(iter(tiny_kernel.cache))].compiled
    jit.compile = lambda *a, **k: compiled
    start = time.process_time()  # CPU time: steadier on a busy machine
    for _ in range(200):
        tw.jit(tiny_kernel.fn)[(1,)](x, 128, BLOCK=128)
    path_us = (time.process_time() - start) / 200 * 1e6
    print(
        json.dumps(
            {
                "first_launch_ms": round(times[0], 2),
                "second_launch_ms": round(times[1], 4),
                "first_launch_cpu_ms": round(cpu[0], 2),
                "cold_path_without_compile_cpu_us": round(path_us, 1),
            }
        )
    )


def main() -> None:
    if "--cold" in sys.argv:
        cold()
        return
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
    cpu = {name: [] for name in launches}  # this process's CPU time: less moved by a busy machine
    for _ in range(ROUNDS):
        for name, fn in launches.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(COUNT):
                fn()
            cpu[name].append((time.process_time() - start_cpu) / COUNT * 1e6)
            samples[name].append((time.perf_counter() - start) / COUNT * 1e6)
    print(
        json.dumps(
            {
                **{name: round(statistics.median(v), 4) for name, v in samples.items()},
                **{f"{name}_cpu": round(statistics.median(v), 4) for name, v in cpu.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
