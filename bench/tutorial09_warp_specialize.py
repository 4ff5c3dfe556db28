"""Warp specialization on Triton's tutorial-09 TMA matmuls, their own source: `matmul_kernel_tma`
(`tl.range(k_tiles, warp_specialize=WARP_SPECIALIZE)`) and `matmul_kernel_tma_persistent` (its tile
loop marked), compiled by tileworkbench (the import changed by tests/tutorials/tutorial_loader.py)
and by Triton, with and without the option, beside torch's cuBLAS: paired timing
(bench/paired_timing.py) in one process, Triton's kernel (WS, else plain) run twice (the A/A
control), each result checked against float64 first. Names: `<compiler>[_persistent][_ws]`.

    PYTHONPATH=. python bench/tutorial09_warp_specialize.py [--sizes 4096 8192] [--prefetch] [--out FILE.json]

Each compiler runs the same fixed configs of the tutorial's list (`CONFIGS`: BLOCK_SIZE_N,
BLOCK_SIZE_K, num_stages, num_warps at BLOCK_SIZE_M 128), one at a time. The tutorial file comes
from TRITON_TUTORIALS_DIR or `.tutorials/` (never part of this repository).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "tests" / "tutorials"):
    sys.path.insert(0, str(folder))

from paired_timing import paired_times, ratio, runnable, spread  # noqa: E402
from result_file import default_path  # noqa: E402

CONFIGS = [(256, 64, 3, 8), (256, 64, 4, 8), (128, 64, 4, 8), (128, 64, 4, 4)]


def _tutorial_file() -> Path:
    for folder in (os.environ.get("TRITON_TUTORIALS_DIR"), HERE.parent / ".tutorials"):
        if folder and (Path(folder) / "09-persistent-matmul.py").is_file():
            return Path(folder) / "09-persistent-matmul.py"
    raise SystemExit("no 09-persistent-matmul.py: set TRITON_TUTORIALS_DIR to Triton's tutorials")


def _use_config(module, config: tuple) -> None:
    """Both TMA kernels autotune over this one config (their block-size pre-hooks kept; the
    persistent one without epilogue subtiling)."""
    bn, bk, stages, warps = config

    def shape(c):
        return (c.kwargs["BLOCK_SIZE_M"], c.kwargs["BLOCK_SIZE_N"], c.kwargs["BLOCK_SIZE_K"],
                c.num_stages, c.num_warps, c.kwargs.get("EPILOGUE_SUBTILE", False))

    for tuner in (module.matmul_kernel_tma, module.matmul_kernel_tma_persistent):
        if not hasattr(tuner, "all_configs"):
            tuner.all_configs = list(tuner.configs)
        want = (128, bn, bk, stages, warps, False)
        tuner.configs = [c for c in tuner.all_configs if shape(c) == want]
        assert len(tuner.configs) == 1, f"config {config} is not in the tutorial's list"
        tuner.cache = {}


def _with_tma_tile_prefetch(fn):
    """`fn` run with TILEWORKBENCH_TMA_TILE_PREFETCH on (its module's kernels compile with it; the
    flag is part of the cache key, so the other modules' kernels stay as they are)."""
    from tileworkbench.config import config

    def call():
        before, config.tma_tile_prefetch = config.tma_tile_prefetch, True
        try:
            return fn()
        finally:
            config.tma_tile_prefetch = before

    return call


def row(modules: dict, size: int, config: tuple) -> dict:
    import torch

    for module in modules.values():
        _use_config(module, config)
    gen = torch.Generator(device="cuda").manual_seed(size)
    a = torch.randn((size, size), device="cuda", dtype=torch.float16, generator=gen)
    b = torch.randn((size, size), device="cuda", dtype=torch.float16, generator=gen)
    fns = {}
    for name, module in modules.items():
        fns[f"{name}_ws"] = lambda m=module: m.matmul_tma(a, b, True)
        fns[name] = lambda m=module: m.matmul_tma(a, b, False)
        fns[f"{name}_persistent_ws"] = lambda m=module: m.matmul_tma_persistent(a, b, True)
        fns[f"{name}_persistent"] = lambda m=module: m.matmul_tma_persistent(a, b, False)
    if "tileworkbench_prefetch" in modules:  # its persistent kernels only, compiled with the flag
        for kind in ("", "_ws"):
            del fns[f"tileworkbench_prefetch{kind}"]
            name = f"tileworkbench_prefetch_persistent{kind}"
            fns[name] = _with_tma_tile_prefetch(fns[name])
    fns["cublas"] = lambda: a @ b.T
    fns, failed = runnable(fns)
    reference = a.double() @ b.double().T
    errors = {}
    for name, fn in list(fns.items()):
        error = float((fn().double() - reference).norm() / reference.norm())
        errors[name] = error
        if not error < 1e-2:
            failed[name] = f"wrong result: relative error {error:.3g}"
            del fns[name]
    control = next((n for n in ("triton_ws", "triton") if n in fns), None)
    if control is not None:  # the A/A control: Triton's kernel timed twice
        fns[f"{control}_control"] = fns[control]
    times = paired_times(fns, reps=50) if fns else {}
    flops = 2.0 * size**3
    out = {
        "M=N=K": size,
        "config": dict(zip(("BLOCK_SIZE_N", "BLOCK_SIZE_K", "num_stages", "num_warps"), config)),
        "tflops": {n: flops / (sorted(t)[len(t) // 2] * 1e9) for n, t in times.items()},
        "rel_err": errors,
        "failed": failed,
    }
    if control is not None and control in times:
        out["aa_control"] = ratio(times, control, f"{control}_control")
    pairs = [("triton_ws", "tileworkbench_ws"), ("tileworkbench", "tileworkbench_ws"),
             ("cublas", "tileworkbench_ws"), ("triton", "tileworkbench"),
             ("triton", "triton_ws"),
             ("triton_persistent_ws", "tileworkbench_persistent_ws"),
             ("tileworkbench_persistent", "tileworkbench_persistent_ws"),
             ("cublas", "tileworkbench_persistent_ws"),
             ("triton_persistent", "tileworkbench_persistent"),
             ("cublas", "tileworkbench"), ("cublas", "tileworkbench_persistent"),
             ("tileworkbench_persistent", "tileworkbench_prefetch_persistent"),
             ("triton_persistent", "tileworkbench_prefetch_persistent"),
             ("tileworkbench_persistent_ws", "tileworkbench_prefetch_persistent_ws")]
    best = max((n for n in times if n.startswith("triton") and not n.endswith("_control")),
               key=lambda n: out["tflops"][n], default=None)
    if best is not None:
        out["triton_best"] = best
        for ours in ("tileworkbench_ws", "tileworkbench_persistent_ws"):
            if ours in times:
                out[f"{ours}_vs_triton_best"] = ratio(times, best, ours)
    for slow, fast in pairs:
        if slow in times and fast in times:
            out[f"{fast}_vs_{slow}"] = ratio(times, slow, fast)
            out[f"{fast}_vs_{slow}_iqr"] = spread(times, slow, fast)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--configs", type=int, default=len(CONFIGS), help="the first N of CONFIGS")
    parser.add_argument("--out", help="JSON file (default results/<gpu>-tutorial09-ws.json)")
    parser.add_argument("--prefetch", action="store_true",
                        help="also our persistent kernels with TILEWORKBENCH_TMA_TILE_PREFETCH on "
                             "(tileworkbench_prefetch_persistent[_ws], a second load of the tutorial)")
    args = parser.parse_args()
    import torch
    import triton
    from tutorial_loader import load_tutorial

    path = _tutorial_file()
    modules = {"tileworkbench": load_tutorial(path), "triton": load_tutorial(path, original=True)}
    if args.prefetch:
        modules["tileworkbench_prefetch"] = load_tutorial(path)
    result = {"gpu": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(),
              "triton": triton.__version__, "rows": []}
    out = Path(args.out) if args.out else default_path(result["gpu"], "tutorial09-ws")
    out.parent.mkdir(parents=True, exist_ok=True)
    for size in args.sizes:
        for config in CONFIGS[: args.configs]:
            result["rows"].append(row(modules, size, config))
            print(json.dumps(result["rows"][-1]), flush=True)
            out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
