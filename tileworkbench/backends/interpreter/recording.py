"""Recording which elements one program's loads, stores and atomics touch, for the workbench's memory
access picture and its out-of-bounds view.

`record_program` runs a single program of a kernel with a `RecordingMemory`, which notes every access
(element offsets of all lanes and the mask) before doing it. Ordinary runs use `Memory` and never pay
for this: the hot path is untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ...errors import TileworkbenchError
from ...ir.ops.tt import FuncOp
from ...ir.types import PointerType
from .dtypes import make_value
from .executor import Program, _as_array, _grid3
from .memory import REGION_BITS, Memory, Site


@dataclass
class Access:
    """One load/store/atomic of the recorded program.

    `offsets` are element offsets from the argument's first element, one per lane, shaped like the
    pointer tile; `mask` (same shape, None: every lane) says which lanes touch memory."""

    kind: str
    argument: str
    array_shape: tuple[int, ...]
    line: int | None
    where: str
    offsets: np.ndarray
    mask: np.ndarray | None

    @property
    def active(self) -> np.ndarray:
        return np.ones(self.offsets.shape, bool) if self.mask is None else self.mask

    @property
    def size(self) -> int:
        return int(np.prod(self.array_shape))

    def out_of_bounds(self) -> np.ndarray:
        """Offsets of the active lanes that fall outside the array."""
        offsets = self.offsets[self.active]
        return np.unique(offsets[(offsets < 0) | (offsets >= self.size)])


@dataclass
class ProgramAccesses:
    """Every access of one program, in execution order, and the error that stopped it, if any."""

    pid: tuple[int, int, int]
    accesses: list[Access]
    error: str | None = None


class RecordingMemory(Memory):
    """`Memory` that notes the accesses of the program `watch` before making them."""

    def __init__(self, names, arrays, watch: tuple[int, int, int]):
        super().__init__(names, arrays)
        self.watch = watch
        self.accesses: list[Access] = []

    def load(self, ptrs, mask, dtype, site):
        self._note(ptrs, mask, dtype, site)
        return super().load(ptrs, mask, dtype, site)

    def store(self, ptrs, values, mask, dtype, site):
        self._note(ptrs, mask, dtype, site)
        return super().store(ptrs, values, mask, dtype, site)

    def atomic(self, ptrs, mask, dtype, site, update):
        self._note(ptrs, mask, dtype, site)
        return super().atomic(ptrs, mask, dtype, site, update)

    def _note(self, ptrs, mask, dtype: np.dtype, site: Site) -> None:
        if self.pid != self.watch:
            return
        addresses = np.asarray(ptrs, np.int64)
        flat = addresses.reshape(-1)
        argument = self._argument_at(int(flat[0]) >> REGION_BITS) if flat.size else None
        if argument is None:
            return
        offsets = (addresses - argument.pointer) // dtype.itemsize
        lanes = None if mask is None else np.broadcast_to(np.asarray(mask, bool), addresses.shape)
        self.accesses.append(
            Access(
                site.kind,
                argument.name,
                tuple(argument.array.shape),
                _line_of(site.where),
                site.where,
                np.atleast_1d(offsets),
                None if lanes is None else np.atleast_1d(lanes).copy(),
            )
        )


def _line_of(where: str) -> int | None:
    match = re.search(r":(\d+)(?::|$)", where)
    return int(match.group(1)) if match else None


def record_program(
    func: FuncOp,
    args: list,
    grid: tuple[int, ...],
    pid: tuple[int, int, int] = (0, 0, 0),
    arg_names: list[str] | None = None,
) -> ProgramAccesses:
    """Run program `pid` of `func` alone on `args` (which it writes to: pass copies) and return what
    each of its memory operations touched. An error that stops the program is kept, not raised."""
    params = func.args
    names = (
        list(arg_names) if arg_names else [p.name_hint or f"arg{i}" for i, p in enumerate(params)]
    )
    arrays = [
        _as_array(a, n, func) if isinstance(p.type, PointerType) else None
        for a, p, n in zip(args, params, names)
    ]
    memory = RecordingMemory(names, arrays, tuple(pid))
    values = [
        memory.pointer(i) if arrays[i] is not None else make_value(a, p.type)
        for i, (a, p) in enumerate(zip(args, params))
    ]
    program = Program(func, memory, _grid3(grid), lambda text: None)
    memory.pid = tuple(pid)
    error = None
    with np.errstate(all="ignore"):
        try:
            program.body(values)
        except TileworkbenchError as exc:
            error = str(exc)
    return ProgramAccesses(tuple(pid), memory.accesses, error)
