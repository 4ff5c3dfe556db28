"""A host target's roofline ceilings, measured once with kernels compiled for that target and
cached: DRAM bandwidth (a copy of arrays far larger than the caches) and the FP32 FMA rate
(independent FMA chains on a register tile, every core busy). The backend says which host it runs
on (`Backend.host_device()`); the report places that target's timed launches against these.
"""

from __future__ import annotations

import json
import time

import numpy as np

from .. import language as tl
from ..backends import HostDevice, backend_for
from ..config import config
from ..runtime.jit import jit
from .ceilings import cache_path

COPY_ELEMENTS = 2**24  # 64 MB per array: past any last-level cache
FMA_ITERATIONS = 512
FMA_BLOCK = 256


def _kernels():
    @jit
    def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)

    @jit
    def fma_kernel(out, a, b, ITERATIONS: tl.constexpr, BLOCK: tl.constexpr):
        acc = tl.arange(0, BLOCK).to(tl.float32) * 1e-3
        for _ in range(ITERATIONS):
            acc = acc * a + b
        tl.store(out + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)

    return copy_kernel, fma_kernel


def _best_seconds(fn, runs: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure(target: str, device: HostDevice) -> dict[str, dict]:
    """Run the two microbenchmarks on `target`; {"dram": {...}, "fp32": {...}}."""
    copy_kernel, fma_kernel = _kernels()
    saved = config.target, config.interpret
    config.target, config.interpret = target, False
    try:
        src = np.random.default_rng(0).standard_normal(COPY_ELEMENTS, dtype=np.float32)
        dst = np.empty_like(src)
        grid = (COPY_ELEMENTS // 4096,)
        seconds = _best_seconds(lambda: copy_kernel[grid](src, dst, COPY_ELEMENTS, BLOCK=4096))
        bandwidth = 2 * src.nbytes / seconds
        programs = device.threads * 64
        out = np.empty(programs * FMA_BLOCK, np.float32)
        seconds = _best_seconds(
            lambda: fma_kernel[(programs,)](
                out, np.float32(0.999), np.float32(1e-3), ITERATIONS=FMA_ITERATIONS, BLOCK=FMA_BLOCK
            )
        )
        flops = 2 * FMA_ITERATIONS * FMA_BLOCK * programs / seconds
    finally:
        config.target, config.interpret = saved
    copy = f"{target}-target copy, 2 x 64 MB"
    chains = f"{target}-target FMA chains, {device.threads} threads"
    return {
        "dram": {"value": bandwidth, "unit": "B/s", "detail": copy},
        "fp32": {"value": flops, "unit": "FLOP/s", "detail": chains},
    }


def target_ceilings(target: str, force: bool = False) -> dict | None:
    """{"device": name, "dram": {value, unit, detail}, "fp32": {...}} of the host `target` runs on:
    measured once, then cached; None where the target is not a host one (`host_device()`)."""
    device = backend_for(target).host_device()
    if device is None:
        return None
    path = cache_path(device.name)
    if not force:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    ceilings = {"device": device.name, **measure(target, device)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(ceilings, indent=1))
    tmp.replace(path)
    return ceilings
