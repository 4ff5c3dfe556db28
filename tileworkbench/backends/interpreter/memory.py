"""The interpreter's memory: virtual addresses for the kernel's array arguments, and the one place where
every load, store and atomic is bounds-checked.

Argument i owns the address range [(i + 1) << 44, (i + 2) << 44) (low addresses belong to no argument,
so a null or integer-made pointer is caught); its bytes start in the middle of that range, at
an address with the same remainder mod 64 as the real buffer, so alignment and divisibility facts hold as
on a GPU and any pointer derived from the argument (even far out of bounds) still says which one it was.
An argument's bytes are those its array spans (NumPy's byte bounds), so strided views work.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.array_utils import byte_bounds

from ...errors import InterpreterError, OutOfBoundsError, misaligned_message, out_of_bounds_message

REGION_BITS = 44
# An address this far from its region's argument was not computed from it (a real host address made
# a pointer lands in some region by chance): the error says so instead of quoting a huge offset.
FOREIGN_DISTANCE = 1 << 40


@dataclass
class ArgumentMemory:
    """The bytes of one array argument, with typed views of them made on first use."""

    name: str
    array: np.ndarray
    raw: np.ndarray  # uint8 view of every byte the array spans
    base: int  # virtual address of raw[0]
    first: int  # byte offset of the array's first element in raw
    views: dict = field(default_factory=dict)

    @property
    def pointer(self) -> int:
        return self.base + self.first

    def typed(self, dtype: np.dtype) -> tuple[np.ndarray, int]:
        """A view of the bytes as `dtype` and the byte offset of its element 0 within raw."""
        if dtype not in self.views:
            start = (-self.base) % dtype.itemsize
            count = (len(self.raw) - start) // dtype.itemsize
            self.views[dtype] = (
                self.raw[start : start + count * dtype.itemsize].view(dtype),
                start,
            )
        return self.views[dtype]


@dataclass(frozen=True)
class Site:
    """Where an access happens, for error messages: 'load'/'store'/'atomic' and the described op."""

    kind: str
    kernel: str
    where: str  # "file:line: source text"


@dataclass
class Part:
    """The lanes of one access that fall in one argument: `lanes` (None: all) and element indices."""

    view: np.ndarray
    index: np.ndarray
    lanes: np.ndarray | None
    argument: ArgumentMemory


class Memory:
    """Maps virtual addresses to argument bytes and checks every access. `pid` names the program in
    errors and is updated by the grid loop."""

    def __init__(self, names: list[str], arrays: list[np.ndarray]):
        self.arguments: list[ArgumentMemory | None] = []
        self.pid = (0, 0, 0)
        for i, (name, array) in enumerate(zip(names, arrays)):
            self.arguments.append(None if array is None else _argument(i, name, array))

    def pointer(self, index: int) -> np.int64:
        """The virtual address of argument `index`'s first element."""
        return np.int64(self.arguments[index].pointer)

    def load(self, ptrs, mask, dtype: np.dtype, site: Site) -> tuple[np.ndarray, np.ndarray | None]:
        """Gather `dtype` elements at `ptrs` where `mask` holds; returns the flat loaded values and the
        flat lane mask they belong to (None: every lane)."""
        flat, active = _active(ptrs, mask)
        out = np.empty(len(flat), dtype)
        for part in self.locate(flat, dtype, site):
            if part.lanes is None:
                out = part.view[part.index]
            else:
                out[part.lanes] = part.view[part.index]
        return out, active

    def store(self, ptrs, values, mask, dtype: np.dtype, site: Site) -> None:
        """Scatter `values` (broadcast to the shape of `ptrs`) where `mask` holds; the last lane wins."""
        flat, active = _active(ptrs, mask)
        values = np.broadcast_to(np.asarray(values), np.shape(ptrs)).reshape(-1)
        if active is not None:
            values = values[active]
        values = values.astype(dtype, copy=False)
        for part in self.locate(flat, dtype, site):
            self._check_writable(part.argument, site)
            part.view[part.index] = values if part.lanes is None else values[part.lanes]

    def atomic(self, ptrs, mask, dtype: np.dtype, site: Site, update: Callable) -> np.ndarray:
        """Apply `update(old, lanes) -> new` lane after lane in element order; returns the old values
        (zero where masked off), shaped like `ptrs`. Lanes hitting distinct addresses run as one NumPy
        step; a lane that repeats an earlier lane's address runs in a later round, after it."""
        shape = np.shape(ptrs)
        flat, active = _active(ptrs, mask)
        lanes_all = np.arange(np.size(ptrs))[active] if active is not None else np.arange(len(flat))
        old = np.zeros(np.size(ptrs), dtype)
        for part in self.locate(flat, dtype, site):
            self._check_writable(part.argument, site)
            lanes = lanes_all if part.lanes is None else lanes_all[part.lanes]
            for rounds in _rounds(part.index):
                index = part.index[rounds]
                before = part.view[index]
                old[lanes[rounds]] = before
                part.view[index] = update(before, lanes[rounds])
        return old.reshape(shape)

    # -- address translation ---------------------------------------------------------------------
    def locate(self, addresses: np.ndarray, dtype: np.dtype, site: Site) -> list[Part]:
        """Split flat addresses by argument and turn them into element indices, or raise."""
        if len(addresses) == 0:
            return []
        first = int(addresses[0]) >> REGION_BITS
        argument = self._argument_at(first)
        if argument is not None:
            part = self._part(argument, addresses, dtype, site, None)
            if part is not None:
                return [part]
        parts = []
        regions = addresses >> REGION_BITS
        for region in np.unique(regions):
            lanes = np.nonzero(regions == region)[0]
            argument = self._argument_at(int(region))
            if argument is None:
                self._fail_unowned(int(addresses[lanes[0]]), site)
            parts.append(self._part(argument, addresses[lanes], dtype, site, lanes, strict=True))
        return parts

    def _argument_at(self, region: int) -> ArgumentMemory | None:
        if 1 <= region <= len(self.arguments):
            return self.arguments[region - 1]
        return None

    def _part(self, argument, addresses, dtype, site, lanes, strict=False) -> Part | None:
        offsets = addresses - argument.base
        lowest, highest = offsets.min(), offsets.max()
        if lowest < 0 or highest > len(argument.raw) - dtype.itemsize:
            if not strict:
                return None  # maybe lanes in several arguments: the slow path sorts it out
            bad = np.nonzero((offsets < 0) | (offsets > len(argument.raw) - dtype.itemsize))[0][0]
            self._fail_bounds(argument, int(addresses[bad]), dtype, site)
        size = dtype.itemsize
        if size > 1 and np.any(addresses & (size - 1)):
            bad = np.nonzero(addresses & (size - 1))[0][0]
            self._fail_alignment(argument, int(addresses[bad]), dtype, site)
        view, start = argument.typed(dtype)
        index = offsets - start
        index = index >> (size.bit_length() - 1) if size > 1 else index
        return Part(view, index, lanes, argument)

    # -- errors ----------------------------------------------------------------------------------
    def _check_writable(self, argument: ArgumentMemory, site: Site) -> None:
        # NumPy would refuse the write; the raw byte view would not, so the check is ours
        if not argument.array.flags.writeable:
            raise InterpreterError(
                f"{site.kind} into read-only argument '{argument.name}' in kernel '{site.kernel}' at "
                f"{site.where}, program id {self.pid}: pass a writable array"
            )

    def _fail_bounds(self, argument: ArgumentMemory, address: int, dtype, site: Site):
        if abs(address - argument.pointer) >= FOREIGN_DISTANCE:
            self._fail_foreign(address, site)
        offset = (address - argument.pointer) // dtype.itemsize
        raise OutOfBoundsError(
            out_of_bounds_message(
                site.kind,
                site.kernel,
                site.where,
                argument.name,
                _describe(argument.array),
                offset,
                dtype,
                argument.array.size,
                self.pid,
            )
        )

    def _fail_alignment(self, argument: ArgumentMemory, address: int, dtype, site: Site):
        raise OutOfBoundsError(
            misaligned_message(
                site.kind,
                site.kernel,
                site.where,
                argument.name,
                _describe(argument.array),
                address - argument.pointer,
                dtype,
                self.pid,
            )
        )

    def _fail_foreign(self, address: int, site: Site):
        raise InterpreterError(
            f"{site.kind} in kernel '{site.kernel}' at {site.where}, program id {self.pid}: "
            f"address {address:#x} is not derived from any array argument. The interpreter's "
            f"pointers are its own virtual addresses, so a pointer made from an integer that holds "
            f"a real address (tensor.data_ptr() stored in a device array, as in Triton's grouped "
            f"GEMM tutorial) cannot be followed here: run the kernel on a GPU"
        )

    def _fail_unowned(self, address: int, site: Site):
        raise OutOfBoundsError(
            f"out-of-bounds {site.kind} in kernel '{site.kernel}' at {site.where}\n"
            f"  address {address:#x} does not point into any array argument, program id {self.pid}"
        )


def _argument(index: int, name: str, array: np.ndarray) -> ArgumentMemory:
    low, high = byte_bounds(array)
    raw = (
        np.frombuffer((ctypes.c_uint8 * (high - low)).from_address(low), np.uint8)
        if high > low
        else np.zeros(0, np.uint8)
    )
    base = ((index + 1) << REGION_BITS) + (1 << (REGION_BITS - 1)) + (low & 63)
    first = array.__array_interface__["data"][0] - low
    return ArgumentMemory(name, array, raw, base, first)


def _describe(array: np.ndarray) -> str:
    return f"{array.dtype}{list(array.shape)}"


def _active(ptrs, mask) -> tuple[np.ndarray, np.ndarray | None]:
    """The flat addresses of the lanes that access memory, and the flat mask (None: all lanes)."""
    flat = np.asarray(ptrs).reshape(-1)
    if mask is None:
        return flat, None
    mask = np.broadcast_to(np.asarray(mask), np.shape(ptrs)).reshape(-1)
    if mask.all():
        return flat, None
    return flat[mask], mask


def _rounds(index: np.ndarray) -> list[np.ndarray]:
    """Lane subsets in which every element index appears once, in lane order: round r holds each
    index's r-th occurrence."""
    if len(np.unique(index)) == len(index):
        return [np.arange(len(index))]
    order = np.argsort(index, kind="stable")
    sorted_index = index[order]
    starts = np.r_[0, np.nonzero(np.diff(sorted_index))[0] + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(index)]))
    rank = np.empty(len(index), np.int64)
    rank[order] = np.arange(len(index)) - group_start
    return [np.nonzero(rank == r)[0] for r in range(int(rank.max()) + 1)]
