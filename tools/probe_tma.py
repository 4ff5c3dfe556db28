"""GPU probe for TMA descriptor copies (issue 11, item 2): host `TensorDescriptor` arguments lowered to
`cp.async.bulk.tensor` on sm_90+. Run from the repo root, no arguments:

    PYTHONPATH=. python3 tools/probe_tma.py

Each row launches a kernel on CuPy arrays (outputs poisoned with NaN first), compares with a NumPy
float64 reference, and says whether the compiled kernel took the TMA path (PTX `cp.async.bulk.tensor`,
SASS `UTMALDG` / `UTMASTG` where cuobjdump or nvdisasm is installed). Edge tiles run past the tensors
(zero or NaN padding, clipped stores). Exits 1 on any wrong result or a TMA row without TMA.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "nvptx"))

import tileworkbench as tw  # noqa: E402
from tileworkbench.tools.tensor_descriptor import TensorDescriptor  # noqa: E402
from tma_kernels import (  # noqa: E402
    tma_load_to_pointers,
    tma_matmul,
    tma_matmul_bt,
    tma_scale_copy,
    tma_shifted_copy,
    tma_store_from_pointers,
)

RNG = np.random.default_rng(2026)
ROWS: list[tuple] = []
FAILED = []


def sass_of(compiled) -> str:
    """The kernel's SASS: the compiler's, else cuobjdump/nvdisasm on its cubin, else ''."""
    try:
        text = compiled.asm.get("sass") or ""
    except Exception:  # noqa: BLE001 - a probe: report, do not stop
        text = ""
    if text:
        return text
    cubin = getattr(compiled, "cubin", None)
    tool = shutil.which("cuobjdump") or shutil.which("nvdisasm")
    if not cubin or not tool:
        return ""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        args = [tool, "--dump-sass", f.name] if tool.endswith("cuobjdump") else [tool, f.name]
        return subprocess.run(args, capture_output=True, text=True).stdout


def tma_facts(compiled, want_tma: bool) -> str:
    ptx = compiled.asm["ptx"]
    sass = sass_of(compiled)
    loads = ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global")
    stores = ptx.count("cp.async.bulk.tensor.2d.global.shared::cta")
    facts = f"ptx ld/st {loads}/{stores}"
    if sass:
        facts += f", sass UTMALDG {len(re.findall('UTMALDG', sass))} UTMASTG " \
                 f"{len(re.findall('UTMASTG', sass))}"
    else:
        facts += ", sass n/a"
    if want_tma and loads + stores == 0:
        facts += " NO TMA"
    if not want_tma and loads + stores:
        facts += " UNEXPECTED TMA"
    return facts


def row(name: str, ok: bool, err: float, facts: str, ms: float | None = None) -> None:
    ROWS.append((name, "ok" if ok else "WRONG", f"{err:.2e}", facts,
                 "" if ms is None else f"{ms:.3f} ms"))
    if not ok or "NO TMA" in facts or "UNEXPECTED" in facts:
        FAILED.append(name)


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if np.isnan(got).any() != np.isnan(want).any() or (np.isnan(got) != np.isnan(want)).any():
        return float("inf")
    mask = ~np.isnan(want)
    scale = max(1e-30, float(np.abs(want[mask]).max(initial=0)))
    return float(np.abs(got[mask] - want[mask]).max(initial=0)) / scale


def probe_copy(cp, dtype, shape, block, padded_cols: int) -> None:
    """Scale-copy through descriptors; a row stride of `padded_cols` (the columns past the shape are
    poison that no store may touch)."""
    rows, cols = shape
    host = RNG.standard_normal((rows, padded_cols)).astype(dtype)
    x = cp.asarray(host)[:, :cols]
    out_full = cp.full((rows, padded_cols), np.nan, dtype=dtype)
    out = out_full[:, :cols]
    grid = (-(-rows // block[0]), -(-cols // block[1]))
    compiled = tma_scale_copy[grid](TensorDescriptor.from_tensor(x, list(block)),
                                    TensorDescriptor.from_tensor(out, list(block)), 2.0,
                                    BM=block[0], BN=block[1])
    got = cp.asnumpy(out_full)
    want = np.full(got.shape, np.nan)
    want[:, :cols] = host[:, :cols].astype(np.float64) * 2.0
    fits = (padded_cols * np.dtype(dtype).itemsize) % 16 == 0
    err = rel_err(got, want)
    name = f"copy {np.dtype(dtype).name} {rows}x{cols} (stride {padded_cols}) block {block}"
    row(name, err <= 1e-3 if dtype == np.float16 else err <= 1e-6, err, tma_facts(compiled, fits))


def probe_padding(cp, padding: str) -> None:
    block = (64, 32)
    x_host = RNG.standard_normal((128, 96)).astype(np.float32)
    x = cp.asarray(x_host)
    out = cp.full((128, 96), np.nan if padding == "zero" else -7.0, dtype=np.float32)
    compiled = tma_shifted_copy[(2, 3)](TensorDescriptor.from_tensor(x, list(block), padding),
                                        TensorDescriptor.from_tensor(out, list(block)), 5,
                                        BM=64, BN=32)
    want = np.full((128, 96), 0.0 if padding == "zero" else np.nan)
    want[5:, 5:] = x_host[:123, :91]
    err = rel_err(cp.asnumpy(out), want)
    row(f"negative offsets, {padding} padding", err == 0, err, tma_facts(compiled, True))


def probe_one_sided(cp) -> None:
    rows, cols, block = 100, 72, (32, 32)
    x_host = RNG.standard_normal((rows, cols)).astype(np.float32)
    x = cp.asarray(x_host)
    grid = (-(-rows // block[0]), -(-cols // block[1]))
    out = cp.full((rows, cols), np.nan, dtype=np.float32)
    compiled = tma_load_to_pointers[grid](TensorDescriptor.from_tensor(x, list(block)), out, rows,
                                          cols, BM=32, BN=32)
    err = rel_err(cp.asnumpy(out), x_host)
    row("TMA load -> plain stores", err == 0, err, tma_facts(compiled, True))
    out = cp.full((rows, cols), np.nan, dtype=np.float32)
    compiled = tma_store_from_pointers[grid](x, TensorDescriptor.from_tensor(out, list(block)),
                                             rows, cols, BM=32, BN=32)
    err = rel_err(cp.asnumpy(out), x_host)
    row("plain loads -> TMA store", err == 0, err, tma_facts(compiled, True))


def probe_matmul(cp, m: int, n: int, k: int, blocks, out_dtype, stages: int = 3,
                 num_warps: int = 4) -> None:
    bm, bn, bk = blocks
    a_host = RNG.standard_normal((m, k)).astype(np.float16)
    b_host = RNG.standard_normal((k, n)).astype(np.float16)
    a, b = cp.asarray(a_host), cp.asarray(b_host)
    c = cp.full((m, n), np.nan, dtype=out_dtype)
    descs = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
             TensorDescriptor.from_tensor(c, [bm, bn]))
    grid = (-(-m // bm), -(-n // bn))

    def launch():
        return tma_matmul[grid](*descs, k, BM=bm, BN=bn, BK=bk, num_warps=num_warps,
                                num_stages=stages)

    compiled = launch()
    got = cp.asnumpy(c)
    want = a_host.astype(np.float64) @ b_host.astype(np.float64)
    err = rel_err(got, want)
    cp.cuda.runtime.deviceSynchronize()
    start = time.perf_counter()
    for _ in range(10):
        launch()
    cp.cuda.runtime.deviceSynchronize()
    ms = (time.perf_counter() - start) / 10 * 1e3
    tol = 2e-2 if out_dtype == np.float16 else 5e-3
    flops = 2 * m * n * k / (ms * 1e-3) / 1e12
    row(f"matmul fp16 {m}x{n}x{k} -> {np.dtype(out_dtype).name} {blocks} stages {stages}",
        err <= tol, err, tma_facts(compiled, True) + f", {flops:.1f} TFLOP/s", ms)


def probe_matmul_bt(cp, m: int, n: int, k: int, blocks, stages: int = 3) -> None:
    """Tutorial 09's TMA matmul (B as N x K, transposed in the kernel), grouped program order."""
    bm, bn, bk = blocks
    a_host = RNG.standard_normal((m, k)).astype(np.float16)
    b_host = RNG.standard_normal((n, k)).astype(np.float16)
    c = cp.full((m, n), np.nan, dtype=np.float16)
    compiled = tma_matmul_bt[(-(-m // bm) * -(-n // bn),)](
        TensorDescriptor.from_tensor(cp.asarray(a_host), [bm, bk]),
        TensorDescriptor.from_tensor(cp.asarray(b_host), [bn, bk]),
        TensorDescriptor.from_tensor(c, [bm, bn]), m, n, k, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
        BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, num_stages=stages)
    err = rel_err(cp.asnumpy(c), a_host.astype(np.float64) @ b_host.astype(np.float64).T)
    row(f"tutorial-09 matmul {m}x{n}x{k} b.T stages {stages}", err <= 2e-2, err,
        tma_facts(compiled, True))


def main() -> int:
    import cupy as cp

    from tileworkbench.runtime.compiler import resolve_target

    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, "
          f"target {resolve_target(None)}")
    probes = [
        ("copy fp16 128B swizzle", lambda: probe_copy(cp, np.float16, (300, 200), (64, 64), 200)),
        ("copy fp32 128B padded", lambda: probe_copy(cp, np.float32, (300, 200), (32, 32), 204)),
        ("copy fp32 64B", lambda: probe_copy(cp, np.float32, (77, 45), (16, 16), 48)),
        ("copy fp32 32B", lambda: probe_copy(cp, np.float32, (77, 45), (32, 8), 48)),
        ("copy fp32 no swizzle", lambda: probe_copy(cp, np.float32, (70, 40), (16, 64), 40)),
        ("copy fallback", lambda: probe_copy(cp, np.float32, (77, 45), (16, 16), 45)),
        ("zero padding", lambda: probe_padding(cp, "zero")),
        ("nan padding", lambda: probe_padding(cp, "nan")),
        ("one-sided", lambda: probe_one_sided(cp)),
        ("matmul small 1", lambda: probe_matmul(cp, 300, 264, 328, (64, 64, 32), np.float32, 1)),
        ("matmul small 3", lambda: probe_matmul(cp, 300, 264, 328, (64, 64, 32), np.float32, 3)),
        ("matmul 512 2", lambda: probe_matmul(cp, 512, 512, 512, (128, 128, 64), np.float16, 2)),
        ("matmul 2048 1", lambda: probe_matmul(cp, 2048, 2048, 2048, (128, 128, 64), np.float16, 1)),
        ("matmul 2048 3", lambda: probe_matmul(cp, 2048, 2048, 2048, (128, 128, 64), np.float16, 3)),
        ("matmul bt 1024", lambda: probe_matmul_bt(cp, 1000, 520, 776, (128, 128, 64))),
    ]
    for name, probe in probes:
        try:
            probe()
        except Exception as error:  # noqa: BLE001 - a probe: report every failure, keep going
            traceback.print_exc()
            ROWS.append((name, "ERROR", "", f"{type(error).__name__}: {error}"[:160], ""))
            FAILED.append(name)
    if not ROWS:
        return 1
    widths = [max(len(str(r[i])) for r in ROWS) for i in range(5)]
    for r in ROWS:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))
    print("FAILED: " + ", ".join(FAILED) if FAILED else "all TMA probes passed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
