"""Screening for the parallel autotuner (runtime/autotuner.py): each config is timed briefly as soon
as it is built, enough to rank it; once every config is built, the finalists (the best few, and any
close to the best) are timed with the full `do_bench` settings and the choice is made among them.
A full timing of every config (~130 ms each on the H100 with Triton's warmup 25 / rep 100) is most
of a parallel tune's time once compiles overlap; a screen takes a few ms of runs per config.

`BuildStats` is what a config cost and where it ran: the table `TILEWORKBENCH_PRINT_AUTOTUNING`
prints and the workbench shows. Settings: config.autotune_screen, config.autotune_finalists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

SCREEN_WARMUP_MS = 2.0  # do_bench's warm-up budget for a screen (it runs the kernel 6 times first)
SCREEN_REP_MS = 10.0  # and its measurement budget: a handful of runs, enough to rank
MARGIN = 0.05  # a config within 5% of the best screen time is a finalist too
MAX_FINALISTS = 8

Item = TypeVar("Item")


def screens(configs: int, finalists: int) -> bool:
    """Whether screening can save time: more configs than finalists."""
    return configs > max(1, finalists)


def finalists(screen_ms: Mapping[Item, float], k: int, margin: float = MARGIN) -> list[Item]:
    """The configs to time in full: the `k` fastest screens and any within `margin` of the best
    (at most MAX_FINALISTS), fastest first."""
    ranked = sorted(screen_ms, key=screen_ms.__getitem__)
    if not ranked:
        return []
    best = screen_ms[ranked[0]]
    chosen = [
        item
        for i, item in enumerate(ranked)
        if i < max(1, k) or screen_ms[item] <= best * (1 + margin)
    ]
    return chosen[: max(MAX_FINALISTS, k)]


def screen_bench(kernel_call: Callable[[], None], warmup: float, rep: float) -> Any:
    """A short `do_bench` of `kernel_call` (no longer than the full one's `warmup` and `rep`):
    (median, 20%, 80%) in ms."""
    from .testing import do_bench

    return do_bench(
        kernel_call,
        warmup=min(SCREEN_WARMUP_MS, warmup),
        rep=min(SCREEN_REP_MS, rep),
        quantiles=(0.5, 0.2, 0.8),
    )


@dataclass
class BuildStats:
    """What one config cost, and where: compile seconds (in a worker, or here), the seconds this
    process took to load a worker's build (a cache hit), screen and full-timing seconds, the
    screen time in ms, whether it was a finalist."""

    compile_s: float | None = None
    load_s: float | None = None
    screen_s: float | None = None
    screen_ms: float | None = None
    bench_s: float | None = None
    compiled: str | None = None
    timed: str | None = None
    finalist: bool | None = None
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_result(cls, result: Mapping[str, Any]) -> BuildStats:
        """The stats kept in an autotuner's `last_results` entry."""
        where = result.get("where") or {}
        return cls(
            result.get("compile_s"),
            result.get("load_s"),
            result.get("screen_s"),
            result.get("screen_ms"),
            result.get("bench_s"),
            where.get("compiled"),
            where.get("timed"),
            result.get("finalist"),
            list(result.get("notes") or []),
        )

    def parts(self) -> list[str]:
        """["compile 1.20 s (pid 4711)", "load 0.01 s", "screen 0.03 s", "bench 0.14 s (GPU 0)"]:
        the parts known."""
        parts = []
        if self.compile_s is not None:
            parts.append(f"compile {self.compile_s:.2f} s ({self.compiled or 'here'})")
        if self.load_s is not None:
            parts.append(f"load {self.load_s:.2f} s")
        if self.screen_s is not None:
            where = f" ({self.timed or 'here'})" if self.bench_s is None else ""
            parts.append(f"screen {self.screen_s:.2f} s{where}")
        if self.bench_s is not None:
            parts.append(f"bench {self.bench_s:.2f} s ({self.timed or 'here'})")
        return parts + self.notes
