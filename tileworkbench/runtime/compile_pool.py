"""The local pool of compile processes that runtime/parallel_compile.py hands configs to.

On Linux the workers are forks of this process, made by the thread that starts a tune, as it
begins (~0.01-0.02 s a process), each with its first config (`fork_with`): each starts with the
compiler (imported here first, on a background thread as `tw.autotune` decorates: see
`prestart_server`), its caches and the kernel's module loaded, so nothing is preloaded or waited
for, and a kernel no worker could import (defined in a notebook cell or in a function) is in its
memory (`carry`). They last one tune or sweep
(parallel_compile.py shuts them down after it): a fork shares this process's memory as it was,
copy-on-write, and one kept alive would hold a second copy of every page written after it. A
fork of a process that has initialised CUDA is safe for them (checked on an H100): a worker only
compiles, for the target the parent resolved, and never calls CUDA; the one thread it needs,
ptxas's, is started afresh in it (compiler.py forgets the parent's at fork). A worker that dies
is replaced by a spawned process (see `WorkerPool`).

`TILEWORKBENCH_COMPILE_START=forkserver` (the default where fork is not safe: macOS) forks them
from a server that imported runtime/worker_preload.py first (the compiler, llvmlite's targets,
libdevice, torch where the parent has it, one small compile), so a worker's first compile costs
what a warm compile costs in the parent. The preload takes ~4 s on the H100 host:
`prestart_server()` starts it on a background thread when `tw.autotune` decorates a kernel
(config.compile_prestart: by default on hosts of 8 cores or more), so it passes while the script
makes its inputs; `prestart()` starts the pool itself on a background thread as a tune begins,
while the tune compiles configs itself (`ready()` says whether the pool is up without waiting);
`pool()` waits for a start under way. That pool is kept between tunes. "spawn" starts each
worker afresh.
"""

from __future__ import annotations

import concurrent.futures as futures
import contextlib
import gc
import itertools
import multiprocessing
import os
import shutil
import sys
import tempfile
import threading
import time
import types
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from ..config import config as settings

PRELOAD = "tileworkbench.runtime.worker_preload"


class WorkerPool:
    """Compile processes, each in an executor of its own (a `ProcessPoolExecutor` of one
    process): a process that dies breaks only its executor, so only the config it was compiling
    is lost; `replace(slot)` puts a fresh process in its place."""

    def __init__(self, context: Any, replacements: Any = None):
        self.context = context
        # a fork is made only by the thread that starts the pool, as a tune begins: a process
        # that replaces a dead one is started by the dispatcher's thread while this process may
        # be compiling (holding LLVM's locks, which a fork would copy held), so it is spawned
        self.replacements = replacements or context
        self.slots: list[futures.ProcessPoolExecutor] = []

    def grow(self, workers: int) -> None:
        """At least `workers` processes, every one started and ready."""
        fresh = [self._executor(self.context) for _ in range(workers - len(self.slots))]
        # an executor starts its process in its first submit; Python 3.12 warns of any fork in a
        # process with threads (CUDA's, the executors'): ours run nothing that they hold
        with main_hidden(), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            waiting = [executor.submit(_ready) for executor in fresh]
        for future in waiting:
            future.result()
        self.slots += fresh

    def start_with(self, calls: list[tuple[Callable, tuple]]) -> list[futures.Future]:
        """A process more for each `(fn, args)`, each started by submitting its call, so that
        the first works while the next are made (forks: ~0.01-0.02 s each); their futures."""
        out = []
        with main_hidden(), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # see grow
            for fn, args in calls:
                executor = self._executor(self.context)
                try:
                    out.append(executor.submit(fn, *args))
                except Exception as error:  # no process: the dispatcher's handling decides
                    failed: futures.Future = futures.Future()
                    failed.set_exception(error)
                    out.append(failed)
                self.slots.append(executor)
        return out

    def submit(self, slot: int, fn: Any, *args: Any) -> futures.Future:
        """Run fn(*args) in process `slot` (a dead process there is replaced first)."""
        for _ in range(2):
            try:
                with main_hidden():
                    return self.slots[slot].submit(fn, *args)
            except futures.process.BrokenProcessPool:  # it died while idle
                self.replace(slot)
        raise futures.process.BrokenProcessPool(f"compile worker {slot} cannot start")

    def replace(self, slot: int) -> None:
        self.slots[slot].shutdown(wait=False, cancel_futures=True)
        self.slots[slot] = self._executor(self.replacements)

    def pids(self) -> list[int]:
        return sorted(pid for executor in self.slots for pid in (executor._processes or {}))

    def shutdown(self, wait: bool = True) -> None:
        """Stop every process; `wait` False: each is told to stop and exits on its own, joined
        by its executor's thread (a tune's forks, all idle, need not delay the tune's result)."""
        for executor in self.slots:
            executor.shutdown(wait=wait, cancel_futures=True)
        self.slots = []

    def _executor(self, context: Any) -> futures.ProcessPoolExecutor:
        return futures.ProcessPoolExecutor(
            max_workers=1, mp_context=context, initializer=start_worker
        )


_POOL: dict[str, Any] = {}  # pool, method, started_s (seconds its last start took)
_LOCK = threading.Lock()
_STARTING: list[threading.Thread] = []


def start_method() -> str:
    """How workers start (settings.compile_start): "fork" (the default on Linux), "forkserver"
    (the default elsewhere: macOS's system libraries are not fork-safe) or "spawn"."""
    method = settings.compile_start or (
        "fork" if sys.platform.startswith("linux") else "forkserver"
    )
    if method not in multiprocessing.get_all_start_methods():
        return "spawn"
    return method


def _context(method: str) -> Any:
    """multiprocessing's context for `method`; a forkserver's imports worker_preload.py first."""
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload([PRELOAD])
    return context


def forks_here() -> bool:
    """Whether the pool's processes are forks of this process, started by the thread that asks
    for the pool (no background start: see `WorkerPool`)."""
    return start_method() == "fork"


def pool(workers: int, target: str | None = None) -> WorkerPool:
    """The shared pool, grown to at least `workers` processes, all started (a start under way
    on another thread is waited for). `target` is what the forkserver warms up for, when this
    starts it."""
    with _LOCK:
        current = _POOL.get("pool")
        method = start_method()
        if current is not None and _POOL["method"] != method:
            current.shutdown()
            current = None
        if current is None:
            replacements = multiprocessing.get_context("spawn") if method == "fork" else None
            current = WorkerPool(_context(method), replacements)
            _POOL.update(pool=current, method=method)
        if len(current.slots) < workers:
            begin = time.perf_counter()
            if method == "forkserver":
                _start_server(target)
            elif method == "fork":
                _before_forking()
            # (spawned processes import and warm up in each process; the forkserver's workers
            # fork from its preloaded state, ~0.1 s for 16)
            with _preload_target(target):
                current.grow(workers)
            _POOL["started_s"] = time.perf_counter() - begin
        return current


# Objects a worker could not import (a kernel defined in a notebook cell or in a function) handed
# to workers by being in this process as they fork: key -> object, weakly held (a cell run again
# defines a new kernel; the old one may go). Forks are made for each tune, after its kernel is here.
_CARRIED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_CARRY_KEYS = itertools.count()


def carry(obj: Any) -> int:
    """A key by which a process forked from now on finds `obj` (`carried`)."""
    for key, held in list(_CARRIED.items()):
        if held is obj:
            return key
    key = next(_CARRY_KEYS)
    _CARRIED[key] = obj
    return key


def carried(key: int) -> Any:
    """In a forked worker: the object carried under `key`; LookupError where this process was
    not forked from one that had it (a spawned replacement of a dead worker), so the parent
    compiles that config itself."""
    try:
        return _CARRIED[key]
    except KeyError:
        raise LookupError(
            f"object {key} was carried to forks made after it; this worker is not one"
        ) from None


def _start_server(target: str | None) -> None:
    """Start the forkserver (where it is not running) and wait until its preload is done
    (worker_preload.py touches the file named in its environment), so the processes forked after
    are forked at once: the parent's `__main__` is hidden only while they fork, not for the
    seconds the preload takes."""
    from multiprocessing import forkserver as server

    if _server_running(server):
        return
    done = os.path.join(tempfile.mkdtemp(prefix="tileworkbench-forkserver-"), "preloaded")
    with _preload_target(target, done):
        server.ensure_running()
    deadline = time.monotonic() + _PRELOAD_TIMEOUT_S
    while not os.path.exists(done) and time.monotonic() < deadline and _server_running(server):
        time.sleep(0.01)
    # past the deadline (or the server gone) the first fork waits for it, or fails, and says so
    shutil.rmtree(os.path.dirname(done), ignore_errors=True)


def _server_running(server: Any) -> bool:
    pid = getattr(server._forkserver, "_forkserver_pid", None)
    if pid is None:
        return False
    try:  # WNOWAIT: an exited server is left for multiprocessing to reap (it waits for it)
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:  # not our child: it is not running for us
        return False


_PRELOAD_TIMEOUT_S = 300.0


def prestart_server(target: str | Callable[[], str] | None = None) -> threading.Thread | None:
    """Start the forkserver and its preload on a background thread, workers not yet forked (a
    tune forks them from it in a fraction of a second). `tw.autotune` calls this as it decorates
    a kernel (config.compile_prestart), so the preload's seconds pass while the script makes its
    inputs. Where workers are forks of this process, it imports the compiler's modules here
    instead (`import_compiler`), for the forks to inherit. None where a start is under way or
    done, or nothing is left to do."""
    if any(thread.is_alive() for thread in _STARTING):
        return None
    if forks_here():
        if _IMPORTED:
            return None
        return _in_background(import_compiler, "tileworkbench-compiler-import")
    if start_method() != "forkserver" or _POOL.get("pool") is not None:
        return None

    def start() -> None:
        from ..backends import backend_for

        try:
            resolved = target() if callable(target) else target
            if resolved is None or not backend_for(resolved).cacheable:
                return  # no target yet, or the interpreter's: no worker would compile for it
            with _LOCK:
                _context("forkserver")  # its preload list, before the server starts
                _start_server(resolved)
        except Exception:  # the tune that needs the pool starts it again and reports the error
            pass

    return _in_background(start, "tileworkbench-forkserver-start")


def fork_with(calls: list[tuple[Callable, tuple]]) -> tuple[WorkerPool, list[futures.Future]]:
    """Where workers are forks of this process: a new pool of one fork per `(fn, args)`, each
    running its call as it starts (a tune's first configs), made by this thread, after the
    compiler's imports are done; (the pool, the calls' futures)."""
    if not forks_here():
        raise RuntimeError("fork_with makes forks; this pool's workers are not")
    _before_forking()
    with _LOCK:
        current = _POOL.pop("pool", None)
        if current is not None:
            current.shutdown()
        begin = time.perf_counter()
        fresh = WorkerPool(_context("fork"), multiprocessing.get_context("spawn"))
        started = fresh.start_with(calls)
        _POOL.update(pool=fresh, method="fork", started_s=time.perf_counter() - begin)
    return fresh, started


def _before_forking() -> None:
    """No thread of ours importing as the process forks (a fork would copy its held import lock),
    and the compiler imported, for the forks to inherit."""
    for thread in list(_STARTING):
        thread.join()
    import_compiler()


def import_compiler() -> None:
    """Import every module the compiler may import lazily (worker_preload.py's list), once per
    process: forked workers then start with them, as a forkserver's do after its preload, and do
    not each import them in their first compile. No compile is run: a
    background thread of the user's process does only what is thread-safe."""
    if not _IMPORTED:
        from .worker_preload import import_compiler_modules

        import_compiler_modules()
        _IMPORTED.append(True)


_IMPORTED: list[bool] = []


def ready(workers: int) -> bool:
    """Whether a pool of at least `workers` processes is up (no start under way)."""
    if any(thread.is_alive() for thread in _STARTING):
        return False
    current = _POOL.get("pool")
    return current is not None and len(current.slots) >= workers


def prestart(
    workers: int | None = None, target: str | Callable[[], str] | None = None
) -> threading.Thread:
    """Start the pool (and its forkserver, which preloads the compiler) on a background thread;
    `pool()` waits for it. `workers` defaults to the CPU count (settings.compile_workers);
    `target` (or a function that resolves it, called on that thread) is what the forkserver warms
    up for."""
    if forks_here():
        raise RuntimeError("forked compile workers start on the tune's own thread: call pool()")
    count = workers or settings.compile_workers or os.cpu_count() or 1

    def start() -> None:
        try:
            pool(count, target=target() if callable(target) else target)
        except Exception:  # the tune that needs the pool starts it again and reports the error
            pass

    return _in_background(start, "tileworkbench-compile-pool")


def _in_background(start: Callable[[], None], name: str) -> threading.Thread:
    """Run `start` on a daemon thread that `ready()` and `shutdown()` know of."""
    thread = threading.Thread(target=start, name=name, daemon=True)
    _STARTING[:] = [t for t in _STARTING if t.is_alive()] + [thread]
    thread.start()
    return thread


def info() -> dict[str, Any]:
    """How the current pool was started: method, workers, started_s, pids (empty: no pool)."""
    current = _POOL.get("pool")
    if current is None:
        return {}
    return {
        "method": _POOL["method"],
        "workers": len(current.slots),
        "started_s": _POOL.get("started_s"),
        "pids": current.pids(),
    }


def _ready() -> dict:
    from . import worker_preload

    return worker_preload.ready()


@contextlib.contextmanager
def _preload_target(target: str | None, done: str | None = None) -> Iterator[None]:
    """The forkserver's environment: the target to warm up, the heavy modules to import that
    this process has imported, and the file to touch when the preload is done
    (worker_preload.py)."""
    from .worker_preload import (
        DONE_VARIABLE,
        HEAVY_MODULES,
        MODULES_VARIABLE,
        ROLE_VARIABLE,
        TARGET_VARIABLE,
    )

    values = {
        ROLE_VARIABLE: "1",
        MODULES_VARIABLE: ",".join(m for m in HEAVY_MODULES if m in sys.modules),
    }
    if target is not None:
        values[TARGET_VARIABLE] = target
    if done is not None:
        values[DONE_VARIABLE] = done
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def start_worker() -> None:
    """A local compile process yields the CPU to the parent, which times configs meanwhile: a
    launch that waits for a core would stretch the time between its CUDA events. A fork of a
    Jupyter kernel writes to the process's own stdout and stderr: the kernel's streams send
    through its threads, which a fork does not have (the kernel forwards the file descriptors).
    The objects a fork inherits (the tuning process's, or the forkserver's preload) are frozen
    out of its garbage collector: a full collection writes to every tracked object, copying each
    page of the parent's heap into the fork (a compile forked from a process holding torch that
    had just compiled two configs: 17,000 page faults, 6,300 frozen)."""
    gc.freeze()
    try:
        os.nice(5)
    except OSError:
        pass
    for name in ("stdout", "stderr"):
        original = getattr(sys, f"__{name}__", None)
        if original is not None:
            setattr(sys, name, original)


def shutdown(forkserver: bool = False, wait: bool = True) -> None:
    """Stop the local compile processes (they are started again when needed); with `forkserver`,
    its forkserver too, so the next start preloads again (what a cold start costs); `wait`
    False: without waiting for the processes to exit (WorkerPool.shutdown)."""
    for thread in list(_STARTING):
        thread.join()
    with _LOCK:
        current = _POOL.pop("pool", None)
        _POOL.clear()
    if current is not None:
        current.shutdown(wait=wait)
    if forkserver:
        from multiprocessing import forkserver as server

        stop = getattr(server._forkserver, "_stop", None)
        if stop is not None:
            stop()


@contextlib.contextmanager
def main_hidden() -> Iterator[None]:
    """While workers start: a bare module in place of the parent's `__main__` in `sys.modules`, so
    a spawned worker (or one forked by the forkserver, which runs multiprocessing's preparation)
    does not run the parent's script (multiprocessing would, to rebuild `__main__`); a kernel that
    lives there is imported by parallel_compile from its file instead, and only from a guarded
    script. The script's own globals (its `__file__`) are left alone."""
    with _MAIN_LOCK:  # threads that start workers at once (a prestart, the dispatcher) take turns
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            if main is None:
                sys.modules.pop("__main__", None)
            else:
                sys.modules["__main__"] = main


_MAIN_LOCK = threading.RLock()
