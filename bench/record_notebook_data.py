"""Records the GPU results the teaching notebooks show in place of GPU-only cells (notebooks/data/*.json).

Run on a GPU machine:  PYTHONPATH=. python bench/record_notebook_data.py [--quick] [--out notebooks/data]

It measures the device's ceilings (`%tilekernel_peaks`), then times the showcase kernels with `do_bench` at
realistic sizes, beside Triton (same source, when installed) and CuPy/cuBLAS where there is a library
equivalent. Each result is checked against a float64 reference first; a failing kernel is recorded as such.
Nothing is written without a GPU: the notebooks then say "no recorded data yet".
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


def versions() -> str:
    import cupy

    import tileworkbench

    parts = [
        f"tileworkbench {tileworkbench.__version__}",
        f"CuPy {cupy.__version__}",
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

    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def triton_ms(kernel, grid, *args, **kwargs) -> float | None:
    """Triton's time for the same kernel source on the same arguments, or None without Triton."""
    try:
        from tileworkbench.workbench.triton_compare import _triton_args, to_triton

        triton_kernel = to_triton(kernel)
    except ImportError:
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
    return out


def vector_add(sizes: list[int]) -> list[dict]:
    import cupy as cp

    import tileworkbench as tw
    from tileworkbench.workbench.showcase import add_kernel

    rows = []
    for n in sizes:
        x = cp.random.standard_normal(n, dtype=cp.float32)
        y = cp.random.standard_normal(n, dtype=cp.float32)
        out = cp.full(n, cp.nan, cp.float32)
        grid = (tw.cdiv(n, 1024),)
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
        status = check(out[: 1 << 20], (x[: 1 << 20] + y[: 1 << 20]).get(), 1e-6)
        ms = bench_ms(lambda: add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024))
        copy_ms = bench_ms(lambda: cp.add(x, y, out=out))
        rows.append(
            row(
                f"vector add 2^{n.bit_length() - 1} fp32",
                ms,
                n,
                12 * n,
                check=status,
                triton_ms=triton_ms(add_kernel, grid, x, y, out, n, BLOCK_SIZE=1024),
                cupy_add_ms=copy_ms,
            )
        )
    return rows


def softmax(shapes: list[tuple[int, int]]) -> list[dict]:
    import cupy as cp

    import tileworkbench as tw
    from tileworkbench.workbench.showcase import softmax_kernel

    rows = []
    for m, n in shapes:
        x = cp.random.standard_normal((m, n), dtype=cp.float32)
        out = cp.full_like(x, cp.nan)
        block = tw.next_power_of_2(n)
        args = (out, x, n, n, n)
        softmax_kernel[(m,)](*args, BLOCK_SIZE=block)
        x64 = x[:64].get().astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        status = check(out[:64], e / e.sum(axis=1, keepdims=True), 1e-5)
        ms = bench_ms(lambda: softmax_kernel[(m,)](*args, BLOCK_SIZE=block))
        rows.append(
            row(
                f"softmax {m}x{n} fp32",
                ms,
                4.0 * m * n,
                8.0 * m * n,
                check=status,
                triton_ms=triton_ms(softmax_kernel, (m,), *args, BLOCK_SIZE=block),
            )
        )
    return rows


def matmul(sizes: list[int]) -> list[dict]:
    import cupy as cp

    import tileworkbench as tw
    from tileworkbench.workbench.showcase import matmul_kernel

    rows = []
    for s in sizes:
        a = cp.random.standard_normal((s, s), dtype=cp.float32).astype(cp.float16)
        b = cp.random.standard_normal((s, s), dtype=cp.float32).astype(cp.float16)
        c = cp.full((s, s), cp.nan, cp.float16)
        meta = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}
        grid = (tw.cdiv(s, 128), tw.cdiv(s, 128))
        args = (a, b, c, s, s, s, s, 1, s, 1, s, 1)
        matmul_kernel[grid](*args, **meta, num_warps=8)
        ref = a[:128].get().astype(np.float64) @ b.get().astype(np.float64)
        status = check(c[:128], ref, 2e-2)
        ms = bench_ms(lambda: matmul_kernel[grid](*args, **meta, num_warps=8))
        cublas_ms = bench_ms(lambda: cp.matmul(a, b))
        rows.append(
            row(
                f"matmul {s}^3 fp16",
                ms,
                2.0 * s**3,
                6.0 * s * s,
                "fp16",
                check=status,
                cublas_ms=cublas_ms,
                cublas_TFLOPs=2.0 * s**3 / cublas_ms / 1e9,
                triton_ms=triton_ms(matmul_kernel, grid, *args, **meta, num_warps=8),
            )
        )
    return rows


def layer_norm(shapes: list[tuple[int, int]]) -> list[dict]:
    import cupy as cp

    import tileworkbench as tw
    from tileworkbench.workbench.showcase import layer_norm_kernel

    rows = []
    for m, n in shapes:
        x = cp.random.standard_normal((m, n), dtype=cp.float32)
        w = cp.random.standard_normal(n, dtype=cp.float32)
        b = cp.random.standard_normal(n, dtype=cp.float32)
        y = cp.full_like(x, cp.nan)
        block = tw.next_power_of_2(n)
        args = (x, y, w, b, n, n, 1e-5)
        layer_norm_kernel[(m,)](*args, BLOCK_SIZE=block)
        x64 = x[:64].get().astype(np.float64)
        mean = x64.mean(axis=1, keepdims=True)
        ref = (x64 - mean) / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5) * w.get() + b.get()
        status = check(y[:64], ref, 1e-4)
        ms = bench_ms(lambda: layer_norm_kernel[(m,)](*args, BLOCK_SIZE=block))
        rows.append(
            row(
                f"layer norm {m}x{n} fp32",
                ms,
                8.0 * m * n,
                8.0 * m * n + 8.0 * n,
                check=status,
                triton_ms=triton_ms(layer_norm_kernel, (m,), *args, BLOCK_SIZE=block),
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--out", default=str(ROOT / "notebooks" / "data"))
    args = parser.parse_args(argv)
    from tileworkbench.runtime.device import gpu_available
    from tileworkbench.workbench.peaks import current_device, get_peaks

    if not gpu_available():
        print("no GPU: nothing recorded (the notebooks keep saying 'no recorded data yet')")
        return 1
    peaks = get_peaks(measure=True, force=True)
    print(peaks)
    base = {
        "device": current_device(),
        "date": datetime.date.today().isoformat(),
        "versions": versions(),
        "peaks": {k: p.value for k, p in peaks.measured.items() if not k.startswith("_")},
    }
    quick = args.quick
    suites = {
        "01_vector_add": lambda: vector_add([1 << 24] if quick else [1 << 24, 1 << 28]),
        "02_fused_softmax": lambda: softmax(
            [(4096, 4096)] if quick else [(4096, 4096), (4096, 16384)]
        ),
        "03_matmul": lambda: matmul([2048] if quick else [4096, 8192]),
        "04_layer_norm": lambda: layer_norm(
            [(4096, 4096)] if quick else [(4096, 4096), (8192, 8192)]
        ),
    }
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    everything = []
    for name, suite in suites.items():
        print(f"== {name}")
        try:
            rows = suite()
        except Exception as exc:  # noqa: BLE001 - record the others
            print(f"  {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        for r in rows:
            print(
                "  "
                + ", ".join(
                    f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()
                )
            )
        everything.extend(rows)
        (out_dir / f"{name}.json").write_text(json.dumps({**base, "rows": rows}, indent=1))
    notes = [
        "Each kernel on the measured ceilings of this GPU; FLOPs and bytes as the workbench counts."
    ]
    (out_dir / "06_roofline.json").write_text(
        json.dumps({**base, "rows": everything, "notes": notes}, indent=1)
    )
    print(f"written to {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
