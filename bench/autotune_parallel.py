"""Cold autotunes, sequential against parallel compilation, side by side in one run (issue 24).

    PYTHONPATH=. python3 bench/autotune_parallel.py --out FILE.json        # on the GPU host
    PYTHONPATH=. python3 bench/autotune_parallel.py --cpu --out FILE.json  # no GPU: cpu target

GPU workloads: Triton's tutorial 06 attention forward, its own source (host descriptors, its 21
Hopper configs, Z4 H32 N4096 fp16, head dim 64 and 128), where the tutorial file is found
(TRITON_TUTORIALS_DIR or `.tutorials/`; tests/tutorials/tutorial_loader.py), else the attention
kernel of bench/kernels.py under the same 21 (BLOCK_M, BLOCK_N, stages, warps); and a 32-config
autotune of tutorial 03's matmul (bench/kernels.py, 4096^3 fp16). The cpu workload: the same
matmul on the cpu target, 8 configs at 128^3 (a host with few cores).

Each workload is tuned twice from cold, each time with an empty on-disk cache and an empty in-memory
cache: sequentially (TILEWORKBENCH_COMPILE_WORKERS=0: compile, time, next) and in parallel (the
default: one worker process per config up to the CPU count, timing each config as soon as it is
built; the worker pool's start is part of the parallel time). The first call (which tunes, then
launches) is timed to a device synchronize; its output is checked against float64 (poisoned with NaN
first). The JSON has each run's seconds, the ratio parallel / sequential, both choices, and the time
the sequential tune measured for the parallel tune's choice (the choice matches up to timing noise
when that is within a few percent of the sequential choice's), with every config's compile and bench
seconds and where it ran.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for folder in (ROOT, ROOT / "tests" / "tutorials"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import tileworkbench as tw  # noqa: E402
from bench import kernels  # noqa: E402
from tileworkbench.config import config  # noqa: E402
from tileworkbench.runtime import parallel_compile  # noqa: E402

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


# -- workloads: each returns (tuner, call) where call() makes fresh inputs, launches once, and
# returns (output, float64 reference) ------------------------------------------------------------


def tutorial_attention(head_dim: int, causal: bool):
    import torch
    from tutorial_loader import load_tutorial

    module = load_tutorial(_tutorial_folder() / "06-fused-attention.py")
    z, h, n = 4, 32, 4096

    def call():
        torch.manual_seed(0)
        q, k, v = (torch.randn((z, h, n, head_dim), device="cuda", dtype=torch.float16)
                   for _ in range(3))
        out = module.attention(q, k, v, causal, 0.5, False)  # warp_specialize off: host descriptors
        torch.cuda.synchronize()
        return out, lambda: _attention_reference(q, k, v, causal, 0.5)

    return module._attn_fwd, call


def bench_attention(head_dim: int, causal: bool):
    import torch

    z, h, n = 4, 32, 4096

    def call():
        torch.manual_seed(0)
        q, k, v = (torch.randn((z * h, n, head_dim), device="cuda", dtype=torch.float16)
                   for _ in range(3))
        out = torch.full_like(q, float("nan"))
        grid = lambda meta: (tw.cdiv(n, meta["BLOCK_M"]), z * h)  # noqa: E731
        attention_tuned[grid](q, k, v, out, 0.5, n * head_dim, head_dim, n, HEAD_DIM=head_dim,
                              CAUSAL=causal)
        torch.cuda.synchronize()
        return out, lambda: _attention_reference(q, k, v, causal, 0.5)

    return attention_tuned, call


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
    import torch

    size = 4096

    def call():
        torch.manual_seed(0)
        a = torch.randn((size, size), device="cuda", dtype=torch.float16)
        b = torch.randn((size, size), device="cuda", dtype=torch.float16)
        c = torch.full((size, size), float("nan"), device="cuda", dtype=torch.float16)
        grid = lambda meta: (tw.cdiv(size, meta["BM"]) * tw.cdiv(size, meta["BN"]),)  # noqa: E731
        matmul_tuned[grid](a, b, c, size, size, size, *a.stride(), *b.stride(), *c.stride())
        torch.cuda.synchronize()
        return c, lambda: a[:256].double() @ b.double()

    return matmul_tuned, call


def cpu_matmul():
    import numpy as np

    size = 128

    def call():
        rng = np.random.default_rng(0)
        a = rng.standard_normal((size, size)).astype(np.float32)
        b = rng.standard_normal((size, size)).astype(np.float32)
        c = np.full((size, size), np.nan, np.float32)
        grid = lambda meta: (tw.cdiv(size, meta["BM"]) * tw.cdiv(size, meta["BN"]),)  # noqa: E731
        cpu_matmul_tuned[grid](a, b, c, size, size, size, size, 1, size, 1, size, 1)
        return c, lambda: a.astype(np.float64) @ b

    return cpu_matmul_tuned, call


# -- one cold tune ---------------------------------------------------------------------------------


def _relative_error(out, reference) -> float:
    import numpy as np

    def host(x):
        return x.detach().cpu().double().numpy() if hasattr(x, "detach") else np.asarray(x, float)

    expected = host(reference)
    got = host(out).reshape(-1, *expected.shape[1:])[: expected.shape[0]]
    if not np.isfinite(got).all():
        return math.inf
    return float(np.abs(got - expected).max() / max(np.abs(expected).max(), 1e-30))


def cold_tune(tuner, call, workers: int | None) -> dict:
    """Tune from an empty cache with `workers` compile processes (0: sequential)."""
    cache = Path(tempfile.mkdtemp(prefix="tw-autotune-bench-"))
    saved = config.cache_dir, config.compile_workers
    config.cache_dir, config.compile_workers = cache, workers
    parallel_compile.shutdown_pool()  # the pool's start counts in the parallel time
    _reset(tuner)
    try:
        begin = time.perf_counter()
        out, reference = call()
        seconds = time.perf_counter() - begin
    finally:
        config.cache_dir, config.compile_workers = saved
        shutil.rmtree(cache, ignore_errors=True)
    results = {str(c): dict(r) for c, r in tuner.last_results.items()}
    return {
        "workers": "sequential" if workers == 0 else parallel_compile.worker_count(len(results)),
        "seconds": seconds,
        "tune_seconds": tuner.bench_time_s,
        "choice": str(tuner.best_config),
        "configs": len(results),
        "failed": sum("error" in r for r in results.values()),
        "max_relative_error": _relative_error(out, reference()),
        "results": results,
    }


def compare(name: str, make, order: tuple[str, ...]) -> dict:
    tuner, call = make()
    runs = {}
    for mode in order:  # the other order for every other workload: neither run always goes first
        runs[mode] = cold_tune(tuner, call, 0 if mode == "sequential" else None)
    seq, par = runs["sequential"], runs["parallel"]
    seq_ms = {c: r.get("ms") for c, r in seq["results"].items()}
    chosen = seq_ms.get(par["choice"])
    row = {
        "workload": name,
        "sequential_s": seq["seconds"],
        "parallel_s": par["seconds"],
        "ratio": par["seconds"] / seq["seconds"],
        "same_choice": seq["choice"] == par["choice"],
        # the sequential tune's time of the parallel tune's choice, over its own choice's
        "choice_time_ratio": (chosen / seq_ms[seq["choice"]]) if chosen else None,
        "runs": runs,
    }
    print(f"{name}: sequential {seq['seconds']:.2f} s, parallel {par['seconds']:.2f} s "
          f"({par['workers']} workers): {row['ratio']:.3f}x; choice "
          f"{'same' if row['same_choice'] else 'differs'} ({seq['choice']} / {par['choice']}; "
          f"{row['choice_time_ratio'] or float('nan'):.3f}); max rel error "
          f"{seq['max_relative_error']:.2g} / {par['max_relative_error']:.2g}", flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the results here (JSON)")
    parser.add_argument("--cpu", action="store_true", help="the cpu target's matmul (no GPU)")
    parser.add_argument("--causal", action="store_true", help="causal attention (STAGE 3)")
    parser.add_argument("--only", help="run the workloads whose name contains this")
    options = parser.parse_args()
    tw.compile(kernels.add_kernel, "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32",
               {"BLOCK": 128}, target="cpu" if options.cpu else "sm_90a")  # imports, fingerprint
    workloads = []
    if options.cpu:
        config.target = "cpu"
        workloads.append(("matmul-cpu-8", cpu_matmul))
    else:
        tutorial = _tutorial_folder()
        for head_dim in (64, 128):
            if tutorial is not None:
                make = (lambda d: lambda: tutorial_attention(d, options.causal))(head_dim)
                workloads.append((f"attention-tutorial06-d{head_dim}", make))
            else:
                make = (lambda d: lambda: bench_attention(d, options.causal))(head_dim)
                workloads.append((f"attention-bench-d{head_dim}", make))
        workloads.append(("matmul-32", gpu_matmul))
    rows = []
    for index, (name, make) in enumerate(workloads):
        if options.only and options.only not in name:
            continue
        order = ("sequential", "parallel") if index % 2 == 0 else ("parallel", "sequential")
        rows.append(compare(name, make, order))
    parallel_compile.shutdown_pool()
    report = {
        "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
        "causal": options.causal, "workloads": rows,
    }
    if options.out:
        options.out.write_text(json.dumps(report, indent=1, default=str))
        print(f"wrote {options.out}")
    bad = [r["workload"] for r in rows
           for run in r["runs"].values() if not run["max_relative_error"] < 1e-2]
    if bad:
        print(f"wrong results: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
