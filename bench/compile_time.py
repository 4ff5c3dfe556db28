"""Cold compile time of the bench's matmul (bench/kernels.py, 128x128x64, fp16, 4 warps, 3 stages):
tileworkbench against Triton, each in fresh processes with empty caches.

    PYTHONPATH=. python bench/compile_time.py [--runs 5] [--out FILE.json] [--profile]

Kinds, each run in `--runs` fresh processes (interleaved), each with an empty cache directory:
- `ours-compile`: `tw.compile` for target sm_90 (mma.sync), to PTX and then to the cubin (ptxas);
  no GPU needed, so it also runs on a CPU-only machine.
- `ours-first-call`: the first `matmul_kernel[grid](...)` on torch CUDA tensors until its result is
  synchronized (compile, cubin, module load, launch), target sm_90.
- `triton-first-call`: the same first call compiled by Triton (empty TRITON_CACHE_DIR: its launcher
  stub is built too, as a user's first call builds it).
Imports (tileworkbench or triton, with the kernel module) are timed apart; torch and the CUDA context
are set up before the clock starts. The GPU kinds are skipped where torch sees no GPU or Triton is
missing. `--profile` prints a cProfile of one `ours-compile` instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONFIG = {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8}
NUM_WARPS, NUM_STAGES, SIZE = 4, 3, 4096
# what a launch on contiguous 4096x4096 fp16 tensors specializes to (16-byte aligned, % 16, == 1)
SIGNATURE = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32:16",
             "N": "i32:16", "K": "i32:16", "stride_am": "i32:16", "stride_ak": "i32:1",
             "stride_bk": "i32:16", "stride_bn": "i32:1", "stride_cm": "i32:16", "stride_cn": "i32:1"}


# -- children: one measurement each, in a fresh process; print one JSON line ------------------------


def _ours_compile() -> dict:
    start = time.perf_counter()
    sys.path.insert(0, str(HERE))
    import kernels

    import tileworkbench as tw

    module = kernels.load("tileworkbench")
    imported = time.perf_counter()
    cpu = time.process_time()
    compiled = tw.compile(module.matmul_kernel, signature=SIGNATURE, constexprs=CONFIG, target="sm_90",
                          num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    to_ptx = time.perf_counter()
    to_ptx_cpu = time.process_time() - cpu  # this process's CPU time: a busy host inflates wall time
    cubin = compiled.launch_cubin  # waits for ptxas (the disassembler may still run)
    to_cubin = time.perf_counter()
    return {"import_s": imported - start, "to_ptx_s": to_ptx - imported, "to_cubin_s": to_cubin - imported,
            "to_ptx_cpu_s": to_ptx_cpu,
            "ptxas_s": to_cubin - to_ptx, "has_cubin": cubin is not None,
            "mma_sync": "mma.sync" in compiled.ptx, "ptx_lines": compiled.ptx.count("\n")}


def _torch_inputs():
    import torch

    a = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    b = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    c = torch.full((SIZE, SIZE), float("nan"), device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    return torch, a, b, c


def _first_call(module, torch, a, b, c) -> tuple[float, float]:
    grid = ((SIZE // CONFIG["BM"]) * (SIZE // CONFIG["BN"]),)
    start = time.perf_counter()
    module.matmul_kernel[grid](a, b, c, SIZE, SIZE, SIZE, a.stride(0), a.stride(1), b.stride(0),
                               b.stride(1), c.stride(0), c.stride(1), **CONFIG, num_warps=NUM_WARPS,
                               num_stages=NUM_STAGES)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    want = a[:256].double() @ b.double()  # a row block against float64: the first result is right
    err = ((c[:256].double() - want).norm() / want.norm()).item()
    return seconds, err


def _first_call_kind(backend: str) -> dict:
    torch, a, b, c = _torch_inputs()  # CUDA context and inputs before the clock
    start = time.perf_counter()
    sys.path.insert(0, str(HERE))
    import kernels

    module = kernels.load(backend)
    imported = time.perf_counter()
    seconds, err = _first_call(module, torch, a, b, c)
    return {"import_s": imported - start, "first_call_s": seconds, "rel_err": err}


CHILDREN = {
    "ours-compile": _ours_compile,
    "ours-first-call": lambda: _first_call_kind("tileworkbench"),
    "triton-first-call": lambda: _first_call_kind("triton"),
}


def _child(kind: str) -> None:
    print(json.dumps(CHILDREN[kind]()), flush=True)


# -- the parent: fresh processes, empty caches --------------------------------------------------------


def _run_child(kind: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="compile_time_") as cache:
        env = dict(os.environ, TILEWORKBENCH_CACHE_DIR=os.path.join(cache, "tw"),
                   TRITON_CACHE_DIR=os.path.join(cache, "triton"), TILEWORKBENCH_TARGET="sm_90",
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        start = time.perf_counter()
        done = subprocess.run([sys.executable, __file__, "--child", kind], capture_output=True,
                              text=True, env=env, timeout=300)
        process_s = time.perf_counter() - start
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout).strip()[-600:]}
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["process_s"] = process_s
    return row


def _kinds() -> list[str]:
    kinds = ["ours-compile"]
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if gpu:
        kinds.append("ours-first-call")
        try:
            import triton  # noqa: F401

            kinds.append("triton-first-call")
        except ImportError:
            pass
    return kinds


def _summary(rows: list[dict]) -> dict:
    good = [r for r in rows if "error" not in r]
    out: dict = {"runs": len(rows), "errors": [r["error"] for r in rows if "error" in r]}
    for key in sorted({k for r in good for k, v in r.items() if k.endswith("_s")}):
        values = [r[key] for r in good if key in r]
        out[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
    return out


def _profile() -> None:
    import cProfile
    import pstats

    with tempfile.TemporaryDirectory() as cache:
        os.environ["TILEWORKBENCH_CACHE_DIR"] = cache
        profiler = cProfile.Profile()
        profiler.enable()
        row = _ours_compile()
        profiler.disable()
    print(json.dumps(row))
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=None)
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help="cProfile one ours-compile, in process")
    args = parser.parse_args()
    if args.child:
        return _child(args.child)
    if args.profile:
        return _profile()
    kinds = _kinds()
    rows: dict[str, list[dict]] = {k: [] for k in kinds}
    for _ in range(args.runs):
        for kind in kinds:  # interleaved, so a slow moment of the host hits every kind alike
            rows[kind].append(_run_child(kind))
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": os.uname().nodename,
              "config": {**CONFIG, "num_warps": NUM_WARPS, "num_stages": NUM_STAGES, "dtype": "fp16",
                         "size": SIZE, "target": "sm_90"},
              "summary": {k: _summary(v) for k, v in rows.items()}, "rows": rows}
    for kind, summary in result["summary"].items():
        parts = [f"{k[:-2]} {v['median']:.3f} s (min {v['min']:.3f})" for k, v in summary.items()
                 if isinstance(v, dict)]
        print(f"{kind:<18} " + ", ".join(parts) + (f"  ERRORS: {summary['errors'][:1]}"
                                                    if summary["errors"] else ""), flush=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
