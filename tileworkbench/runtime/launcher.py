"""Launching compiled PTX (or cubin) through CuPy, with the arguments checked and packed first.

`make_arg_packer` turns a signature ("*fp32", "i32", ...) into one function that converts a call's
arguments into what CuPy's launch accepts, raising LaunchError (naming the kernel and the argument)
for host arrays and bad scalars. `CudaKernel` loads a module once and keeps everything a launch
needs precomputed, so a warm launch is a grid check, the packing and CuPy's own launch.
CuPy is imported lazily: the packer and grid checks work without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tileworkbench.errors import LaunchError, OutOfResources

# CUDA's grid limits for compute capability >= 3.0 (the device's own values are used when known)
DEFAULT_MAX_GRID = (2**31 - 1, 65535, 65535)
# dynamic shared memory above this needs the function's opt-in attribute
DEFAULT_SHARED_LIMIT = 48 * 1024
_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
_FUNC_ATTRIBUTE_NUM_REGS = 4
_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

_SCALAR_TYPES: dict[str, type] = {
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
    "fp16": np.float16,
    "fp32": np.float32,
    "fp64": np.float64,
}
# the IR's spellings of the same kinds
_ALIASES = {"f16": "fp16", "f32": "fp32", "f64": "fp64", "bf16": "bf16", "int1": "i1"}
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
    if kind.startswith("*"):
        return _pointer_converter(name, kernel, device_id)
    if kind == "bf16":
        return _bf16_converter(name, kernel)
    scalar_type = _SCALAR_TYPES.get(kind)
    if scalar_type is None:
        raise ValueError(f"unknown parameter kind {kind!r} for argument {name!r} of {kernel}")
    if kind.startswith("fp"):
        return _float_converter(scalar_type, kind, name, kernel)
    return _int_converter(scalar_type, kind, name, kernel)


def _int_converter(scalar_type: type, kind: str, name: str, kernel: str) -> Callable:
    def convert(value):
        # a float for an integer parameter would be truncated silently by NumPy; refuse it
        if type(value) is not int and not isinstance(value, (int, np.integer, np.bool_)):
            raise _scalar_error(value, kind, name, kernel)
        try:
            return scalar_type(value)
        except (OverflowError, TypeError, ValueError):
            raise _scalar_error(value, kind, name, kernel) from None

    return convert


def _float_converter(scalar_type: type, kind: str, name: str, kernel: str) -> Callable:
    def convert(value):
        try:
            return scalar_type(value)
        except (OverflowError, TypeError, ValueError):
            raise _scalar_error(value, kind, name, kernel) from None

    return convert


def _bf16_converter(name: str, kernel: str) -> Callable:
    import ml_dtypes

    def convert(value):
        # passed as its bit pattern: CuPy only packs bfloat16 scalars with recent NumPy
        try:
            return np.asarray(value, dtype=ml_dtypes.bfloat16).view(np.uint16)[()]
        except (OverflowError, TypeError, ValueError):
            raise _scalar_error(value, "bf16", name, kernel) from None

    return convert


def _scalar_error(value: object, kind: str, name: str, kernel: str) -> LaunchError:
    return LaunchError(
        f"argument {name!r} of {kernel} has kind {kind}; "
        f"got {value!r} ({type(value).__name__})"
    )


def _pointer_converter(name: str, kernel: str, device_id: int | None) -> Callable:
    cupy_ndarray = _cupy_ndarray_type()

    def convert(value):
        if type(value) is cupy_ndarray:
            if device_id is not None and value.data.device_id != device_id:
                raise _device_error(value.data.device_id, device_id, name, kernel)
            return value  # CuPy reads the pointer in C: the fastest path
        pointer, device = _device_pointer(value, name, kernel)
        if device_id is not None:
            if device is None:
                device = _device_of_pointer(pointer)
            if device is not None and device != device_id:
                raise _device_error(device, device_id, name, kernel)
        return np.uint64(pointer)

    return convert


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
        device = _torch_device_index(value)
        return int(interface["data"][0]), device
    if hasattr(value, "__dlpack__") and _dlpack_on_gpu(value):
        import cupy

        array = cupy.from_dlpack(value)
        return int(array.data.ptr), array.data.device_id
    raise _host_error(value, name, kernel)


def _torch_device_index(value: object) -> int | None:
    device = getattr(value, "device", None)
    index = getattr(device, "index", None)
    return index if isinstance(index, int) else None


def _dlpack_on_gpu(value: object) -> bool:
    try:
        device_type, _ = value.__dlpack_device__()
    except Exception:
        return False
    return int(device_type) in _DLPACK_GPU_DEVICES


def _host_error(value: object, name: str, kernel: str) -> LaunchError:
    kind = type(value)
    if kind.__module__.startswith("torch"):
        return LaunchError(
            f"argument {name!r} of {kernel} is a host array (torch.Tensor on the "
            "CPU); move it to the GPU with .cuda()"
        )
    type_name = f"{kind.__module__}.{kind.__qualname__}"
    if hasattr(value, "__array_interface__") or hasattr(value, "__array__"):
        return LaunchError(
            f"argument {name!r} of {kernel} is a host array ({type_name}); "
            "move it to the GPU with cupy.asarray"
        )
    return LaunchError(
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


def check_grid(
    grid: Sequence[int], kernel_name: str = "kernel", max_grid: Sequence[int] = DEFAULT_MAX_GRID
) -> tuple[int, int, int] | None:
    """The grid as a 3-tuple of ints, or None when a dimension is 0 (launch nothing, as Triton does).

    Raises:
        LaunchError: a dimension is negative, not an integer, or over the device's limit.
    """
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    size = len(grid)
    if size == 3:
        gx, gy, gz = grid
    elif size == 1:
        gx, gy, gz = grid[0], 1, 1
    elif size == 2:
        gx, gy, gz = grid[0], grid[1], 1
    else:
        raise LaunchError(f"grid of {kernel_name} must have 1 to 3 dimensions; got {tuple(grid)}")
    if type(gx) is not int or type(gy) is not int or type(gz) is not int:
        gx, gy, gz = (_grid_int(value, grid, kernel_name) for value in (gx, gy, gz))
    if 0 < gx <= max_grid[0] and 0 < gy <= max_grid[1] and 0 < gz <= max_grid[2]:
        return (gx, gy, gz)
    if min(gx, gy, gz) < 0:
        raise LaunchError(f"grid of {kernel_name} has a negative dimension: {(gx, gy, gz)}")
    if min(gx, gy, gz) == 0:
        return None
    raise LaunchError(
        f"grid {(gx, gy, gz)} of {kernel_name} is over the device's limit "
        f"{tuple(max_grid)}; make the blocks larger or loop inside the kernel"
    )


def _grid_int(value: object, grid: Sequence[object], kernel_name: str) -> int:
    try:
        return int(value.__index__())  # numpy ints yes, floats no
    except (AttributeError, TypeError):
        raise LaunchError(f"grid of {kernel_name} must hold integers; got {tuple(grid)}") from None


class CudaKernel:
    """One kernel loaded into the current CUDA context, ready to launch.

    Args:
        ptx: the module's PTX text (JIT-compiled by the driver when no cubin is given).
        kernel_name: the `.entry` name in the PTX.
        num_warps: warps per block (block = 32 * num_warps threads).
        shared: dynamic shared memory in bytes.
        cubin: the module compiled by ptxas for this device; loaded instead of the PTX.
        param_kinds: the signature; when given, `launch` packs the caller's arguments itself.
        param_names: parameter names, for error messages.

    Raises:
        LaunchError: the module does not load (e.g. PTX for a newer architecture).
        OutOfResources: the kernel needs more shared memory or threads than the device allows.
    """

    def __init__(
        self,
        ptx: str,
        kernel_name: str,
        *,
        num_warps: int,
        shared: int,
        cubin: bytes | None = None,
        param_kinds: Sequence[str] | None = None,
        param_names: Sequence[str] | None = None,
    ):
        from cupy.cuda import function as cupy_function

        from tileworkbench.runtime import device as device_module

        self.name = kernel_name
        self.num_warps = num_warps
        self.shared = shared
        self.device_id = device_module.current_device()
        properties = device_module.device_properties(self.device_id)
        self._max_grid = properties.max_grid
        self._module = cupy_function.Module()
        self._function = self._load(ptx, cubin)
        self.num_regs = self._attribute(_FUNC_ATTRIBUTE_NUM_REGS)
        self.local_bytes = self._attribute(_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
        self.static_shared = self._attribute(_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        self._check_resources(properties)
        self._block = (32 * num_warps, 1, 1)
        check_device = device_module.device_count() > 1
        self._pack = None
        if param_kinds is not None:
            self._pack = make_arg_packer(
                param_kinds, param_names, kernel_name, self.device_id if check_device else None
            )
        self._check_current = check_device

    def _load(self, ptx: str, cubin: bytes | None):
        try:
            if cubin is not None:
                self._module.load(bytes(cubin))
            else:
                # the driver reads PTX as a NUL-terminated string
                self._module.load(ptx.encode() + b"\0")
            return self._module.get_function(self.name)
        except Exception as error:
            what = "cubin" if cubin is not None else "PTX"
            raise LaunchError(
                f"loading the {what} of kernel {self.name} failed: {error}"
            ) from error

    def _attribute(self, attribute: int) -> int:
        from cupy_backends.cuda.api import driver

        return driver.funcGetAttribute(attribute, self._function.ptr)

    def _check_resources(self, properties) -> None:
        from cupy_backends.cuda.api import driver

        threads = 32 * self.num_warps
        max_threads = self._attribute(_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        if threads > max_threads:
            raise OutOfResources(
                threads,
                max_threads,
                f"threads per block of {self.name} ({self.num_regs} registers per thread)",
            )
        limit = properties.max_shared_per_block_optin - self.static_shared
        if self.shared > limit:
            raise OutOfResources(self.shared, limit, f"shared memory of {self.name}")
        if self.shared > DEFAULT_SHARED_LIMIT - self.static_shared:
            driver.funcSetAttribute(
                self._function.ptr, _FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.shared
            )

    def launch(self, grid: Sequence[int], args: Sequence[object], stream=None) -> None:
        """Launch on `grid` (1 to 3 dims; a 0 dimension launches nothing) on `stream` or CuPy's
        current stream. `args` are the caller's arguments when the kernel has `param_kinds`, else
        arguments CuPy accepts as they are.

        Raises:
            LaunchError: a bad grid or argument (before launching), or a launch the driver refused.
        """
        grid3 = check_grid(grid, self.name, self._max_grid)
        if grid3 is None:
            return
        if self._check_current:
            self._check_device()
        packed = self._pack(args) if self._pack is not None else args
        try:
            self._function(grid3, self._block, packed, self.shared, stream)
        except Exception as error:
            raise LaunchError(f"launch of kernel {self.name} failed: {error}") from error

    def __call__(self, grid: Sequence[int], args: Sequence[object], stream=None) -> None:
        self.launch(grid, args, stream)

    def synchronize(self, stream=None) -> None:
        """Wait for `stream` (default: the current one); a device fault names this kernel."""
        import cupy

        try:
            (stream or cupy.cuda.get_current_stream()).synchronize()
        except Exception as error:
            raise LaunchError(f"device error after kernel {self.name}: {error}") from error

    def _check_device(self) -> None:
        from tileworkbench.runtime.device import current_device

        current = current_device()
        if current != self.device_id:
            raise LaunchError(
                f"kernel {self.name} was loaded on device {self.device_id} but the "
                f"current device is {current}"
            )
