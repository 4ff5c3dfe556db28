"""Launching compiled PTX (or cubin) on the GPU: CuPy loads the module, the driver launches it.

`CudaKernel` loads a module once and precomputes everything a launch needs, so a warm launch is a
grid check, one `struct.pack_into` of the arguments into a fixed parameter block (`ParamBuffer`)
and `cuLaunchKernel` through CuPy's driver binding. `check_grid` and the argument checks work
without CuPy (it is imported lazily).
"""

from __future__ import annotations

import functools
import os
import struct
import sys
import weakref
from collections.abc import Sequence

import numpy as np

from tileworkbench.cuda.arguments import ParamBuffer, make_arg_packer, normalize_kind
from tileworkbench.errors import LaunchError, OutOfResources
from tileworkbench.launch_checks import check_grid

__all__ = ["CudaKernel", "check_grid", "make_arg_packer", "normalize_kind"]

# What a warm launch's packing and driver call can raise, launching nothing, where the full path
# then explains or retries: struct.error, a scalar outside its parameter's range or of the wrong
# type; TypeError and OverflowError, a grid dimension the driver's C binding does not take;
# RuntimeError, the driver's refusal (CuPy's CUDADriverError is one; a new thread has no context)
# and LaunchError, the allocator's (global scratch).
LAUNCH_REFUSALS = (struct.error, TypeError, OverflowError, RuntimeError, LaunchError)

# dynamic shared memory above this needs the function's opt-in attribute
DEFAULT_SHARED_LIMIT = 48 * 1024
_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
_FUNC_ATTRIBUTE_NUM_REGS = 4
_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


_FAULT_HINT = (
    " (a device fault is reported by the first CUDA call after it, so it may come from an earlier "
    "kernel; launch with debug=True (or TILEWORKBENCH_DEBUG=1) to find out-of-bounds accesses on "
    "the GPU, or run with TILEWORKBENCH_INTERPRET=1)"
)


_LOADED: weakref.WeakSet = weakref.WeakSet()  # every CudaKernel of this process
_INHERITED: list = []  # in a fork: the parent's kernels, held until the fork exits


def _keep_inherited() -> None:
    """A fork (a compile worker) inherits the parent's loaded kernels but not its CUDA context:
    freeing one there unloads its module, which raises CUDA_ERROR_NOT_INITIALIZED and printed a
    traceback per module (tutorials 03 and 09 on the GPU). The fork holds them instead; it ends
    in os._exit, which frees nothing."""
    _INHERITED.extend(_LOADED)


os.register_at_fork(after_in_child=_keep_inherited)


class CudaKernel:
    """One kernel loaded into the current CUDA context, ready to launch.

    Args:
        ptx: the module's PTX text (JIT-compiled by the driver when no cubin is given).
        kernel_name: the `.entry` name in the PTX.
        num_warps: warps per block (block = 32 * num_warps threads).
        shared: dynamic shared memory in bytes (above 48 KB the kernel is opted in).
        cubin: the module compiled by ptxas for this device; loaded instead of the PTX.
        param_kinds: the signature ("*fp32", "i32", ...); when given, `launch` checks and packs the
            caller's arguments itself (the fast path); without it, arguments go to CuPy as given.
        param_names: parameter names, for error messages.

    Attributes:
        num_regs, local_bytes, static_shared: the driver's report on the loaded function.

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
        import cupy
        from cupy.cuda import function as cupy_function
        from cupy_backends.cuda.api import driver

        from tileworkbench.cuda import device as device_module

        self.name = kernel_name
        self.num_warps = num_warps
        self.shared = shared
        self.device_id = device_module.current_device()
        properties = device_module.device_properties(self.device_id)
        self._max_grid = properties.max_grid
        self._module = cupy_function.Module()
        self._function = self._load(ptx, cubin)
        _LOADED.add(self)
        self._function_address = self._function.ptr
        self.num_regs = self._attribute(_FUNC_ATTRIBUTE_NUM_REGS)
        self.local_bytes = self._attribute(_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
        self.static_shared = self._attribute(_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        self._check_resources(properties)
        self._threads = 32 * num_warps
        self._block = (self._threads, 1, 1)
        # with several GPUs, check the current device and each array's; with one, skip the cost
        self._check_current = device_module.device_count() > 1
        self._params = None
        if param_kinds is not None:
            device_id = self.device_id if self._check_current else None
            self._params = ParamBuffer(param_kinds, param_names, kernel_name, device_id)
        self._launch_kernel = driver.launchKernel
        self._current_stream = cupy.cuda.get_current_stream

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
        """Launch on `grid` (1 to 3 dims; a 0 dimension launches nothing), on `stream` (a CuPy or
        torch stream, or a raw handle), else torch's current stream when a torch tensor is among the
        arguments, else CuPy's current stream.

        Raises:
            LaunchError: a bad grid or argument (before launching), or a launch the driver refused.
        """
        grid3 = check_grid(grid, self.name, self._max_grid)
        if grid3 is None:
            return
        if self._check_current:
            self._check_device()
        params = self._params
        if params is None:
            self._launch_with_cupy(grid3, args, stream)
            return
        if stream is None:
            stream = torch_stream(args)
        stream_address = self._current_stream().ptr if stream is None else _stream_address(stream)
        with params.lock:
            params.fill(args)
            try:
                self._launch_kernel(
                    self._function_address, grid3[0], grid3[1], grid3[2], self._threads, 1, 1,
                    self.shared, stream_address, params.params_address, 0,
                )  # fmt: skip
                return
            except Exception:
                pass
        # CuPy's own launch makes a CUDA context current first (a new thread has none): retry
        # through it, which also gives the error to report if the launch is truly refused
        self._launch_with_cupy(grid3, params.packer(args), stream)

    def fast_launch_ok(self) -> bool:
        """Whether `launch_values` can take this kernel: parameters packed by the fast path, one GPU
        (no per-array device check) and no scalar that travels as converted bits (bf16, fp8)."""
        params = self._params
        return params is not None and not self._check_current and not params.converted

    def launch_parts(self) -> tuple:
        """What a generated launcher (binder.make_launcher) needs to launch this kernel itself: the
        driver's launch call, the function handle, threads per block, dynamic shared memory, the grid
        limit and the parameter buffer. Only for kernels `fast_launch_ok` accepts."""
        return (
            self._launch_kernel,
            self._function_address,
            self._threads,
            self.shared,
            self._max_grid,
            self._params,
        )

    def current_stream_address(self) -> int:
        """CuPy's current stream, as a raw handle (where launches on CuPy arrays go)."""
        return self._current_stream().ptr

    def launch_values(self, grid3: tuple, values: tuple, stream=None) -> bool:
        """The warm launch: `values` are already device addresses and scalars, in parameter order (the
        JIT's binder made them). Returns False, launching nothing, when a scalar does not fit its
        parameter, a grid dimension is not an integer, or the driver refuses (`LAUNCH_REFUSALS`):
        the caller then takes the checked path, which explains."""
        gx, gy, gz = grid3
        limit = self._max_grid
        if not (0 < gx <= limit[0] and 0 < gy <= limit[1] and 0 < gz <= limit[2]):
            grid3 = check_grid(grid3, self.name, limit)  # raises for a bad grid
            if grid3 is None:
                return True  # an empty dimension: nothing to launch
            gx, gy, gz = grid3
        if stream is None:
            stream = self._current_stream().ptr
        elif type(stream) is not int:
            stream = _stream_address(stream)
        params = self._params
        with params.lock:
            try:  # a float grid or an out-of-range scalar raises here, before the launch
                params.pack_into(params.buffer, 0, *values)
                self._launch_kernel(
                    self._function_address, gx, gy, gz, self._threads, 1, 1, self.shared, stream,
                    params.params_address, 0,
                )  # fmt: skip
            except LAUNCH_REFUSALS:
                return False
        return True

    def __call__(self, grid: Sequence[int], args: Sequence[object], stream=None) -> None:
        self.launch(grid, args, stream)

    def _launch_with_cupy(self, grid3: tuple[int, int, int], args, stream) -> None:
        if stream is not None and not hasattr(stream, "ptr"):
            import cupy

            stream = cupy.cuda.ExternalStream(_stream_address(stream))
        try:
            self._function(grid3, self._block, args, self.shared, stream)
        except Exception as error:
            raise LaunchError(
                f"launch of kernel {self.name} failed: {error}{_FAULT_HINT}"
            ) from error

    def synchronize(self, stream=None) -> None:
        """Wait for `stream` (default: CuPy's current one); a device fault names this kernel."""
        try:
            if stream is None:
                self._current_stream().synchronize()
            elif hasattr(stream, "synchronize"):
                stream.synchronize()
            else:
                import cupy

                cupy.cuda.ExternalStream(_stream_address(stream)).synchronize()
        except Exception as error:
            raise LaunchError(
                f"device error after kernel {self.name}: {error}{_FAULT_HINT}"
            ) from error

    def _check_device(self) -> None:
        from tileworkbench.cuda.device import current_device

        current = current_device()
        if current != self.device_id:
            raise LaunchError(
                f"kernel {self.name} was loaded on device {self.device_id} but the current device "
                f"is {current}; the JIT loads it again for each device"
            )


def torch_stream_getter(device_index: int):
    """A function returning torch's current CUDA stream on `device_index` as a raw handle: kernels
    launched on torch tensors go to torch's stream, as Triton's do (CUDA graph capture included)."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return functools.partial(raw, device_index)
    return lambda: torch.cuda.current_stream(device_index).cuda_stream


def torch_stream(args: Sequence[object]) -> int | None:
    """torch's current stream where a CUDA torch tensor is among `args`, else None (CuPy's stream)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    for value in args:
        if isinstance(value, torch.Tensor) and value.is_cuda:
            return torch_stream_getter(value.device.index)()
    return None


def _stream_address(stream: object) -> int:
    """The CUstream handle of a CuPy stream (`.ptr`), a torch stream (`.cuda_stream`) or an int."""
    if isinstance(stream, (int, np.integer)):
        return int(stream)
    for attribute in ("ptr", "cuda_stream"):
        address = getattr(stream, attribute, None)
        if isinstance(address, int):
            return address
    raise LaunchError(f"stream must be a CuPy or torch stream or a raw handle; got {stream!r}")
