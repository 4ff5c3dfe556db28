"""Side-by-side evidence for a benchmark shape where we trail Triton: both compilers' cubins and SASS
(`cuobjdump -sass`), ptxas resource figures, and one launch of each kernel for `ncu` to profile.

    PYTHONPATH=. python bench/profile_kernels.py --out DIR            # SASS, resources, timings
    ncu --clock-control none -k regex:'layer_norm|softmax' --section SpeedOfLight --section Occupancy \
        --section WarpStateStats python bench/profile_kernels.py --once   # one launch each, profiled
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch
import triton
import triton.testing

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import kernels  # noqa: E402

OURS = kernels.load("tileworkbench")
THEIRS = kernels.load("triton")


def layer_norm_case(m: int, n: int):
    x = torch.randn(m, n, device="cuda", dtype=torch.float16)
    w = torch.rand(n, device="cuda", dtype=torch.float16)
    b = torch.rand(n, device="cuda", dtype=torch.float16)
    block = triton.next_power_of_2(n)
    warps = min(max(block // 256, 1), 16)
    y = torch.empty_like(x)
    mean, rstd = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")

    def launch(mod):
        return mod.layer_norm_kernel[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, 1e-5, BLOCK=block,
                                           num_warps=warps)
    return launch


def softmax_case(m: int, n: int, dtype=torch.float16):
    x = torch.randn(m, n, device="cuda", dtype=dtype)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16

    def launch(mod):
        return mod.softmax_kernel[(m,)](y, x, x.stride(0), y.stride(0), n, BLOCK=block, num_warps=warps)
    return launch


CASES = {
    "layer_norm_4096x8192": lambda: layer_norm_case(4096, 8192),
    "layer_norm_4096x4096": lambda: layer_norm_case(4096, 4096),
    "softmax_fp16_4096x1024": lambda: softmax_case(4096, 1024),
    "softmax_fp32_4096x1024": lambda: softmax_case(4096, 1024, torch.float32),
    "softmax_fp32_16384x1000": lambda: softmax_case(16384, 1000, torch.float32),
}


def _sass(cubin: bytes, path: Path) -> str:
    path.write_bytes(cubin)
    tool = shutil.which("cuobjdump")
    if tool is None:
        return ""
    done = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/profile")
    parser.add_argument("--once", action="store_true", help="one launch of each kernel (for ncu)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cases", default=",".join(CASES), help="comma list of " + ", ".join(CASES))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {}
    for name in args.cases.split(","):
        launch = CASES[name]()
        ours, theirs = launch(OURS), launch(THEIRS)  # compile and warm up
        torch.cuda.synchronize()
        if args.once:
            launch(OURS), launch(THEIRS)
            torch.cuda.synchronize()
            continue
        entry = {"ours_regs": ours.n_regs, "triton_regs": theirs.n_regs, "ours_spills": ours.n_spills,
                 "triton_spills": theirs.n_spills}
        for who, compiled in (("ours", ours), ("triton", theirs)):
            cubin = compiled.asm["cubin"] if who == "triton" else compiled.cubin
            sass = _sass(cubin, out / f"{name}_{who}.cubin")
            (out / f"{name}_{who}.sass").write_text(sass)
            entry[f"{who}_sass_lines"] = len(sass.splitlines())
        # interleaved rounds: the spread of the ratio shows what is noise
        times = {"ours": [], "triton": []}
        for _ in range(args.rounds):
            for who, mod in (("ours", OURS), ("triton", THEIRS)):
                times[who].append(triton.testing.do_bench(lambda: launch(mod), warmup=10, rep=50))
        entry["ours_ms"], entry["triton_ms"] = times["ours"], times["triton"]
        entry["ratios"] = [t / o for t, o in zip(times["triton"], times["ours"])]
        report[name] = entry
        print(name, json.dumps({k: v for k, v in entry.items() if not k.endswith("_ms")}), flush=True)
    if not args.once:
        (out / "profile.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
