"""Host time per launch of a tiny kernel: ours, Triton's, a CuPy RawKernel, and the driver's
cuLaunchKernel called directly with our kernel's prepared parameters (the floor). Run by bench/run.py in
a fresh process; prints one JSON line (us per launch, median of rounds in which contenders alternate).

    PYTHONPATH=. python bench/warm_launch.py [launches per sample]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernels  # noqa: E402

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
OURS, THEIRS = kernels.load("tileworkbench"), kernels.load("triton")


def main() -> None:
    x = torch.rand(128, device="cuda")
    launches = {
        "tileworkbench": lambda: OURS.tiny_kernel[(1,)](x, 128, BLOCK=128),
        "triton": lambda: THEIRS.tiny_kernel[(1,)](x, 128, BLOCK=128),
    }
    raw = cp.RawKernel(r"""extern "C" __global__ void tiny(float* x, int n) {
        int i = threadIdx.x; if (i < n) x[i] += 1.0f; }""", "tiny")
    xc = cp.asarray(x)
    launches["cupy_rawkernel"] = lambda: raw((1,), (128,), (xc, np.int32(128)))
    launches["tileworkbench"]()
    entry = next(iter(OURS.tiny_kernel._fast.values()))  # the driver call alone, same kernel and block
    cuda, params = entry.cuda, entry.cuda._params
    values = OURS.tiny_kernel._binder(x, 128, BLOCK=128)[1]
    params.pack_into(params.buffer, 0, *(values if entry.pick is None else entry.pick(values)))
    launches["driver_cuLaunchKernel"] = lambda: cuda._launch_kernel(
        cuda._function_address, 1, 1, 1, cuda._threads, 1, 1, cuda.shared, 0, params.params_address, 0)
    samples = {name: [] for name in launches}
    for fn in launches.values():
        for _ in range(200):
            fn()
    torch.cuda.synchronize()
    for _ in range(7):
        for name, fn in launches.items():
            start = time.perf_counter()
            for _ in range(COUNT):
                fn()
            samples[name].append((time.perf_counter() - start) / COUNT * 1e6)
            torch.cuda.synchronize()
    print(json.dumps({name: float(np.median(v)) for name, v in samples.items()}))


if __name__ == "__main__":
    main()
