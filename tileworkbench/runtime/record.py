"""Launch recording: `with record_launches() as launches:` collects a LaunchRecord for every kernel launched
inside (the workbench's `%%tilekernel` uses it). With no recorder active a launch pays one list check."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

ACTIVE: list[list] = []


@dataclass
class LaunchRecord:
    """One launch: the kernel object, what it compiled to, the grid and every argument by name."""

    kernel: Any
    compiled: Any
    grid: tuple[int, int, int]
    args: dict[str, Any]
    target: str
    relaunch: Callable[[], None] = field(repr=False)
    autotuner_results: dict | None = None


def record(launch: LaunchRecord) -> None:
    for launches in ACTIVE:
        launches.append(launch)


@contextmanager
def record_launches() -> Iterator[list[LaunchRecord]]:
    launches: list[LaunchRecord] = []
    ACTIVE.append(launches)
    try:
        yield launches
    finally:
        ACTIVE.remove(launches)


@contextmanager
def paused() -> Iterator[None]:
    """Launches inside are not recorded (timing re-launches)."""
    saved = list(ACTIVE)
    ACTIVE.clear()
    try:
        yield
    finally:
        ACTIVE.extend(saved)
