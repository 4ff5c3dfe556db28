"""The local pool of compile processes that runtime/parallel_compile.py hands configs to, kept
between tunes and warm before configs arrive.

Workers are forked by a `forkserver` that imported runtime/worker_preload.py first (the compiler,
llvmlite's targets, libdevice, one small compile), so a worker's first compile costs what a warm
compile costs in the parent, where a spawned worker would first pay its imports and warm-up (~3 s
on the H100 host). A fork from the forkserver, never from the parent: the parent may have
initialised CUDA. `TILEWORKBENCH_COMPILE_START=spawn` goes back to spawned workers.

`prestart()` starts the pool on a background thread (a tune calls it as it begins; with
`TILEWORKBENCH_COMPILE_PRESTART=1`, `tw.autotune` calls it when it decorates a kernel), and `pool()`
waits for a start under way. `ready()` says whether the pool is up without waiting, so a tune can
compile configs itself while the workers start.
"""

from __future__ import annotations

import concurrent.futures as futures
import contextlib
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from ..config import config as settings

PRELOAD = "tileworkbench.runtime.worker_preload"

_POOL: dict[str, Any] = {}  # pool, workers, method, started_s (seconds its start took), pids
_LOCK = threading.Lock()
_STARTING: list[threading.Thread] = []


def start_method() -> str:
    """"forkserver" (the default, where the platform has it) or "spawn" (settings.compile_start)."""
    method = settings.compile_start or "forkserver"
    if method not in multiprocessing.get_all_start_methods():
        return "spawn"
    return method


def pool(workers: int, fresh: bool = False, target: str | None = None
         ) -> futures.ProcessPoolExecutor:
    """The shared pool with at least `workers` processes (a start under way is waited for), made
    anew when `fresh` (it broke) or when more workers are asked for than it has."""
    with _LOCK:
        current = _POOL.get("pool")
        if current is not None and (fresh or _POOL["workers"] < workers):
            current.shutdown(wait=False, cancel_futures=True)
            _POOL.clear()
            current = None
        if current is None:
            current = _start(workers, target)
        return current


def ready(workers: int) -> bool:
    """Whether a pool of at least `workers` processes is up (no start under way)."""
    if any(thread.is_alive() for thread in _STARTING):
        return False
    return _POOL.get("pool") is not None and _POOL.get("workers", 0) >= workers


def prestart(workers: int | None = None, target: str | None = None) -> threading.Thread:
    """Start the pool (and its forkserver, which preloads the compiler) on a background thread;
    `pool()` waits for it. `workers` defaults to the CPU count (settings.compile_workers)."""
    count = workers or settings.compile_workers or os.cpu_count() or 1

    def start() -> None:
        try:
            pool(count, target=target or _default_target())
        except Exception:  # the tune that needs the pool starts it again and reports the error
            pass

    thread = threading.Thread(target=start, name="tileworkbench-compile-pool", daemon=True)
    _STARTING[:] = [t for t in _STARTING if t.is_alive()] + [thread]
    thread.start()
    return thread


def _default_target() -> str | None:
    """The target a launch with no options compiles for (what the workers warm up for)."""
    from .parallel_compile import launch_target

    try:
        return launch_target({})
    except Exception:
        return None


def info() -> dict[str, Any]:
    """How the current pool was started: method, workers, started_s, pids (empty: no pool)."""
    return {k: v for k, v in _POOL.items() if k != "pool"}


def _start(workers: int, target: str | None) -> futures.ProcessPoolExecutor:
    begin = time.perf_counter()
    method = start_method()
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload([PRELOAD])
    # the forkserver and the workers start in the first submit, with the target to warm up in
    # their environment and the parent's script out of their sight
    with main_hidden(), _preload_target(target):
        executor = futures.ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                               initializer=start_worker)
        waiting = [executor.submit(_ready) for _ in range(workers)]
    pids = sorted({f.result()["pid"] for f in waiting})
    _POOL.update(pool=executor, workers=workers, method=method, pids=pids,
                 started_s=time.perf_counter() - begin)
    return executor


def _ready() -> dict:
    from . import worker_preload

    return worker_preload.ready()


@contextlib.contextmanager
def _preload_target(target: str | None) -> Iterator[None]:
    """The forkserver's environment: the target to warm up, and the heavy modules to import that
    this process has imported (worker_preload.py)."""
    from .worker_preload import HEAVY_MODULES, MODULES_VARIABLE, TARGET_VARIABLE

    values = {MODULES_VARIABLE: ",".join(m for m in HEAVY_MODULES if m in sys.modules)}
    if target is not None:
        values[TARGET_VARIABLE] = target
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
    launch that waits for a core would stretch the time between its CUDA events."""
    try:
        os.nice(5)
    except OSError:
        pass


def shutdown(forkserver: bool = False) -> None:
    """Stop the local compile processes (they are started again when needed); with `forkserver`,
    its forkserver too, so the next start preloads again (what a cold start costs)."""
    for thread in list(_STARTING):
        thread.join()
    with _LOCK:
        executor = _POOL.pop("pool", None)
        _POOL.clear()
    if executor is not None:
        executor.shutdown(wait=True, cancel_futures=True)
    if forkserver:
        from multiprocessing import forkserver as server

        stop = getattr(server._forkserver, "_stop", None)
        if stop is not None:
            stop()


@contextlib.contextmanager
def main_hidden() -> Iterator[None]:
    """While workers start: the parent's `__main__` without its file and spec, so a spawned worker
    (or the forkserver) does not run the parent's script (multiprocessing would, to rebuild
    `__main__`); a kernel that lives there is imported by parallel_compile from its file instead,
    and only from a guarded script."""
    main = sys.modules.get("__main__")
    saved = {name: main.__dict__[name] for name in ("__file__", "__spec__")
             if main is not None and name in main.__dict__}
    try:
        for name in saved:
            if name == "__file__":
                del main.__file__
            else:
                main.__spec__ = None
        yield
    finally:
        for name, value in saved.items():
            setattr(main, name, value)
