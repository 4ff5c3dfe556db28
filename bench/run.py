"""GPU benchmark: each kernel of bench/kernels.py compiled by tileworkbench and by Triton in one process,
beside torch and CuPy where they have the op. Prints a table of ratios and writes JSON to bench/results/.

    PYTHONPATH=. python bench/run.py [--quick] [--out FILE.json]

(default --out: bench/results/<gpu>-memory-bound.json, h200-memory-bound.json on an H200)

Kernels are timed as CUDA graphs of one launch per buffer set (enough sets to span 4x the L2, so data
comes from memory), replayed over tens of ms. Each round captures every contender's graph afresh and
times them in a shuffled order; the ratio is of the rounds' medians. Contenders read the same inputs
and write the same output buffers (re-allocating moved the ratio of identical kernels by +-1%). Triton's
kernel also runs as a contender of its own (`triton_control`): its ratio to Triton, the A/A column,
is the method's noise on that shape. Triton's `do_bench` (events around one launch after an L2 flush)
is recorded beside it: at 5 us kernels its event resolution (0.5 us) moved ratios by 10% between runs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
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
import result_file  # noqa: E402

import tileworkbench as tw  # noqa: E402

OURS = kernels.load("tileworkbench")
THEIRS = kernels.load("triton")


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


ROUNDS = 7
L2_BYTES = 50 * 2**20  # H200


def bench_interleaved(fns: dict) -> tuple[dict, dict]:
    """Each contender timed with do_bench in turn, ROUNDS times over (drift on a shared machine hits
    both alike); the median of the rounds' medians, and the per-round times to show the spread."""
    samples = {k: [] for k in fns}
    for _ in range(ROUNDS):
        for k, fn in fns.items():
            samples[k].append(triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median"))
    return {k: float(np.median(v)) for k, v in samples.items()}, samples


def buffer_sets(nbytes: int) -> int:
    """Enough independent buffer sets that one pass over them is 4x the L2: each launch then reads
    from memory, as with do_bench's L2 flush, but with no flush between launches."""
    return int(min(16, max(2, -(-4 * L2_BYTES // nbytes))))


def _capture(fns) -> torch.cuda.CUDAGraph:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture (first launches may compile)
        for fn in fns:
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for fn in fns:
            fn()
    return graph


def bench_graphs(launchers: dict) -> tuple[dict, dict]:
    """ms per launch from CUDA graph replays: `launchers[who]` is one launch per buffer set, captured
    back to back in one graph. Event timing of a 5 us kernel is at the events' 0.5 us resolution and
    drifts from run to run; a graph of many launches is timed over tens of ms, without host launch
    gaps. Each round captures every contender's graph afresh and times them in a shuffled order: two
    graphs of the same kernel, kept for all rounds in a fixed order, differed by up to 1% (the A/A
    control of `measure` shows what is left)."""
    order = np.random.default_rng(ROUNDS)
    samples = {who: [] for who in launchers}
    for _ in range(ROUNDS):
        for who in order.permutation(list(launchers)):
            graph = _capture(launchers[who])
            count = len(launchers[who])
            graph.replay()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            reps = max(3, int(20.0 / max(start.elapsed_time(end), 1e-3)))
            start.record()
            for _ in range(reps):
                graph.replay()
            end.record()
            end.synchronize()
            samples[who].append(start.elapsed_time(end) / (reps * count))
            del graph
    return {k: float(np.median(v)) for k, v in samples.items()}, samples


def check(name: str, got: torch.Tensor, want: torch.Tensor, tol: float) -> dict:
    """Relative error against the float64 reference; a wrong result is reported, not hidden."""
    err = ((got.double() - want.double()).norm() / want.double().norm()).item()
    if not err <= tol:
        print(f"WRONG RESULT: {name}: relative error {err:.3g} > {tol}", flush=True)
    return {"rel_err": err, "ok": bool(err <= tol)}


def row(workload, shape, dtype, nbytes, times, errors, rounds, do_bench_times, do_bench_rounds):
    out = {"workload": workload, "shape": list(shape), "dtype": dtype, "bytes": nbytes,
           "method": "CUDA graph of one launch per buffer set (4x L2), ms per launch, median of rounds"}
    per_round = [t / o for t, o in zip(rounds["triton"], rounds["tileworkbench"])]
    out["ratio_per_round"] = per_round
    out["ratio_spread"] = [min(per_round), max(per_round)]
    for who, ms in times.items():
        out[f"{who}_ms"] = ms
        out[f"{who}_TBps"] = nbytes / (ms * 1e-3) / 1e12
    out["ratio_vs_triton"] = times["triton"] / times["tileworkbench"]
    if CONTROL in times:  # the same Triton kernel timed as a contender of its own (1.0 but for noise)
        out["control_ratio"] = times["triton"] / times[CONTROL]
        out["control_ratio_per_round"] = [t / c for t, c in zip(rounds["triton"], rounds[CONTROL])]
    # Triton's own method too (do_bench: one launch between events after an L2 flush)
    out["do_bench_ms"] = do_bench_times
    out["do_bench_ratio_vs_triton"] = do_bench_times["triton"] / do_bench_times["tileworkbench"]
    out["do_bench_ratio_per_round"] = [t / o for t, o in zip(do_bench_rounds["triton"],
                                                             do_bench_rounds["tileworkbench"])]
    out["check"] = errors
    out["correct"] = all(e["ok"] for e in errors.values())
    return out


CONTENDERS = (("tileworkbench", OURS), ("triton", THEIRS))
CONTROL = "triton_control"


def measure(workload, shape, dtype, nbytes, make_set, reference, tol, torch_op, cupy_op=None) -> dict:
    """One workload over several buffer sets. `make_set()` -> (inputs, make_out, launch): `make_out()`
    poisoned outputs (a tuple, the first one checked), `launch(module, out)` that module's kernel on
    this set. `reference(inputs)` is the float64 result, `torch_op(inputs)` torch's op (captured too),
    `cupy_op(inputs)` a CuPy launch function (timed with do_bench: CuPy launches on its own stream).

    Each contender is checked on outputs of its own; for timing all contenders write the same output
    buffers, since re-allocating moved the ratio of identical kernels by +-1% (buffer placement)."""
    sets = [make_set() for _ in range(buffer_sets(nbytes))]
    errors = {}
    for who, mod in CONTENDERS:
        results = []
        for inputs, make_out, launch in (sets[0], sets[-1]):
            out = make_out()
            launch(mod, out)
            results.append(check(f"{workload} {who}", out[0], reference(inputs), tol))
        errors[who] = max(results, key=lambda e: e["rel_err"])
    shared_outs = [make_out() for _, make_out, _ in sets]
    launchers = {who: [(lambda launch=launch, out=out, mod=mod: launch(mod, out))
                       for (_, _, launch), out in zip(sets, shared_outs)] for who, mod in CONTENDERS}
    launchers["torch"] = [lambda inputs=inputs: torch_op(inputs) for inputs, _, _ in sets]
    launchers[CONTROL] = launchers["triton"]  # A/A: Triton against itself shows the method's noise
    db_times, db_rounds = bench_interleaved({who: launchers[who][0] for who, _ in CONTENDERS})
    try:
        times, rounds = bench_graphs(launchers)
        method = None
    except Exception as error:  # reported; the do_bench figures stand in
        traceback.print_exc()
        times, rounds = dict(db_times), db_rounds
        times["torch"] = bench(lambda: torch_op(sets[0][0]))
        method = f"do_bench (graph capture failed: {type(error).__name__}: {error})"
    if cupy_op is not None:
        times["cupy"] = bench(cupy_op(sets[0][0]))
    out = row(workload, shape, dtype, nbytes, times, errors, rounds, db_times, db_rounds)
    if method:
        out["method"] = method
    return out


def vector_add(sizes):
    rows = []
    for n in sizes:
        grid = (triton.cdiv(n, 1024),)

        def make_set():
            x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
            return ((x, y), lambda: (torch.full_like(x, float("nan")),),
                    lambda mod, out: mod.add_kernel[grid](x, y, out[0], n, BLOCK=1024))

        def cupy_add(inputs):
            xc, yc = cp.asarray(inputs[0]), cp.asarray(inputs[1])
            out = cp.empty_like(xc)
            return lambda: cp.add(xc, yc, out=out)

        rows.append(measure("vector_add", (n,), "fp32", 3 * n * 4, make_set,
                            lambda inputs: inputs[0].double() + inputs[1].double(), 1e-6,
                            lambda inputs: torch.add(*inputs), cupy_add))
    return rows


def softmax_warps(block: int) -> int:
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


def softmax(shapes, dtypes):
    rows = []
    for (m, n) in shapes:
        for dtype in dtypes:
            block = triton.next_power_of_2(n)
            warps = softmax_warps(block)

            def make_set():
                x = torch.randn(m, n, device="cuda", dtype=dtype)
                return ((x,), lambda: (torch.full_like(x, float("nan")),),
                        lambda mod, out: mod.softmax_kernel[(m,)](out[0], x, x.stride(0), out[0].stride(0), n,
                                                                  BLOCK=block, num_warps=warps))

            name = "fp32" if dtype == torch.float32 else "fp16"
            rows.append(measure("softmax", (m, n), name, 2 * m * n * (4 if dtype == torch.float32 else 2),
                                make_set, lambda inputs: torch.softmax(inputs[0].double(), dim=1),
                                1e-5 if dtype == torch.float32 else 3e-3,
                                lambda inputs: torch.softmax(inputs[0], dim=1)))
    return rows


def layer_norm(shapes):
    rows = []
    for (m, n) in shapes:
        block = triton.next_power_of_2(n)
        warps = min(max(block // 256, 1), 16)

        def make_set():
            x = torch.randn(m, n, device="cuda", dtype=torch.float16)
            w = torch.rand(n, device="cuda", dtype=torch.float16)
            b = torch.rand(n, device="cuda", dtype=torch.float16)

            def make_out():
                return (torch.full_like(x, float("nan")), torch.full((m,), float("nan"), device="cuda"),
                        torch.full((m,), float("nan"), device="cuda"))

            def launch(mod, out):
                mod.layer_norm_kernel[(m,)](x, out[0], w, b, out[1], out[2], x.stride(0), n, 1e-5, BLOCK=block,
                                            num_warps=warps)
            return (x, w, b), make_out, launch

        def reference(inputs):
            x, w, b = inputs
            return torch.nn.functional.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5)

        nbytes = 2 * m * n * 2 + 2 * n * 2 + 2 * m * 4
        rows.append(measure("layer_norm", (m, n), "fp16", nbytes, make_set, reference, 3e-3,
                            lambda inputs: torch.nn.functional.layer_norm(inputs[0], (n,), inputs[1],
                                                                         inputs[2], 1e-5)))
    return rows


def warm_launch(count: int = 2000, processes: int = 5) -> dict:
    """Host time per launch of a tiny kernel (the launch path, not the kernel), in fresh processes: in
    this one, after gigabytes of buffers and CUDA graphs, every contender's launch (CuPy's aside) read
    2-4 us slower than in a clean process, and fresh processes differ by up to 1.5x among themselves
    (the host's speed; the driver call alone moves with it). So several processes are run; the figure
    is the median over them, with the slowest and fastest beside it. Within a process the contenders
    alternate over rounds; the driver's own cuLaunchKernel of our kernel, called directly, is the floor
    under everyone."""
    runs = []
    for _ in range(processes):
        done = subprocess.run([sys.executable, str(HERE / "warm_launch.py"), str(count)], capture_output=True,
                              text=True, env=dict(os.environ, PYTHONPATH=str(HERE.parent)))
        if done.returncode != 0:
            raise RuntimeError(f"warm launch timing failed:\n{done.stderr[-3000:]}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    out = {who: float(np.median([r[who] for r in runs])) for who in runs[0]}
    out["per_process"] = runs
    return out


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
          f"{'ratio':>8}  rounds (min-max)  do_bench ratio   A/A")
    for r in results["kernels"]:
        spread = r.get("ratio_spread", [0, 0])
        print(f"{r['workload']:<12}{'x'.join(map(str, r['shape'])):<16}{r['dtype']:<6}"
              f"{r['tileworkbench_TBps']:>10.2f}{r['triton_TBps']:>9.2f}{r.get('torch_TBps', 0):>8.2f}"
              f"{r['ratio_vs_triton']:>8.3f}  {spread[0]:.3f}-{spread[1]:.3f}"
              f"{r['do_bench_ratio_vs_triton']:>10.3f}{r.get('control_ratio', float('nan')):>10.3f}"
              f"{'' if r['correct'] else '  WRONG'}")
    for name, error in results["errors"].items():
        print(f"{name}: FAILED {error}")
    launch = results["warm_launch_us"]
    print("\nwarm launch (host us/launch, median over fresh processes [min-max]):")
    for who in (k for k in launch if k != "per_process"):
        each = [r[who] for r in launch.get("per_process", [])] or [launch[who]]
        print(f"  {who:<24}{launch[who]:>7.2f}  [{min(each):.2f}-{max(each):.2f}]")
    print("compile (s):", json.dumps(results["compile"], indent=1))


def main() -> None:
    global ROUNDS
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer shapes")
    parser.add_argument("--out", default=None)
    parser.add_argument("--skip", default="", help="comma list of parts to skip: add,softmax,layernorm,launch,compile")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="timing rounds per kernel (median taken)")
    parser.add_argument("--softmax-shapes", default=None, help="e.g. 4096x1024,4096x4096 (default: all four)")
    parser.add_argument("--softmax-dtypes", default="fp32,fp16")
    args = parser.parse_args()
    ROUNDS = args.rounds
    skip = set(filter(None, args.skip.split(",")))
    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(),
        "versions": {"triton": triton.__version__, "torch": torch.__version__, "cupy": cp.__version__,
                     "tileworkbench": tw.__version__},
        "kernels": [],
        "rounds": args.rounds,
    }
    sizes = [2**20, 2**24] if args.quick else [2**20, 2**24, 2**28]
    shapes = [(4096, 1024), (4096, 4096)] if args.quick else [(4096, 1024), (4096, 4096), (4096, 16384),
                                                              (16384, 1000)]
    if args.softmax_shapes:
        shapes = [tuple(int(d) for d in s.split("x")) for s in args.softmax_shapes.split(",")]
    dtypes = [{"fp32": torch.float32, "fp16": torch.float16}[d] for d in args.softmax_dtypes.split(",")]
    results["errors"] = {}
    out = Path(args.out) if args.out else \
        result_file.default_path(results["device"], "memory-bound")
    out.parent.mkdir(parents=True, exist_ok=True)
    parts = [
        ("add", "kernels", lambda: vector_add(sizes)),
        ("softmax", "kernels", lambda: softmax(shapes, dtypes)),
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
