"""GPU probe for TMA descriptor copies (issue 11, item 2): host `TensorDescriptor` arguments lowered to
`cp.async.bulk.tensor` on sm_90+. Run from the repo root, no arguments:

    PYTHONPATH=. python3 tools/probe_tma.py

Each case runs in a subprocess of its own (a device fault ends only that case), launches a kernel on
CuPy arrays (outputs poisoned with NaN first), compares with a NumPy float64 reference, and says
whether the compiled kernel took the TMA path (PTX `cp.async.bulk.tensor`, SASS `UTMALDG` / `UTMASTG`
where cuobjdump or nvdisasm is installed). Edge tiles run past the tensors (zero or NaN padding,
clipped stores). Cases marked `[unverified]` set TILEWORKBENCH_TMA_UNVERIFIED=1 (boxes the compiler
keeps on the pointer path by default: 32/64-byte rows, small boxes, to find why they failed on
2026-12-01) and do not count toward the exit status; every other case does (exit 1 on a wrong
result, a crash, or TMA missing where expected).
"""

from __future__ import annotations

import json
import os
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

from tma_kernels import (
    tma_load_to_pointers,
    tma_matmul,
    tma_matmul_bt,
    tma_scale_copy,
    tma_shifted_copy,
    tma_store_from_pointers,
)

from tileworkbench.tools.tensor_descriptor import TensorDescriptor

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
        return subprocess.run(args, check=False, capture_output=True, text=True).stdout


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


def probe_copy(cp, dtype, shape, block, padded_cols: int, want_tma: bool = True) -> None:
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
    err = rel_err(got, want)
    name = f"copy {np.dtype(dtype).name} {rows}x{cols} (stride {padded_cols}) block {block}"
    row(name, err == 0, err, tma_facts(compiled, want_tma) + mismatch(got, want))


def mismatch(got, want) -> str:
    """Where a result differs: unwritten (NaN where a value belongs), written past the shape, wrong."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    unwritten = int((np.isnan(got) & ~np.isnan(want)).sum())
    stray = int((~np.isnan(got) & np.isnan(want)).sum())
    both = ~np.isnan(got) & ~np.isnan(want)
    wrong = int((got[both] != want[both]).sum())
    if not unwritten + stray + wrong:
        return ""
    rows, cols = np.nonzero((np.isnan(got) != np.isnan(want)) | (both & (got != want)))
    return (f"; unwritten {unwritten}, stray {stray}, wrong {wrong} (first at {rows[0]},{cols[0]};"
            f" rows {sorted(set(rows.tolist()))[:6]})")


def probe_padding(cp, padding: str, shift: int) -> None:
    """Offsets moved by -shift: a positive shift gives negative box coordinates (edges read the
    padding); a negative one reads past the far edges only."""
    block = (64, 32)
    x_host = RNG.standard_normal((128, 96)).astype(np.float32)
    x = cp.asarray(x_host)
    out = cp.full((128, 96), -7.0, dtype=np.float32)
    compiled = tma_shifted_copy[(2, 3)](TensorDescriptor.from_tensor(x, list(block), padding),
                                        TensorDescriptor.from_tensor(out, list(block)), shift,
                                        BM=64, BN=32)
    fill = 0.0 if padding == "zero" else np.nan
    padded = np.full((128 + 2 * abs(shift), 96 + 2 * abs(shift)), fill)
    padded[abs(shift):abs(shift) + 128, abs(shift):abs(shift) + 96] = x_host
    want = padded[abs(shift) - shift:abs(shift) - shift + 128, abs(shift) - shift:abs(shift) - shift + 96]
    got = cp.asnumpy(out)
    err = rel_err(got, want)
    row(f"shifted copy by {shift}, {padding} padding", err == 0, err,
        tma_facts(compiled, True) + mismatch(got, want))


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
    row(f"matmul fp16 {m}x{n}x{k} -> {np.dtype(out_dtype).name} {blocks} st {stages}",
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


def _cases(cp) -> dict:
    """name -> (run, unverified): the cases, each run in a subprocess of its own."""
    f16, f32 = np.float16, np.float32
    return {
        "copy fp16 128B": (lambda: probe_copy(cp, f16, (300, 200), (64, 64), 200), False),
        "copy fp32 128B padded": (lambda: probe_copy(cp, f32, (300, 200), (32, 32), 204), False),
        "copy fp32 128B 77x45": (lambda: probe_copy(cp, f32, (77, 45), (32, 32), 48), False),
        "copy fp32 no swizzle": (lambda: probe_copy(cp, f32, (70, 40), (16, 64), 40), False),
        "copy fallback stride": (lambda: probe_copy(cp, f32, (77, 45), (32, 32), 45, False), False),
        "copy 64B default": (lambda: probe_copy(cp, f32, (77, 45), (16, 16), 48, False), False),
        "[unverified] 64B big box": (lambda: probe_copy(cp, f32, (300, 200), (64, 16), 204), True),
        "[unverified] 32B big box": (lambda: probe_copy(cp, f32, (300, 200), (128, 8), 204), True),
        "[unverified] 64B 16x16": (lambda: probe_copy(cp, f32, (77, 45), (16, 16), 48), True),
        "[unverified] 128B 8x32": (lambda: probe_copy(cp, f32, (300, 200), (8, 32), 204), True),
        "[unverified] none 16B": (lambda: probe_copy(cp, f32, (300, 200), (128, 4), 204), True),
        "far-edge zero padding": (lambda: probe_padding(cp, "zero", -5), False),
        "far-edge nan padding": (lambda: probe_padding(cp, "nan", -5), False),
        "negative coords zero": (lambda: probe_padding(cp, "zero", 5), False),
        "one-sided": (lambda: probe_one_sided(cp), False),
        "matmul small st1": (lambda: probe_matmul(cp, 300, 264, 328, (64, 64, 64), f32, 1), False),
        "matmul small st3": (lambda: probe_matmul(cp, 300, 264, 328, (64, 64, 64), f32, 3), False),
        "matmul 2048 st1": (lambda: probe_matmul(cp, 2048, 2048, 2048, (128, 128, 64), f16, 1),
                            False),
        "matmul 2048 st3": (lambda: probe_matmul(cp, 2048, 2048, 2048, (128, 128, 64), f16, 3),
                            False),
        "tutorial-09 b.T": (lambda: probe_matmul_bt(cp, 1000, 520, 776, (128, 128, 64)), False),
    }


def run_case(name: str) -> int:
    """The child: run one case and print its row as JSON."""
    import cupy as cp

    run, _ = _cases(cp)[name]
    try:
        run()
        cp.cuda.runtime.deviceSynchronize()
    except Exception as error:  # noqa: BLE001 - a probe: report, the parent tabulates
        traceback.print_exc()
        ROWS.append((name, "ERROR", "", f"{type(error).__name__}: {error}"[:200], ""))
    print("ROW " + json.dumps(ROWS[-1] if ROWS else (name, "ERROR", "", "no row", "")))
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        return run_case(sys.argv[2])
    import cupy as cp

    from tileworkbench.runtime.compiler import resolve_target

    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, "
          f"target {resolve_target(None)}", flush=True)
    cache = tempfile.mkdtemp(prefix="probe_tma_cache_")
    failed = []
    for name, (_, unverified) in _cases(cp).items():
        env = dict(os.environ, TILEWORKBENCH_CACHE_DIR=cache)
        env.pop("TILEWORKBENCH_TMA_UNVERIFIED", None)
        if unverified:
            env["TILEWORKBENCH_TMA_UNVERIFIED"] = "1"
        try:
            done = subprocess.run([sys.executable, __file__, "--case", name], env=env, check=False,
                                  capture_output=True, text=True, timeout=90)
            lines = [line for line in done.stdout.splitlines() if line.startswith("ROW ")]
            result = tuple(json.loads(lines[-1][4:])) if lines else (
                name, "ERROR", "", f"rc {done.returncode}: {done.stderr.strip()[-200:]}", "")
            if result[1] == "ERROR":
                sys.stderr.write(done.stderr[-3000:])
        except subprocess.TimeoutExpired:
            result = (name, "ERROR", "", "timed out after 90 s (a hang: an mbarrier never done?)", "")
        ROWS.append((name, *result[1:]))
        bad = result[1] != "ok" or "NO TMA" in result[3] or "UNEXPECTED" in result[3]
        if bad and not unverified:
            failed.append(name)
    widths = [min(60, max(len(str(r[i])) for r in ROWS)) for i in range(5)]
    for r in ROWS:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))
    print("FAILED: " + ", ".join(failed) if failed else "all TMA probes passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
