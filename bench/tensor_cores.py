"""GPU benchmark of the tensor-core kernels: matmul (fp16/bf16 4096^3 and 8192^3, a skinny 8192x8192x512,
tf32 4096^3, fp8 e4m3 4096^3 with B K-major) and the flash-attention forward (batch 4, 32 heads, 4096 tokens, head dim 64 and 128, fp16,
causal and not), each compiled by tileworkbench and by Triton from the same source (bench/kernels.py),
beside torch (cuBLAS / scaled_dot_product_attention), in one process.

    PYTHONPATH=. python bench/tensor_cores.py [--quick] [--out FILE.json]
    PYTHONPATH=. python bench/tensor_cores.py --matmul 4104x4104x4096:fp16 --skip attention

(`--matmul MxNxK:dtype`, repeatable, times those matmuls instead of the default list: a ragged N
such as 4104 launches as `:8`, whole 16-byte fp16 rows, issue 21)

(default --out: bench/results/<gpu>-tensor-cores.json, h200-tensor-cores.json on an H200)

Each compiler gets its best of a few block configs (all of its configs timed together, paired, as an
autotuner would); then ours, Triton's, torch's and Triton's again (`triton_control`, the A/A noise)
are timed in paired repetitions (bench/paired_timing.py: every repetition runs each contender once,
in a rotating order, each after an L2 flush), as many as fit in about `--seconds` per workload. A
ratio is the median of the per-repetition ratios, so clock drift between contenders cancels; the row
keeps its interquartile range. Every contender's output is checked against float64 first (a wrong
result is reported, not timed silently).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import traceback
from pathlib import Path

import numpy as np
import torch
import triton
import triton.testing

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import kernels  # noqa: E402
import paired_timing  # noqa: E402
import result_file  # noqa: E402

import tileworkbench as tw  # noqa: E402

OURS = kernels.load("tileworkbench")
THEIRS = kernels.load("triton")
SECONDS = 3.0  # paired timing per workload
MIN_REPS, MAX_REPS = 20, 400

MATMUL_CONFIGS = [  # (BM, BN, BK, num_warps, num_stages); the first three are wgmma-sized (sm_90a)
    (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
    (128, 128, 64, 8, 3), (64, 128, 64, 4, 4),
]
TF32_CONFIGS = [(128, 128, 32, 8, 3), (128, 256, 32, 8, 3), (128, 128, 16, 8, 4), (64, 128, 32, 4, 4)]
FP8_CONFIGS = [(128, 256, 128, 8, 3), (128, 128, 128, 8, 4), (128, 256, 64, 8, 4), (128, 128, 128, 4, 3)]
# (BM, BN, num_warps, num_stages); on sm_90a both dots run on wgmma (P @ V with P in registers) where
# every warp group gets 64 query rows: BM 128 with 8 warps is Triton's Hopper choice (tutorial 06)
ATTN_CONFIGS = [(128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3), (128, 128, 8, 2)]


def rel_err(got: torch.Tensor, want: torch.Tensor) -> float:
    return ((got.double() - want).norm() / want.norm()).item()


def best_config(launch, configs) -> tuple[object, float, list]:
    """The fastest config of `launch(config)` (all that run timed together, paired), with every
    config's median time or error."""
    tried, runs = [], {}
    for config in configs:
        try:
            launch(config)  # compile and check it launches
            torch.cuda.synchronize()
            runs[tuple(config)] = lambda config=config: launch(config)
        except Exception as error:  # a config that fails to compile or launch is reported
            tried.append((config, f"{type(error).__name__}: {str(error)[:200]}"))
    if not runs:
        raise RuntimeError(f"no config ran: {tried}")
    times = paired_timing.paired_times(runs, reps=10)
    medians = {config: float(np.median(t)) for config, t in times.items()}
    tried = [(c, medians[c]) for c in medians] + tried
    config = min(medians, key=medians.get)
    return config, medians[config], [[list(c), t] for c, t in tried]


def paired(fns: dict) -> dict[str, list[float]]:
    """Paired times of `fns`, as many repetitions as fit in about SECONDS."""
    probe = paired_timing.paired_times(fns, reps=3, warmup=2)
    per_rep = sum(float(np.median(t)) for t in probe.values()) * 1e-3 + 1e-4 * len(fns)
    reps = int(min(MAX_REPS, max(MIN_REPS, SECONDS / per_rep)))
    return paired_timing.paired_times(fns, reps=reps)


def compare(workload: str, shape, dtype: str, flops: float, launchers: dict, check: dict,
            tuning: dict) -> dict:
    launchers = dict(launchers)
    launchers["triton_control"] = launchers["triton"]
    samples = paired(launchers)
    times = {k: float(np.median(v)) for k, v in samples.items()}
    reps = len(samples["tileworkbench"])
    row = {"workload": workload, "shape": list(shape), "dtype": dtype, "flops": flops,
           "method": f"paired timing (L2 flushed, rotating order), {reps} repetitions; ratios are "
                     "medians of per-repetition ratios",
           "check": check, "correct": all(c["ok"] for c in check.values()),
           "tuning": tuning}
    for who, ms in times.items():
        row[f"{who}_ms"] = ms
        row[f"{who}_TFLOPs"] = flops / (ms * 1e-3) / 1e12
    row["ratio_vs_triton"] = paired_timing.ratio(samples, "triton", "tileworkbench")
    row["ratio_vs_torch"] = paired_timing.ratio(samples, "torch", "tileworkbench")
    row["control_ratio"] = paired_timing.ratio(samples, "triton", "triton_control")
    row["ratio_vs_triton_iqr"] = list(paired_timing.spread(samples, "triton", "tileworkbench"))
    row["control_ratio_iqr"] = list(paired_timing.spread(samples, "triton", "triton_control"))
    print(f"{workload:<10}{'x'.join(map(str, shape)):<22}{dtype:<6}"
          f"{row['tileworkbench_TFLOPs']:>9.1f}{row['triton_TFLOPs']:>9.1f}{row['torch_TFLOPs']:>9.1f}"
          f"{row['ratio_vs_triton']:>8.3f}{row['ratio_vs_torch']:>8.3f}{row['control_ratio']:>8.3f}"
          f"  IQR {row['ratio_vs_triton_iqr'][0]:.3f}-{row['ratio_vs_triton_iqr'][1]:.3f}"
          f"{'' if row['correct'] else '  WRONG'}", flush=True)
    return row


def matmul(m: int, n: int, k: int, dtype: str, tuned: dict) -> dict:
    t = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32,
         "fp8e4m3": torch.float8_e4m3fn}[dtype]
    a = torch.randn(m, k, device="cuda").to(t)
    # fp8: B K-major (an (n, k) tensor seen as (k, n)), as wgmma and cuBLAS's fp8 GEMM take it
    b = torch.randn(n, k, device="cuda").to(t).T if dtype == "fp8e4m3" else \
        torch.randn(k, n, device="cuda").to(t)
    want = a.double() @ b.double()
    out_t = {"tf32": torch.float32, "fp8e4m3": torch.float16}.get(dtype, t)

    def launch(mod, config, c):
        bm, bn, bk, warps, stages = config
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        mod.matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk, GROUP_M=8,
                                num_warps=warps, num_stages=stages)

    configs = {"tf32": TF32_CONFIGS, "fp8e4m3": FP8_CONFIGS}.get(dtype, MATMUL_CONFIGS)
    c = torch.empty(m, n, device="cuda", dtype=out_t)
    tuning, check, launchers = {}, {}, {}
    for who, mod in (("tileworkbench", OURS), ("triton", THEIRS)):
        key = (who, dtype)
        if key not in tuned:
            config, ms, tried = best_config(lambda cfg, mod=mod: launch(mod, cfg, c), configs)
            tuned[key] = config
            tuning[who] = {"config": list(config), "tried": tried}
        config = tuned[key]
        out = torch.full((m, n), float("nan"), device="cuda", dtype=out_t)
        launch(mod, config, out)
        err = rel_err(out, want)
        tol = 5e-3 if dtype == "tf32" else 1e-2
        check[who] = {"rel_err": err, "ok": err <= tol, "config": list(config)}
        launchers[who] = lambda mod=mod, config=config: launch(mod, config, c)
    if dtype == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
    if dtype == "fp8e4m3":  # cuBLAS's fp8 GEMM (unit scales)
        one = torch.ones((), device="cuda")
        launchers["torch"] = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                      out_dtype=torch.float16)
    else:
        launchers["torch"] = lambda: torch.matmul(a, b, out=c)
    return compare("matmul", (m, n, k), dtype, 2.0 * m * n * k, launchers, check, tuning)


def attention(head_dim: int, causal: bool, tuned: dict, z: int = 4, h: int = 32, n_ctx: int = 4096) -> dict:
    q, k, v = (torch.randn(z * h, n_ctx, head_dim, device="cuda", dtype=torch.float16) for _ in range(3))
    scale = head_dim ** -0.5

    def launch(mod, config, o):
        bm, bn, warps, stages = config
        return mod.attn_fwd_kernel[(n_ctx // bm, z * h)](
            q, k, v, o, scale, q.stride(0), q.stride(1), n_ctx, HEAD_DIM=head_dim, BLOCK_M=bm,
            BLOCK_N=bn, CAUSAL=causal, num_warps=warps, num_stages=stages)

    sub = slice(0, 2)  # the float64 reference of two heads
    s = q[sub].double() @ k[sub].double().transpose(1, 2) * scale
    if causal:
        s = s.masked_fill(torch.ones(n_ctx, n_ctx, dtype=torch.bool, device="cuda").triu(1), -float("inf"))
    want = torch.softmax(s, -1) @ v[sub].double()
    o = torch.empty_like(q)
    tuning, check, launchers = {}, {}, {}
    for who, mod in (("tileworkbench", OURS), ("triton", THEIRS)):
        key = (who, head_dim, causal)
        if key not in tuned:
            config, ms, tried = best_config(lambda cfg, mod=mod: launch(mod, cfg, o), ATTN_CONFIGS)
            tuned[key] = config
            tuning[who] = {"config": list(config), "tried": tried}
        config = tuned[key]
        out = torch.full_like(q, float("nan"))
        kernel = launch(mod, config, out)
        err = rel_err(out[sub], want)
        check[who] = {"rel_err": err, "ok": err <= 1e-2, "config": list(config)}
        if who == "tileworkbench":  # which tensor-core path ran (sm_90a: wgmma, P @ V register-A)
            ptx = kernel.asm["ptx"]
            check[who]["path"] = "wgmma" if "wgmma.mma_async" in ptx else \
                "mma.sync" if "mma.sync" in ptx else "fma"
        launchers[who] = lambda mod=mod, config=config: launch(mod, config, o)
    q4, k4, v4 = (x.view(z, h, n_ctx, head_dim) for x in (q, k, v))
    launchers["torch"] = lambda: torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=causal,
                                                                                  scale=scale)
    flops = 4.0 * z * h * n_ctx * n_ctx * head_dim * (0.5 if causal else 1.0)
    return compare("attention", (z, h, n_ctx, head_dim), "fp16" + ("-causal" if causal else ""), flops,
                   launchers, check, tuning)


def matmul_shape(text: str) -> tuple[int, int, int, str]:
    """`--matmul`'s "4104x4104x4096:fp16" -> (4104, 4104, 4096, "fp16")."""
    sizes, _, dtype = text.partition(":")
    try:
        m, n, k = (int(size) for size in sizes.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected MxNxK:dtype, e.g. 4104x4104x4096:fp16")
    if (dtype or "fp16") not in ("fp16", "bf16", "tf32", "fp8e4m3"):
        raise argparse.ArgumentTypeError(f"{text!r}: dtype is one of fp16, bf16, tf32, fp8e4m3")
    return m, n, k, dtype or "fp16"


def main() -> None:
    global SECONDS
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="4096^3 fp16 matmul and one attention only")
    parser.add_argument("--out", default=None)
    parser.add_argument("--seconds", type=float, default=SECONDS,
                        help="paired timing per workload (more repetitions, less noise)")
    parser.add_argument("--skip", default="", help="comma list: matmul,attention")
    parser.add_argument("--matmul", action="append", default=[], type=matmul_shape,
                        help="MxNxK:dtype (fp16, bf16, tf32, fp8e4m3), repeatable: these matmuls "
                             "instead of the default list")
    args = parser.parse_args()
    SECONDS = args.seconds
    skip = set(filter(None, args.skip.split(",")))
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "device": torch.cuda.get_device_name(),
               "versions": {"triton": triton.__version__, "torch": torch.__version__,
                            "tileworkbench": tw.__version__},
               "kernels": [], "errors": {}}
    out = Path(args.out) if args.out else \
        result_file.default_path(results["device"], "tensor-cores")
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"{'workload':<10}{'shape':<22}{'dtype':<6}{'ours':>9}{'triton':>9}{'torch':>9}"
          f"{'/triton':>8}{'/torch':>8}{'A/A':>8}   (TFLOP/s; ratios are time over ours)", flush=True)
    tuned: dict = {}
    jobs = []
    if args.matmul:
        jobs += [("matmul", shape) for shape in args.matmul]
    elif "matmul" not in skip:
        jobs += [("matmul", (4096, 4096, 4096, "fp16")), ("matmul", (4096, 4096, 4096, "bf16"))]
        if not args.quick:
            jobs += [("matmul", (8192, 8192, 8192, "fp16")), ("matmul", (8192, 8192, 8192, "bf16")),
                     ("matmul", (8192, 8192, 512, "fp16")), ("matmul", (4096, 4096, 4096, "tf32")),
                     ("matmul", (4096, 4096, 4096, "fp8e4m3"))]
    if "attention" not in skip:
        jobs += [("attention", (64, False))]
        if not args.quick:
            jobs += [("attention", (64, True)), ("attention", (128, False)), ("attention", (128, True))]
    for kind, params in jobs:
        try:
            row = matmul(*params, tuned) if kind == "matmul" else attention(*params, tuned)
            results["kernels"].append(row)
        except Exception as error:  # one failing workload must not lose the others' numbers
            results["errors"][f"{kind} {params}"] = f"{type(error).__name__}: {error}"
            traceback.print_exc()
        out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
