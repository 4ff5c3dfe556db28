"""The cpu target against the interpreter, NumPy and torch (CPU) on this machine's cores: vector add,
fused softmax, layer norm and a 512^3 fp32 matmul. Every result is checked against float64 NumPy before
it is timed; times are the fastest of alternating rounds (the kernel, NumPy and torch in the same
rounds). Writes bench/results/cpu-<cpu>.json (cpu-znver3.json; cpu-znver3-quick.json with --quick;
or --out) and prints the table.

    PYTHONPATH=. python bench/cpu.py [--quick] [--seconds S] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import kernels  # noqa: E402 - bench/kernels.py, the kernels every benchmark shares
import result_file  # noqa: E402

import tileworkbench as tw  # noqa: E402
import tileworkbench.language as tl  # noqa: E402
from tileworkbench.config import config  # noqa: E402


@tw.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    pid_m = pid // tl.cdiv(N, BLOCK_N)
    pid_n = pid % tl.cdiv(N, BLOCK_N)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :])
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc)


# 1024, not the GPU's 4096: a 4096-lane LLVM vector takes LLVM's x86 back end ~15 s to compile
# (it legalizes the wide masks), and the interpreter runs the same kernel
ADD_BLOCK = 1024


def timed(fn, min_seconds: float = 0.3, max_runs: int = 50) -> float:
    """The fastest of several calls of `fn()` after a warm-up call (on a machine other work shares,
    the minimum is the run the others disturbed least)."""
    return interleaved({"fn": fn}, min_seconds, max_runs)["fn"]


def interleaved(fns: dict, min_seconds: float = 1.0, max_rounds: int = 60) -> dict:
    """The fastest call of each of `fns`, timed in alternating rounds (in a rotating order), so that
    a busy spell of the machine falls on all of them alike (NumPy in the same rounds as the kernel)."""
    for fn in fns.values():
        fn()
    best = {name: float("inf") for name in fns}
    start, rounds = time.perf_counter(), 0
    names = list(fns)
    while (time.perf_counter() - start < min_seconds or rounds < 3) and rounds < max_rounds:
        # the order rotates: torch's OpenMP threads spin for a while after its call and slow down
        # whatever runs next on a 2-core machine
        for name in names[rounds % len(names):] + names[:rounds % len(names)]:
            t0 = time.perf_counter()
            fns[name]()
            best[name] = min(best[name], time.perf_counter() - t0)
        rounds += 1
    return best


def on_target(target: str, fn):
    def run():
        config.target, config.interpret = target, target == "interpreter"
        fn()
    return run


def one_thread(fn):
    """`fn` with the grid run by the calling thread alone (no pool hand-offs: the kernel's own speed,
    which a busy machine's scheduling does not blur)."""
    from tileworkbench.backends.cpu import launch

    def run():
        saved = launch.workers
        launch.workers = lambda: 1
        try:
            fn()
        finally:
            launch.workers = saved
    return run


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def workloads(quick: bool, rng) -> dict:
    n = 2**20 if quick else 2**24
    rows, cols = (1024, 1024) if quick else (4096, 1024)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    s_in = rng.standard_normal((rows, cols), dtype=np.float32) * 3
    s_out = np.full_like(s_in, np.nan)
    w, b = rng.standard_normal(cols, dtype=np.float32), rng.standard_normal(cols, dtype=np.float32)
    mean, rstd = np.empty(rows, np.float32), np.empty(rows, np.float32)
    m = 512
    a, bm = rng.standard_normal((m, m), dtype=np.float32), rng.standard_normal((m, m), dtype=np.float32)
    c = np.full((m, m), np.nan, np.float32)
    e = np.exp(s_in.astype(np.float64) - s_in.max(1, keepdims=True))
    x64 = s_in.astype(np.float64)
    ln_ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5) * w + b
    k = kernels

    def numpy_softmax():
        z = s_in - s_in.max(1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(1, keepdims=True)
        return z

    def numpy_layer_norm():
        mu = s_in.mean(1, keepdims=True)
        d = s_in - mu
        return d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5) * w + b

    return {
        f"vector add 2^{n.bit_length() - 1} fp32": dict(
            bytes=3 * 4 * n, flops=n, out=out, ref=x.astype(np.float64) + y,
            kernel=lambda: k.add_kernel[(tw.cdiv(n, ADD_BLOCK),)](x, y, out, n, BLOCK=ADD_BLOCK),
            numpy=lambda: np.add(x, y, out=out),
            torch=lambda t: t.add(t.from_numpy(x), t.from_numpy(y), out=t.from_numpy(out))),
        f"softmax {rows}x{cols} fp32": dict(
            bytes=2 * 4 * rows * cols, flops=5 * rows * cols, out=s_out, ref=e / e.sum(1, keepdims=True),
            kernel=lambda: k.softmax_kernel[(rows,)](s_out, s_in, cols, cols, cols, BLOCK=cols),
            numpy=numpy_softmax, torch=lambda t: t.softmax(t.from_numpy(s_in), 1)),
        f"layer norm {rows}x{cols} fp32": dict(
            bytes=2 * 4 * rows * cols, flops=8 * rows * cols, out=s_out, ref=ln_ref,
            kernel=lambda: k.layer_norm_kernel[(rows,)](s_in, s_out, w, b, mean, rstd, cols, cols, 1e-5,
                                                         BLOCK=cols),
            numpy=numpy_layer_norm,
            torch=lambda t: t.nn.functional.layer_norm(t.from_numpy(s_in), (cols,), t.from_numpy(w),
                                                       t.from_numpy(b), 1e-5)),
        "matmul 512^3 fp32": dict(
            bytes=3 * 4 * m * m, flops=2 * m**3, out=c, ref=a.astype(np.float64) @ bm,
            kernel=lambda: matmul_kernel[(tw.cdiv(m, 32) * tw.cdiv(m, 32),)](
                a, bm, c, m, m, m, m, m, m, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16),
            numpy=lambda: np.matmul(a, bm), torch=lambda t: t.from_numpy(a) @ t.from_numpy(bm)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller shapes (a smoke run)")
    parser.add_argument("--no-interpreter", action="store_true")
    parser.add_argument("--seconds", type=float, default=2.0, help="timing rounds per workload")
    parser.add_argument("--out", help="the JSON file (default: results/cpu-<cpu>.json)")
    args = parser.parse_args()
    try:
        import torch
        torch.set_num_threads(len(os.sched_getaffinity(0)))
    except ImportError:
        torch = None
    import tempfile

    config.cache_dir = tempfile.mkdtemp(prefix="tileworkbench-bench-")  # first calls compile
    rng = np.random.default_rng(0)
    rows = []
    for name, w in workloads(args.quick, rng).items():
        w["out"][...] = np.nan
        compile_start = time.perf_counter()
        on_target("cpu", w["kernel"])()
        compile_s = time.perf_counter() - compile_start
        err = rel_err(w["out"], w["ref"])
        row = {"workload": name, "cpu_rel_err": err, "cpu_first_call_s": compile_s}
        fns = {"cpu_s": on_target("cpu", w["kernel"]), "numpy_s": w["numpy"],
               "cpu_1thread_s": one_thread(on_target("cpu", w["kernel"]))}
        if torch is not None:
            fns["torch_s"] = lambda: w["torch"](torch)
        row.update(interleaved(fns, min_seconds=args.seconds))
        if not args.no_interpreter:
            row["interpreter_s"] = timed(on_target("interpreter", w["kernel"]), min_seconds=0, max_runs=1)
        row["cpu_GBps"] = w["bytes"] / row["cpu_s"] / 1e9
        row["cpu_GFLOPs"] = w["flops"] / row["cpu_s"] / 1e9
        rows.append(row)
        print_row(row)
    record = {"load_average": os.getloadavg(),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "host": platform.node(), "cpu": platform.processor() or platform.machine(),
              "cores": len(os.sched_getaffinity(0)), "quick": args.quick, "rows": rows}
    from tileworkbench.backends.cpu import codegen

    record["llvm_cpu"] = codegen.binding().get_host_cpu_name()
    quick = "-quick" if args.quick else ""
    path = Path(args.out) if args.out else \
        result_file.default_path("cpu", f"{record['llvm_cpu']}{quick}")
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(record, indent=1))
    print(f"written to {path}")
    return 0


def print_row(row: dict) -> None:
    def ms(key):
        return f"{row[key] * 1e3:9.2f}" if key in row else "        -"
    ratio = row.get("interpreter_s", float("nan")) / row["cpu_s"]
    print(f"{row['workload']:26} cpu {ms('cpu_s')} ms  1 thread {ms('cpu_1thread_s')}  numpy {ms('numpy_s')}  "
          f"torch {ms('torch_s')}  "
          f"interp {ms('interpreter_s')}  cpu/numpy {row['numpy_s'] / row['cpu_s']:5.2f}x faster  "
          f"vs interp {ratio:7.1f}x  err {row['cpu_rel_err']:.1e}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
