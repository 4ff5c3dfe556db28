"""pytest plugin: every kernel a test runs in the interpreter runs again on the GPU, and the arrays the two
produce are compared. With it, the whole language suite doubles as a GPU test suite in one call:

    PYTHONPATH=.:tests python -m pytest -p gpu_shadow_plugin tests/frontend tests/kernels tests/interpreter

The interpreter runs first (on the test's own arrays, so the test checks it as usual); only when it
succeeded is the same tile-opt IR compiled for this GPU and launched on copies of the inputs. A summary
(matches, mismatches, skips with reasons) is printed at the end and written to $GPU_SHADOW_JSON.
Atomics that return old values from repeated addresses may legitimately differ in order.

With GPU_SHADOW_MODE=replace the GPU's results are written into the test's arrays instead (the
interpreter ran on copies, its bounds checks guarding the GPU from bad accesses), so every test's own
assertions against its NumPy reference judge the GPU. Arrays of dtypes CuPy lacks (fp8, bf16) travel as
their bits, and strided views travel with the memory they view. Kernels the GPU cannot run keep the
interpreter's results and are counted: non-power-of-two shapes, which the NVPTX back end refuses (as
Triton does).

Kernels are compiled with enable_fp_fusion=False, the interpreter's rounding of every op, which some
tests assert exactly; GPU_SHADOW_FP_FUSION=1 compiles them as launches do by default (a*b+c as one FMA).

GPU_SHADOW_DEBUG=1 compiles them in debug mode (every load, store and atomic bounds-checked, issue 14)
and launches them as the JIT does in that mode: a kernel the interpreter ran in bounds must run with no
report and the same results, so an error reported there is counted as "DEBUG FALSE POSITIVE".
"""

from __future__ import annotations

import collections
import copy
import json
import os
import time

import numpy as np

import tileworkbench.backends.interpreter as interpreter
from tileworkbench.backends.interpreter import executor
from tileworkbench.errors import InterpreterError
from tileworkbench.ir.types import PointerType

RESULTS: collections.Counter = collections.Counter()
DETAILS: list[tuple[str, str]] = []
BUDGET_S = float(os.environ.get("GPU_SHADOW_SECONDS", "150"))
# "compare": GPU results compared with the interpreter's; "replace": the GPU's results replace the
# interpreter's in the test's arrays, so each test's own NumPy reference checks the GPU
MODE = os.environ.get("GPU_SHADOW_MODE", "compare")
FP_FUSION = os.environ.get("GPU_SHADOW_FP_FUSION", "0") == "1"
DEBUG = os.environ.get("GPU_SHADOW_DEBUG", "0") == "1"
_START = time.perf_counter()
_original_run = interpreter.run
_compiled: dict[int, object] = {}


def _kind(t) -> str:
    if isinstance(t, PointerType):
        return "*" + _kind(t.pointee)
    return {"f16": "fp16", "f32": "fp32", "f64": "fp64", "bf16": "bf16"}.get(t.name, t.name)


def _kernel(func):
    """The GPU kernel for this IR, compiled once per function object."""
    from tileworkbench.backends.nvptx import compile_nvptx
    from tileworkbench.runtime.device import device_properties
    from tileworkbench.runtime.launcher import CudaKernel

    hit = _compiled.get(id(func))
    if hit is not None and hit[0] is func:
        return hit[1]
    from tileworkbench.runtime.debug_checks import DebugChecks

    result = compile_nvptx(copy.deepcopy(func), arch=device_properties().arch, num_warps=4,
                           enable_fp_fusion=FP_FUSION, assemble=False, debug=DEBUG)
    kinds = [_kind(a.type) for a in func.args]
    checks = None
    if result.debug_checks is not None:
        names = [a.name_hint or f"arg{a.index}" for a in func.args]
        checks = DebugChecks(result.debug_checks, result.kernel_name, names)
        kinds += checks.hidden_kinds()
    kernel = CudaKernel(result.ptx, result.kernel_name, num_warps=4, shared=result.shared, param_kinds=kinds)
    _compiled[id(func)] = (func, (kernel, checks))
    return kernel, checks


def _compare(host: np.ndarray, device: np.ndarray) -> bool:
    if host.dtype.kind == "f" or host.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        a, b = host.astype(np.float64), device.astype(np.float64)
        tol = 2e-4 if host.dtype.itemsize >= 4 else 2e-2
        return bool(np.allclose(a, b, rtol=tol, atol=tol / 10, equal_nan=True))
    return bool(np.array_equal(host, device))


def _root(a: np.ndarray):
    """The array owning `a`'s memory, or None when that is not a C-contiguous ndarray."""
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base if base.flags.c_contiguous else None


def _clone(a: np.ndarray) -> np.ndarray:
    """`a` again over a copy of the memory it views (a strided view stays the same view), read-only
    where `a` is (stores into it must still be refused)."""
    base = _root(a)
    if base is None or base is a:
        copy = a.copy(order="K")
    else:
        raw = base.view(np.uint8).reshape(-1).copy()
        offset = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        copy = np.ndarray(a.shape, a.dtype, buffer=raw, offset=offset, strides=a.strides)
    copy.flags.writeable = a.flags.writeable
    return copy


def _scratch(a):
    return _clone(a) if isinstance(a, np.ndarray) else a


# dtypes CuPy has no arrays of: they travel as their bits
_BITS = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}


def _device(a, param):
    """(GPU argument, fetch) for a host argument: an array's memory (the whole of what a strided view
    views, so the kernel's strides hold) goes to the GPU, `fetch()` brings the view back; a 0-d array
    for a scalar parameter is its value."""
    import cupy

    if not isinstance(a, np.ndarray):
        return a, None
    if a.ndim == 0 and not isinstance(param.type, PointerType):
        return a[()], None
    base = _root(a)
    if base is None:
        raise ValueError("an array over memory that is not a C-contiguous ndarray")
    dtype = np.dtype(_BITS.get(a.dtype.name, a.dtype))
    device_base = cupy.asarray(base.view(np.uint8).reshape(-1))
    offset = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    view = cupy.ndarray(a.shape, dtype, memptr=device_base.data + offset, strides=a.strides)
    return view, lambda: view.get().view(a.dtype)


def _copy_into(targets, sources) -> None:
    for host, value in zip(targets, sources):
        if isinstance(host, np.ndarray) and host.flags.writeable:
            host[...] = value


def shadow_run(func, args, grid, arg_names=None, **kwargs):
    replace = MODE == "replace"
    inputs = [_scratch(a) for a in args]
    # replace mode: the interpreter runs on scratch copies (its bounds checks still raise, so no test
    # sends an out-of-bounds access to the GPU), and the GPU's results go into the test's arrays
    ran_on = [_scratch(a) for a in args] if replace else args
    try:
        result = _original_run(func, ran_on, grid, arg_names, **kwargs)  # raises -> nothing to compare
    except Exception:
        if replace:  # what the programs wrote before the error, as the test expects to see it
            _copy_into(args, ran_on)
        raise
    name = getattr(func, "sym_name", "?")

    def fall_back(reason: str):
        RESULTS[reason] += 1
        if replace:  # the test checks the interpreter's results after all
            _copy_into(args, ran_on)
        return result

    if time.perf_counter() - _START > BUDGET_S:
        return fall_back("not run: time budget")
    try:
        import cupy

        kernel, checks = _kernel(func)
        moved = [_device(a, param) for a, param in zip(inputs, func.args)]
        device_args = [value for value, _ in moved]
        grid3 = tuple(grid) + (1,) * (3 - len(grid))
        if checks is not None:
            checks.launch(kernel, grid3, device_args)  # synchronizes; raises what the kernel reported
        else:
            kernel.launch(grid3, device_args)
        kernel.synchronize()
        results = [fetch() if fetch is not None else a for a, (_, fetch) in zip(inputs, moved)]
    except InterpreterError as error:  # debug mode reported an access the interpreter ran in bounds
        DETAILS.append((name, f"DEBUG FALSE POSITIVE: {str(error)[:400]}"))
        return fall_back("DEBUG FALSE POSITIVE")
    except Exception as error:  # reported, not raised: the test itself is about the interpreter
        DETAILS.append((name, f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"))
        return fall_back("GPU error")
    if replace:
        _copy_into(args, results)
        RESULTS["GPU result checked by the test"] += 1
        return result
    for index, (host, device) in enumerate(zip(args, results)):
        if isinstance(host, np.ndarray) and not _compare(np.asarray(host), device):
            RESULTS["MISMATCH"] += 1
            DETAILS.append((name, f"argument {index} differs"))
            return result
    RESULTS["match"] += 1
    return result


FAILED: list[str] = []


def pytest_runtest_logreport(report):
    if report.failed:
        FAILED.append(report.nodeid)


interpreter.run = shadow_run
executor.run = shadow_run


def pytest_sessionfinish(session):
    what = "GPU results checked by the tests" if MODE == "replace" else "GPU vs interpreter"
    what += f" (enable_fp_fusion={FP_FUSION})"
    print(f"\n{what}, per kernel launch:", dict(RESULTS))
    seen = set()
    for name, detail in DETAILS:
        if (name, detail[:60]) not in seen:
            seen.add((name, detail[:60]))
            print("  ", name, "->", detail)
    path = os.environ.get("GPU_SHADOW_JSON")
    if path:
        with open(path, "w") as f:
            json.dump({"mode": MODE, "fp_fusion": FP_FUSION, "results": dict(RESULTS),
                       "details": DETAILS[:200], "failed_tests": FAILED}, f, indent=1)
