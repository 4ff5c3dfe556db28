"""Fixtures shared by every test area: the `target` a kernel suite runs on.

`target` is parametrized over every registered backend: "interpreter" and "cpu" (always), and "cuda"
(marked `gpu`, opt-in, skipped where no GPU is visible). It is a string with `put` (host NumPy array
-> an array the target launches on), `get` (-> host NumPy) and `run` (hand-built `tile-opt` IR on
host arrays). The language suites (tests/frontend, tests/kernels, tests/interpreter) request it
through an autouse fixture, so each of their kernels runs on every target against its float64
reference. On "cuda", NumPy arguments are staged through the GPU by the NVPTX backend
(`stage_host_arrays`), so a suite written for host arrays checks the GPU unchanged.

Two marks say where a test is meaningful:
- `@pytest.mark.only_on("interpreter", ...)`: a test about some targets' own behaviour (the
  interpreter's bounds checks without debug mode, its stdout callback, an error only it raises) runs
  on those targets and is skipped on the others, with the reason in a comment beside the mark.
- `@pytest.mark.gpu_isolated`: on "cuda" the test runs in a process of its own (cuda_guard.py),
  because its kernel fails or prints on the device on purpose; a device trap would leave the CUDA
  context unusable for every later test. After any failure on "cuda", cuda_guard also checks the
  context and stops the session with a clear message if it is lost.
"""

from __future__ import annotations

import copy
import os
import time

import numpy as np
import pytest

# "cuda" is opt-in (TILEWORKBENCH_TEST_CUDA=1): staging every NumPy array through the GPU is slow,
# and a device-side trap once left the CUDA context unusable for every later test (206 failures on
# the H200, 2026-12-01; now only_on / gpu_isolated marks and cuda_guard.py).
# tools/gpu_language_suite.py runs it.
def _targets() -> list:
    """One target per registered backend (backends/__init__.py), in registry order: a new backend
    joins every kernel suite without a change here. GPU targets are marked `gpu` and opt-in."""
    from tileworkbench.backends import backends

    out = []
    for backend in backends():
        if not backend.is_gpu:
            out.append(backend.target)
        elif os.environ.get("TILEWORKBENCH_TEST_CUDA"):
            out.append(pytest.param(backend.target, marks=pytest.mark.gpu))
    return out


TARGETS = _targets()


def pytest_configure(config):
    config.addinivalue_line("markers", "only_on(*targets): run this test on these targets only")
    config.addinivalue_line("markers", "vectorize: compile for the cpu target with LLVM's vectorizers")
    # -- cuda: tests that fail on the device on purpose, and a lost CUDA context (cuda_guard.py) --
    config.addinivalue_line("markers", "gpu_isolated: on cuda, run in a process of its own")
    import cuda_guard

    config.pluginmanager.register(cuda_guard, "cuda_guard")


class Target(str):
    """The name of an execution target, plus moving arrays to and from it and running IR on it."""

    def put(self, array: np.ndarray):
        if self == "cuda":
            import cupy

            return cupy.asarray(array)
        return array

    def get(self, array) -> np.ndarray:
        if self == "cuda":
            return array.get()
        return np.asarray(array)

    def run(self, func, args: list, grid, arg_names=None) -> None:
        """Run `tile-opt` IR `func` (not changed) over `grid` on host arrays and scalars."""
        from tileworkbench.backends import backend_for
        from tileworkbench.backends.interpreter import run

        if self == "interpreter":
            return run(func, args, grid, arg_names)
        backend = backend_for(self)
        lowered = backend.lower(copy.deepcopy(func), backend.resolve(self), 4, 3, False)
        compiled = _IRKernel(func.sym_name, lowered)
        kinds = [_kind(a.type) for a in func.args]
        names = [a.name_hint or f"arg{a.index}" for a in func.args]
        args = [a[()] if isinstance(a, np.ndarray) and a.ndim == 0 else a for a in args]
        grid3 = tuple(grid) + (1,) * (3 - len(grid))
        backend.load(compiled, kinds, names).launch(grid3, args)


class _IRKernel:
    """What `Backend.load` reads of a compiled kernel, for IR built by hand."""

    def __init__(self, name: str, lowered):
        from tileworkbench.runtime.compiler import KernelMetadata

        self.asm = lowered.asm
        self.ptx = lowered.asm.get("ptx")
        self.launch_cubin = lowered.binary
        self.launch_metadata = KernelMetadata(name=lowered.kernel_name, target="", num_warps=4,
                                              dynamic_shared=lowered.shared)


def _kind(t) -> str:
    from tileworkbench.dtypes import BY_IR
    from tileworkbench.ir.types import PointerType

    if isinstance(t, PointerType):
        return "*" + _kind(t.pointee)
    return BY_IR[t.name].kind


@pytest.fixture(scope="session")
def kernel_cache_dir(tmp_path_factory):
    """One compile cache for the session's compiled targets (kernels recur across tests). Under
    pytest-xdist every worker's base temp folder is named after it, inside the run's: the cache lies
    beside them, so a kernel one worker compiled is a hit for the rest (entries are renamed into
    place whole, runtime/cache.py, so workers may write at once). A pytest started by a test inherits
    PYTEST_XDIST_WORKER but not the folder layout, and keeps a cache of its own."""
    base = tmp_path_factory.getbasetemp()
    if base.name == os.environ.get("PYTEST_XDIST_WORKER"):
        path = base.parent / "kernel-cache"
        path.mkdir(exist_ok=True)
        return path
    return tmp_path_factory.mktemp("kernel-cache")


@pytest.fixture(params=TARGETS)
def target(request, monkeypatch, kernel_cache_dir) -> Target:
    from tileworkbench.backends import backend_for
    from tileworkbench.config import config

    marker = request.node.get_closest_marker("only_on")
    if marker is not None and request.param not in marker.args:
        pytest.skip(f"about {', '.join(marker.args)} only")
    backend = backend_for(request.param)
    if request.param == "cpu" and os.environ.get("TILEWORKBENCH_TEST_CPU") != "1":
        # opt in (CI does): the language suites on the cpu target add minutes of LLVM compile time
        pytest.skip("cpu target: set TILEWORKBENCH_TEST_CPU=1 to run the language suites on it")
    if not backend.available():
        pytest.skip(f"no {request.param} device visible")
    monkeypatch.setattr(config, "interpret", request.param == "interpreter")
    monkeypatch.setattr(config, "target", request.param)
    monkeypatch.setattr(config, "cache_dir", kernel_cache_dir)
    if backend.is_gpu:
        monkeypatch.setattr(backend, "stage_host_arrays", True)
    if request.param == "cpu" and not request.node.get_closest_marker("vectorize"):
        monkeypatch.setattr(backend, "vectorize", False)  # half the compile time; tests/kernels keep it
    return Target(request.param)


@pytest.fixture
def wait_for_cache_entries(monkeypatch, tmp_path):
    """Gives the test an empty compile cache, and is `wait(count)`: wait until the cache holds `count`
    entries (an entry is written once ptxas is done, in the background)."""
    from tileworkbench.config import config
    from tileworkbench.runtime.cache import KernelCache

    monkeypatch.setattr(config, "cache_dir", tmp_path / "cache")

    def wait(count: int) -> None:
        deadline = time.monotonic() + 30
        while len(list(KernelCache().keys())) < count:
            assert time.monotonic() < deadline, "the compile cache was not written"
            time.sleep(0.01)

    return wait
