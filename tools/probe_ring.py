"""GPU probe of the wgmma k loop's ring of cp.async slots: Triton's num_stages slots with a barrier
before each refill (our default) against num_stages + 1 slots (`TILEWORKBENCH_SPARE_SLOT=1`), beside
Triton, per block config, for the matmuls of bench/tensor_cores.py (fp16/bf16 4096^3, the skinny
8192x8192x512, fp8 e4m3 4096^3 with B K-major). Every contender's result is checked first; times are
paired (bench/paired_timing.py). Run from the repository root:

    PYTHONPATH=. python3 tools/probe_ring.py

Prints one row per (workload, config): TFLOP/s of ours, ours with the spare slot, Triton; the ratios
to Triton; the shared memory of both of ours. Exits 1 on a wrong result.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import kernels  # noqa: E402
import paired_timing  # noqa: E402

from tileworkbench.config import config as tw_config  # noqa: E402

OURS, SPARE, THEIRS = kernels.load("tileworkbench"), kernels.load("tileworkbench"), kernels.load("triton")
F16 = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4),
       (128, 128, 64, 8, 3), (64, 128, 64, 4, 4)]
F8 = [(128, 256, 128, 8, 3), (128, 128, 128, 4, 3), (128, 128, 128, 8, 4), (128, 256, 64, 8, 4)]
WORKLOADS = [("fp16", 4096, 4096, 4096, F16), ("bf16", 4096, 4096, 4096, F16[:4]),
             ("fp16", 8192, 8192, 512, F16[:5]), ("fp8e4m3", 4096, 4096, 4096, F8)]
FAILED: list = []


def run(dtype, m, n, k, configs):
    t = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8e4m3": torch.float8_e4m3fn}[dtype]
    a = torch.randn(m, k, device="cuda").to(t)
    b = torch.randn(n, k, device="cuda").to(t).T if dtype == "fp8e4m3" else \
        torch.randn(k, n, device="cuda").to(t)
    want = a.float() @ b.float()
    out_t = torch.float16 if dtype == "fp8e4m3" else t
    flops = 2.0 * m * n * k

    def launch(mod, cfg, c):
        bm, bn, bk, warps, stages = cfg
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        return mod.matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                       b.stride(1), c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk,
                                       GROUP_M=8, num_warps=warps, num_stages=stages)

    for cfg in configs:
        fns, shared = {}, {}
        for who, mod in (("ours", OURS), ("spare", SPARE), ("triton", THEIRS)):
            c = torch.full((m, n), float("nan"), device="cuda", dtype=out_t)
            tw_config.spare_slot = who == "spare"
            try:
                kernel = launch(mod, cfg, c)
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - a row of the table
                print(f"  {dtype} {cfg} {who}: {type(exc).__name__}: {str(exc)[:160]}")
                continue
            finally:
                tw_config.spare_slot = False
            err = ((c.float() - want).abs().max() / want.abs().max()).item()
            if not err <= 1e-2:
                FAILED.append((dtype, m, n, k, cfg, who, err))
                print(f"  {dtype} {cfg} {who}: WRONG {err:.2e}")
                continue
            shared[who] = getattr(getattr(kernel, "metadata", None), "shared", "?")
            fns[who] = lambda mod=mod, cfg=cfg, c=c: launch(mod, cfg, c)
        if "triton" not in fns:
            continue
        fns["triton_control"] = fns["triton"]
        times = paired_timing.paired_times(fns, reps=60)
        med = {w: sorted(ts)[len(ts) // 2] for w, ts in times.items()}
        tf = {w: flops / (ms * 1e-3) / 1e12 for w, ms in med.items()}
        cells = [f"{tf.get(w, float('nan')):7.1f}" for w in ("ours", "spare", "triton")]
        ratios = [f"{paired_timing.ratio(times, 'triton', w):6.3f}" if w in times else "   -  "
                  for w in ("ours", "spare", "triton_control")]
        print(f"{dtype:8}{m}x{n}x{k:<6}{str(cfg):24}" + "".join(cells) + "  " + " ".join(ratios)
              + f"  smem {shared.get('ours', '-')}/{shared.get('spare', '-')}", flush=True)


def main() -> int:
    print("dtype   shape            config                     ours  spare triton  "
          "o/T    s/T    A/A   smem ours/spare")
    for dtype, m, n, k, configs in WORKLOADS:
        run(dtype, m, n, k, configs)
    print("WRONG:", FAILED if FAILED else "none")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
