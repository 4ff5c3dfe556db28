"""Records the GPU results the teaching notebooks show in place of GPU-only cells
(notebooks/data/*.json).

Run on a GPU machine:

    PYTHONPATH=. python bench/record_notebook_data.py [--quick] [--out notebooks/data]

It measures the device's ceilings (`%tilekernel_peaks`), then times the showcase kernels with
`do_bench` at realistic sizes, beside Triton (same source, when installed) and CuPy/cuBLAS where
there is a library equivalent. Each result is checked against a float64 reference first; a failing
kernel is recorded as such. Each row keeps the sha256 of the PTX that was timed and how to compile
it again (tileworkbench/workbench/record_ptx.py), so the notebooks say "re-record" once the
compiler emits other PTX. Nothing is written without a GPU: the notebooks keep their last record.
`--interpret` runs the same suites in the interpreter at tiny sizes (no Triton, no cuBLAS), to test
this script without a GPU.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
XP = np  # the array module: CuPy on the GPU, NumPy with --interpret (set by main)
RNG = np.random.default_rng(0)


def rand(shape, dtype=np.float32):
    """Fresh standard-normal values of `dtype`, made where the kernels run."""
    if XP is np:
        return RNG.standard_normal(shape, dtype=np.float32).astype(dtype)
    return XP.random.standard_normal(shape, dtype=np.float32).astype(dtype)


def poisoned(shape, dtype=np.float32):
    """An output array full of NaN: an element the kernel misses fails the check."""
    return XP.full(shape, np.nan, dtype)


def host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def versions() -> str:
    import tileworkbench

    parts = [
        f"tileworkbench {tileworkbench.__version__}",
        f"{'NumPy' if XP is np else 'CuPy'} {XP.__version__}",
        f"Python {platform.python_version()}",
    ]
    try:
        import triton

        parts.append(f"Triton {triton.__version__}")
    except ImportError:
        pass
    return ", ".join(parts)


def bench_ms(fn) -> float:
    from tileworkbench.runtime.testing import do_bench

    if XP is np:  # --interpret: the numbers mean nothing; keep the script's test fast
        return float(do_bench(fn, warmup=0, rep=1, return_mode="median"))
    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def triton_ms(kernel, grid, *args, **kwargs) -> float | None:
    """Triton's time for the same kernel source on the same arguments, or None without Triton."""
    try:
        from tileworkbench.workbench.triton_compare import _triton_args, to_triton

        triton_kernel = to_triton(kernel)
    except ImportError:
        return None
    if XP is np:  # --interpret: Triton needs the GPU
        return None
    named = _triton_args(dict(enumerate(args)))
    positional = [named[i] for i in range(len(args))]
    try:
        triton_kernel[grid](*positional, **kwargs)
        return bench_ms(lambda: triton_kernel[grid](*positional, **kwargs))
    except Exception as exc:  # noqa: BLE001 - recorded as missing, the rest goes on
        print(f"  triton failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def check(out, ref, rtol: float) -> str:
    from tileworkbench.workbench.check import compare

    result = compare(out, ref, rtol=rtol, atol=rtol)
    return "pass" if result.passed else f"FAIL ({result.summary()})"


def row(label: str, ms: float, flops: float, nbytes: float, compute: str = "fp32", **extra) -> dict:
    out = {
        "label": label,
        "ms": ms,
        "GB/s": nbytes / ms / 1e6,
        "TFLOP/s": flops / ms / 1e9,
        "flops": flops,
        "bytes": nbytes,
        "compute": compute,
    }
    out.update(extra)
    if extra.get("triton_ms"):
        out["triton GB/s"] = nbytes / extra["triton_ms"] / 1e6
    if extra.get("torch_ms"):
        out["torch GB/s"] = nbytes / extra["torch_ms"] / 1e6
    return out


def torch_softmax_ms(x) -> float | None:
    """torch.softmax's time on the same array (shared through DLPack), or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    t = torch.from_dlpack(x)  # a CPU tensor with --interpret
    return bench_ms(lambda: torch.softmax(t, dim=1))


def vector_add(sizes: list[int]) -> list[dict]:

    import tileworkbench as tw
    from tileworkbench.workbench.showcase import add_kernel

    rows = []
    for n in sizes:
        x, y, out = rand(n), rand(n), poisoned(n)
        grid = (tw.cdiv(n, 1024),)
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
        head = slice(0, 1 << 20)
        status = check(out[head], host(x[head]).astype(np.float64) + host(y[head]), 1e-6)
        ms = bench_ms(lambda: add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024))
        ptx = ptx_record(add_kernel, (x, y, out, n), grid, {"BLOCK_SIZE": 1024})
        copy_ms = bench_ms(lambda: XP.add(x, y, out=out))
        rows.append(
            row(
                f"vector add 2^{n.bit_length() - 1} fp32",
                ms,
                n,
                12 * n,
                check=status,
                triton_ms=triton_ms(add_kernel, grid, x, y, out, n, BLOCK_SIZE=1024),
                cupy_add_ms=copy_ms,
                ptx=ptx,
            )
        )
    return rows


def softmax(shapes: list[tuple[int, int]]) -> list[dict]:

    import tileworkbench as tw
    from tileworkbench.workbench.showcase import softmax_kernel

    rows = []
    for m, n in shapes:
        x, out = rand((m, n)), poisoned((m, n))
        block = tw.next_power_of_2(n)
        args = (out, x, n, n, n)
        softmax_kernel[(m,)](*args, BLOCK_SIZE=block)
        x64 = host(x[:64]).astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        status = check(out[:64], e / e.sum(axis=1, keepdims=True), 1e-5)
        ms = bench_ms(lambda: softmax_kernel[(m,)](*args, BLOCK_SIZE=block))
        ptx = ptx_record(softmax_kernel, args, (m,), {"BLOCK_SIZE": block})
        rows.append(
            row(
                f"softmax {m}x{n} fp32",
                ms,
                4.0 * m * n,
                8.0 * m * n,
                check=status,
                triton_ms=triton_ms(softmax_kernel, (m,), *args, BLOCK_SIZE=block),
                torch_ms=torch_softmax_ms(x),
                ptx=ptx,
            )
        )
    return rows


# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): a few of bench/tensor_cores.py's configs; each
# compiler gets its best (timed once each, as an autotuner would)
MATMUL_CONFIGS = [(128, 128, 32, 4, 4), (128, 128, 64, 8, 3), (128, 256, 32, 8, 3)]
# what a launch on square fp16 matrices of a size divisible by 16 specializes on
MATMUL_SIGNATURE = (
    "a_ptr=*fp16:16,b_ptr=*fp16:16,c_ptr=*fp16:16,M=i32:16,N=i32:16,K=i32:16,stride_am=i32:16,"
    "stride_ak=i32:1,stride_bk=i32:16,stride_bn=i32:1,stride_cm=i32:16,stride_cn=i32:1"
)


def best_config(launch, configs) -> tuple[tuple, float, list]:
    """The fastest of `configs` for `launch(config)`, with each one's time or the error raised."""
    tried = []
    for config in configs:
        try:
            launch(config)
            tried.append((config, bench_ms(lambda config=config: launch(config))))
        except Exception as exc:  # noqa: BLE001 - a config that fails is reported, the rest go on
            tried.append((config, f"{type(exc).__name__}: {str(exc)[:160]}"))
    timed = [(c, t) for c, t in tried if isinstance(t, float)]
    if not timed:
        raise RuntimeError(f"no config ran: {tried}")
    config, ms = min(timed, key=lambda ct: ct[1])
    return config, ms, [[list(c), t] for c, t in tried]


PTX_COUNTED = ("mma.sync", "wgmma.mma_async", "ldmatrix", "cp.async")


def ptx_record(kernel, args, grid, meta: dict, num_warps: int = 4, num_stages: int = 3) -> dict:
    """How to compile the timed kernel again and the sha256 of the PTX that ran (record_ptx.py), so
    a notebook can tell when today's compiler no longer emits it. With --interpret: the launch's
    specialization compiled for sm_90a."""
    from tileworkbench.workbench.record_ptx import launch_entry

    compiled = kernel.warmup(*args, grid=grid, **meta, num_warps=num_warps, num_stages=num_stages)
    return launch_entry(kernel, compiled, meta, target="sm_90a" if XP is np else None)


def sass_record(compiled) -> dict:
    """The timed kernel's SASS as notebook 03 shows it: instruction counts and the lines around its
    first tensor-core instruction, with the PTX's counts beside them (or why there is no SASS)."""
    from tileworkbench.workbench.sass_summary import count_instructions, tensor_core_excerpt

    try:
        sass = compiled.asm["sass"]
    except KeyError as exc:  # MissingStageError: names the missing tool
        return {"missing": str(exc)}
    ptx = compiled.asm["ptx"]
    return {
        "arch": compiled.target,
        "counts": count_instructions(sass),
        "ptx_counts": {k: ptx.count(k) for k in PTX_COUNTED},
        "registers": compiled.n_regs,
        "excerpt": tensor_core_excerpt(sass),
    }


def matmul(sizes: list[int]) -> tuple[list[dict], dict]:
    """The notebook's matmul (fp16 in, fp32 accumulate) on tensor cores, beside cuBLAS and Triton
    (each compiler with its best of MATMUL_CONFIGS), and the SASS of our timed kernel."""

    import tileworkbench as tw
    from tileworkbench.workbench.showcase import matmul_kernel

    rows, sass, tuning = [], {}, {}
    for s in sizes:
        a, b, c = rand((s, s), np.float16), rand((s, s), np.float16), poisoned((s, s), np.float16)
        args = (a, b, c, s, s, s, s, 1, s, 1, s, 1)

        def launch(config, args=args, s=s):
            bm, bn, bk, warps, stages = config
            grid = (tw.cdiv(s, bm), tw.cdiv(s, bn))
            matmul_kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=warps,
                                num_stages=stages)

        config, _, tried = best_config(launch, MATMUL_CONFIGS)
        c.fill(np.nan)
        launch(config)
        ref = host(a[:128]).astype(np.float64) @ host(b).astype(np.float64)
        status = check(c[:128], ref, 2e-2)
        ms = bench_ms(lambda: launch(config))
        cublas_ms = bench_ms(lambda: XP.matmul(a, b))  # cuBLAS (NumPy's BLAS with --interpret)
        triton = triton_matmul(matmul_kernel, args)
        flops = 2.0 * s**3
        rows.append({
            "label": f"matmul {s}^3 fp16", "ms": ms, "TFLOP/s": flops / ms / 1e9,
            "cuBLAS TFLOP/s": flops / cublas_ms / 1e9,
            "Triton TFLOP/s": flops / triton[1] / 1e9 if triton else None,
            "config": list(config), "Triton config": list(triton[0]) if triton else None,
            "check": status, "flops": flops, "bytes": 6.0 * s * s, "compute": "fp16",
            "cublas_ms": cublas_ms, "triton_ms": triton[1] if triton else None,
        })
        tuning[rows[-1]["label"]] = tried
        bm, bn, bk, warps, stages = config
        meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}
        rows[-1]["ptx"] = ptx_record(matmul_kernel, args, (tw.cdiv(s, bm), tw.cdiv(s, bn)), meta,
                                     warps, stages)
        if XP is np:  # --interpret: the launch's specialization compiled for sm_90 (no GPU needed)
            compiled = tw.compile(matmul_kernel, signature=MATMUL_SIGNATURE, constexprs=meta,
                                  target="sm_90", num_warps=warps, num_stages=stages)
        else:  # the kernel just timed
            compiled = matmul_kernel.warmup(*args, grid=(tw.cdiv(s, bm), tw.cdiv(s, bn)), **meta,
                                            num_warps=warps, num_stages=stages)
        sass = {"kernel": f"{rows[-1]['label']}, config {list(config)}", **sass_record(compiled)}
    return rows, {"sass": sass, "tuning": tuning}


def triton_matmul(kernel, args) -> tuple[tuple, float] | None:
    """Triton's best config and time for the same source on the same arrays, or None without it."""
    try:
        from tileworkbench.workbench.triton_compare import _triton_args, to_triton

        triton_kernel = to_triton(kernel)
    except ImportError:
        return None
    if XP is np:  # --interpret: Triton needs the GPU
        return None
    named = _triton_args(dict(enumerate(args)))
    positional = [named[i] for i in range(len(args))]
    s = args[3]

    def launch(config):
        bm, bn, bk, warps, stages = config
        grid = (-(-s // bm), -(-s // bn))
        triton_kernel[grid](*positional, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=warps,
                            num_stages=stages)

    try:
        if XP is np:  # --interpret: Triton needs the GPU
            return None
        config, ms, _ = best_config(launch, MATMUL_CONFIGS)
    except Exception as exc:  # noqa: BLE001 - recorded as missing, the rest goes on
        print(f"  triton failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None
    return config, bench_ms(lambda: launch(config))


def layer_norm(shapes: list[tuple[int, int]]) -> list[dict]:

    import tileworkbench as tw
    from tileworkbench.workbench.showcase import layer_norm_kernel

    rows = []
    for m, n in shapes:
        x, w, b, y = rand((m, n)), rand(n), rand(n), poisoned((m, n))
        block = tw.next_power_of_2(n)
        args = (x, y, w, b, n, n, 1e-5)
        layer_norm_kernel[(m,)](*args, BLOCK_SIZE=block)
        x64 = host(x[:64]).astype(np.float64)
        mean = x64.mean(axis=1, keepdims=True)
        ref = (x64 - mean) / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5) * host(w) + host(b)
        status = check(y[:64], ref, 1e-4)
        ms = bench_ms(lambda: layer_norm_kernel[(m,)](*args, BLOCK_SIZE=block))
        ptx = ptx_record(layer_norm_kernel, args, (m,), {"BLOCK_SIZE": block})
        rows.append(
            row(
                f"layer norm {m}x{n} fp32",
                ms,
                8.0 * m * n,
                8.0 * m * n + 8.0 * n,
                check=status,
                triton_ms=triton_ms(layer_norm_kernel, (m,), *args, BLOCK_SIZE=block),
                ptx=ptx,
            )
        )
    return rows


def use_tritons_nvdisasm() -> None:
    """Triton's wheel brings nvdisasm (triton/backends/nvidia/bin): where no other is found, put it
    on the PATH, so the matmul's SASS is recorded on a GPU machine without NVIDIA's wheels."""
    import os

    from tileworkbench.backends.nvptx.tools import find_tool

    if find_tool("nvdisasm") is not None:
        return
    try:
        import triton
    except ImportError:
        return
    folder = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    if (folder / "nvdisasm").is_file():
        os.environ["PATH"] = f"{os.environ.get('PATH', '')}{os.pathsep}{folder}"


def summary(rows: list[dict]) -> str:
    """One line per recorded row: ours, Triton's and the library's rate, and the check."""
    lines = [f"{'workload':<28}{'ours':>12}{'Triton':>12}{'library':>12}  check"]
    for r in rows:
        if "cuBLAS TFLOP/s" in r:  # compute-bound: TFLOP/s
            rates = (r["TFLOP/s"], r.get("Triton TFLOP/s"), r["cuBLAS TFLOP/s"])
            unit = "TFLOP/s"
        else:
            library = r.get("cupy_add_ms") or r.get("torch_ms")
            rates = (r["GB/s"], r.get("triton GB/s"), library and r["bytes"] / library / 1e6)
            unit = "GB/s"
        cells = "".join(f"{v:>12.1f}" if v else f"{'-':>12}" for v in rates)
        lines.append(f"{r['label']:<28}{cells}  {r['check']} ({unit})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--out", default=str(ROOT / "notebooks" / "data"))
    parser.add_argument("--interpret", action="store_true",
                        help="tiny sizes in the interpreter, no GPU (tests this script)")
    args = parser.parse_args(argv)
    global XP
    from tileworkbench.cuda.device import gpu_available
    from tileworkbench.workbench.peaks import current_device, get_peaks

    if args.interpret:
        import os

        os.environ["TILEWORKBENCH_INTERPRET"] = "1"
        from tileworkbench.config import config

        config.interpret = True
    elif not gpu_available():
        print("no GPU: nothing recorded (the notebooks keep showing their last record)")
        return 1
    else:
        import cupy

        XP = cupy
    use_tritons_nvdisasm()
    peaks = get_peaks(measure=not args.interpret, force=not args.interpret)
    print(peaks)
    base = {
        "device": current_device() or "the interpreter (--interpret)",
        "date": datetime.date.today().isoformat(),
        "versions": versions(),
        "peaks": {k: p.value for k, p in peaks.measured.items() if not k.startswith("_")},
    }
    sizes = SIZES["interpret" if args.interpret else "quick" if args.quick else "full"]
    suites = {  # notebook -> its rows (and what else it shows)
        "01_vector_add": lambda: vector_add(sizes["01_vector_add"]),
        "02_fused_softmax": lambda: softmax(sizes["02_fused_softmax"]),
        "03_matmul": lambda: matmul(sizes["03_matmul"]),
        "04_layer_norm": lambda: layer_norm(sizes["04_layer_norm"]),
    }
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    everything, failed = [], []
    for name, suite in suites.items():
        print(f"== {name}", flush=True)
        try:
            result = suite()
        except Exception as exc:  # noqa: BLE001 - record the others
            print(f"  {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            failed.append(name)
            continue
        rows, extra = result if isinstance(result, tuple) else (result, {})
        everything.extend(rows)
        (out_dir / f"{name}.json").write_text(json.dumps({**base, "rows": rows, **extra}, indent=1))
        if "sass" in extra:
            sass = extra["sass"]
            print(f"  SASS of {sass.get('kernel')}: {sass.get('counts') or sass.get('missing')}")
    notes = [
        "Each kernel on the measured ceilings of this GPU; FLOPs and bytes as the workbench counts."
    ]
    roofline_rows = [{k: v for k, v in r.items() if k in ROOFLINE_KEYS} for r in everything]
    (out_dir / "06_roofline.json").write_text(
        json.dumps({**base, "rows": roofline_rows, "notes": notes}, indent=1)
    )
    print(summary(everything))
    print(f"written to {out_dir}")
    wrong = [r["label"] for r in everything if r["check"] != "pass"]
    if wrong or failed:
        print(f"WRONG: {wrong + failed}", file=sys.stderr)
        return 1
    return 0


SIZES = {
    "full": {"01_vector_add": [1 << 24, 1 << 28], "02_fused_softmax": [(4096, 4096), (4096, 16384)],
             "03_matmul": [4096, 8192], "04_layer_norm": [(4096, 4096), (8192, 8192)]},
    "quick": {"01_vector_add": [1 << 24], "02_fused_softmax": [(4096, 4096)],
              "03_matmul": [2048], "04_layer_norm": [(4096, 4096)]},
    "interpret": {"01_vector_add": [1 << 12], "02_fused_softmax": [(64, 256)],
                  "03_matmul": [128], "04_layer_norm": [(64, 256)]},
}
# what the roofline notebook's table shows of each row
ROOFLINE_KEYS = ("label", "ms", "GB/s", "TFLOP/s", "flops", "bytes", "compute", "check", "ptx")


if __name__ == "__main__":
    sys.exit(main())
