"""Debug mode in the launcher: the hidden arguments of a kernel compiled with `debug=True` (each pointer
argument's byte range and the error buffer, backends/llvm/lowering/bounds.py) and, after the launch,
the failure the device recorded, raised as the interpreter raises it (backends/interpreter/memory.py):
kernel, source line, argument, element offset, program id.

Only the first failure of a launch is recorded (the device's threads race for it): with several bad
lanes, the one reported is one of them, not necessarily the lowest offset or program id.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from ..errors import DeviceAssertionError, OutOfBoundsError
from ..ir.location import Loc
from ..ir.types import ScalarType

_WORDS_USED = 6  # claimed flag, site, value, ctaid.x, ctaid.y, ctaid.z


class DebugModeWarning(UserWarning):
    """Debug mode cannot check an access (its pointer's origin is unknown)."""


def array_byte_range(value) -> tuple[int, int]:
    """(first byte, one past the last byte) of the memory an array argument spans, strides included
    (a negative stride reaches below the data pointer). Arrays known by no interface span everything:
    their accesses go unchecked."""
    layout = _layout(value)
    if layout is None:
        return 0, 2**64 - 1
    pointer, shape, strides, itemsize = layout
    if any(n == 0 for n in shape):
        return pointer, pointer
    low = pointer + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = pointer + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    return low, high


def _layout(value) -> tuple[int, tuple, tuple, int] | None:
    """(data pointer, shape, byte strides, item size) of a CuPy / torch / NumPy / interface array."""
    if type(value).__module__.split(".")[0] == "torch":
        size = value.element_size()
        return value.data_ptr(), tuple(value.shape), tuple(s * size for s in value.stride()), size
    interface = getattr(value, "__cuda_array_interface__", None) or getattr(
        value, "__array_interface__", None
    )
    if interface is None:
        return None
    itemsize = np.dtype(interface["typestr"]).itemsize
    shape = tuple(interface["shape"])
    strides = interface.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= n
    return interface["data"][0], shape, tuple(strides), itemsize


class DebugChecks:
    """The debug-mode side of one compiled kernel's launches.

    Args:
        info: the kernel's `metadata.debug_checks` (pointer parameters, check sites).
        kernel: the kernel's name, for messages.
        names: the kernel's own runtime parameter names, in order.
    """

    def __init__(self, info: dict, kernel: str, names: Sequence[str]):
        self.kernel = kernel
        self.names = list(names)
        self.pointer_params: list[int] = list(info["pointer_params"])
        self.sites: list[dict] = info["sites"]
        self.words: int = info["record_words"]
        self._buffer = None
        for note in info["unchecked"]:  # the compile-time notes, shown once per compiled kernel
            warnings.warn(
                f"kernel '{kernel}' in debug mode: {note}", DebugModeWarning, stacklevel=2
            )

    def hidden_kinds(self) -> list[str]:
        return ["u64"] * (2 * len(self.pointer_params)) + ["*u64"]

    def hidden_names(self) -> list[str]:
        names = [
            f"{self.names[i]}.{end}"
            for i in self.pointer_params
            for end in ("first_byte", "end_byte")
        ]
        return names + ["debug.error_buffer"]

    def ranges(self, args: Sequence[object]) -> list[int]:
        """The hidden range arguments for this call's arrays."""
        out: list[int] = []
        for index in self.pointer_params:
            low, high = array_byte_range(args[index])
            # an empty array (its pointer may be 0): a range no access fits, whose end the kernel can
            # lower by an access's size without wrapping around
            out += (low, high) if high > low else (2**64 - 1, 2**63)
        return out

    # -- the GPU's error buffer ----------------------------------------------------------------------
    def launch(self, cuda, grid, args: Sequence[object], stream=None) -> None:
        """Launch `cuda` (a launcher.CudaKernel) with the hidden arguments, wait for it on the stream it
        ran on, and raise what it recorded."""
        from ..cuda.launcher import torch_stream

        staged = getattr(cuda, "staged", None)  # NumPy arrays staged through the GPU (tests)
        if staged is not None:
            with staged(args) as device_args:
                self.launch(cuda.kernel, grid, device_args, stream)
            return
        if stream is None:
            stream = torch_stream(
                args
            )  # where CudaKernel.launch sends it: torch's stream, else CuPy's
        # the cpu target's launcher asks for the record in host memory
        buffer = self.buffer(on_host=getattr(cuda, "error_buffer_on_host", False))
        cuda.launch(grid, [*args, *self.ranges(args), buffer], stream)
        cuda.synchronize(stream)
        self.check_gpu(args)

    def buffer(self, on_host: bool = False):
        """The kernel's error buffer on the current GPU, or in host memory for a launcher that runs
        on the host (zeroed; reset after each reported failure)."""
        if self._buffer is None:
            if on_host:
                self._buffer = np.zeros(self.words, dtype=np.uint64).view(_HostRecord)
            else:
                import cupy

                self._buffer = cupy.zeros(self.words, dtype=np.uint64)
        return self._buffer

    def check_gpu(self, args: Sequence[object]) -> None:
        """After the launch has finished: raise what the device recorded, if anything."""
        record = self._buffer.get()
        if record[0]:
            self._buffer.fill(0)
            self._buffer.device.synchronize()  # cleared before a launch on any stream sees it
            raise self.error(record, args)

    # -- the message ---------------------------------------------------------------------------------
    def error(self, record: np.ndarray, args: Sequence[object]) -> Exception:
        """The exception for a recorded failure: the interpreter's, word for word, for a bad access."""
        site_id, value = int(record[1]), int(record[2])
        pid = tuple(int(v) for v in record[3:_WORDS_USED])
        site = self.sites[site_id]
        where = _describe_loc(site["loc"])
        if site["kind"] == "assert":
            what = (
                f"device_assert failed: {site['message']}"
                if site["message"]
                else "device_assert failed"
            )
            failing = (
                tuple(int(i) for i in np.unravel_index(value, site["shape"]))
                if site["shape"]
                else ()
            )
            index = f", failing index {failing}" if failing else ""
            return DeviceAssertionError(
                f"{what} in kernel '{self.kernel}' at {where}\n  program id {pid}{index}"
            )
        return self._access_error(site, value, where, pid, args)

    def _access_error(self, site: dict, address: int, where: str, pid: tuple, args) -> Exception:
        from ..dtypes import memory_dtype
        from ..errors import misaligned_message, out_of_bounds_message

        dtype = memory_dtype(ScalarType(site["pointee"]))
        size = dtype.itemsize
        index = _nearest(site["args"], address, args)
        low, high = array_byte_range(args[index])
        array, name = args[index], self.names[index]
        layout = _layout(array)
        pointer = layout[0] if layout is not None else low
        described = f"{_dtype_name(array)}{list(layout[1]) if layout else []}"
        if low <= address and address + size * site["vector"] <= high:
            return OutOfBoundsError(
                misaligned_message(
                    site["kind"], self.kernel, where, name, described, address - pointer, dtype, pid
                )
            )
        bad = address
        for element in range(site["vector"]):  # the vector's first element out of bounds
            bad = address + element * size
            if bad < low or bad + size > high:
                break
        elements = int(np.prod(layout[1])) if layout else 0
        message = out_of_bounds_message(
            site["kind"],
            self.kernel,
            where,
            name,
            described,
            (bad - pointer) // size,
            dtype,
            elements,
            pid,
        )
        if len(site["args"]) > 1:
            others = ", ".join(f"'{self.names[i]}'" for i in site["args"] if i != index)
            message += f"\n  note: the pointer may come from {others} too; it is in none of them"
        return OutOfBoundsError(message)


class _HostRecord(np.ndarray):
    """The error buffer in host memory, read as the GPU's CuPy one is (`get`, `device`)."""

    def get(self) -> np.ndarray:
        return np.array(self)

    @property
    def device(self):
        return self

    def synchronize(self) -> None:
        pass  # the host launch has returned: its stores are done


def _nearest(candidates: list[int], address: int, args) -> int:
    """The candidate argument whose array lies closest to `address`."""

    def distance(index: int) -> int:
        low, high = array_byte_range(args[index])
        return max(low - address, address - high, 0)

    return min(candidates, key=distance)


def _dtype_name(array) -> str:
    return str(getattr(array, "dtype", "?")).removeprefix("torch.")


def _describe_loc(chain: list[list]) -> str:
    from ..ir.location import describe_loc

    loc = None
    for file, line in reversed(chain):
        loc = Loc(file, line, call_site=loc)
    return describe_loc(loc) if loc is not None else "<unknown location>"
