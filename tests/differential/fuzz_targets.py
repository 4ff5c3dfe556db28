"""Where the differential fuzzer runs a program: one table, `TARGETS`, that grows with the targets.

Each target takes a Program and its kernel and fills the host output array in place (the caller
passes fresh copies of the arguments). `available()` says whether it can run here; a target that
cannot run one particular program on this host (the CPU emulator has no half-precision intrinsics)
raises `Unsupported`, and that program is compared on the other targets only.
"""

from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import dataclass
from typing import Callable

import numpy as np
from fuzz_programs import Program

from tileworkbench.config import config


class Unsupported(Exception):
    """This target cannot run this program here (a host limit, not a wrong answer)."""


@dataclass(frozen=True)
class Target:
    name: str
    run: Callable[[Program, object, list], None]
    available: Callable[[], bool]
    gpu: bool = False


def _values(program: Program, arrays: list) -> list:
    return [a if isinstance(a, np.ndarray) else int(a) for a in arrays]


@contextlib.contextmanager
def _config(**values):
    saved = {k: getattr(config, k) for k in values if hasattr(config, k)}
    for k, v in values.items():
        if hasattr(config, k):
            setattr(config, k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(config, k, v)


def run_interpreter(program: Program, kernel, arrays: list) -> None:
    with _config(interpret=True):
        kernel[program.grid](*_values(program, arrays), num_warps=program.num_warps,
                             **program.constexprs)


def run_emulated(program: Program, kernel, arrays: list) -> None:
    """The NVPTX lowering (LLVM module before O3) JIT-compiled for the host: tests/nvptx/cpu_emulator."""
    from cpu_emulator import Emulator

    try:
        emulator = Emulator(kernel, program.signature, program.constexprs, program.num_warps)
    except ValueError as exc:
        if "need the GPU" in str(exc) or "cannot pass" in str(exc) or "no host implementation" in str(exc):
            raise Unsupported(str(exc)) from None
        raise
    emulator.launch(program.grid, *_values(program, arrays))


def run_cpu(program: Program, kernel, arrays: list) -> None:
    """The `cpu` backend (the NVPTX lowering's twin for the host), once it is registered."""
    with _config(interpret=False, target="cpu"):
        kernel[program.grid](*_values(program, arrays), num_warps=program.num_warps,
                             **program.constexprs)


def run_cuda(program: Program, kernel, arrays: list) -> None:
    """Compiled for this GPU and launched through CuPy on the arrays' raw bits (CuPy has no bf16 or
    fp8 dtypes), so every dtype takes the same path."""
    import cupy as cp

    import tileworkbench as tw

    compiled = tw.compile(kernel, signature=program.signature, constexprs=program.constexprs,
                          num_warps=program.num_warps)
    device = []
    for a in arrays:
        if isinstance(a, np.ndarray):
            device.append(cp.asarray(a.view(f"u{a.dtype.itemsize}")))
        else:
            device.append(np.int32(a))
    module = cp.cuda.function.Module()
    module.load(compiled.asm["ptx"].encode() + b"\0")
    function = module.get_function(compiled.metadata.name)
    grid = tuple(program.grid) + (1,) * (3 - len(program.grid))
    function(grid, (32 * compiled.metadata.num_warps, 1, 1), tuple(device),
             shared_mem=compiled.metadata.shared)
    cp.cuda.Device().synchronize()
    for host, dev in zip(arrays, device):
        if isinstance(host, np.ndarray):
            host.view(f"u{host.dtype.itemsize}")[...] = dev.get()


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _gpu() -> bool:
    from tileworkbench.cuda.device import gpu_available

    return gpu_available()


TARGETS: dict[str, Target] = {
    "interpreter": Target("interpreter", run_interpreter, lambda: True),
    "nvptx-emulated": Target("nvptx-emulated", run_emulated, lambda: True),
    "cpu": Target("cpu", run_cpu, lambda: _has_module("tileworkbench.backends.cpu")),
    "cuda": Target("cuda", run_cuda, _gpu, gpu=True),
}


def host_targets() -> list[Target]:
    return [t for t in TARGETS.values() if not t.gpu and t.available()]
