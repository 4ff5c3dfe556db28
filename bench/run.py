"""GPU benchmark: each kernel of bench/kernels.py compiled by tileworkbench and by Triton in one process,
beside torch and CuPy where they have the op. Prints a table of ratios and writes JSON to bench/results/.

    PYTHONPATH=. python bench/run.py [--quick] [--out bench/results/NAME.json]

Timing is Triton's `do_bench` for every contender (CUDA events, L2 flush, median), so the methods match;
ours and Triton's are timed in alternation over several rounds and the ratio is of the rounds' medians.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import cupy as cp
import numpy as np
import torch
import triton
import triton.testing

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import kernels  # noqa: E402

import tileworkbench as tw  # noqa: E402

OURS = kernels.load("tileworkbench")
THEIRS = kernels.load("triton")


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


ROUNDS = 5


def bench_interleaved(fns: dict) -> tuple[dict, dict]:
    """Each contender timed in turn, ROUNDS times over (drift on a shared machine hits both alike);
    the median of the rounds' medians, and the per-round times to show the spread."""
    samples = {k: [] for k in fns}
    for _ in range(ROUNDS):
        for k, fn in fns.items():
            samples[k].append(triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median"))
    return {k: float(np.median(v)) for k, v in samples.items()}, samples


def check(name: str, got: torch.Tensor, want: torch.Tensor, tol: float) -> dict:
    """Relative error against the float64 reference; a wrong result is reported, not hidden."""
    err = ((got.double() - want.double()).norm() / want.double().norm()).item()
    if not err <= tol:
        print(f"WRONG RESULT: {name}: relative error {err:.3g} > {tol}", flush=True)
    return {"rel_err": err, "ok": bool(err <= tol)}


def row(workload, shape, dtype, nbytes, times, errors, rounds=None):
    out = {"workload": workload, "shape": list(shape), "dtype": dtype, "bytes": nbytes}
    if rounds:
        per_round = [t / o for t, o in zip(rounds["triton"], rounds["tileworkbench"])]
        out["ratio_per_round"] = per_round
        out["ratio_spread"] = [min(per_round), max(per_round)]
    for who, ms in times.items():
        out[f"{who}_ms"] = ms
        out[f"{who}_TBps"] = nbytes / (ms * 1e-3) / 1e12
    out["ratio_vs_triton"] = times["triton"] / times["tileworkbench"]
    out["check"] = errors
    out["correct"] = all(e["ok"] for e in errors.values())
    return out


def vector_add(sizes):
    rows = []
    for n in sizes:
        x = torch.rand(n, device="cuda")
        y = torch.rand(n, device="cuda")
        outs = {k: torch.full_like(x, float("nan")) for k in ("tileworkbench", "triton")}
        grid = (triton.cdiv(n, 1024),)
        fns = {
            "tileworkbench": lambda: OURS.add_kernel[grid](x, y, outs["tileworkbench"], n, BLOCK=1024),
            "triton": lambda: THEIRS.add_kernel[grid](x, y, outs["triton"], n, BLOCK=1024),
        }
        for fn in fns.values():
            fn()
        errors = {k: check(f"add {k}", outs[k], x + y, 1e-6) for k in outs}
        times, rounds = bench_interleaved(fns)
        times["torch"] = bench(lambda: x + y)
        xc, yc = cp.asarray(x), cp.asarray(y)
        times["cupy"] = bench(lambda: xc + yc)
        rows.append(row("vector_add", (n,), "fp32", 3 * n * 4, times, errors, rounds))
    return rows


def softmax_warps(block: int) -> int:
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


def softmax(shapes, dtypes):
    rows = []
    for (m, n) in shapes:
        for dtype in dtypes:
            x = torch.randn(m, n, device="cuda", dtype=dtype)
            block = triton.next_power_of_2(n)
            warps = softmax_warps(block)
            outs = {k: torch.full_like(x, float("nan")) for k in ("tileworkbench", "triton")}

            def launch(mod, out):
                return lambda: mod.softmax_kernel[(m,)](out, x, x.stride(0), out.stride(0), n, BLOCK=block,
                                                        num_warps=warps)

            fns = {"tileworkbench": launch(OURS, outs["tileworkbench"]), "triton": launch(THEIRS, outs["triton"])}
            for fn in fns.values():
                fn()
            want = torch.softmax(x.double(), dim=1)
            tol = 1e-5 if dtype == torch.float32 else 3e-3
            errors = {k: check(f"softmax {k}", outs[k], want, tol) for k in outs}
            times, rounds = bench_interleaved(fns)
            times["torch"] = bench(lambda: torch.softmax(x, dim=1))
            name = "fp32" if dtype == torch.float32 else "fp16"
            rows.append(row("softmax", (m, n), name, 2 * x.numel() * x.element_size(), times, errors,
                            rounds))
    return rows


def layer_norm(shapes):
    rows = []
    for (m, n) in shapes:
        x = torch.randn(m, n, device="cuda", dtype=torch.float16)
        w = torch.rand(n, device="cuda", dtype=torch.float16)
        b = torch.rand(n, device="cuda", dtype=torch.float16)
        block = triton.next_power_of_2(n)
        warps = min(max(block // 256, 1), 16)
        outs = {k: torch.full_like(x, float("nan")) for k in ("tileworkbench", "triton")}
        stats = {k: (torch.empty(m, device="cuda"), torch.empty(m, device="cuda")) for k in outs}

        def launch(mod, who):
            return lambda: mod.layer_norm_kernel[(m,)](x, outs[who], w, b, *stats[who], x.stride(0), n, 1e-5,
                                                       BLOCK=block, num_warps=warps)

        fns = {k: launch(mod, k) for k, mod in (("tileworkbench", OURS), ("triton", THEIRS))}
        for fn in fns.values():
            fn()
        want = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5)
        errors = {k: check(f"layer_norm {k}", outs[k], want, 3e-3) for k in outs}
        times, rounds = bench_interleaved(fns)
        times["torch"] = bench(lambda: torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5))
        nbytes = 2 * x.numel() * 2 + 2 * n * 2 + 2 * m * 4
        rows.append(row("layer_norm", (m, n), "fp16", nbytes, times, errors, rounds))
    return rows


def warm_launch(count: int = 2000) -> dict:
    """Host time per launch of a tiny kernel (the launch path, not the kernel)."""
    x = torch.rand(128, device="cuda")
    results = {}
    launches = {
        "tileworkbench": lambda: OURS.tiny_kernel[(1,)](x, 128, BLOCK=128),
        "triton": lambda: THEIRS.tiny_kernel[(1,)](x, 128, BLOCK=128),
    }
    raw = cp.RawKernel(r'''extern "C" __global__ void tiny(float* x, int n) {
        int i = threadIdx.x; if (i < n) x[i] += 1.0f; }''', "tiny")
    xc = cp.asarray(x)
    launches["cupy_rawkernel"] = lambda: raw((1,), (128,), (xc, np.int32(128)))
    for name, fn in launches.items():
        for _ in range(100):
            fn()
        torch.cuda.synchronize()
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(count):
                fn()
            samples.append((time.perf_counter() - start) / count * 1e6)
            torch.cuda.synchronize()
        results[name] = float(np.median(samples))
    return results


_COMPILE_SNIPPET = r'''
import sys, time, json
t0 = time.perf_counter()
sys.path.insert(0, {bench!r}); sys.path.insert(0, {root!r})
import kernels
mod = kernels.load({backend!r})
t_import = time.perf_counter() - t0
import torch
x = torch.rand(1024, device="cuda")
t1 = time.perf_counter()
{first}
t_first = time.perf_counter() - t1
t_asm = time.perf_counter()
{assembled}
t_asm = time.perf_counter() - t_asm
t2 = time.perf_counter()
{second}
t_second = time.perf_counter() - t2
print(json.dumps({{"import_s": t_import, "first_s": t_first, "second_s": t_second, "ptxas_wait_s": t_asm}}))
'''

_FIRST = {
    "tileworkbench": 'import tileworkbench as tw\nc = tw.compile(mod.add_kernel, signature={{"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", '
                     '"out_ptr": "*fp32:16", "n": "i32:16"}}, constexprs={{"BLOCK": 1024}}, target="sm_90")',
    "triton": 'mod.add_kernel.warmup(x, x, x, 1024, BLOCK=1024, grid=(1,))',
}
# tw.compile returns at PTX while ptxas runs beside it; this waits for the cubin (Triton's compile makes one).
_ASSEMBLED = {"tileworkbench": "c.cubin", "triton": "pass"}
_SECOND = {
    "tileworkbench": 'tw.compile(mod.softmax_kernel, signature={{"out_ptr": "*fp32:16", "in_ptr": "*fp32:16", '
                     '"in_stride": "i32:16", "out_stride": "i32:16", "n_cols": "i32:16"}}, constexprs={{"BLOCK": 1024}}, '
                     'target="sm_90")',
    "triton": 'mod.softmax_kernel.warmup(x, x, 1024, 1024, 1024, BLOCK=1024, grid=(1,))',
}


def compile_times() -> dict:
    """Cold process: first compile to PTX (cache empty), a second new kernel in the warm process, and the
    first compile again in a new process with the cache filled (a cache hit)."""
    out = {}
    for backend in ("tileworkbench", "triton"):
        cache = tempfile.mkdtemp(prefix=f"cache-{backend}-")
        env = dict(os.environ, TILEWORKBENCH_CACHE_DIR=cache, TRITON_CACHE_DIR=cache,
                   PYTHONPATH=str(HERE.parent))
        code = _COMPILE_SNIPPET.format(bench=str(HERE), root=str(HERE.parent), backend=backend,
                                       first=_FIRST[backend].format(), second=_SECOND[backend].format(),
                                       assembled=_ASSEMBLED[backend])
        runs = []
        for _ in range(2):  # the second process finds the first's kernels in the cache
            done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"compile timing for {backend} failed:\n{done.stderr[-3000:]}")
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        out[backend] = {"cold_first_s": runs[0]["first_s"], "warm_new_kernel_s": runs[0]["second_s"],
                        "cold_first_then_cubin_s": runs[0]["first_s"] + runs[0]["ptxas_wait_s"],
                        "cache_hit_new_process_s": runs[1]["first_s"], "import_s": runs[0]["import_s"]}
    return out


def print_table(results: dict) -> None:
    print(f"\n{'workload':<12}{'shape':<16}{'dtype':<6}{'ours TB/s':>10}{'triton':>9}{'torch':>8}"
          f"{'ratio':>8}  rounds (min-max)")
    for r in results["kernels"]:
        spread = r.get("ratio_spread", [0, 0])
        print(f"{r['workload']:<12}{'x'.join(map(str, r['shape'])):<16}{r['dtype']:<6}"
              f"{r['tileworkbench_TBps']:>10.2f}{r['triton_TBps']:>9.2f}{r.get('torch_TBps', 0):>8.2f}"
              f"{r['ratio_vs_triton']:>8.3f}  {spread[0]:.3f}-{spread[1]:.3f}"
              f"{'' if r['correct'] else '  WRONG'}")
    for name, error in results["errors"].items():
        print(f"{name}: FAILED {error}")
    print("\nwarm launch (host us/launch):", {k: round(v, 2) for k, v in results["warm_launch_us"].items()})
    print("compile (s):", json.dumps(results["compile"], indent=1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer shapes")
    parser.add_argument("--out", default=None)
    parser.add_argument("--skip", default="", help="comma list of parts to skip: add,softmax,layernorm,launch,compile")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(),
        "versions": {"triton": triton.__version__, "torch": torch.__version__, "cupy": cp.__version__,
                     "tileworkbench": tw.__version__},
        "kernels": [],
    }
    sizes = [2**20, 2**24] if args.quick else [2**20, 2**24, 2**28]
    shapes = [(4096, 1024), (4096, 4096)] if args.quick else [(4096, 1024), (4096, 4096), (4096, 16384),
                                                              (16384, 1000)]
    results["errors"] = {}
    out = Path(args.out) if args.out else HERE / "results" / f"h200-{results['date'][:10]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    parts = [
        ("add", "kernels", lambda: vector_add(sizes)),
        ("softmax", "kernels", lambda: softmax(shapes, [torch.float32, torch.float16])),
        ("layernorm", "kernels", lambda: layer_norm([(4096, 1024), (4096, 4096), (4096, 8192)])),
        ("launch", "warm_launch_us", warm_launch),
        ("compile", "compile", compile_times),
    ]
    results["warm_launch_us"], results["compile"] = {}, {}
    for name, slot, part in parts:
        if name in skip:
            continue
        try:  # one failing part must not lose the others' numbers
            value = part()
        except Exception as error:  # reported in the JSON and on stdout
            results["errors"][name] = f"{type(error).__name__}: {error}"
            traceback.print_exc()
            continue
        if slot == "kernels":
            results["kernels"] += value
        else:
            results[slot] = value
        out.write_text(json.dumps(results, indent=1))
    out.write_text(json.dumps(results, indent=1))
    print_table(results)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
