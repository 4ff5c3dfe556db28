"""GPU probe of the mma.sync matmul: fp16 and bf16 at 4096^3, a few block configs, each checked against
float64 and timed beside Triton (the same source, on mma.sync with DISABLE_MMA_V3=1, and on its default
wgmma path) and cuBLAS (torch.matmul), in one process. Ours is compiled for target "sm_90" explicitly:
mma.sync, whatever the H200's default target becomes once wgmma lands.

    PYTHONPATH=. python3 tools/probe_mma.py      # a table; exits 1 on a wrong result

Columns: TFLOP/s (do_bench median, L2 flushed), our registers/spills/shared bytes, compile seconds.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

os.environ["TILEWORKBENCH_TARGET"] = "sm_90"  # mma.sync: never sm_90a's wgmma in this probe
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.testing  # noqa: E402

import kernels  # noqa: E402

SIZE = 4096
CONFIGS = [  # (BM, BN, BK, num_warps, num_stages)
    (128, 128, 32, 4, 4), (128, 128, 64, 4, 3), (128, 256, 64, 8, 3), (256, 128, 64, 8, 3),
    (128, 256, 32, 8, 4), (128, 128, 64, 8, 3),
]
TOLERANCE = 1e-2  # relative Frobenius error of fp16/bf16 inputs, fp32 accumulation, rounded output


@contextlib.contextmanager
def triton_mma_v2(on: bool):
    """Triton compiles for mma.sync (MMAv2) while DISABLE_MMA_V3=1 is set (read at compile time)."""
    if on:
        os.environ["DISABLE_MMA_V3"] = "1"
    try:
        yield
    finally:
        os.environ.pop("DISABLE_MMA_V3", None)


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median")


def rel_err(got: torch.Tensor, want: torch.Tensor) -> float:
    return ((got.double() - want).norm() / want.norm()).item()


def main() -> int:
    ours = kernels.load("tileworkbench")
    wgmma = kernels.load("triton")
    # a module of its own keeps Triton's in-memory kernel cache apart from wgmma's; DISABLE_MMA_V3 is
    # part of Triton's on-disk cache key
    mma_v2 = kernels.load("triton")
    flops = 2.0 * SIZE**3
    bad = 0
    print(f"{'dtype':<5} {'config':<18} {'ours':>7} {'tri-v2':>7} {'tri-v3':>7} {'cuBLAS':>7} "
          f"{'/v2':>5} {'/cuBLAS':>7}  regs/spill/smem     compile  err", flush=True)
    for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        torch.manual_seed(0)
        a = torch.randn(SIZE, SIZE, device="cuda", dtype=dtype)
        b = torch.randn(SIZE, SIZE, device="cuda", dtype=dtype)
        want = a.double() @ b.double()
        c = torch.empty(SIZE, SIZE, device="cuda", dtype=dtype)
        cublas = bench(lambda: torch.matmul(a, b, out=c))

        def launch(mod, config, out):
            bm, bn, bk, warps, stages = config
            grid = (triton.cdiv(SIZE, bm) * triton.cdiv(SIZE, bn),)
            return mod.matmul_kernel[grid](a, b, out, SIZE, SIZE, SIZE, a.stride(0), a.stride(1),
                                           b.stride(0), b.stride(1), out.stride(0), out.stride(1),
                                           BM=bm, BN=bn, BK=bk, GROUP_M=8, num_warps=warps,
                                           num_stages=stages)

        for config in CONFIGS:
            row = {}
            for who, mod in (("ours", ours), ("v2", mma_v2), ("v3", wgmma)):
                out = torch.full((SIZE, SIZE), float("nan"), device="cuda", dtype=dtype)
                start = time.perf_counter()
                try:
                    with triton_mma_v2(who == "v2"):
                        compiled = launch(mod, config, out)
                        torch.cuda.synchronize()
                except Exception as error:  # a config Triton cannot take is reported, not fatal
                    row[who] = (None, f"{type(error).__name__}: {str(error)[:80]}", None, None)
                    if who == "ours":
                        bad += 1
                        print(f"FAILED: ours {name} {config}: {row[who][1]}", flush=True)
                    continue
                seconds = time.perf_counter() - start
                err = rel_err(out, want)
                ms = None
                if err <= TOLERANCE:
                    with triton_mma_v2(who == "v2"):
                        ms = bench(lambda mod=mod: launch(mod, config, c))
                row[who] = (ms, err, compiled, seconds)
                if err > TOLERANCE or err != err:
                    bad += 1
                    print(f"WRONG: {who} {name} {config}: relative error {err:.3g}", flush=True)

            def tflops(who):
                ms = row[who][0]
                return f"{flops / ms / 1e9:7.1f}" if ms else f"{'-':>7}"

            ms_ours, err, compiled, seconds = row["ours"]
            ms_v2 = row["v2"][0]
            res = "failed"
            if compiled is not None:
                res = f"{compiled.n_regs}/{compiled.n_spills}/{compiled.metadata.shared}"
                if "mma.sync" not in compiled.asm["ptx"]:
                    res += " NO-MMA"
            ratio_v2 = f"{ms_v2 / ms_ours:5.2f}" if ms_ours and ms_v2 else f"{'-':>5}"
            ratio_cublas = f"{cublas / ms_ours:7.3f}" if ms_ours else f"{'-':>7}"
            compile_s = f"{seconds:6.2f}s" if seconds else "     -"
            err_s = f"{err:.1e}" if isinstance(err, float) else "-"
            print(f"{name:<5} {'x'.join(map(str, config)):<18} {tflops('ours')} {tflops('v2')} "
                  f"{tflops('v3')} {flops / cublas / 1e9:7.1f} {ratio_v2} {ratio_cublas}  "
                  f"{res:<18} {compile_s}  {err_s}", flush=True)
            for who in ("v2", "v3"):
                if row[who][0] is None and isinstance(row[who][1], str):
                    print(f"      triton {who}: {row[who][1]}", flush=True)
    print("ratios: /v2 = Triton mma.sync time over ours, /cuBLAS = cuBLAS time over ours "
          "(> 1: ours faster)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
