"""NumPy interpreter of Tile IR: `run(func, args, grid)` executes a `tile-opt` kernel program by program
on NumPy arrays, bounds-checking every memory access (DESIGN.md, "interpreter" target)."""

from .executor import run

__all__ = ["run"]
