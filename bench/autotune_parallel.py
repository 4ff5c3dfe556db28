"""Cold autotunes side by side in one run: the sequential tuner, the parallel tuner timing every
config in full, and the parallel tuner with screening (issue 24).

    PYTHONPATH=. python3 bench/autotune_parallel.py                 # on the GPU host
    PYTHONPATH=. python3 bench/autotune_parallel.py --cpu --quick   # no GPU: cpu target, reduced

GPU workloads: Triton's tutorial 06 attention forward, its own source (host descriptors, its 21
Hopper configs, Z4 H32 N4096 fp16, head dim 64 and 128), where the tutorial file is found
(TRITON_TUTORIALS_DIR or `.tutorials/`; tests/tutorials/tutorial_loader.py), else the attention
kernel of bench/kernels.py under the same 21 (BLOCK_M, BLOCK_N, stages, warps); and a 32-config
autotune of tutorial 03's matmul (bench/kernels.py, 4096^3 fp16). The cpu workload: the same
matmul on the cpu target, 8 configs at 128^3.

Each workload is tuned from cold (an empty on-disk cache, no compiled kernel in memory) once per
mode: `sequential` (TILEWORKBENCH_COMPILE_WORKERS=0: compile, time in full, next: the baseline),
`parallel` (worker processes, every config timed in full as soon as it is built), `screen`
(worker processes, a short timing per config as it is built, the finalists timed in full: the
default), each with the pool of workers already up (it is kept between tunes; its start is
`pool_start_s`), and `screen-cold` (the pool and its forkserver stopped first: the start counts).
The modes run in a rotating order. The first call (which tunes, then launches) is timed to a device
synchronize; its output is checked against float64 (poisoned with NaN first). Then every mode's
choice is timed again with the same do_bench (warmup 25, rep 100, median), the sequential choice
twice, first and last (its ratio is the A/A figure: what timing noise alone gives), in 3 rounds over
the list (each entry's median of its rounds). Per mode: the
wall seconds, the ratio to sequential, the wall split (built: compiling and timing as configs
arrive; finalists), the per-config sums of compile, load, screen and bench seconds, and the choice's
re-timed ms over the sequential choice's.

`pool` compares worker starts on the matmul: for spawn, for forkserver with the compiler
preloaded, and for forks of this process (TILEWORKBENCH_COMPILE_START=fork), the pool's start, and a worker's
first and second compile against the parent's.

JSON goes to bench/results/<device>-autotune-parallel.json (bench/result_file.py) unless --out.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for folder in (ROOT, ROOT / "tests" / "tutorials"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import tileworkbench as tw  # noqa: E402
from bench import kernels, result_file  # noqa: E402
from tileworkbench.config import config  # noqa: E402
from tileworkbench.runtime import compile_pool, parallel_compile  # noqa: E402

# tutorial 06's configs on Hopper: BM in 64, 128; BN in 32, 64, 128; stages 2-4; warps 4, 8, less
# those with BM * BN < 128 * 128 at 8 warps (its `keep`): 21
ATTENTION_CONFIGS = [
    tw.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_stages=s, num_warps=w)
    for bm in (64, 128) for bn in (32, 64, 128) for s in (2, 3, 4) for w in (4, 8)
    if not (bm * bn < 128 * 128 and w == 8)
]
MATMUL_CONFIGS = [
    tw.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8}, num_stages=s, num_warps=w)
    for bm in (64, 128) for bn in (64, 128) for bk in (32, 64) for s in (3, 4) for w in (4, 8)
]
CPU_CONFIGS = [
    tw.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 4}, num_warps=4)
    for bm in (16, 32) for bn in (16, 32) for bk in (16, 32)
]
attention_tuned = tw.autotune(configs=ATTENTION_CONFIGS, key=["N_CTX", "HEAD_DIM"])(
    kernels.attn_fwd_kernel)
matmul_tuned = tw.autotune(configs=MATMUL_CONFIGS, key=["M", "N", "K"])(kernels.matmul_kernel)
cpu_matmul_tuned = tw.autotune(configs=CPU_CONFIGS, key=["M", "N", "K"], warmup=5, rep=20)(
    kernels.matmul_kernel)

MODES = ("sequential", "parallel", "screen", "screen-cold")


@dataclass
class Prepared:
    """A workload's inputs, made: `launch()` launches once (tuning first when cold), `sync()` waits
    for the device; `error()` is the last output's relative error against float64."""

    launch: Callable[[], None]
    error: Callable[[], float]
    sync: Callable[[], None] = lambda: None


def _reset(tuner) -> None:
    """Forget every tuning and every compiled kernel held in memory: the next call tunes cold."""
    tuner.cache.clear()
    inner = tuner.fn
    while inner is not None:
        if hasattr(inner, "clear_cache"):
            inner.clear_cache()
        inner = getattr(inner, "fn", None)


def _tutorial_folder() -> Path | None:
    for folder in (os.environ.get("TRITON_TUTORIALS_DIR"), ROOT / ".tutorials"):
        if folder and (Path(folder) / "06-fused-attention.py").is_file():
            return Path(folder)
    return None


def _relative_error(out, reference) -> float:
    import numpy as np

    def host(x):
        return x.detach().cpu().double().numpy() if hasattr(x, "detach") else np.asarray(x, float)

    expected = host(reference)
    got = host(out).reshape(-1, *expected.shape[1:])[: expected.shape[0]]
    if not np.isfinite(got).all():
        return math.inf
    return float(np.abs(got - expected).max() / max(np.abs(expected).max(), 1e-30))


# -- workloads: each returns (tuner, setup); setup() makes fresh inputs -> Prepared ---------------


def tutorial_attention(head_dim: int, causal: bool):
    from tutorial_loader import load_tutorial

    module = load_tutorial(_tutorial_folder() / "06-fused-attention.py")

    def setup() -> Prepared:
        import torch

        q, k, v = _attention_inputs(torch, (4, 32, 4096, head_dim))
        out = {}

        def launch():
            # warp_specialize off: host descriptors
            out["o"] = module.attention(q, k, v, causal, 0.5, False)

        return Prepared(launch, lambda: _relative_error(
            out["o"], _attention_reference(q, k, v, causal, 0.5)), torch.cuda.synchronize)

    return module._attn_fwd, setup


def bench_attention(head_dim: int, causal: bool):
    def setup() -> Prepared:
        import torch

        z, h, n = 4, 32, 4096
        q, k, v = _attention_inputs(torch, (z * h, n, head_dim))
        out = torch.full_like(q, float("nan"))
        grid = lambda meta: (tw.cdiv(n, meta["BLOCK_M"]), z * h)  # noqa: E731

        def launch():
            attention_tuned[grid](q, k, v, out, 0.5, n * head_dim, head_dim, n,
                                  HEAD_DIM=head_dim, CAUSAL=causal)

        return Prepared(launch, lambda: _relative_error(
            out, _attention_reference(q, k, v, causal, 0.5)), torch.cuda.synchronize)

    return attention_tuned, setup


def _attention_inputs(torch, shape):
    torch.manual_seed(0)
    return tuple(torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(3))


def _attention_reference(q, k, v, causal, scale):
    """float64 attention of the first two heads (all of them would take long in float64)."""
    import torch

    q, k, v = (t.reshape(-1, t.shape[-2], t.shape[-1])[:2].double() for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) * scale
    if causal:
        n = scores.shape[-1]
        scores = scores.masked_fill(torch.ones(n, n, device=q.device).triu(1).bool(), float("-inf"))
    return torch.softmax(scores, -1) @ v


def gpu_matmul():
    def setup() -> Prepared:
        import torch

        size = 4096
        torch.manual_seed(0)
        a = torch.randn((size, size), device="cuda", dtype=torch.float16)
        b = torch.randn((size, size), device="cuda", dtype=torch.float16)
        c = torch.full((size, size), float("nan"), device="cuda", dtype=torch.float16)
        grid = lambda meta: (tw.cdiv(size, meta["BM"]) * tw.cdiv(size, meta["BN"]),)  # noqa: E731
        args = (a, b, c, size, size, size, *a.stride(), *b.stride(), *c.stride())

        def launch():
            matmul_tuned[grid](*args)

        return Prepared(launch, lambda: _relative_error(c, a[:256].double() @ b.double()),
                        torch.cuda.synchronize)

    return matmul_tuned, setup


def cpu_matmul():
    def setup() -> Prepared:
        import numpy as np

        size = 128
        rng = np.random.default_rng(0)
        a = rng.standard_normal((size, size)).astype(np.float32)
        b = rng.standard_normal((size, size)).astype(np.float32)
        c = np.full((size, size), np.nan, np.float32)
        grid = lambda meta: (tw.cdiv(size, meta["BM"]) * tw.cdiv(size, meta["BN"]),)  # noqa: E731
        args = (a, b, c, size, size, size, size, 1, size, 1, size, 1)

        def launch():
            cpu_matmul_tuned[grid](*args)

        return Prepared(launch, lambda: _relative_error(c, a.astype(np.float64) @ b))

    return cpu_matmul_tuned, setup


# -- one cold tune ---------------------------------------------------------------------------------


def _mode_settings(mode: str) -> dict:
    if mode == "sequential":
        return {"compile_workers": 0, "autotune_screen": False}
    return {"compile_workers": None, "autotune_screen": mode != "parallel"}


def cold_tune(tuner, setup, mode: str) -> dict:
    """Tune from an empty cache in `mode`; the first call's seconds, the choice and every
    config's outcome."""
    prepared = setup()  # the inputs are made before the clock starts
    prepared.sync()
    cache = Path(tempfile.mkdtemp(prefix="tw-autotune-bench-"))
    values = {"cache_dir": cache, **_mode_settings(mode)}
    saved = {name: getattr(config, name) for name in values}
    pool_start = None
    if mode == "screen-cold":
        compile_pool.shutdown(forkserver=True)
    elif mode != "sequential":
        pool_start = _start_pool()
    for name, value in values.items():
        setattr(config, name, value)
    _reset(tuner)
    try:
        begin = time.perf_counter()
        prepared.launch()
        prepared.sync()
        seconds = time.perf_counter() - begin
    finally:
        for name, value in saved.items():
            setattr(config, name, value)
        shutil.rmtree(cache, ignore_errors=True)
    results = {str(c): dict(r) for c, r in tuner.last_results.items()}
    sums = {what: sum(r.get(what) or 0.0 for r in results.values())
            for what in ("compile_s", "load_s", "screen_s", "bench_s")}
    return {
        "seconds": seconds,
        "tune_seconds": tuner.bench_time_s,
        "phases": dict(getattr(tuner, "phase_seconds", {})),
        "sums": sums,
        "pool_start_s": pool_start,
        "pool": compile_pool.info() if mode != "sequential" else None,
        "choice": tuner.best_config,
        "configs": len(results),
        "failed": sum("error" in r for r in results.values()),
        "finalists": sum(bool(r.get("finalist")) for r in results.values()),
        "max_relative_error": prepared.error(),
        "results": results,
    }


def _start_pool() -> float:
    """Start the pool now if it is not up (as TILEWORKBENCH_COMPILE_PRESTART would, earlier);
    the seconds that took (0: it was up)."""
    workers = parallel_compile.worker_count(10**6)
    if compile_pool.ready(workers):
        return 0.0
    begin = time.perf_counter()
    compile_pool.pool(workers, target=parallel_compile.launch_target({}))
    return time.perf_counter() - begin


def retime(tuner, setup, choices: list, warmup: float, rep: float, rounds: int = 3
           ) -> list[float]:
    """Each config of `choices` launched by the tuner (pinned as its choice for every key) and
    timed with the same do_bench (its median), `rounds` times over the list in turn: the median
    of each entry's rounds, in order."""
    import statistics

    from tileworkbench.runtime.testing import do_bench

    prepared = setup()
    prepared.launch()  # a key to pin (the tune's; cached)
    prepared.sync()
    keys = list(tuner.cache) or [None]
    times: list[list[float]] = [[] for _ in choices]
    for _ in range(rounds):
        for index, choice in enumerate(choices):
            for key in keys:
                tuner.cache[key] = choice
            times[index].append(float(do_bench(prepared.launch, warmup=warmup, rep=rep,
                                               quantiles=(0.5,))))
    return [statistics.median(entry) for entry in times]


def compare(name: str, make, order: tuple[str, ...], warmup: float, rep: float) -> dict:
    tuner, setup = make()
    runs = {mode: cold_tune(tuner, setup, mode) for mode in order}
    seq = runs["sequential"]
    # the sequential choice first and last (A/A), each mode's choice between
    choices = [seq["choice"]] + [runs[mode]["choice"] for mode in MODES if mode in runs]
    times = retime(tuner, setup, choices + [seq["choice"]], warmup, rep)
    first, last = times[0], times[-1]
    row = {"workload": name, "sequential_s": seq["seconds"],
           "aa_ratio": last / first, "sequential_choice_ms": [first, last], "modes": {}}
    for index, mode in enumerate(m for m in MODES if m in runs):
        run = runs[mode]
        ms = times[1 + index]
        row["modes"][mode] = {
            "seconds": run["seconds"], "ratio": run["seconds"] / seq["seconds"],
            "choice": str(run["choice"]), "same_choice": str(run["choice"]) == str(seq["choice"]),
            "choice_ms": ms, "choice_vs_sequential": ms / first,
        }
        run["choice"] = str(run["choice"])
    row["runs"] = runs
    _print_row(row)
    return row


def _print_row(row: dict) -> None:
    print(f"{row['workload']}: A/A {row['aa_ratio']:.3f}", flush=True)
    for mode, summary in row["modes"].items():
        run = row["runs"][mode]
        sums = ", ".join(f"{k} {v:.2f}" for k, v in run["sums"].items() if v)
        print(f"  {mode:12s} {summary['seconds']:6.2f} s  {summary['ratio']:.3f}x  choice "
              f"{summary['choice_vs_sequential']:.3f} ({'same' if summary['same_choice'] else 'differs'}"
              f": {summary['choice']}); finalists {run['finalists']}, failed {run['failed']}; "
              f"sums {sums}; pool start {run['pool_start_s']}; rel error "
              f"{run['max_relative_error']:.2g}", flush=True)


# -- worker starts ---------------------------------------------------------------------------------


def pool_starts(target: str, configs: list) -> dict:
    """For spawn, forkserver+preload and fork: the pool's start (one worker), then a worker's
    first and second compile of the 4096^3 fp16 matmul (two configs, for `target`, no launch: stand-in
    arguments), against the parent's compile of the same two configs."""
    saved = config.cache_dir, config.compile_start, config.target
    out = {}
    try:
        for method in ("spawn", "forkserver", "fork"):
            config.compile_start = method
            compile_pool.shutdown(forkserver=True)
            config.cache_dir = Path(tempfile.mkdtemp(prefix="tw-pool-bench-"))
            begin = time.perf_counter()
            compile_pool.pool(1, target=target)
            started = time.perf_counter() - begin
            compiles = []
            for index, config_ in enumerate(configs[:2]):  # one worker: first, then second
                job = _matmul_job(str(index), target, config_)
                built = list(parallel_compile.build({job.label: job}, workers=1))
                if built[0].fallback or built[0].error:
                    raise RuntimeError(f"the worker did not build it: {built[0]}")
                compiles.append(built[0].seconds)
            out[method] = {"pool_start_s": started, "first_compile_s": compiles[0],
                           "second_compile_s": compiles[1], **_all_at_once(target, configs)}
            shutil.rmtree(config.cache_dir, ignore_errors=True)
        config.cache_dir = Path(tempfile.mkdtemp(prefix="tw-pool-bench-"))
        config.target = target
        parent = []
        for config_ in configs[:2]:
            begin = time.perf_counter()
            compiled = kernels.matmul_kernel.run(*_matmul_stand_ins(), grid=(1,), warmup=True,
                                                 **config_.all_kwargs())
            getattr(compiled, "_wait", lambda: None)()  # ptxas, as a worker waits for it
            parent.append(time.perf_counter() - begin)
        out["parent"] = {"first_compile_s": parent[0], "second_compile_s": parent[1]}
        shutil.rmtree(config.cache_dir, ignore_errors=True)
    finally:
        config.cache_dir, config.compile_start, config.target = saved
        compile_pool.shutdown(forkserver=True)
    print(f"pool starts ({target}): {json.dumps(out)}", flush=True)
    return out


def _all_at_once(target: str, configs: list) -> dict:
    """A pool of one worker per core (up to 16) started afresh (the forkserver kept), then as many
    configs built at once, one per worker: the start, the wall time and the mean compile."""
    compile_pool.shutdown()
    workers = min(os.cpu_count() or 1, 16, len(configs))
    begin = time.perf_counter()
    compile_pool.pool(workers, target=target)
    started = time.perf_counter() - begin
    saved, config.cache_dir = config.cache_dir, Path(tempfile.mkdtemp(prefix="tw-pool-bench-"))
    try:  # an empty cache: the two configs built before are built again
        jobs = {str(i): _matmul_job(str(i), target, c) for i, c in enumerate(configs[:workers])}
        begin = time.perf_counter()
        built = list(parallel_compile.build(jobs, workers=workers))
        wall = time.perf_counter() - begin
    finally:
        shutil.rmtree(config.cache_dir, ignore_errors=True)
        config.cache_dir = saved
    seconds = [b.seconds for b in built if b.seconds is not None and b.fallback is None]
    return {"all_at_once": {"workers": workers, "pool_start_s": started, "build_wall_s": wall,
                            "mean_compile_s": sum(seconds) / max(1, len(seconds))}}


def _matmul_stand_ins(size: int = 4096) -> tuple:
    """The matmul's arguments as a worker sees them: fp16 arrays (16-byte aligned), sizes and
    strides."""
    arrays = [parallel_compile.ArrayStandIn("float16", 1 << 20, (size, size), (size, 1))
              for _ in range(3)]
    return (*arrays, size, size, size, size, 1, size, 1, size, 1)


def _matmul_job(label: str, target: str, config_) -> parallel_compile.CompileJob:
    encode = parallel_compile.encode_value
    return parallel_compile.CompileJob(
        label, *parallel_compile.locate(kernels.matmul_kernel),
        args=[encode(value) for value in _matmul_stand_ins()],
        kwargs={name: encode(value) for name, value in config_.all_kwargs().items()},
        settings=parallel_compile.worker_settings(target))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="the JSON file (default: bench/results/...)")
    parser.add_argument("--cpu", action="store_true", help="the cpu target's matmul (no GPU)")
    parser.add_argument("--quick", action="store_true",
                        help="a reduced run (with --cpu: to check the script here)")
    parser.add_argument("--causal", action="store_true", help="causal attention (STAGE 3)")
    parser.add_argument("--only", help="run the workloads whose name contains this")
    options = parser.parse_args()
    target = "cpu" if options.cpu else "sm_90a"
    tw.compile(kernels.add_kernel, "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32",
               {"BLOCK": 128}, target=target)  # imports, fingerprint
    workloads = []
    if options.cpu:
        config.target = "cpu"
        workloads.append(("matmul-cpu-8", cpu_matmul))
        warmup, rep = 5, 20
        device = f"cpu ({_host_cpu()})"
    else:
        import torch

        tutorial = _tutorial_folder()
        for head_dim in (64, 128):
            if tutorial is not None:
                make = (lambda d: lambda: tutorial_attention(d, options.causal))(head_dim)
                workloads.append((f"attention-tutorial06-d{head_dim}", make))
            else:
                make = (lambda d: lambda: bench_attention(d, options.causal))(head_dim)
                workloads.append((f"attention-bench-d{head_dim}", make))
        workloads.append(("matmul-32", gpu_matmul))
        warmup, rep = 25, 100
        device = torch.cuda.get_device_name()
    if options.quick:
        warmup, rep = 2, 5
    report = {
        "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
        "device": device, "causal": options.causal, "quick": options.quick,
        "pool": {"sm_90a": pool_starts("sm_90a", MATMUL_CONFIGS)},
        "workloads": [],
    }
    if options.cpu:
        report["pool"]["cpu"] = pool_starts("cpu", CPU_CONFIGS)
    for index, (name, make) in enumerate(workloads):
        if options.only and options.only not in name:
            continue
        order = MODES[index % len(MODES):] + MODES[:index % len(MODES)]
        report["workloads"].append(compare(name, make, order, warmup, rep))
    compile_pool.shutdown()
    quick = "-quick" if options.quick else ""
    out = options.out or (
        result_file.default_path("cpu", f"{_host_cpu()}-autotune-parallel{quick}") if options.cpu
        else result_file.default_path(device, f"autotune-parallel{quick}"))
    out.write_text(json.dumps(report, indent=1, default=str))
    print(f"wrote {out}")
    bad = [r["workload"] for r in report["workloads"]
           for run in r["runs"].values() if not run["max_relative_error"] < 1e-2]
    if bad:
        print(f"wrong results: {bad}")
    return 1 if bad else 0


def _host_cpu() -> str:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    return llvm.get_host_cpu_name()


if __name__ == "__main__":
    sys.exit(main())
