"""The interpreter as a registered backend: no stages past `tile-opt`; a launch runs the IR with NumPy
(`executor.run`), copying GPU arrays to the host and back and sharing CPU tensors' memory."""

from __future__ import annotations

import numpy as np

from ...errors import InterpreterError, LaunchError
from .. import Backend, register

# The GPU an interpreter kernel's resource figures (n_regs, shared) describe (CompiledKernel._init_handles)
MODEL_ARCH = "sm_90"


class InterpreterLauncher:
    """Launches one compiled kernel's `tile-opt` IR in the interpreter."""

    def __init__(self, compiled, names: list[str]):
        self.compiled = compiled
        self.names = names

    def fast_launch_ok(self) -> bool:
        return False  # the warm path is for GPU launches; the interpreter's cost is the programs

    def launch(self, grid, args: list, stream=None) -> None:
        interpret(self.compiled, grid, args, self.names)


class InterpreterBackend(Backend):
    name = "interpreter"
    models_gpu = True
    compile_errors_also = InterpreterError  # Triton's interpreter raises every kernel error as one

    def finish(self, kernel, recompile) -> None:
        # the resources it would use on the GPU the interpreter models, compiled on demand
        kernel._gpu_model = lambda: recompile(MODEL_ARCH)

    def load(self, compiled, kinds, names) -> InterpreterLauncher:
        return InterpreterLauncher(compiled, names)

    def record_program(self, func, args, grid, pid, names):
        """A `recording.ProgramAccesses`: every access of program `pid`, masked and out-of-bounds
        lanes included."""
        from .recording import record_program

        return record_program(func, args, grid, pid, names)

    def record_coverage(self, func, args, grid, names):
        """A `coverage.GridCoverage`: the programs that stored to each element of each array."""
        from .coverage import record_coverage

        return record_coverage(func, args, grid, names)

    def takes(self, value) -> bool:
        return hasattr(value, "__array_interface__") or hasattr(value, "__cuda_array_interface__")


def interpret(compiled, grid, args: list, names: list[str]) -> None:
    """Run in the interpreter; GPU arrays are copied to the host and back, CPU tensors shared."""
    from . import run

    host_args, copy_back = [], []
    for value in args:
        if getattr(value, "__tile_tensor_wrapper__", False):  # runtime/tensor_wrapper.py
            host_args.append(value.host_array())
        elif hasattr(value, "__cuda_array_interface__") and hasattr(value, "get"):  # CuPy
            host = value.get()
            copy_back.append((value, host))
            host_args.append(host)
        elif hasattr(value, "numpy") and hasattr(value, "data_ptr"):  # torch CPU tensor
            if getattr(value, "is_cuda", False):
                raise LaunchError(
                    "a CUDA torch tensor was passed to a kernel running in the interpreter"
                )
            host_args.append(torch_host_array(value))
        elif hasattr(value, "__array_interface__") and not isinstance(value, np.ndarray):
            host_args.append(np.asarray(value))
        else:
            host_args.append(value)
    run(compiled.ir, host_args, grid, names)
    for device_array, host in copy_back:
        device_array.set(host)


def torch_host_array(tensor) -> np.ndarray:
    """A NumPy view of a CPU torch tensor's memory, for bf16 and fp8 tensors too (viewed as same-width
    integers, then as ml_dtypes, sharing memory)."""
    from ...dtypes import by_torch_name

    tensor = tensor.detach()
    row = by_torch_name(str(tensor.dtype).removeprefix("torch."))
    if row is None or row.numpy == row.raw_numpy:
        return tensor.numpy()
    import torch

    raw = tensor.view(getattr(torch, f"int{row.bits}")).numpy()  # torch converts signed ints
    return raw.view(row.numpy_dtype)


BACKEND = register(InterpreterBackend())
