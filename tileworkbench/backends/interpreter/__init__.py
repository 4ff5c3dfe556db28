"""NumPy interpreter of Tile IR: `run(func, args, grid)` executes a `tile-opt` kernel program by program
on NumPy arrays, bounds-checking every memory access (DESIGN.md, "interpreter" target)."""

from __future__ import annotations

__all__ = ["run"]


def __getattr__(name: str):
    # `run` is imported on first use: the executor imports ml_dtypes (about 1 s on a slow host), which
    # a GPU compile that only asks the registry which backend claims its target must not pay
    if name == "run":
        from .executor import run

        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
