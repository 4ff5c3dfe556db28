"""The cost of debug mode (bounds checks on every load, store and atomic; issue 14) on the GPU: the vector
add and the fused softmax of bench/kernels.py, compiled with and without `debug=True`, timed in one run.

    PYTHONPATH=. python bench/debug_cost.py [--rounds 7] [--out FILE.json]

(default --out: bench/results/<gpu>-debug-cost.json, h200-debug-cost.json on an H200)

Needs CuPy and a GPU only (no torch, no Triton). Two measures per shape, interleaved in shuffled order
over `--rounds` rounds (the median is reported):
- `kernel`: device time per launch of the kernel alone, from CUDA events around a burst of launches
  (the debug kernel gets its hidden arguments; nothing synchronizes between launches). This is what the
  checks cost the GPU.
- `launch`: wall time per `kernel[grid](...)` call, each followed by a synchronize: debug mode takes the
  full launch path and reads its error buffer after each launch, the plain kernel takes the warm path.
  This is what a user of debug mode waits.
Every result is checked against NumPy float64 (outputs poisoned with NaN first) and the error buffer must
stay clean. Registers (ptxas) are reported beside the times.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import kernels  # noqa: E402
import result_file  # noqa: E402

OURS = kernels.load("tileworkbench")
L2_BYTES = 50 * 2**20  # H200
MODES = ("plain", "debug")


def bound_kernel(kernel, compiled):
    """The JIT's bound kernel (CUDA module, debug checks) behind a compiled specialization."""
    return next(b for b in kernel.cache.values() if b.compiled is compiled)


def device_time(launch, count: int) -> float:
    """ms per launch of `count` back-to-back launches, from CUDA events."""
    launch()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(count):
        launch()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / count


def wall_time(call, count: int) -> float:
    """ms per call, each followed by a synchronize (host clock)."""
    call()
    cp.cuda.get_current_stream().synchronize()
    begin = time.perf_counter()
    for _ in range(count):
        call()
        cp.cuda.get_current_stream().synchronize()
    return (time.perf_counter() - begin) * 1e3 / count


def measure(name: str, shape, dtype: str, nbytes: int, kernel, args: list, grid, options: dict,
            reference: np.ndarray, out, tol: float, rounds: int) -> dict:
    """Both measures of one shape, plain and debug, interleaved; results checked."""
    launches, calls, regs = {}, {}, {}
    for mode in MODES:
        debug = mode == "debug"
        out.fill(np.nan)
        compiled = kernel[grid](*args, **options, debug=debug)
        cp.cuda.get_current_stream().synchronize()
        # norm-relative, as bench/run.py: an fp16 softmax has subnormal outputs (~4e-6) whose own
        # rounding is ~1% of them, so an elementwise relative check fails on a right answer
        got = out.get().astype(np.float64)
        err = float(np.linalg.norm(got - reference) / np.linalg.norm(reference))
        if not err <= tol:
            raise SystemExit(f"WRONG RESULT: {name} {shape} {dtype} {mode}: relative error {err:.3g}")
        bound = bound_kernel(kernel, compiled)
        flat = [args[i] for i, n in enumerate(kernel.arg_names) if n in bound.names]
        grid3 = tuple(grid) + (1,) * (3 - len(grid))
        if debug:
            hidden = [*flat, *bound.checks.ranges(flat), bound.checks.buffer()]
            launches[mode] = lambda hidden=hidden, bound=bound: bound.cuda.launch(grid3, hidden)
        else:
            launches[mode] = lambda flat=flat, bound=bound: bound.cuda.launch(grid3, flat)
        # the plain call as users write it (the warm path); the debug one with its launch option
        calls[mode] = (lambda: kernel[grid](*args, **options, debug=True)) if debug else \
            (lambda: kernel[grid](*args, **options))
        regs[mode] = compiled.metadata.n_regs
    count = max(20, min(2000, int(4e9 / max(nbytes, 1))))
    order = np.random.default_rng(14)
    samples = {f"{what}_{mode}": [] for what in ("kernel", "launch") for mode in MODES}
    for _ in range(rounds):
        for mode in order.permutation(MODES):
            samples[f"kernel_{mode}"].append(device_time(launches[mode], count))
            samples[f"launch_{mode}"].append(wall_time(calls[mode], max(10, count // 4)))
    checks = bound_kernel(kernel, kernel[grid](*args, **options, debug=True)).checks
    if checks.buffer().get().any():
        raise SystemExit(f"the error buffer of {name} {shape} recorded a failure in bounds")
    med = {k: float(np.median(v)) for k, v in samples.items()}
    row = {"workload": name, "shape": list(shape), "dtype": dtype, "bytes": nbytes,
           "kernel_ms": {m: med[f"kernel_{m}"] for m in MODES},
           "launch_ms": {m: med[f"launch_{m}"] for m in MODES},
           "kernel_slowdown": med["kernel_debug"] / med["kernel_plain"],
           "launch_slowdown": med["launch_debug"] / med["launch_plain"],
           "kernel_tb_per_s": {m: nbytes / med[f"kernel_{m}"] / 1e9 for m in MODES},
           "registers": regs, "rounds": samples}
    print(f"{name:10} {'x'.join(map(str, shape)):>11} {dtype}  kernel {med['kernel_plain'] * 1e3:8.1f} us -> "
          f"{med['kernel_debug'] * 1e3:8.1f} us (x{row['kernel_slowdown']:.3f})   launch+sync "
          f"{med['launch_plain'] * 1e3:8.1f} us -> {med['launch_debug'] * 1e3:8.1f} us "
          f"(x{row['launch_slowdown']:.3f})   regs {regs['plain']} -> {regs['debug']}", flush=True)
    return row


def vector_add(n: int, rounds: int) -> dict:
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = cp.empty(n, cp.float32)
    args = [cp.asarray(x), cp.asarray(y), out, n]
    return measure("vector_add", (n,), "fp32", 3 * n * 4, OURS.add_kernel, args, ((n + 1023) // 1024,),
                   {"BLOCK": 1024}, x.astype(np.float64) + y, out, 1e-6, rounds)


def softmax(m: int, n: int, dtype: str, rounds: int) -> dict:
    rng = np.random.default_rng(m * n)
    x = rng.standard_normal((m, n)).astype(np.float32 if dtype == "fp32" else np.float16)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    out = cp.empty((m, n), x.dtype)
    block = 1 << (n - 1).bit_length()
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    args = [out, cp.asarray(x), n, n, n]
    return measure("softmax", (m, n), dtype, 2 * m * n * x.itemsize, OURS.softmax_kernel, args, (m,),
                   {"BLOCK": block, "num_warps": warps}, e / e.sum(axis=1, keepdims=True), out,
                   1e-5 if dtype == "fp32" else 3e-3, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="one shape per kernel")
    parser.add_argument("--out", default=None)
    options = parser.parse_args()
    rows = [vector_add(n, options.rounds) for n in ((1 << 24,) if options.quick else (1 << 24, 1 << 28))]
    shapes = [(4096, 4096, "fp32")] if options.quick else [
        (4096, 1024, "fp32"), (4096, 4096, "fp32"), (4096, 16384, "fp32"), (4096, 4096, "fp16")]
    rows += [softmax(m, n, dtype, options.rounds) for m, n, dtype in shapes]
    device = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": device, "rounds": options.rounds, "rows": rows}
    out = Path(options.out) if options.out else result_file.default_path(device, "debug-cost")
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
