"""pytest plugin: every interpreter run is repeated on the emulated NVPTX lowering (`cpu_emulator`) and
the arrays the two produce are compared; a summary is printed at the end. A cross-check of the back
end without a GPU, over any test suite that runs kernels in the interpreter:

    PYTHONPATH=.:tests/nvptx pytest -p emulate_plugin tests/interpreter tests/frontend

Atomics on repeated addresses return old values in another order than the interpreter's lane order
(as on a GPU), so their `old` outputs may be reported as mismatches.

EMULATE_DEBUG=1 lowers in debug mode (bounds checks, issue 14): a kernel the interpreter ran in bounds
must run with no report, so a report counts as an emulation error ("OutOfBoundsError: ...").
"""

from __future__ import annotations

import collections
import copy
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from cpu_emulator import Emulator

import tileworkbench.backends.interpreter as interp
from tileworkbench.backends.interpreter import executor

DEBUG = os.environ.get("EMULATE_DEBUG", "0") == "1"
RESULTS = collections.Counter()
DETAILS = []
_orig = interp.run


def _name(func):
    return getattr(func, "sym_name", "?")


def shadow_run(func, args, grid, arg_names=None, **kw):
    grid3 = tuple(grid) + (1,) * (3 - len(grid))
    n_programs = grid3[0] * grid3[1] * grid3[2]
    emu, emu_args, reason = None, None, None
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    if n_programs > 16:
        reason = "grid too large"
    elif not all(a.flags.c_contiguous or a.flags.f_contiguous for a in arrays):
        reason = "strided arrays"
    else:
        try:
            emu = Emulator.from_func(copy.deepcopy(func), num_warps=4, debug=DEBUG)
            emu_args = [a.copy(order="K") if isinstance(a, np.ndarray) else a for a in args]
        except Exception as e:  # noqa: BLE001 - any failure is reported, not raised
            reason = f"setup: {type(e).__name__}: {str(e).splitlines()[0][:150]}"
    result = _orig(func, args, grid, arg_names, **kw)  # raises -> no comparison
    if emu is None:
        RESULTS["skipped: " + reason.split(":")[0]] += 1
        if reason.startswith("setup"):
            DETAILS.append((_name(func), reason))
        return result
    try:
        emu.launch(grid3, *emu_args)
    except Exception as e:  # noqa: BLE001 - any failure is reported, not raised
        RESULTS["emulation error"] += 1
        DETAILS.append((_name(func), f"emulate: {type(e).__name__}: {str(e)[:200]}"))
        return result
    for i, (a, b) in enumerate(zip(args, emu_args)):
        if not isinstance(a, np.ndarray):
            continue
        if a.dtype.kind == "f" or a.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            x, y = a.astype(np.float64), b.astype(np.float64)
            tol = 2e-4 if a.dtype.itemsize >= 4 else 2e-2
            ok = np.allclose(x, y, rtol=tol, atol=tol / 10, equal_nan=True)
        else:
            ok = np.array_equal(a, b)
        if not ok:
            RESULTS["MISMATCH"] += 1
            bad = np.argwhere(~np.isclose(a.astype(np.float64), b.astype(np.float64), rtol=2e-4, atol=1e-5, equal_nan=True))
            DETAILS.append((_name(func), f"arg {i} differs at {bad[:3].tolist()}: interp {a.reshape(-1)[:4]} emu {b.reshape(-1)[:4]}"))
            return result
    RESULTS["match"] += 1
    return result


interp.run = shadow_run
executor.run = shadow_run


def pytest_sessionfinish(session):
    print("\nNVPTX emulation vs interpreter:", dict(RESULTS))
    seen = set()
    for name, d in DETAILS:
        if (name, d[:60]) in seen:
            continue
        seen.add((name, d[:60]))
        print("  ", name, "->", d)
