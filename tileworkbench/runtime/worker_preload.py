"""What a compile worker pays once, paid once in the forkserver that forks the workers
(runtime/compile_pool.py): the compiler's imports, llvmlite's targets, libdevice, and one small
compile through the frontend, the passes and the back end, whose lazily imported modules and
caches every forked worker then inherits.

`multiprocessing`'s forkserver imports this module before it forks any worker. The target to warm
up is the parent's (TILEWORKBENCH_PRELOAD_TARGET, set while the forkserver starts), and so are the
heavy libraries a kernel's module may import (TILEWORKBENCH_PRELOAD_MODULES: those of
`HEAVY_MODULES` the parent has imported; tutorial 06 imports torch, ~1-3 s per worker otherwise);
nothing here touches CUDA (importing torch does not), and no thread is left running (a fork copies
only the forking thread).
"""

from __future__ import annotations

import os
import tempfile
import time

from .. import language as tl
from .compiler import compile as compile_kernel
from .jit import jit

TARGET_VARIABLE = "TILEWORKBENCH_PRELOAD_TARGET"
MODULES_VARIABLE = "TILEWORKBENCH_PRELOAD_MODULES"
DONE_VARIABLE = "TILEWORKBENCH_PRELOAD_DONE"  # a file to touch when the preload is done
ROLE_VARIABLE = "TILEWORKBENCH_PRELOAD"  # set while the pool starts: a process that imports this
# module then preloads; the parent, which imports it for these names before setting it, does not
HEAVY_MODULES = ("torch",)
WARMED: dict[str, float] = {}  # target -> seconds the warm-up took (read by tests and the bench)


@jit
def _warm_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Loads, a dot, exp2, erf (libdevice on GPU targets) and row reductions: the lowering paths
    autotuned kernels take, and the libraries they load."""
    rows = tl.arange(0, BLOCK)
    offsets = rows[:, None] * BLOCK + rows[None, :]
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask, other=0.0)
    b = tl.load(b_ptr + offsets, mask=mask, other=0.0)
    scores = tl.dot(a, b)
    weights = tl.exp2(scores - tl.max(scores, axis=1)[:, None]) + tl.math.erf(scores)
    tl.store(
        out_ptr + offsets, (weights / tl.sum(weights, axis=1)[:, None]).to(tl.float16), mask=mask
    )


def warm_up(target: str) -> float:
    """Compile `_warm_kernel` for `target` once, outside the on-disk cache; seconds it took.

    Errors are swallowed: a worker that could not warm up still compiles, only more slowly."""
    from ..backends import is_gpu

    begin = time.perf_counter()
    try:
        # 64: wgmma's tiles on sm_90a (the path autotuned GPU kernels take); the cpu target's
        # one-thread layout takes seconds at 64
        block = 64 if is_gpu(target) else 16
        compiled = compile_kernel(
            _warm_kernel,
            "a_ptr=*fp16,b_ptr=*fp16,out_ptr=*fp16,n=i32",
            {"BLOCK": block},
            target=target,
            use_cache=False,
        )
        _wait(compiled)
    except Exception:  # a missing ptxas or libdevice: the first real compile reports it
        pass
    WARMED[target] = time.perf_counter() - begin
    return WARMED[target]


def import_compiler_modules() -> None:
    """Every module the compiler may import lazily (frontend, passes, back ends, runtime), so that
    no worker imports one in its first compile; the workbench (IPython, plots) is left out, and so
    is what only the interpreter runs (`NOT_COMPILED`: compile workers never interpret)."""
    import importlib
    import pkgutil

    def visit(name: str) -> None:
        if name == __name__ or name.startswith(NOT_COMPILED):
            return
        try:
            module = importlib.import_module(name)
        except Exception:  # an optional dependency missing: that module is not needed
            return
        for found in pkgutil.iter_modules(getattr(module, "__path__", []), f"{name}."):
            visit(found.name)

    for package in ("language", "ir", "frontend", "passes", "backends", "runtime"):
        visit(f"tileworkbench.{package}")
    visit("tileworkbench.tools.tensor_descriptor")
    visit("llvmlite.binding")  # the back ends import it on first use (~0.06 s on a 2-core host)


# NumPy's versions of libdevice's functions (the interpreter's, and the cpu target's host calls,
# which import them when a kernel calls one): 0.57 of the 0.63 s these imports took on a 2-core host
NOT_COMPILED = (
    "tileworkbench.backends.numpy_libdevice",
    "tileworkbench.backends.interpreter",
    "tileworkbench.backends.cpu.host_calls",
)


def _wait(compiled) -> None:
    """ptxas runs on a thread pool; wait for it and stop the pool, so the forkserver forks with
    no thread but its own."""
    from . import compiler

    wait = getattr(compiled, "_wait", None)
    if wait is not None:
        wait()
    while compiler._ASSEMBLER:
        compiler._ASSEMBLER.pop().shutdown(wait=True)


def ready() -> dict:
    """A worker's first task: its pid and what its forkserver warmed up."""
    return {"pid": os.getpid(), "warmed": dict(WARMED)}


def _preload() -> None:
    import importlib

    for name in filter(None, os.environ.get(MODULES_VARIABLE, "").split(",")):
        try:
            importlib.import_module(name)
        except Exception:  # the worker imports it again when a kernel needs it, and reports
            pass
    import_compiler_modules()
    target = os.environ.get(TARGET_VARIABLE)
    if target:
        from ..config import config

        saved = config.cache_dir
        config.cache_dir = type(saved)(tempfile.gettempdir()) / "tileworkbench-preload-unused"
        try:
            warm_up(target)
        finally:
            config.cache_dir = saved
    done = os.environ.get(DONE_VARIABLE)
    if done:
        try:
            open(done, "a").close()
        except OSError:  # the parent stopped waiting and removed its folder
            pass


if os.environ.get(ROLE_VARIABLE):
    _preload()
