"""Timing a launch with `do_bench`: median and spread, on the GPU (CUDA events) or the host."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Timing:
    """Milliseconds per launch: median, 20th and 80th percentiles, and how they were measured."""

    median_ms: float
    p20_ms: float
    p80_ms: float
    method: str

    @property
    def seconds(self) -> float:
        return self.median_ms * 1e-3

    def summary(self) -> str:
        return (
            f"{_fmt_ms(self.median_ms)} median ({_fmt_ms(self.p20_ms)} - {_fmt_ms(self.p80_ms)}, "
            f"20th-80th percentile; {self.method})"
        )


def _fmt_ms(ms: float) -> str:
    if ms < 1:
        return f"{ms * 1e3:.3g} us"
    return f"{ms:.4g} ms"


def bench(fn, rep_ms: int = 100, on_gpu: bool = False) -> Timing:
    """Time `fn` (a no-arg launch) with tileworkbench's do_bench; a host loop if it is missing."""
    try:
        from ..runtime.testing import do_bench
    except ImportError:
        do_bench = None
    warmup = max(1, rep_ms // 4)
    if do_bench is not None:
        result = do_bench(
            fn, warmup=warmup, rep=rep_ms, quantiles=[0.5, 0.2, 0.8], return_mode="median"
        )
        median, p20, p80 = (float(x) for x in result)
        method = "do_bench, CUDA events" if on_gpu else "do_bench, host clock"
        return Timing(median, p20, p80, method)
    return _host_bench(fn, rep_ms)


def _host_bench(fn, rep_ms: int) -> Timing:
    fn()
    times = []
    deadline = time.perf_counter() + rep_ms * 1e-3
    while time.perf_counter() < deadline or len(times) < 3:
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()

    def pick(q: float) -> float:
        return times[min(len(times) - 1, int(q * len(times)))]

    return Timing(pick(0.5), pick(0.2), pick(0.8), "host clock")
