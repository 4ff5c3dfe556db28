"""Compiling an autotuner's or a sweep's configs in worker processes, and timing them on one or more
devices as soon as each is built.

Our frontend and passes are Python, so threads would only overlap LLVM and ptxas: parallelism comes
from processes. Each config becomes a `CompileJob` of plain data (where the kernel lives, the
arguments as stand-ins that carry only what specialization reads: dtype, address alignment, shape;
the launch options; the settings that reach the cache key). A worker (a fork of the parent, or of a
forkserver that preloaded the compiler: runtime/compile_pool.py; it never calls CUDA, as it
compiles for the architecture the parent resolved) imports the kernel's module, compiles through to the cubin with
`JITFunction.run(warmup=True)`, and leaves the kernel in the on-disk cache, which is plain files;
the parent's own compile of that config is then a cache hit (the tuner records the seconds it took
as `load_s`). A worker forgets what it compiled for earlier jobs, so an in-memory hit never keeps
an entry out of the cache a later job names. While a pool that is not forked here starts, the
parent compiles configs itself, one at a time as its GPU takes them (with several GPUs timing, up
to half).
Workers of an outside engine (a `concurrent.futures.Executor`, or a Dask `distributed.Client`,
e.g. over dask-cuda's `LocalCUDACluster`) compile into a private cache and return the entry's
files, which the parent puts into its cache, so no shared file system is needed.

A config whose kernel cannot be found by a worker (defined in a notebook cell, or an argument
with no stand-in) is compiled by the parent as before. A compile error or out-of-resources error
in a worker is reported for its config as a sequential tune reports it. A local worker that dies
loses only the config it was compiling: a fresh process takes its place and tries it again
(runtime/compile_pool.py gives each process an executor of its own); a Dask worker that dies has
its task rescheduled by Dask. Either way the config's `attempts` and notes say so.

`TILEWORKBENCH_COMPILE_WORKERS` (config.compile_workers) sets the local worker count: unset, one per
config up to the CPU count; 0 or 1 compiles in the parent, one config after another.
"""

from __future__ import annotations

import collections
import concurrent.futures as futures
import os
import queue
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from ..config import config as settings
from ..errors import TileworkbenchError
from . import compile_pool

_HOST = socket.gethostname()
_MAX_DEATHS = 2  # a config whose worker dies more often is reported as failed


class NotShippable(Exception):
    """A config that a worker cannot compile (its kernel or an argument has no plain-data form)."""


# -- stand-ins for arguments -----------------------------------------------------------------------


class ArrayStandIn:
    """What a worker passes in place of a GPU array: its dtype, address (only its alignment
    matters to specialization), shape and strides (elements). Read as torch tensors are
    (`data_ptr`), never dereferenced: a warmup compiles without launching."""

    __tile_tensor_wrapper__ = True

    def __init__(self, dtype: str, address: int, shape: Sequence[int], strides: Sequence[int]):
        self.dtype = dtype
        self._address = int(address)
        self.shape = tuple(int(s) for s in shape)
        self._strides = tuple(int(s) for s in strides)

    def data_ptr(self) -> int:
        return self._address

    def stride(self, dim: int | None = None):
        return self._strides if dim is None else self._strides[dim]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    def __repr__(self) -> str:
        return f"ArrayStandIn({self.dtype}, shape={list(self.shape)})"


def _numpy_like(dtype: str, misalignment: int, shape) -> np.ndarray:
    """A NumPy array of `dtype` whose address is `misalignment` past a 16-byte boundary, viewed with
    `shape` over a few bytes (zero strides): only its type and alignment are read by a warmup."""
    kind = _numpy_dtype(dtype)
    buffer = np.zeros(64 + kind.itemsize, np.uint8)
    start = (-buffer.ctypes.data) % 16 + misalignment
    base = buffer[start : start + kind.itemsize].view(kind)
    # zero strides keep every element inside the buffer whatever the shape
    return np.lib.stride_tricks.as_strided(base, shape=tuple(shape), strides=(0,) * len(shape))


def _numpy_dtype(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))


def encode_value(value: Any) -> Any:
    """`value` as plain data a worker can rebuild (`decode_value`), or NotShippable."""
    from ..frontend.descriptor_args import is_host_descriptor
    from ..language import core

    if value is None or isinstance(value, (bool, int, float, str)):
        return {"plain": value}
    if isinstance(value, np.generic):
        return {"scalar": str(value.dtype), "value": value.item()}
    if isinstance(value, core.dtype):
        return {"tl_dtype": value.name}
    if isinstance(value, core.constexpr):
        return {"constexpr": encode_value(value.value)}
    if isinstance(value, (tuple, list)) and not hasattr(value, "dtype"):
        return {"sequence": [encode_value(v) for v in value], "tuple": isinstance(value, tuple)}
    if is_host_descriptor(value):
        return {
            "descriptor": {
                "base": _encode_array(value.base),
                "shape": [int(s) for s in value.shape],
                "strides": [int(s) for s in value.strides],
                "block_shape": [int(b) for b in value.block_shape],
                "padding": getattr(value, "padding", "zero"),
            }
        }
    return _encode_array(value)


def _encode_array(value: Any) -> dict:
    if isinstance(value, ArrayStandIn):
        return {"array": [value.dtype, value.data_ptr(), list(value.shape), list(value.stride())]}
    if isinstance(value, np.ndarray):
        return {
            "numpy": [
                str(value.dtype),
                value.ctypes.data % 16,
                list(value.shape),
                list(value.strides),
            ]
        }
    module = type(value).__module__.split(".")[0]
    if module == "torch" or getattr(type(value), "__tile_tensor_wrapper__", False):
        strides = list(value.stride()) if callable(getattr(value, "stride", None)) else []
        return {
            "array": [
                str(value.dtype).removeprefix("torch."),
                int(value.data_ptr()),
                list(getattr(value, "shape", ())),
                strides,
            ]
        }
    if module == "cupy":
        item = value.dtype.itemsize
        return {
            "array": [
                str(value.dtype),
                int(value.data.ptr),
                list(value.shape),
                [s // item for s in value.strides],
            ]
        }
    raise NotShippable(f"no stand-in for an argument of type {type(value).__name__}")


def decode_value(data: Any) -> Any:
    """The stand-in `encode_value` described."""
    if "plain" in data:
        return data["plain"]
    if "scalar" in data:
        return _numpy_dtype(data["scalar"]).type(data["value"])
    if "tl_dtype" in data:
        from ..language import core

        return core.dtype(data["tl_dtype"])
    if "constexpr" in data:
        from ..language import core

        return core.constexpr(decode_value(data["constexpr"]))
    if "sequence" in data:
        items = [decode_value(v) for v in data["sequence"]]
        return tuple(items) if data["tuple"] else items
    if "descriptor" in data:
        from ..tools.tensor_descriptor import TensorDescriptor

        d = data["descriptor"]
        return TensorDescriptor(
            decode_value(d["base"]),
            list(d["shape"]),
            list(d["strides"]),
            list(d["block_shape"]),
            d["padding"],
        )
    if "numpy" in data:
        dtype, misalignment, shape, _ = data["numpy"]
        return _numpy_like(dtype, misalignment, shape)
    dtype, address, shape, strides = data["array"]
    return ArrayStandIn(dtype, address, shape, strides)


def stand_in(value: Any) -> Any:
    """A parent-side stand-in for `value` (a fresh object a config's pre_hook may change freely)."""
    return decode_value(encode_value(value))


# -- jobs ------------------------------------------------------------------------------------------


@dataclass
class CompileJob:
    """One config to compile, as plain data (see the module docstring)."""

    label: str
    module: str  # where the kernel is: module name (or "__main__"), its file, the attribute name,
    file: str | None  # and how many `.fn` steps lead from that attribute to the object launched
    qualname: str
    steps: int
    rebuild: list | None  # (module, function, args): how a worker makes a module built at run time
    args: list
    kwargs: dict
    settings: dict
    ship_files: bool = False  # compile into a private cache and return the entry (outside engines)
    marker_dir: str | None = None  # where attempts leave a mark, to count retries
    sys_path: list = field(default_factory=list)  # the parent's, for a pool started before a change
    # the parent's compiler fingerprint (in the cache key): a worker whose compiler sources were
    # read at another time (edited since) still files the entry under the key the parent looks up
    fingerprint: str | None = None

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def locate(kernel: Any, forked: bool = False) -> tuple[str, str | None, str, int, list | None]:
    """(module, file, attribute, steps, rebuild) by which a worker finds `kernel`, or NotShippable.

    A module made at run time (a loader's, not importable by name) can say how a worker makes it
    again: `module.__tileworkbench_rebuild__ = (loader module, function, [args])`, as
    tests/tutorials/tutorial_loader.py does for Triton's tutorials. With `forked` (the local
    workers are forks of this process), a kernel no worker could import (defined in a notebook
    cell or a function) is handed to them in this process's memory (`compile_pool.carry`)."""
    try:
        module_name, module, qualname, file = _home(kernel)
    except NotShippable:
        if not forked:
            raise
        try:
            return _FORKED, None, str(compile_pool.carry(kernel)), 0, None
        except TypeError:  # no weak reference to it can be held
            raise NotShippable(f"{kernel!r} cannot be handed to forked workers") from None
    found = getattr(module, qualname, None)
    steps = 0
    while found is not None and found is not kernel and steps < 8:
        found = getattr(found, "fn", None)
        steps += 1
    if found is not kernel:
        raise NotShippable(f"{module_name}.{qualname} is not the object being tuned")
    rebuild = getattr(module, "__tileworkbench_rebuild__", None)
    return module_name, file, qualname, steps, list(rebuild) if rebuild else None


def _home(kernel: Any) -> tuple[str, Any, str, str | None]:
    """(module name, module, qualified name, file) of the function under `kernel`'s wrappers, or
    NotShippable where a worker could not import it from there."""
    import inspect

    base = kernel
    seen = set()
    while not inspect.isfunction(base) and hasattr(base, "fn") and id(base) not in seen:
        seen.add(id(base))  # a wrapper whose .fn is itself must not loop forever
        base = base.fn
    module_name = getattr(base, "__module__", None) or ""
    qualname = getattr(base, "__qualname__", "")
    module = sys.modules.get(module_name)
    if module is None or "<locals>" in qualname or "." in qualname:
        raise NotShippable(f"{qualname or kernel!r} is not a module-level kernel")
    file = getattr(module, "__file__", None)
    if module_name in ("__main__", "__mp_main__"):
        if not file:
            raise NotShippable(f"{qualname} is defined in an interactive session (a notebook cell)")
        if not _guarded_script(file):
            raise NotShippable(
                f'{file} has no `if __name__ == "__main__":` guard: a worker '
                "importing it would run the script"
            )
    return module_name, module, qualname, file


def may_ship(kernel: Any) -> bool:
    """Whether workers could import `kernel` (checked as it is decorated: the module is still
    being run, so whether the name is bound to it yet is left to `locate`)."""
    try:
        _home(kernel)
    except NotShippable:
        return False
    return True


def _guarded_script(file: str) -> bool:
    """Whether the script keeps its work under `if __name__ == "__main__":`, so a worker may import
    it for its kernels (as multiprocessing's spawn asks of scripts)."""
    import re

    try:
        text = Path(file).read_text()
    except OSError:
        return False
    return re.search(r"^if\s+__name__\s*==\s*[\"']__main__[\"']\s*:", text, re.M) is not None


_MAIN_ALIAS = "__tileworkbench_main__"
_FORKED = "<carried to forks>"  # a job's module for a kernel handed over by forking


def worker_settings(target: str, sass: bool = True) -> dict:
    """The parent's settings as plain data, with the target resolved (a worker must not look for a
    GPU: that would initialise CUDA in it) and no architecture override left to apply. `sass`
    False: the worker stops after ptxas and the SASS is disassembled where it is first read (an
    autotuner reads none; nvdisasm took longer than the rest of an attention config's compile)."""
    values = {f.name: getattr(settings, f.name) for f in fields(settings)}
    values = {k: (str(v) if isinstance(v, Path) else v) for k, v in values.items()}
    values.update(target=target, interpret=False, override_arch=None)
    if not sass:
        values["disassemble"] = False
    return values


def launch_target(options: dict) -> str:
    """The concrete target a launch with these options compiles for (as `JITFunction.run`
    picks it)."""
    from ..backends import backend_for, default_target
    from .compiler import resolve_target

    arch = options.get("arch") or settings.override_arch
    if arch:
        return backend_for(default_target()).arch_target(arch)
    return resolve_target(None)


def runs_on_host(target: str) -> bool:
    """Whether `target`'s kernels run on this host's cores (the cpu target), which local workers
    compile on: a config timed while they do reads slower by a varying amount (a cpu matmul's
    eight configs screened at 0.39-0.71 ms during the build, timed alone at 0.26-0.50 ms on a
    2-core host), so its configs are all built before any is timed."""
    from ..backends import backend_for

    return not backend_for(target).is_gpu


def cacheable_target(target: str) -> bool:
    from ..backends import backend_for

    return bool(backend_for(target).cacheable)


def run_job(job: dict) -> dict:
    """In a worker: compile one config and leave it in the cache; what happened, as plain data."""
    begin = time.perf_counter()
    attempts = _mark_attempt(job)
    out = {"label": job["label"], "pid": os.getpid(), "host": _HOST, "attempts": attempts}
    private = None
    try:
        values = dict(job["settings"])
        if job["ship_files"]:
            private = tempfile.mkdtemp(prefix="tileworkbench-worker-")
            values["cache_dir"] = private
        for name, value in values.items():
            setattr(settings, name, Path(value) if name == "cache_dir" else value)
        if job.get("fingerprint"):
            from . import compiler

            compiler._COMPILER_HASH = job["fingerprint"]
        for folder in reversed(job.get("sys_path") or []):
            if folder not in sys.path:
                sys.path.insert(0, folder)
        kernel = _find(job)
        _forget_compiled(kernel)
        args = [decode_value(a) for a in job["args"]]
        kwargs = {k: decode_value(v) for k, v in job["kwargs"].items()}
        kwargs.pop("arch", None)  # resolved into the target already
        compiled = kernel.run(*args, grid=(1,), warmup=True, **kwargs)
        _finish(compiled)
        if private is not None:
            from .cache import KernelCache

            cache = KernelCache(private)
            out["files"] = {key: cache.get(key) for key in cache.keys()}
    except TileworkbenchError as error:  # the config's own failure: reported, not retried
        out["error"] = f"{type(error).__name__}: {error}"
    except Exception as error:  # the worker could not do it; the parent compiles the config itself
        out["fallback"] = f"{type(error).__name__}: {error}"
    finally:
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)
    out["seconds"] = time.perf_counter() - begin
    return out


def _mark_attempt(job: dict) -> int:
    directory = job.get("marker_dir")
    if not directory or not os.path.isdir(directory):
        return 1
    prefix = f"{job['label']}."
    Path(directory, f"{prefix}{os.getpid()}.{uuid.uuid4().hex}").touch()
    return sum(name.startswith(prefix) for name in os.listdir(directory))


def _find(job: dict) -> Any:
    import importlib
    import importlib.util

    name = job["module"]
    if name == _FORKED:
        return compile_pool.carried(int(job["qualname"]))
    if name in ("__main__", "__mp_main__"):  # the parent's script, imported under a name of its own
        name = _MAIN_ALIAS
    module = sys.modules.get(name)
    if module is None and job.get("rebuild"):
        loader, function, arguments = job["rebuild"]
        module = getattr(importlib.import_module(loader), function)(*arguments)
    if module is None:
        try:
            if name == _MAIN_ALIAS:
                raise ImportError(name)
            module = importlib.import_module(name)
        except ImportError:
            if not job["file"]:
                raise
            spec = importlib.util.spec_from_file_location(name, job["file"])
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    kernel = getattr(module, job["qualname"])
    for _ in range(job["steps"]):
        kernel = kernel.fn
    return kernel


def _forget_compiled(kernel: Any) -> None:
    """Drop what this worker compiled for `kernel` in an earlier job: a reused worker must leave
    every config in the cache the job names (the cache folder may have changed since), and an
    in-memory hit would leave nothing there."""
    seen = set()
    while kernel is not None and id(kernel) not in seen:
        seen.add(id(kernel))
        if callable(getattr(kernel, "clear_cache", None)):
            kernel.clear_cache()
        kernel = getattr(kernel, "fn", None)


def _finish(compiled: Any) -> None:
    """Wait for ptxas and for the cache entry: the entry is written by a callback on the
    assembler's thread after ptxas, which a waiter on the result can outrun; shutting the pool
    down waits for it."""
    from . import compiler

    wait = getattr(compiled, "_wait", None)
    if wait is not None:
        wait()
    pools = getattr(compiler, "_ASSEMBLER", [])
    if pools:
        pool = pools.pop()
        pool.shutdown(wait=True)


# -- running jobs ----------------------------------------------------------------------------------


@dataclass
class Built:
    """How one config's compile went: `error` (its own compile error, as a sequential tune
    reports it), or `fallback` (why the parent compiles it itself); seconds, where, attempts."""

    label: str
    seconds: float | None = None
    where: str = "this process"
    error: str | None = None
    fallback: str | None = None
    attempts: int = 1
    notes: list[str] = field(default_factory=list)


def worker_count(n_jobs: int) -> int:
    """Local compile processes for `n_jobs` configs: config.compile_workers, else
    min(n_jobs, cores)."""
    chosen = settings.compile_workers
    if chosen is None:
        chosen = os.cpu_count() or 1
    return max(0, min(int(chosen), n_jobs))


def shutdown_pool(forkserver: bool = False) -> None:
    """Stop the local compile processes (they are started again when needed; runtime/compile_pool.py)."""
    compile_pool.shutdown(forkserver)


def _engine(executor: Any) -> Any:
    """A concurrent.futures-style executor for `executor`: a Dask Client becomes its executor."""
    if hasattr(executor, "get_executor") and type(executor).__module__.startswith("distributed"):
        return executor.get_executor(pure=False)
    if not callable(getattr(executor, "submit", None)):
        raise TypeError(
            f"executor must be a concurrent.futures.Executor or a Dask Client, got "
            f"{type(executor).__name__}"
        )
    return executor


def build(
    jobs: dict[str, CompileJob | None],
    executor: Any = None,
    workers: int | None = None,
    marker_dir: str | None = None,
    lanes: int = 1,
) -> Iterator[Built]:
    """Compile `jobs` (label -> job; None: the parent compiles it) and yield each config's
    `Built` as soon as it is done; configs the parent compiles come first. Each attempt at a job
    leaves a file `<label>.<pid>.<random>` in `marker_dir` (default: a temporary folder), which
    counts retries. `lanes`: how many consumers take the configs at once (GPUs that time them;
    see `_while_starting`)."""
    local = [label for label, job in jobs.items() if job is None]
    remote = {label: job for label, job in jobs.items() if job is not None}
    for label in local:
        yield Built(label, fallback="compiled in this process")
    if not remote:
        return
    own_markers = marker_dir is None
    if own_markers:
        marker_dir = tempfile.mkdtemp(prefix="tileworkbench-attempts-")
    try:
        from .compiler import compiler_fingerprint

        for job in remote.values():
            job.fingerprint = compiler_fingerprint()
            job.marker_dir = marker_dir
            job.sys_path = list(sys.path)
            job.ship_files = executor is not None
        if executor is not None:
            yield from _build_with(_engine(executor), remote)
        else:
            yield from _build_local(remote, workers or worker_count(len(remote)), lanes)
    finally:
        if own_markers:
            shutil.rmtree(marker_dir, ignore_errors=True)


def _build_with(engine: Any, jobs: dict[str, CompileJob]) -> Iterator[Built]:
    pending = {engine.submit(run_job, job.as_dict()): label for label, job in jobs.items()}
    for future in futures.as_completed(list(pending)):
        label = pending[future]
        try:
            yield _built(future.result())
        except Exception as error:  # the engine gave up on it (e.g. Dask's KilledWorker)
            yield Built(label, fallback=f"{type(error).__name__}: {error}")


def _build_local(jobs: dict[str, CompileJob], workers: int, lanes: int = 1) -> Iterator[Built]:
    target = next(iter(jobs.values())).settings.get("target")
    left = dict(jobs)
    forked = compile_pool.forks_here()
    running: dict[futures.Future, tuple[str, int]] = {}
    if forked:
        # forks of this process are made here, for this tune alone (they have its kernel, a
        # carried one too; none outlives it, see the end), each starting on a config as it is
        # made: the first compiles while the next are forked
        first = list(left)[:workers]
        pool, started = compile_pool.fork_with(
            [(run_job, (left[label].as_dict(),)) for label in first]
        )
        running = {
            future: (label, slot) for slot, (label, future) in enumerate(zip(first, started))
        }
    else:
        yield from _while_starting(left, workers, target, lanes)
        if not left:
            return
        pool = compile_pool.pool(workers, target=target)
    done: queue.Queue = queue.Queue()
    # a thread of its own hands each process its next config as soon as it is free, while the
    # caller times what was built
    threading.Thread(
        target=_dispatch,
        args=(pool, left, min(workers, len(left)), done, running),
        name="tileworkbench-compile-dispatch",
        daemon=True,
    ).start()
    try:
        for _ in range(len(left)):
            yield done.get()
    finally:
        if forked:
            # a fork shares the memory this process had as it forked (copy-on-write): kept between
            # tunes, it would hold a second copy of every page a notebook writes after it; a fork
            # costs ~0.02 s, so each tune or sweep forks its own workers; idle now, they exit
            # on their own, not on the tune's time (a profile of a 32-config sweep on the H100
            # host spent 4.5 s joining 16)
            compile_pool.shutdown(wait=False)


def _dispatch(
    pool: compile_pool.WorkerPool,
    jobs: dict[str, CompileJob],
    workers: int,
    done: queue.Queue,
    running: dict[futures.Future, tuple[str, int]] | None = None,
) -> None:
    """Run `jobs` on the first `workers` processes of `pool`, putting each config's Built on
    `done` (exactly one per job); `running`: (label, slot) of the jobs already submitted, by
    future. A process that dies costs only the config it was compiling: a fresh process takes
    its place and the config is tried again, up to _MAX_DEATHS times."""
    running = dict(running or {})
    submitted = {label for label, _ in running.values()}
    waiting = collections.deque(label for label in jobs if label not in submitted)
    deaths: collections.Counter = collections.Counter()

    def start(slot: int) -> None:
        label = waiting.popleft()
        try:
            running[pool.submit(slot, run_job, jobs[label].as_dict())] = (label, slot)
        except Exception as error:  # no process would start: the parent compiles it
            done.put(Built(label, fallback=f"{type(error).__name__}: {error}"))

    busy = {slot for _, slot in running.values()}
    for slot in range(workers):
        if waiting and slot not in busy:
            start(slot)
    while running:
        finished, _ = futures.wait(list(running), return_when=futures.FIRST_COMPLETED)
        for future in finished:
            label, slot = running.pop(future)
            built = _outcome(future, label, deaths)
            if built is None:  # its process died: a fresh one tries it again, first
                pool.replace(slot)
                waiting.appendleft(label)
            else:
                done.put(built)
            if waiting:
                start(slot)


def _outcome(future: futures.Future, label: str, deaths: collections.Counter) -> Built | None:
    """The Built of a finished job, or None where its process died and it is to be retried."""
    try:
        result = future.result()
    except futures.process.BrokenProcessPool:
        deaths[label] += 1
        if deaths[label] <= _MAX_DEATHS:
            return None
        # a config that kills the compiler each time would kill this process too
        return Built(
            label,
            error=f"CompileWorkerDied: its compile worker died {deaths[label]} times compiling it",
        )
    except Exception as error:
        return Built(label, fallback=f"{type(error).__name__}: {error}")
    built = _built(result)
    if deaths[label]:
        built.notes.append(f"resubmitted after {deaths[label]} compile worker death(s)")
    return built


def _while_starting(
    left: dict[str, CompileJob], workers: int, target: str | None, lanes: int = 1
) -> Iterator[Built]:
    """While the pool starts (on a background thread), hand configs to this process, which
    compiles and times each as it is handed one. With one lane that is no more than it can do
    before the workers are up (once they are, the rest go to them), so it may take them all;
    several lanes take configs as fast as they come, so they get at most half and the workers
    keep the other half."""
    if compile_pool.ready(workers):
        return
    compile_pool.prestart(workers, target)
    for _ in range(len(left) if lanes <= 1 else len(left) // 2):
        if compile_pool.ready(workers):
            return
        label = next(iter(left))
        del left[label]
        yield Built(label, fallback="compiled here while the compile workers started")


def _built(result: dict) -> Built:
    where = f"pid {result['pid']}" + ("" if result["host"] == _HOST else f"@{result['host']}")
    built = Built(
        result["label"],
        result.get("seconds"),
        where,
        result.get("error"),
        result.get("fallback"),
        result.get("attempts", 1),
    )
    if built.attempts > 1:
        built.notes.append(f"attempt {built.attempts}: a worker died compiling it")
    if built.fallback is not None:  # this process compiles it: say so, and why the worker could not
        built.notes.append(f"compiled here: {where} could not ({built.fallback})")
        built.where = "this process"
    files = result.get("files")
    if files:
        from .cache import KernelCache

        cache = KernelCache()
        for key, entry in files.items():
            if entry is not None and key not in cache:
                cache.put(key, entry)
    return built


# -- timing on several devices at once -------------------------------------------------------------


@dataclass
class Lane:
    """One device that times configs, one at a time: `bench(item) -> result`, run in its own thread
    when there are several lanes."""

    name: str
    bench: Callable[[Any], Any]


def time_on_lanes(
    items: Iterable[Any],
    lanes: Sequence[Lane],
    on_error: Callable[[Any, BaseException], Any] | None = None,
) -> list[tuple[Any, str, Any]]:
    """Time each item as soon as `items` yields it, on whichever lane is free: (item, lane name,
    result) in the order the timings finished. One lane runs in this thread."""
    if len(lanes) <= 1:
        lane = lanes[0]
        return [(item, lane.name, _guarded(lane, item, on_error)) for item in items]
    work: queue.Queue = queue.Queue()
    done: list[tuple[Any, str, Any]] = []
    lock = threading.Lock()

    def serve(lane: Lane) -> None:
        while True:
            item = work.get()
            if item is _STOP:
                return
            result = _guarded(lane, item, on_error)
            with lock:
                done.append((item, lane.name, result))

    threads = [threading.Thread(target=serve, args=(lane,), daemon=True) for lane in lanes]
    for thread in threads:
        thread.start()
    try:
        for item in items:
            work.put(item)
    finally:
        for _ in threads:
            work.put(_STOP)
        for thread in threads:
            thread.join()
    return done


_STOP = object()


def _guarded(lane: Lane, item: Any, on_error) -> Any:
    if on_error is None:
        return lane.bench(item)
    try:
        return lane.bench(item)
    except Exception as error:
        return on_error(item, error)
