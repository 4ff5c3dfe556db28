"""GPU timing of Triton tutorial 09's persistent matmul: its kernels compiled by tileworkbench
(the tutorial loaded with `triton` mapped to tileworkbench) beside the same kernels compiled by
Triton, at 4096^3 and 8192^3 fp16, with torch (cuBLAS) for scale. Answers "do persistent kernels
run and are they fast" (issue 11, item 3).

    TRITON_TUTORIALS_DIR=/path/to/python/tutorials PYTHONPATH=. python bench/persistent_matmul.py \
        [--sizes 4096 8192] [--configs 8] [--out FILE.json]

Both compilers autotune over the same subset of the tutorial's configs (`--configs` of them: the
wgmma-sized ones first, then evenly spaced others).
Each output is checked against torch first (relative Frobenius error); times are do_bench medians
(L2 flushed); TFLOP/s = 2 M N K / time. Prints JSON and writes it to --out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.testing

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "tutorials"))
sys.path.insert(0, str(HERE.parent))

import result_file  # noqa: E402
from tutorial_loader import load_tutorial, tutorials_dir  # noqa: E402

KERNELS = ("matmul_kernel", "matmul_kernel_persistent")


# the tutorial's configs that suit Hopper's wgmma (BLOCK_SIZE_N, BLOCK_SIZE_K, num_stages, num_warps)
HOPPER = [(256, 64, 3, 8), (128, 64, 4, 4), (128, 64, 3, 8)]


def keep_configs(module, count: int) -> None:
    """The same configs in each autotuned kernel of `module`: the Hopper-sized ones of the tutorial's
    (`HOPPER`) first, then evenly spaced others, `count` in all."""
    for name in KERNELS:
        tuner = getattr(module, name)

        def shape(c):
            return (c.kwargs["BLOCK_SIZE_N"], c.kwargs["BLOCK_SIZE_K"], c.num_stages, c.num_warps)

        first = [c for want in HOPPER for c in tuner.configs if shape(c) == want][:count]
        rest = [c for c in tuner.configs if c not in first]
        step = max(1, len(rest) // max(1, count - len(first)))
        tuner.configs = first + rest[::step][:count - len(first)]


def measure(fn, reference: torch.Tensor, flops: float) -> dict:
    try:
        out = fn()
        torch.cuda.synchronize()
        error = float((out.double() - reference).norm() / reference.norm())
        if not error < 1e-2:
            return {"error": f"wrong result: relative error {error:.3g}"}
        ms = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
        return {"ms": ms, "tflops": flops / ms * 1e-9, "rel_err": error}
    except Exception as error:  # noqa: BLE001 (a failure is a row of the table)
        return {"error": f"{type(error).__name__}: {str(error)[:500]}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--configs", type=int, default=8)
    parser.add_argument("--out", help="JSON file (default results/<gpu>-persistent-matmul.json)")
    args = parser.parse_args()
    folder = tutorials_dir()
    if folder is None:
        sys.exit("set TRITON_TUTORIALS_DIR to a folder holding 09-persistent-matmul.py")
    ours = load_tutorial(folder / "09-persistent-matmul.py")
    theirs = load_tutorial(folder / "09-persistent-matmul.py", original=True)
    for module in (ours, theirs):
        keep_configs(module, args.configs)
    rows = []
    for size in args.sizes:
        torch.manual_seed(0)
        a = torch.randn((size, size), device="cuda", dtype=torch.float16)
        b = torch.randn((size, size), device="cuda", dtype=torch.float16)
        reference = a.double() @ b.double()
        flops = 2.0 * size**3
        row = {"M=N=K": size, "dtype": "fp16"}
        row["ours_persistent"] = measure(lambda: ours.matmul_persistent(a, b), reference, flops)
        row["ours_tiled"] = measure(lambda: ours.matmul(a, b), reference, flops)
        row["triton_persistent"] = measure(lambda: theirs.matmul_persistent(a, b), reference, flops)
        row["triton_tiled"] = measure(lambda: theirs.matmul(a, b), reference, flops)
        row["torch"] = measure(lambda: a @ b, reference, flops)
        ours_t = row["ours_persistent"].get("tflops")
        theirs_t = row["triton_persistent"].get("tflops")
        row["persistent_ours_over_triton"] = ours_t / theirs_t if ours_t and theirs_t else None
        rows.append(row)
        print(json.dumps(row), flush=True)
    result = {"gpu": torch.cuda.get_device_name(), "configs_per_kernel": args.configs, "rows": rows}
    out = Path(args.out) if args.out else \
        result_file.default_path(result["gpu"], "persistent-matmul")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    wrong = [k for r in rows for k, v in r.items() if isinstance(v, dict) and "error" in v]
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
