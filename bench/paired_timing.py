"""Paired GPU timing for ratios: the contenders run back to back in every repetition (in a rotating
order, each after an L2 flush, each timed by its own CUDA events), so a ratio is taken between runs
a fraction of a millisecond apart and clock or thermal drift, which moves both alike, cancels. The
ratio of two contenders is the median of their per-repetition ratios; `do_bench` medians taken
seconds apart drift by a few percent on an H200 (a tensor-core run of 2026-12-01: the same kernel
0.190 ms while tuning, 0.216 ms in the rounds after).

Used by bench/tensor_cores.py, bench/tutorial_attention.py and bench/tutorial09_warp_specialize.py
(needs torch on a GPU); `runnable` keeps the contenders whose first call works.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

FLUSH_BYTES = 256 * 1024 * 1024  # more than an H200's 50 MB L2, as triton.testing.do_bench


def paired_times(fns: dict[str, Callable[[], object]], reps: int = 100, warmup: int = 5,
                 ) -> dict[str, list[float]]:
    """Milliseconds of each of `fns` in each of `reps` repetitions (all contenders in every one)."""
    import torch

    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fns[name]()
    torch.cuda.synchronize()
    events = {name: [] for name in names}
    for rep in range(reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fns[name]()
            end.record()
            events[name].append((start, end))
    torch.cuda.synchronize()
    return {name: [s.elapsed_time(e) for s, e in pairs] for name, pairs in events.items()}


def ratio(times: dict[str, list[float]], slow: str, fast: str) -> float:
    """The median over repetitions of time[slow] / time[fast] (> 1: `fast` is faster)."""
    return statistics.median(s / f for s, f in zip(times[slow], times[fast]))


def spread(times: dict[str, list[float]], slow: str, fast: str) -> tuple[float, float]:
    """The 25th and 75th percentile of the per-repetition ratios (how far one can trust `ratio`)."""
    ratios = sorted(s / f for s, f in zip(times[slow], times[fast]))
    return ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]


def runnable(fns: dict[str, Callable[[], object]]) -> tuple[dict, dict]:
    """The contenders whose first call works, and the errors of those whose call raised (one
    compiler out of shared memory leaves the others timed)."""
    import torch

    ok, failed = {}, {}
    for name, fn in fns.items():
        try:
            fn()
            torch.cuda.synchronize()
            ok[name] = fn
        except Exception as exc:  # noqa: BLE001 (a failure is reported in its row)
            failed[name] = f"{type(exc).__name__}: {exc}"[:500]
    return ok, failed
