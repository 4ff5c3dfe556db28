"""Launch recording: `with record_launches() as launches:` collects a LaunchRecord for every kernel launched
inside (the workbench's `%%tilekernel` uses it). With no recorder active a launch pays one list check."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

ACTIVE: list[list] = []
OVERRIDES: list[dict] = []  # `%%tilekernel --sweep`: constexpr and launch-option values to impose
# the launch options in the order of JITFunction.run's options tuple
LAUNCH_OPTIONS = (
    "num_warps",
    "num_stages",
    "enable_fp_fusion",
    "maxnreg",
    "enable_reflect_ftz",
    "arch",
)


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
        # by identity: nested recorders hold equal lists (the same launches), and list.remove would
        # take the outer one out (the profile CLI around a script that records its own launches)
        ACTIVE[:] = [entry for entry in ACTIVE if entry is not launches]


@contextmanager
def paused() -> Iterator[None]:
    """Launches inside are not recorded (timing re-launches)."""
    saved = list(ACTIVE)
    ACTIVE.clear()
    try:
        yield
    finally:
        ACTIVE.extend(saved)


@contextmanager
def launch_overrides(values: dict[str, Any]) -> Iterator[None]:
    """Launches inside take these constexpr values and launch options (num_warps, num_stages) in place
    of the ones the code passes: the workbench's sweep re-runs a cell once per config this way. Only
    the full launch path applies them, which is the one taken while launches are recorded."""
    OVERRIDES.append(values)
    try:
        yield
    finally:
        OVERRIDES.remove(values)


def apply_overrides(
    arg_names: list[str], constexpr_names, args: tuple, kwargs: dict, options: tuple
) -> tuple[tuple, dict, tuple]:
    """(args, kwargs, options in LAUNCH_OPTIONS order) with the active overrides applied."""
    values = {k: v for override in OVERRIDES for k, v in override.items()}
    args, kwargs, options = list(args), dict(kwargs), list(options)
    for name, value in values.items():
        if name in LAUNCH_OPTIONS:
            options[LAUNCH_OPTIONS.index(name)] = value
        elif name in constexpr_names:
            index = arg_names.index(name)
            if index < len(args):
                args[index] = value
            else:
                kwargs[name] = value
    return tuple(args), kwargs, tuple(options)
