"""The host's roofline ceilings, measured once with cpu-target kernels and cached: DRAM bandwidth (a
copy of arrays far larger than the caches) and the FP32 FMA rate (independent FMA chains on a register
tile, every core busy). `CpuBackend.roofline_ceilings` hands them to the workbench."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np

from ...config import config

COPY_ELEMENTS = 2**24  # 64 MB per array: past any last-level cache
FMA_ITERATIONS = 512
FMA_BLOCK = 256


def _kernels():
    import tileworkbench as tw
    import tileworkbench.language as tl

    @tw.jit
    def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)

    @tw.jit
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


def measure() -> dict[str, dict]:
    """Run the two microbenchmarks on the cpu target; {"dram": {...}, "fp32": {...}}."""
    from .launch import workers

    copy_kernel, fma_kernel = _kernels()
    saved = config.target, config.interpret
    config.target, config.interpret = "cpu", False
    try:
        src = np.random.default_rng(0).standard_normal(COPY_ELEMENTS, dtype=np.float32)
        dst = np.empty_like(src)
        grid = (COPY_ELEMENTS // 4096,)
        seconds = _best_seconds(lambda: copy_kernel[grid](src, dst, COPY_ELEMENTS, BLOCK=4096))
        bandwidth = 2 * src.nbytes / seconds
        programs = workers() * 64
        out = np.empty(programs * FMA_BLOCK, np.float32)
        seconds = _best_seconds(lambda: fma_kernel[(programs,)](out, np.float32(0.999), np.float32(1e-3),
                                                               ITERATIONS=FMA_ITERATIONS, BLOCK=FMA_BLOCK))
        flops = 2 * FMA_ITERATIONS * FMA_BLOCK * programs / seconds
    finally:
        config.target, config.interpret = saved
    return {"dram": {"value": bandwidth, "unit": "B/s", "detail": "cpu-target copy, 2 x 64 MB"},
            "fp32": {"value": flops, "unit": "FLOP/s", "detail": f"cpu-target FMA chains, {workers()} threads"}}


def device_name() -> str:
    from . import codegen
    from .launch import workers

    return f"CPU {codegen.binding().get_host_cpu_name()} x{workers()}"


def _cache_file() -> Path:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", device_name()).strip("_")
    return Path(config.cache_dir) / "peaks" / f"{slug}.json"


def host_ceilings(force: bool = False) -> dict:
    """{"device": name, "dram": {value, unit, detail}, "fp32": {...}}: measured once, then cached."""
    path = _cache_file()
    if not force:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    ceilings = {"device": device_name(), **measure()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(ceilings, indent=1))
    tmp.replace(path)
    return ceilings
