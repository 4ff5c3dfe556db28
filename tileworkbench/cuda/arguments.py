"""Kernel arguments: checking a call's arguments against the kernel's signature and converting them.

A signature is one kind per parameter, as the compiler names them: "*fp32" (a pointer), "i32", "u64",
"fp32", "i1", ... Pointers accept any GPU array (`__cuda_array_interface__`, or DLPack on a CUDA
device); host arrays are refused with a hint. Errors are LaunchErrors naming the kernel and argument.
CuPy is imported lazily, so all of this works without it.
"""

from __future__ import annotations

import ctypes
import struct
import sys
import threading
from collections.abc import Callable, Sequence

import numpy as np

from tileworkbench.dtypes import BY_KIND
from tileworkbench.dtypes import TABLE as DTYPES
from tileworkbench.errors import HostArrayError, LaunchError
from tileworkbench.frontend.descriptor_args import TENSOR_MAP
from tileworkbench.launch_checks import _BIT_KINDS, _bits_converter, _short_repr, scalar_converter

# the IR's spellings of the same kinds ("f32" -> "fp32"), and Triton's "int1"
_ALIASES = {row.ir: row.kind for row in DTYPES if row.ir != row.kind} | {BY_KIND["i1"].triton: "i1"}
_DLPACK_GPU_DEVICES = (2, 13)  # kDLCUDA, kDLCUDAManaged


def normalize_kind(kind: str) -> str:
    """The canonical spelling of a parameter kind ("f32" -> "fp32", "*f16" -> "*fp16")."""
    if kind.startswith("*"):
        return "*" + normalize_kind(kind[1:])
    return _ALIASES.get(kind, kind)


def make_arg_packer(
    param_kinds: Sequence[str],
    param_names: Sequence[str] | None = None,
    kernel_name: str = "kernel",
    device_id: int | None = None,
) -> Callable[[Sequence[object]], list]:
    """Build, once per signature, the function that turns a call's arguments into CuPy's launch args.

    Args:
        param_kinds: one kind per kernel parameter: "*fp32" (any pointer), "i32", "u64", "fp32",
            "i1", ... (Triton's names; the IR's "f32" etc. are accepted too).
        param_names: the parameters' names, for error messages (default "arg0", "arg1", ...).
        kernel_name: the kernel's name, for error messages.
        device_id: when given, arrays on another device are refused; when None, the device is not
            checked (right when the machine has one GPU, and cheaper).

    Returns:
        `pack(args) -> list`: CuPy arrays pass through (CuPy reads their pointer itself), other GPU
        arrays become `numpy.uint64` pointers, scalars become NumPy scalars of the parameter's width.

    Raises:
        LaunchError: (from `pack`) a wrong number of arguments, a host array for a pointer, an array
            on another device, or a scalar that does not fit its parameter.
    """
    kinds = [normalize_kind(kind) for kind in param_kinds]
    names = list(param_names) if param_names is not None else [f"arg{i}" for i in range(len(kinds))]
    if len(names) != len(kinds):
        raise ValueError(f"{len(kinds)} parameter kinds but {len(names)} names")
    converters = tuple(
        _make_converter(kind, name, kernel_name, device_id) for kind, name in zip(kinds, names)
    )
    count = len(converters)

    def pack(args: Sequence[object]) -> list:
        if len(args) != count:
            raise LaunchError(
                f"{kernel_name} takes {count} arguments ({', '.join(names)}); got {len(args)}"
            )
        return [convert(arg) for convert, arg in zip(converters, args)]

    return pack


def _make_converter(kind: str, name: str, kernel: str, device_id: int | None) -> Callable:
    if kind == TENSOR_MAP:
        return _tensor_map_converter(name, kernel)
    if kind.startswith("*"):
        return _pointer_converter(name, kernel, device_id)
    return scalar_converter(kind, name, kernel)


def _tensor_map_converter(name: str, kernel: str) -> Callable:
    def convert(value):
        if not isinstance(value, bytes) or len(value) != 128:
            raise LaunchError(
                f"argument {name!r} of {kernel} is a 128-byte CUtensorMap; got {_short_repr(value)}"
            )
        return value

    return convert


def argument_error(error: LaunchError, name: str, value: object, kernel: str) -> LaunchError:
    """`error` (raised for one argument's value) restated with the parameter it was given for."""
    cls = type(error) if isinstance(error, OverflowError) else LaunchError  # keep Triton's class
    return cls(
        f"argument {name!r} of {kernel} (got {type(value).__name__} {_short_repr(value)}): {error}"
    )


def _pointer_converter(name: str, kernel: str, device_id: int | None) -> Callable:
    cupy_ndarray = _cupy_ndarray_type()

    def convert(value):
        if type(value) is cupy_ndarray and device_id is None:
            return value  # CuPy reads the pointer in C: the fastest path
        return np.uint64(pointer_value(value, name, kernel, device_id))

    return convert


def pointer_value(value: object, name: str, kernel: str, device_id: int | None = None) -> int:
    """The device address of a GPU array argument (0 for None).

    Raises:
        LaunchError: `value` is a host array or not an array, or (when `device_id` is given) it
            lives on another device.
    """
    pointer, device = _device_pointer(value, name, kernel)
    if device_id is not None:
        if device is None:
            device = _device_of_pointer(pointer)
        if device is not None and device != device_id:
            raise _device_error(device, device_id, name, kernel)
    return pointer


def _cupy_ndarray_type() -> type | None:
    try:
        import cupy

        return cupy.ndarray
    except Exception:
        return None


def _device_pointer(value: object, name: str, kernel: str) -> tuple[int, int | None]:
    """The device address of a GPU array argument and its device when known cheaply."""
    if value is None:
        return 0, None  # a null pointer, as Triton allows
    try:
        interface = value.__cuda_array_interface__
    except Exception:  # AttributeError mostly; torch raises it for CPU tensors too
        interface = None
    if interface is not None:
        device = _known_device(value)
        return int(interface["data"][0]), device
    if getattr(value, "is_cuda", False) is True and hasattr(value, "data_ptr"):
        # a torch CUDA tensor of a dtype with no array interface (fp8), which CuPy's DLPack refuses
        return int(value.data_ptr()), _known_device(value)
    if hasattr(value, "__dlpack__") and _dlpack_on_gpu(value):
        import cupy

        array = cupy.from_dlpack(value)
        return int(array.data.ptr), array.data.device_id
    if _pinned_torch_tensor(value):
        # page-locked host memory is mapped into the GPU's address space at the same address (CUDA's
        # unified addressing), so a kernel reads it directly, as in Triton
        return int(value.data_ptr()), None
    raise _host_error(value, name, kernel)


def _pinned_torch_tensor(value: object) -> bool:
    if not type(value).__module__.startswith("torch"):
        return False
    try:
        return bool(value.is_pinned())
    except Exception:  # no CUDA in this torch build: nothing is pinned
        return False


def _known_device(value: object) -> int | None:
    """The device of a torch tensor (`.device.index`) or CuPy array (`.device.id`), if it says."""
    device = getattr(value, "device", None)
    for attribute in ("index", "id"):
        index = getattr(device, attribute, None)
        if isinstance(index, int):
            return index
    return None


def _dlpack_on_gpu(value: object) -> bool:
    try:
        device_type, _ = value.__dlpack_device__()
    except Exception:
        return False
    return int(device_type) in _DLPACK_GPU_DEVICES


def _host_error(value: object, name: str, kernel: str) -> LaunchError:
    kind = type(value)
    if kind.__module__.startswith("torch"):
        return HostArrayError(
            f"argument {name!r} of {kernel} is a host array (torch.Tensor on the "
            "CPU); move it to the GPU with .cuda()"
        )
    type_name = f"{kind.__module__}.{kind.__qualname__}"
    if hasattr(value, "__array_interface__") or hasattr(value, "__array__"):
        return HostArrayError(
            f"argument {name!r} of {kernel} is a host array ({type_name}); "
            "move it to the GPU with cupy.asarray"
        )
    return HostArrayError(
        f"argument {name!r} of {kernel} is a pointer parameter, but {type_name} "
        "is not a GPU array (it has no __cuda_array_interface__ or CUDA DLPack "
        "device)"
    )


def _device_error(device: int, expected: int, name: str, kernel: str) -> LaunchError:
    return LaunchError(
        f"argument {name!r} of {kernel} is on device {device}, but the kernel "
        f"launches on device {expected}; use `with cupy.cuda.Device({device}):` "
        "or move the array"
    )


def _device_of_pointer(pointer: int) -> int | None:
    """The device that owns a pointer, asked of the driver (only needed with several GPUs)."""
    if pointer == 0:
        return None
    try:
        import cupy

        return int(cupy.cuda.runtime.pointerGetAttributes(pointer).device)
    except Exception:
        return None


# struct codes for one parameter slot: 8 bytes for every kind but a tensor map (TMA's CUtensorMap,
# 128 bytes by value)
_SLOT_CODES = {row.kind: row.slot for row in DTYPES} | {TENSOR_MAP: "128s"}


class ParamBlock:
    """One parameter block: an 8-byte slot per parameter (`buffer`) and the fixed array of the slots'
    addresses that `cuLaunchKernel` takes as `kernelParams` (at `params_address`)."""

    __slots__ = ("_addresses", "_view", "buffer", "params_address")

    def __init__(self, size: int, offsets: Sequence[int]):
        count = len(offsets)
        self.buffer = bytearray(max(size, 8))
        self._view = (ctypes.c_char * len(self.buffer)).from_buffer(self.buffer)
        base = ctypes.addressof(self._view)
        self._addresses = (ctypes.c_void_p * max(count, 1))(*[base + offset for offset in offsets])
        self.params_address = ctypes.addressof(self._addresses) if count else 0


class ParamBuffer:
    """The parameter block `cuLaunchKernel` reads, refilled in place at every launch.

    One 8-byte slot per parameter and a fixed array of the slots' addresses (`kernelParams`); a
    launch packs all values with one `struct.pack_into`, which also range-checks the scalars. The
    driver copies the values during the launch call, so the buffer is free again when it returns;
    `lock` keeps two threads from filling it at once. `new_block()` gives a block of the same layout
    to a user of its own (the JIT's warm launcher, which only its own thread fills).

    Args:
        param_kinds, param_names, kernel_name, device_id: as for `make_arg_packer`.
    """

    def __init__(
        self,
        param_kinds: Sequence[str],
        param_names: Sequence[str] | None = None,
        kernel_name: str = "kernel",
        device_id: int | None = None,
    ):
        self.kinds = [normalize_kind(kind) for kind in param_kinds]
        self.names = list(param_names or [f"arg{i}" for i in range(len(self.kinds))])
        self.kernel_name = kernel_name
        self.device_id = device_id
        # builds the converters, so an unknown kind fails here, and explains errors later
        self.packer = make_arg_packer(self.kinds, self.names, kernel_name, device_id)
        codes = [_SLOT_CODES["u64"] if k.startswith("*") else _SLOT_CODES[k] for k in self.kinds]
        self._codes = codes
        self._struct = struct.Struct("<" + "".join(codes))
        count = len(self.kinds)
        self._block = self.new_block()
        self.buffer, self.params_address = self._block.buffer, self._block.params_address
        self._pointer_indices = tuple(i for i, k in enumerate(self.kinds) if k.startswith("*"))
        # struct's "128s" pads or cuts other lengths silently: tensor maps are checked in `fill`
        self._map_indices = tuple(i for i, k in enumerate(self.kinds) if k == TENSOR_MAP)
        self._converted = tuple(
            (i, _bits_converter(k, self.names[i], kernel_name))
            for i, k in enumerate(self.kinds)
            if k in _BIT_KINDS
        )
        self.converted = bool(self._converted)
        # the warm path writes already-converted values itself: pack_into(buffer, 0, *values)
        self.pack_into = self._struct.pack_into
        # with one GPU a CuPy array needs no device check: read its pointer directly
        self._fast_type = _cupy_ndarray_type() if device_id is None else None
        # and a CUDA torch tensor: its pointer without building __cuda_array_interface__ (a dict)
        torch = sys.modules.get("torch")
        self._torch_type = getattr(torch, "Tensor", None) if device_id is None else None
        self._count = count
        self.lock = threading.Lock()

    def fill(self, args: Sequence[object]) -> None:
        """Check `args` and write them into the buffer (hold `lock` from here to the launch).

        Raises:
            LaunchError: a wrong count, a host array, an array on another device, a bad scalar.
        """
        if len(args) != self._count:
            self.packer(args)  # raises the count error
        values = list(args)
        fast_type = self._fast_type
        for index in self._pointer_indices:
            value = values[index]
            if type(value) is fast_type:
                values[index] = value.data.ptr
            elif type(value) is self._torch_type and value.is_cuda:
                values[index] = value.data_ptr()
            else:
                values[index] = pointer_value(
                    value, self.names[index], self.kernel_name, self.device_id
                )
        for index, convert in self._converted:
            values[index] = convert(values[index])
        for index in self._map_indices:
            if type(values[index]) is not bytes or len(values[index]) != 128:
                self.packer(args)  # raises, naming the argument
        try:
            self._struct.pack_into(self.buffer, 0, *values)
        except (struct.error, TypeError, OverflowError, ValueError):
            self._explain(args)

    def _explain(self, args: Sequence[object]) -> None:
        """Raise the LaunchError that says which scalar argument did not fit."""
        self.packer(args)  # its converters name host arrays and bad integers precisely
        for index, (kind, value) in enumerate(zip(self.kinds, args)):
            if kind.startswith("*") or kind in _BIT_KINDS:
                continue
            try:
                struct.pack("<" + self._codes[index], value)
            except (struct.error, TypeError, OverflowError, ValueError) as error:
                raise LaunchError(
                    f"argument {self.names[index]!r} of {self.kernel_name} has kind {kind}; "
                    f"got {value!r}: {error}"
                ) from None
        raise LaunchError(f"the arguments of {self.kernel_name} do not fit its parameters")

    def new_block(self) -> ParamBlock:
        offsets, at = [], 0
        for code in self._codes:
            offsets.append(at)
            at += struct.calcsize("<" + code)
        return ParamBlock(self._struct.size, offsets)

    def values(self) -> tuple:
        """The values now in the buffer, one per parameter (for tests and debugging)."""
        return self._struct.unpack_from(self.buffer, 0)

    def values_at(self, params_address: int) -> tuple:
        """The values a `kernelParams` array of this layout points at, one per parameter: what a
        launch given `params_address` passed (for tests and debugging)."""
        if not self.kinds:
            return ()
        slots = ctypes.cast(params_address, ctypes.POINTER(ctypes.c_void_p))
        return tuple(
            struct.unpack("<" + code, ctypes.string_at(slots[i], struct.calcsize(code)))[0]
            for i, code in enumerate(self._codes)
        )
