"""Launching a cpu-target kernel: the module JIT-compiled once (MCJIT), the arguments packed into
one parameter block of 8-byte slots, and the grid cut into ranges of programs run by the calling
thread and a thread pool (ctypes releases the GIL while native code runs, so the host's cores work
in parallel). Short launches, and launches of a few milliseconds on a machine whose cores are all
busy, run on the calling thread alone (`_pool_pays`)."""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ...dtypes import BY_KIND
from ...errors import LaunchError
from ...launch_checks import check_grid, scalar_converter
from . import codegen, debug

_GRID_FN = ctypes.CFUNCTYPE(
    None,
    ctypes.c_void_p,
    ctypes.c_int32,
    ctypes.c_int32,
    ctypes.c_int32,
    ctypes.c_int32,
    ctypes.c_int32,
)
_MAX_GRID = (2**31 - 1, 2**31 - 1, 2**31 - 1)
_POOL: list[ThreadPoolExecutor] = []


def workers() -> int:
    """Threads the grid is spread over: the CPUs this process may run on (read once)."""
    if not _WORKERS:
        try:
            _WORKERS.append(len(os.sched_getaffinity(0)))
        except AttributeError:
            _WORKERS.append(os.cpu_count() or 1)
    return _WORKERS[0]


_WORKERS: list[int] = []


def _pool() -> ThreadPoolExecutor:
    if not _POOL:
        _POOL.append(
            ThreadPoolExecutor(max_workers=workers(), thread_name_prefix="tileworkbench-cpu")
        )
    return _POOL[0]


class CpuKernel:
    """One cpu-target kernel, JIT-compiled and ready to launch.

    Args:
        binary: the host object file of the optimized module (with the `<name>_grid` loop).
        kernel_name: the kernel's name.
        kinds: one parameter kind per parameter ("*fp32", "i32", ...).
        names: parameter names, for error messages.
    """

    def __init__(self, binary: bytes, kernel_name: str, kinds: list[str], names: list[str]):
        llvm = codegen.binding()
        self.name = kernel_name
        self.kinds, self.names = list(kinds), list(names)
        # an empty module for the engine; the kernel's code comes in as the compiled object file
        self._engine = llvm.create_mcjit_compiler(
            llvm.parse_assembly(""), codegen.new_host_machine()
        )
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(bytes(binary)))
        self._engine.finalize_object()
        address = self._engine.get_function_address(codegen.grid_function_name(kernel_name))
        self._grid_fn = _GRID_FN(address)
        self._format = "<" + "".join(_slot_code(k) for k in self.kinds)
        self._converters = [_converter(k, n, kernel_name) for k, n in zip(self.kinds, self.names)]
        self.num_regs = None
        self._seconds_per_program: float | None = None  # measured on the calling thread

    error_buffer_on_host = True  # debug mode's record (runtime/debug_checks.py) is host memory

    def synchronize(self, stream=None) -> None:
        pass  # a launch returns when its programs are done

    def fast_launch_ok(self) -> bool:
        return False  # the GPU's generated warm launcher does not apply

    def launch(self, grid, args, stream=None) -> None:
        """Run every program of `grid` (1 to 3 dims) on `args` (arrays and scalars in parameter order)."""
        grid3 = check_grid(grid, self.name, _MAX_GRID)
        if grid3 is None:
            return
        if len(args) != len(self.kinds):
            raise LaunchError(
                f"{self.name} takes {len(self.kinds)} runtime arguments, got {len(args)}"
            )
        values = [convert(value) for convert, value in zip(self._converters, args)]
        block = ctypes.create_string_buffer(max(1, codegen.PARAM_SLOT * len(values)))
        struct.pack_into(self._format, block, 0, *values)
        gx, gy, gz = grid3
        total = gx * gy * gz
        if total >= 2**31:
            raise LaunchError(f"grid {grid3} of {self.name} has more than 2^31 programs")
        if _pool_pays(self._seconds_per_program, total):
            split = _Split(self._grid_fn, block, total, grid3, workers())
            split.run()
            programs, seconds = split.own_programs, split.own_seconds
        else:
            start = time.perf_counter()
            self._grid_fn(block, 0, total, gx, gy, gz)
            programs, seconds = total, time.perf_counter() - start
        if programs:  # the fastest seen: a disturbed launch (descheduled, page faults) says little
            measured, best = seconds / programs, self._seconds_per_program
            self._seconds_per_program = measured if best is None else min(measured, best)
        debug.raise_failed_asserts(self.name)

    __call__ = launch


class _Split:
    """The programs of one launch in a few ranges per core, taken from a shared counter by this
    thread and the pool's: a pool thread that wakes late (on a busy machine, milliseconds) finds
    fewer ranges or none left, instead of holding the launch up with a fixed half."""

    RANGES_PER_WORKER = 4

    def __init__(self, grid_fn, block, total: int, grid3: tuple[int, int, int], threads: int):
        self.grid_fn, self.block, self.grid3 = grid_fn, block, grid3
        self.threads = threads  # this one and threads - 1 of the pool's
        count = min(total, threads * self.RANGES_PER_WORKER)
        self.bounds = [total * i // count for i in range(count + 1)]
        self.next_range = 0
        self.running = 0
        self.lock = threading.Condition()

        self.own_programs, self.own_seconds = 0, 0.0  # what the calling thread ran, and how long

    def run(self) -> None:
        helpers = min(self.threads, len(self.bounds) - 1) - 1
        for _ in range(helpers):
            _pool().submit(self.work)
        start = time.perf_counter()
        self.own_programs = self.work()
        self.own_seconds = time.perf_counter() - start
        with self.lock:  # wait only for ranges a pool thread took, not for late wake-ups
            self.lock.wait_for(lambda: self.running == 0)

    def work(self) -> int:
        """Run ranges until none is left; the number of programs this thread ran."""
        gx, gy, gz = self.grid3
        programs = 0
        while True:
            with self.lock:
                i = self.next_range
                if i + 1 >= len(self.bounds):
                    return programs
                self.next_range, self.running = i + 1, self.running + 1
            try:
                self.grid_fn(self.block, self.bounds[i], self.bounds[i + 1], gx, gy, gz)
                programs += self.bounds[i + 1] - self.bounds[i]
            finally:
                with self.lock:
                    self.running -= 1
                    self.lock.notify_all()


_HAND_OFF_S = 100e-6  # waking a pool thread on an idle machine: tens of microseconds
_BUSY_LAUNCH_S = 5e-3  # on a machine with no idle core, a helper's wake-up can take a time slice


def _pool_pays(seconds_per_program: float | None, programs: int) -> bool:
    """Whether pool threads should help with a launch whose programs took `seconds_per_program`
    each on the calling thread last time (None: not measured yet). A launch shorter than a hand-off
    runs on the calling thread; so does one of a few milliseconds while every core already has
    work (the load average), where a helper that starts late holds the launch up."""
    if seconds_per_program is None or workers() == 1:
        return workers() > 1
    estimate = seconds_per_program * programs
    if estimate < _HAND_OFF_S:
        return False
    return estimate > _BUSY_LAUNCH_S or not _cores_busy()


_LOAD = [0.0, 0.0]  # (when read, the 1-minute load average)


def _cores_busy() -> bool:
    """Whether the 1-minute load average says every core of ours already has a runnable thread
    (read at most once a second)."""
    now = time.monotonic()
    if now - _LOAD[0] > 1.0:
        try:
            _LOAD[:] = [now, os.getloadavg()[0]]
        except OSError:
            _LOAD[:] = [now, 0.0]
    return _LOAD[1] >= workers()


def _slot_code(kind: str) -> str:
    if kind.startswith("*"):
        return "Q"
    if kind == "i1":
        return "i4x"  # an i1 parameter is an i32 in the kernel ABI
    return BY_KIND[kind].slot


def _converter(kind: str, name: str, kernel: str):
    if kind.startswith("*"):
        return lambda value: host_address(value, name, kernel)
    if kind == "i1":
        return lambda value: int(bool(value))
    return scalar_converter(kind, name, kernel)  # the GPU's scalar checks, shared


def host_address(value, name: str, kernel: str) -> int:
    """The data address of a host array argument (NumPy, CPU torch tensor, `__array_interface__`)."""
    interface = getattr(value, "__array_interface__", None)
    if interface is not None:
        return interface["data"][0]
    if getattr(value, "__tile_tensor_wrapper__", False):  # runtime/tensor_wrapper.py: a dtype view
        return host_address(value.base, name, kernel)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.is_cuda:
            raise LaunchError(
                f"argument {name} of {kernel} is a CUDA tensor; the cpu target takes CPU "
                "tensors (use .cpu())"
            )
        return value.data_ptr()
    if value is None:
        return 0
    if hasattr(value, "__cuda_array_interface__"):
        raise LaunchError(
            f"argument {name} of {kernel} is a GPU array; the cpu target takes host "
            "arrays (NumPy, CPU torch tensors)"
        )
    if isinstance(value, int):
        return value
    raise LaunchError(f"argument {name} of {kernel} must be an array, got {type(value).__name__}")
