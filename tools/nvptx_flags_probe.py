"""The effect of LLVM NVPTX options on the softmax kernels, on a GPU: the flags in TW_FLAGS (comma-separated,
e.g. "--nvptx-mad-wide-opt,--nvptx-short-ptr"; empty for none) replace the ones codegen.py sets, and this
process times ours against Triton's (and Triton against itself, the A/A control) with bench/run.py's
method. LLVM options are per process, so run it once per flag set, each with a fresh cache directory:

    for F in "" --nvptx-mad-wide-opt --nvptx-short-ptr --nvptx-mad-wide-opt,--nvptx-short-ptr; do
      TILEWORKBENCH_CACHE_DIR=$(mktemp -d) TW_FLAGS="$F" PYTHONPATH=. python3 tools/nvptx_flags_probe.py
    done

Prints one JSON line: the flags and, per shape, (Triton time / ours, Triton / Triton).
"""
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import llvmlite.binding as llvm  # noqa: E402

import tileworkbench.backends.nvptx.codegen as codegen  # noqa: E402

FLAGS = [f for f in os.environ.get("TW_FLAGS", "").split(",") if f]


def binding_with_flags():
    """codegen._binding with FLAGS in place of the options it sets."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    for flag in FLAGS:
        llvm.set_option("tileworkbench", flag)
    return llvm


codegen._binding = binding_with_flags

import torch  # noqa: E402
import triton  # noqa: E402

import run as bench  # noqa: E402

SHAPES = [(4096, 1024, torch.float16), (16384, 1000, torch.float16), (4096, 1024, torch.float32),
          (16384, 1000, torch.float32), (4096, 4096, torch.float16)]


def main() -> None:
    bench.ROUNDS = 9
    ratios = {}
    for m, n, dtype in SHAPES:
        block = triton.next_power_of_2(n)
        warps = bench.softmax_warps(block)
        xs = [torch.randn(m, n, device="cuda", dtype=dtype)
              for _ in range(bench.buffer_sets(2 * m * n * dtype.itemsize))]
        outs = [torch.full_like(x, float("nan")) for x in xs]

        def launches(module):
            return [(lambda x=x, o=o: module.softmax_kernel[(m,)](o, x, x.stride(0), o.stride(0), n, BLOCK=block,
                                                                   num_warps=warps))
                    for x, o in zip(xs, outs)]

        launchers = {"ours": launches(bench.OURS), "triton": launches(bench.THEIRS),
                     "triton_again": launches(bench.THEIRS)}
        want = torch.softmax(xs[0].double(), 1)
        for who, fns in launchers.items():  # each checked against float64 before it is timed
            outs[0].fill_(float("nan"))
            fns[0]()
            torch.cuda.synchronize()
            error = ((outs[0].double() - want).norm() / want.norm()).item()
            assert error < (1e-5 if dtype == torch.float32 else 3e-3), (who, error)
        times, _ = bench.bench_graphs(launchers)
        ratios[f"{m}x{n} {str(dtype)[6:]}"] = [round(times["triton"] / times["ours"], 4),
                                               round(times["triton_again"] / times["triton"], 4)]
    print(json.dumps({"flags": FLAGS, "ratios (triton/ours, A/A)": ratios}))


if __name__ == "__main__":
    main()
