"""Which program wrote each element: the whole grid of a kernel run with a `CoverageMemory`, which
notes the program id behind every store and atomic, for the workbench's coverage view (elements no
program wrote, or that two programs wrote, and which ones).

Ordinary runs use `Memory` and never pay for this.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import TileworkbenchError
from ...ir.ops.tt import FuncOp
from ...ir.types import PointerType
from .dtypes import make_value
from .executor import Program, _as_array, _grid3
from .memory import REGION_BITS, Memory


@dataclass
class WriteCoverage:
    """For each element of one argument: how many programs wrote it, the first and the second.

    Programs are numbered linearly, x fastest (`pid_of` turns a number back into (x, y, z)); -1
    is none. `count` counts programs, not stores: a program that writes an element twice counts
    once."""

    argument: str
    shape: tuple[int, ...]
    grid: tuple[int, int, int]
    count: np.ndarray
    first: np.ndarray
    second: np.ndarray

    def pid_of(self, number: int) -> tuple[int, int, int]:
        nx, ny, _ = self.grid
        return (number % nx, (number // nx) % ny, number // (nx * ny))


@dataclass
class GridCoverage:
    """The write coverage of every argument the kernel stored into, and the error that stopped the
    run, if any (the counts then stop there too)."""

    grid: tuple[int, int, int]
    written: dict[str, WriteCoverage]
    error: str | None = None


class CoverageMemory(Memory):
    """`Memory` that notes, for each store and atomic, which program touched which elements."""

    def __init__(self, names, arrays, grid: tuple[int, int, int]):
        super().__init__(names, arrays)
        self.grid = grid
        self._last: dict[str, np.ndarray] = {}
        self.written: dict[str, WriteCoverage] = {}

    def store(self, ptrs, values, mask, dtype, site):
        super().store(ptrs, values, mask, dtype, site)  # raises on out-of-bounds before noting
        self._note(ptrs, mask, dtype)

    def atomic(self, ptrs, mask, dtype, site, update):
        old = super().atomic(ptrs, mask, dtype, site, update)
        self._note(ptrs, mask, dtype)
        return old

    def _note(self, ptrs, mask, dtype: np.dtype) -> None:
        addresses = np.asarray(ptrs, np.int64).reshape(-1)
        if mask is not None:
            addresses = addresses[
                np.broadcast_to(np.asarray(mask, bool), np.shape(ptrs)).reshape(-1)
            ]
        for region in np.unique(addresses >> REGION_BITS):
            argument = self._argument_at(int(region))
            if argument is None:
                continue
            mine = addresses[(addresses >> REGION_BITS) == region]
            offsets = np.unique((mine - argument.pointer) // dtype.itemsize)
            self._count(argument.name, argument.array, offsets)

    def _count(self, name: str, array: np.ndarray, offsets: np.ndarray) -> None:
        cover = self.written.get(name)
        if cover is None:
            size = array.size
            cover = WriteCoverage(
                name,
                tuple(array.shape),
                self.grid,
                np.zeros(size, np.int32),
                np.full(size, -1, np.int64),
                np.full(size, -1, np.int64),
            )
            self.written[name] = cover
            self._last[name] = np.full(size, -1, np.int64)
        offsets = offsets[(offsets >= 0) & (offsets < cover.count.size)]
        x, y, z = self.pid
        nx, ny, _ = self.grid
        number = x + nx * (y + ny * z)
        last = self._last[name]
        # programs run one after another, so an element whose last writer is another program has
        # just gained a writer
        fresh = offsets[last[offsets] != number]
        last[fresh] = number
        cover.count[fresh] += 1
        cover.first[fresh[cover.count[fresh] == 1]] = number
        cover.second[fresh[cover.count[fresh] == 2]] = number


def record_coverage(
    func: FuncOp, args: list, grid: tuple[int, ...], arg_names: list[str] | None = None
) -> GridCoverage:
    """Run every program of `func` on `args` (which it writes to: pass copies) and return which
    programs wrote each element. An error that stops the run is kept, not raised."""
    params = func.args
    names = (
        list(arg_names) if arg_names else [p.name_hint or f"arg{i}" for i, p in enumerate(params)]
    )
    arrays = [
        _as_array(a, n, func) if isinstance(p.type, PointerType) else None
        for a, p, n in zip(args, params, names)
    ]
    grid3 = _grid3(grid)
    memory = CoverageMemory(names, arrays, grid3)
    values = [
        memory.pointer(i) if arrays[i] is not None else make_value(a, p.type)
        for i, (a, p) in enumerate(zip(args, params))
    ]
    program = Program(func, memory, grid3, lambda text: None)
    error = None
    with np.errstate(all="ignore"):
        try:
            program.run_grid(values)
        except TileworkbenchError as exc:
            error = str(exc)
    for cover in memory.written.values():
        for field_name in ("count", "first", "second"):
            setattr(cover, field_name, getattr(cover, field_name).reshape(cover.shape))
    return GridCoverage(grid3, memory.written, error)
