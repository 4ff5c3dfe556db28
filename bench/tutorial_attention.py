"""Triton's tutorial-06 attention, its own source, compiled by tileworkbench (the import changed by
tests/tutorials/tutorial_loader.py) and by Triton, forward and backward, side by side in one process:
paired timing (bench/paired_timing.py) of ours, Triton's, Triton's again (the A/A control) and torch's
`scaled_dot_product_attention` (fp16: FlashAttention or cuDNN, whichever torch picks), after each
compiler's gradients are checked against float64 on a small problem. A contender that fails (out of
shared memory at head dim 256) is reported in its row and the others are timed.

    PYTHONPATH=. python bench/tutorial_attention.py [--tuned] [--head-dims 64,128,256] [--out FILE.json]

Without `--tuned` both run the tutorial's fixed forward config (128x64, 4 warps, 2 stages: what the
tutorial itself picks under pytest); with it, each autotunes the tutorial's own config list. The
backward kernels have one config in the tutorial (32x128 / 128x32, 4 warps, 5 stages). With `--fp8`
the forward alone runs on float8 e5m2 inputs, as the tutorial's own fp8 check makes them (V stored
transposed for Hopper's fp8 wgmma), checked against float64 on those inputs. The tutorial file comes
from TRITON_TUTORIALS_DIR or `.tutorials/` (never part of this repository).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "tests" / "tutorials"):
    sys.path.insert(0, str(folder))

from paired_timing import paired_times, ratio, runnable, spread  # noqa: E402
from result_file import default_path  # noqa: E402

SHAPE = {"z": 4, "h": 32, "n": 4096}
SCALE = 0.5


def _tutorial_file() -> Path:
    for folder in (os.environ.get("TRITON_TUTORIALS_DIR"), HERE.parent / ".tutorials"):
        if folder and (Path(folder) / "06-fused-attention.py").is_file():
            return Path(folder) / "06-fused-attention.py"
    raise SystemExit("no 06-fused-attention.py: set TRITON_TUTORIALS_DIR to Triton's python/tutorials")


def load_both(tuned: bool):
    """The tutorial module compiled by each: {"tileworkbench": module, "triton": module}."""
    from tutorial_loader import load_tutorial

    if not tuned:
        os.environ["PYTEST_VERSION"] = "bench"  # the tutorial's own switch to its one fixed config
    path = _tutorial_file()
    spec = importlib.util.spec_from_file_location("tutorial06_triton", path)
    theirs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(theirs)
    return {"tileworkbench": load_tutorial(path), "triton": theirs}


def _inputs(z: int, h: int, n: int, d: int, dtype, seed: int):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v, do = (torch.randn((z, h, n, d), device="cuda", dtype=dtype, generator=gen) for _ in range(4))
    return [t.requires_grad_() for t in (q, k, v)], do


def _fp8(q, k, v):
    """The tutorial's fp8 inputs: e5m2, V laid out transposed (Hopper's fp8 wgmma reads K-major B)."""
    import torch

    v = v.detach().permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2)
    return tuple(t.detach().to(torch.float8_e5m2) for t in (q, k, v))


def _reference(q, k, v, causal: bool):
    import torch

    scores = q @ k.transpose(-1, -2) * SCALE
    if causal:
        scores = scores.masked_fill(torch.ones_like(scores).triu(1).bool(), float("-inf"))
    return torch.softmax(scores, -1) @ v


def check_fp8(module, d: int, causal: bool) -> dict:
    """Relative error of the fp8 forward against float64 on the same e5m2 inputs (Z1 H2 N512)."""
    import torch

    (q, k, v), _ = _inputs(1, 2, 512, d, torch.float16, seed=d + causal)
    q8, k8, v8 = _fp8(q, k, v)
    out = module.attention(q8, k8, v8, causal, SCALE, False)
    ref = _reference(q8.double(), k8.double(), v8.double(), causal)
    return {"out": float((out.double() - ref).norm() / ref.norm())}


def check(module, d: int, causal: bool) -> dict:
    """Relative errors of the output and the three gradients against float64 autograd (Z1 H2 N512)."""
    import torch

    (q, k, v), do = _inputs(1, 2, 512, d, torch.float16, seed=d + causal)
    out = module.attention(q, k, v, causal, SCALE, False)
    grads = torch.autograd.grad(out, (q, k, v), do)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref = _reference(q64, k64, v64, causal)
    refs = (ref, *torch.autograd.grad(ref, (q64, k64, v64), do.double()))
    return {name: float((got.double() - want).norm() / want.norm())
            for name, got, want in zip(("out", "dq", "dk", "dv"), (out, *grads), refs)}


def _sdpa(q, k, v, causal: bool):
    import torch

    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=SCALE)


def timed(modules: dict, d: int, causal: bool, fp8: bool = False) -> dict:
    """Forward and backward milliseconds of each compiler and of torch's SDPA (fp16 only), paired,
    with Triton's A/A control (with `fp8`, the forward alone on e5m2 inputs)."""
    import torch

    (q, k, v), do = _inputs(SHAPE["z"], SHAPE["h"], SHAPE["n"], d, torch.float16, seed=1)
    flops = 4.0 * SHAPE["z"] * SHAPE["h"] * SHAPE["n"] ** 2 * d * (0.5 if causal else 1.0)
    if fp8:
        q8, k8, v8 = _fp8(q, k, v)
        forward = {name: (lambda m=m: m.attention(q8, k8, v8, causal, SCALE, False))
                   for name, m in modules.items()}
        phases = (("forward", forward, flops),)
    else:
        calls = {name: (lambda m=m: m.attention(q, k, v, causal, SCALE, False))
                 for name, m in modules.items()}
        calls["sdpa"] = lambda: _sdpa(q, k, v, causal)
        forward, _ = runnable(calls)
        outs = {name: fn() for name, fn in forward.items()}
        backward = {name: (lambda o=o: torch.autograd.grad(o, (q, k, v), do, retain_graph=True))
                    for name, o in outs.items()}
        phases = (("forward", calls, flops), ("backward", backward, 2.5 * flops))
    row = {}
    for phase, fns, phase_flops in phases:
        fns, failed = runnable(fns)
        if "triton" in fns:
            fns["triton_control"] = fns["triton"]
        times = paired_times(fns, reps=50) if fns else {}
        entry = {
            "ms": {name: sorted(t)[len(t) // 2] for name, t in times.items()},
            "tflops": {name: phase_flops / (sorted(t)[len(t) // 2] * 1e9) for name, t in times.items()},
            "failed": failed,
        }
        if "triton" in times:
            entry["aa_control"] = ratio(times, "triton", "triton_control")
        for other in ("triton", "sdpa"):
            if other in times and "tileworkbench" in times:
                entry[f"ours_over_{other}"] = ratio(times, other, "tileworkbench")
                entry[f"ours_over_{other}_iqr"] = spread(times, other, "tileworkbench")
        row[phase] = entry
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tuned", action="store_true", help="each autotunes the tutorial's config list")
    parser.add_argument("--head-dims", default="64,128")
    parser.add_argument("--fp8", action="store_true", help="the forward alone on float8 e5m2 inputs")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import torch

    modules = load_both(args.tuned)
    device = torch.cuda.get_device_name()
    stem = "tutorial-attention" + ("-fp8" if args.fp8 else "") + ("-tuned" if args.tuned else "")
    out = args.out or default_path(device, stem)
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": device, "tuned": args.tuned, "fp8": args.fp8,
              "triton": __import__("triton").__version__, "rows": []}
    for d in (int(x) for x in args.head_dims.split(",")):
        for causal in (False, True):
            row = {"head_dim": d, "causal": causal, "dtype": "fp8e5" if args.fp8 else "fp16", **SHAPE}
            checker = check_fp8 if args.fp8 else check
            row["errors"] = {}
            for name, m in modules.items():
                try:
                    row["errors"][name] = checker(m, d, causal)
                except Exception as exc:  # a failing compiler is reported in the row, not fatal
                    row["errors"][name] = {"failed": f"{type(exc).__name__}: {exc}"[:2000]}
            row.update(timed(modules, d, causal, args.fp8))
            result["rows"].append(row)
            # written after each row: a run cut short by a time limit keeps the rows it finished
            out.write_text(json.dumps(result, indent=1))
            keys = ("tflops", "ours_over_triton", "ours_over_sdpa", "aa_control", "failed")
            print(json.dumps({k: row.get(k) for k in ("head_dim", "causal")}
                             | {p: {k: row[p].get(k) for k in keys}
                                for p in ("forward", "backward") if p in row}), flush=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
