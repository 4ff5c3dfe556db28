"""GPU probe for TMA (issue 11): host `TensorDescriptor` arguments lowered to `cp.async.bulk.tensor`
on sm_90+, on by default. Run from the repo root, no arguments:

    PYTHONPATH=. python3 tools/probe_tma.py          # every case, a table, exit 1 on a wrong result
    PYTHONPATH=. python3 tools/probe_tma.py --case NAME   # one case (in this process)
    PYTHONPATH=. python3 tools/probe_tma.py --sanitize NAME   # one case under compute-sanitizer

Each case runs in a subprocess of its own (a device fault ends only that case; up to 8 at a time,
the timing case alone at the end), launches a kernel on CuPy arrays (outputs poisoned with NaN or a
sentinel first), compares with a NumPy float64 reference, and says whether each access took the
TMA path as the compiler's rules say it should (PTX `cp.async.bulk.tensor` loads/stores, SASS
`UTMALDG` / `UTMASTG` where cuobjdump or nvdisasm is installed). Covered: every swizzle (32/64/128
bytes, rows of 256+ bytes as 128-byte column blocks, unswizzled boxes), padded strides, a ragged
innermost extent and a ragged stride (pointer path, no stray writes), a misaligned base (its load
on pointers), shifted boxes (unaligned: pointer path; negative, far-edge and wholly outside: TMA
with the padding), one-sided TMA, descriptor matmuls (fp16/bf16, 1-4 stages, tails; sm_90a:
wgmma) and, at 4096^3 (fp16, bf16) and 8192^3 fp16, our TMA matmul beside Triton's tutorial-09 TMA
kernel (the same source) and our pointer matmul, each at its best of a few configs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "nvptx"))
sys.path.insert(0, str(ROOT / "bench"))

import sass_counts  # noqa: E402  (tools/, the probe's own folder)
from tma_kernels import (  # noqa: E402
    tma_load_to_pointers,
    tma_matmul,
    tma_matmul_bt,
    tma_matmul_k_sum,
    tma_scale_copy,
    tma_shifted_copy,
    tma_store_from_pointers,
)

from tileworkbench.frontend.tma_rules import tma_box  # noqa: E402
from tileworkbench.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

RNG = np.random.default_rng(2026)
ROWS: list[tuple] = []
LOADS = "cp.async.bulk.tensor.2d.shared::cluster.global"
STORES = "cp.async.bulk.tensor.2d.global.shared::cta"
TIMING = "4096^3 fp16 timing"
TIMING_BF16 = "4096^3 bf16 timing"
TIMING_8K = "8192^3 fp16 timing"
TIMINGS = (TIMING, TIMING_BF16, TIMING_8K)
SM90 = "[sm_90, mma.sync] "  # cases compiled for sm_90 (TILEWORKBENCH_TARGET)


def tma_facts(compiled, loads: int | None, stores: int | None) -> str:
    """PTX/SASS TMA counts; `loads`/`stores`: the PTX counts the rules promise (None: any)."""
    ptx = compiled.asm["ptx"]
    got_loads, got_stores = ptx.count(LOADS), ptx.count(STORES)
    facts = f"ptx ld/st {got_loads}/{got_stores}"
    sass = sass_counts.sass_of(compiled)
    if sass:
        facts += f", sass UTMALDG {sass.count('UTMALDG')} UTMASTG {sass.count('UTMASTG')}"
        facts += f" HGMMA {len(re.findall('HGMMA', sass))}"
    for what, want, got in (("loads", loads, got_loads), ("stores", stores, got_stores)):
        if want is not None and want != got:
            facts += f" EXPECTED {want} TMA {what}"
    if "wgmma.mma_async" in ptx:
        facts += ", wgmma"
    return facts


def row(name: str, ok: bool, err: float, facts: str, ms: float | None = None) -> None:
    ROWS.append((name, "ok" if ok and "EXPECTED" not in facts else "WRONG", f"{err:.2e}", facts,
                 "" if ms is None else f"{ms:.3f} ms"))


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if (np.isnan(got) != np.isnan(want)).any():
        return float("inf")
    mask = ~np.isnan(want)
    scale = max(1e-30, float(np.abs(want[mask]).max(initial=0)))
    return float(np.abs(got[mask] - want[mask]).max(initial=0)) / scale


def mismatch(got, want) -> str:
    """Where a result differs: unwritten (NaN where a value belongs), written past the shape,
    wrong."""
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


def probe_copy(cp, dtype, shape, block, stride: int, tma: bool) -> None:
    """Scale-copy through descriptors at a row stride of `stride` (the columns past the shape are
    poison no store may touch); `tma`: whether the rules give both sides to TMA."""
    rows, cols = shape
    host = RNG.standard_normal((rows, stride)).astype(dtype)
    x = cp.asarray(host)[:, :cols]
    out_full = cp.full((rows, stride), np.nan, dtype=dtype)
    grid = (-(-rows // block[0]), -(-cols // block[1]))
    compiled = tma_scale_copy[grid](TensorDescriptor.from_tensor(x, list(block)),
                                    TensorDescriptor.from_tensor(out_full[:, :cols], list(block)),
                                    2.0, BM=block[0], BN=block[1])
    got = cp.asnumpy(out_full)
    want = np.full(got.shape, np.nan)
    want[:, :cols] = host[:, :cols].astype(np.float64) * 2.0
    err = rel_err(got, want)
    inner, _ = tma_box(block, np.dtype(dtype).itemsize)
    want_tma = block[1] // inner if tma else 0  # one box per column block
    row(f"copy {np.dtype(dtype).name} {rows}x{cols}/{stride} {block}", err == 0, err,
        tma_facts(compiled, want_tma, want_tma) + mismatch(got, want))


def probe_misaligned_base(cp) -> None:
    host = RNG.standard_normal((64, 72)).astype(np.float32)
    x = cp.asarray(host)[:, 1:65]  # 4 bytes past the allocation's alignment
    out = cp.full((64, 64), np.nan, dtype=np.float32)
    compiled = tma_scale_copy[(2, 2)](TensorDescriptor.from_tensor(x, [32, 32]),
                                      TensorDescriptor.from_tensor(out, [32, 32]), -1.0,
                                      BM=32, BN=32)
    err = rel_err(cp.asnumpy(out), -host[:, 1:65].astype(np.float64))
    row("misaligned base: load on pointers", err == 0, err, tma_facts(compiled, 0, 1))


def probe_shift(cp, padding: str, shift: int) -> None:
    """dst tile = src tile at offsets moved by -shift: unaligned shifts take the pointer path;
    multiples of 16 elements are TMA at negative / far / wholly outside coordinates."""
    block = (64, 32)
    host = RNG.standard_normal((128, 96)).astype(np.float32)
    out = cp.full((128, 96), -7.0, dtype=np.float32)
    compiled = tma_shifted_copy[(2, 3)](TensorDescriptor.from_tensor(cp.asarray(host), list(block),
                                                                     padding),
                                        TensorDescriptor.from_tensor(out, list(block)), shift,
                                        BM=64, BN=32)
    s = abs(shift)
    padded = np.full((128 + 2 * s, 96 + 2 * s), 0.0 if padding == "zero" else np.nan)
    padded[s:s + 128, s:s + 96] = host
    want = padded[s - shift:s - shift + 128, s - shift:s - shift + 96]
    got = cp.asnumpy(out)
    err = rel_err(got, want)
    row(f"shift {shift}, {padding} padding", err == 0, err,
        tma_facts(compiled, 0 if shift % 16 else 1, 1) + mismatch(got, want))


def probe_one_sided(cp) -> None:
    rows, cols, block = 100, 72, (32, 32)
    host = RNG.standard_normal((rows, cols)).astype(np.float32)
    x = cp.asarray(host)
    grid = (-(-rows // block[0]), -(-cols // block[1]))
    out = cp.full((rows, cols), np.nan, dtype=np.float32)
    a = tma_load_to_pointers[grid](TensorDescriptor.from_tensor(x, list(block)), out, rows, cols,
                                   BM=32, BN=32)
    err = rel_err(cp.asnumpy(out), host)
    out = cp.full((rows, cols), np.nan, dtype=np.float32)
    b = tma_store_from_pointers[grid](x, TensorDescriptor.from_tensor(out, list(block)), rows, cols,
                                      BM=32, BN=32)
    err = max(err, rel_err(cp.asnumpy(out), host))
    row("one-sided: TMA load -> pointers, pointers -> TMA store", err == 0, err,
        tma_facts(a, 1, 0) + "; " + tma_facts(b, 0, 1))


def _matmul_inputs(cp, m, n, k, dtype, b_transposed: bool):
    import ml_dtypes

    np_type = ml_dtypes.bfloat16 if dtype == "bf16" else np.float16
    a = RNG.standard_normal((m, k)).astype(np_type)
    b = RNG.standard_normal((n, k) if b_transposed else (k, n)).astype(np_type)
    a_dev = cp.asarray(a.view(np.uint16)).view(cp.float16)
    b_dev = cp.asarray(b.view(np.uint16)).view(cp.float16)
    if dtype == "bf16":  # CuPy has no bf16: pass the bits through a torch view
        import torch

        a_dev = torch.as_tensor(a_dev, device="cuda").view(torch.bfloat16)
        b_dev = torch.as_tensor(b_dev, device="cuda").view(torch.bfloat16)
    want = a.astype(np.float64) @ (b.astype(np.float64).T if b_transposed else b.astype(np.float64))
    return a_dev, b_dev, want


def probe_matmul(cp, m, n, k, blocks, dtype: str, stages: int, warps: int = 4,
                 out=np.float32) -> None:
    """A K loop of descriptor loads feeding tl.dot, the result stored through a descriptor."""
    bm, bn, bk = blocks
    a, b, want = _matmul_inputs(cp, m, n, k, dtype, False)
    c = cp.full((m, n), np.nan, dtype=out)
    compiled = tma_matmul[(-(-m // bm), -(-n // bn))](
        TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
        TensorDescriptor.from_tensor(c, [bm, bn]), k, BM=bm, BN=bn, BK=bk, num_warps=warps,
        num_stages=stages)
    err = rel_err(cp.asnumpy(c), want)
    row(f"matmul {dtype} {m}x{n}x{k} {blocks} w{warps} st{stages} -> {np.dtype(out).name}",
        err <= 2e-2, err,
        tma_facts(compiled, None, None))


def probe_matmul_k_sum(cp, m, n, k, blocks, stages: int = 3) -> None:
    """A K loop TMA cannot pipeline (its offsets have another use): A's and B's boxes take the one
    scratch tile in turn (session 6's wrong 2048^3 matmul at num_stages=1 went this way)."""
    bm, bn, bk = blocks
    a, b, want = _matmul_inputs(cp, m, n, k, "fp16", False)
    c = cp.full((m, n), np.nan, dtype=np.float16)
    grid = (-(-m // bm), -(-n // bn))
    sums = cp.full(grid[0] * grid[1], -1, dtype=np.int32)
    compiled = tma_matmul_k_sum[grid](
        TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
        TensorDescriptor.from_tensor(c, [bm, bn]), sums, k, BM=bm, BN=bn, BK=bk,
        num_stages=stages)
    err = rel_err(cp.asnumpy(c), want)
    sums_ok = bool((cp.asnumpy(sums) == sum(range(0, k, bk))).all())
    unpipelined = "ttng.tma_ring" not in compiled.asm["tile-gpu"]
    row(f"unpipelined TMA matmul {m}x{n}x{k} {blocks}", err <= 2e-2 and sums_ok and unpipelined,
        err, tma_facts(compiled, None, None) + ("" if unpipelined else " PIPELINED?"))


def probe_matmul_bt(cp, m, n, k, blocks, stages: int, warps: int = 4) -> None:
    """Tutorial 09's TMA matmul (B as N x K, transposed in the kernel), fp16 out."""
    bm, bn, bk = blocks
    a, b, want = _matmul_inputs(cp, m, n, k, "fp16", True)
    c = cp.full((m, n), np.nan, dtype=np.float16)
    compiled = tma_matmul_bt[(-(-m // bm) * -(-n // bn),)](
        TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bn, bk]),
        TensorDescriptor.from_tensor(c, [bm, bn]), m, n, k, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
        BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, num_warps=warps, num_stages=stages)
    err = rel_err(cp.asnumpy(c), want)
    row(f"tutorial-09 b.T {m}x{n}x{k} {blocks} w{warps} st{stages}", err <= 2e-2, err,
        tma_facts(compiled, None, None))


def _triton_tma_kernels():
    """tests/nvptx/tma_kernels.py imported with `tw`/`tl` bound to Triton: the same source."""
    import importlib.util

    text = (ROOT / "tests" / "nvptx" / "tma_kernels.py").read_text()
    text = text.replace("import tileworkbench as tw\n", "import triton as tw\n")
    text = text.replace("import tileworkbench.language as tl\n", "import triton.language as tl\n")
    path = Path(tempfile.mkdtemp(prefix="probe_tma_triton_")) / "tma_kernels_triton.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("tma_kernels_triton", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONFIGS = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 4, 4), (128, 128, 64, 8, 3)]


def probe_timing(size: int, dtype: str, configs=CONFIGS) -> None:
    """size^3 matmul, fp32 accumulation, out in the input type: tutorial 09's TMA kernel compiled by
    us and by Triton 3.6 (the same source, B given N x K), and our tutorial-03 pointer matmul
    (bench/kernels.py), each at its best of `configs` (BM, BN, BK, warps, stages); do_bench medians,
    the contenders interleaved, best of 3 rounds."""
    import torch
    import triton
    import triton.testing
    from triton.tools.tensor_descriptor import TensorDescriptor as TritonDescriptor

    import kernels as bench_kernels  # bench/kernels.py

    torch_type = torch.bfloat16 if dtype == "bf16" else torch.float16
    a = torch.randn((size, size), device="cuda", dtype=torch_type)
    b = torch.randn((size, size), device="cuda", dtype=torch_type)  # N x K
    want = a.double() @ b.double().T
    triton_kernels = _triton_tma_kernels()
    pointer = bench_kernels.load("tileworkbench").matmul_kernel
    bt = b.T  # K x N view for the pointer kernel

    def launchers(config):
        bm, bn, bk, warps, stages = config
        grid = (triton.cdiv(size, bm) * triton.cdiv(size, bn),)
        outs = {name: torch.full((size, size), float("nan"), device="cuda", dtype=torch_type)
                for name in ("ours TMA", "Triton TMA", "ours pointers")}
        consts = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
                      num_warps=warps, num_stages=stages)

        def ours():
            return tma_matmul_bt[grid](TensorDescriptor.from_tensor(a, [bm, bk]),
                                       TensorDescriptor.from_tensor(b, [bn, bk]),
                                       TensorDescriptor.from_tensor(outs["ours TMA"], [bm, bn]),
                                       size, size, size, **consts)

        def theirs():
            return triton_kernels.tma_matmul_bt[grid](
                TritonDescriptor.from_tensor(a, [bm, bk]),
                TritonDescriptor.from_tensor(b, [bn, bk]),
                TritonDescriptor.from_tensor(outs["Triton TMA"], [bm, bn]), size, size, size,
                **consts)

        def pointers():
            c = outs["ours pointers"]
            return pointer[grid](a, bt, c, size, size, size, a.stride(0), a.stride(1),
                                 bt.stride(0), bt.stride(1), c.stride(0), c.stride(1), BM=bm,
                                 BN=bn, BK=bk, GROUP_M=8, num_warps=warps, num_stages=stages)

        return {"ours TMA": ours, "Triton TMA": theirs, "ours pointers": pointers}, outs

    best: dict[str, tuple] = {}  # name -> (ms, config, err, compiled)
    for config in configs:
        fns, outs = launchers(config)
        compiled = {}
        for name, fn in fns.items():
            try:
                compiled[name] = fn()
            except Exception as error:  # noqa: BLE001 - a config that does not fit: skip it
                print(f"{name} {config}: {type(error).__name__}: {error}"[:300], file=sys.stderr)
        torch.cuda.synchronize()
        times = {name: [] for name in compiled}
        for _ in range(3):
            for name in compiled:
                times[name].append(triton.testing.do_bench(fns[name], warmup=10, rep=40))
        for name in compiled:
            out = outs[name]
            err = float(((out.double() - want).abs().max() / want.abs().max()).item())
            ms = min(times[name])
            if name not in best or ms < best[name][0]:
                best[name] = (ms, config, err, compiled[name])
    tflops = {name: 2 * size**3 / (v[0] * 1e-3) / 1e12 for name, v in best.items()}
    text = ", ".join(f"{name} {tflops[name]:.0f} TFLOP/s {best[name][1]} (err {best[name][2]:.1e})"
                     for name in tflops)
    ratio = tflops.get("ours TMA", 0) / tflops.get("Triton TMA", float("inf"))
    errs = [v[2] for v in best.values()]
    row(f"{size}^3 {dtype}: ours TMA vs Triton TMA vs ours pointers", max(errs) <= 1e-2,
        max(errs), f"{text}; ours/Triton {ratio:.3f}; "
        + tma_facts(best["ours TMA"][3], None, None), best["ours TMA"][0])


def _cases(cp) -> dict:
    """name -> run: the cases, each run in a subprocess of its own."""
    f16, f32 = np.float16, np.float32
    return {
        "copy fp16 128B x2 blocks": lambda: probe_copy(cp, f16, (300, 200), (64, 128), 200, True),
        "copy fp16 128B": lambda: probe_copy(cp, f16, (300, 200), (64, 64), 200, True),
        "copy fp32 128B padded": lambda: probe_copy(cp, f32, (300, 200), (32, 32), 204, True),
        "copy fp32 64B": lambda: probe_copy(cp, f32, (77, 44), (16, 16), 48, True),
        "copy fp32 32B": lambda: probe_copy(cp, f32, (77, 44), (32, 8), 48, True),
        "copy fp32 16B unswizzled": lambda: probe_copy(cp, f32, (300, 200), (128, 4), 204, True),
        "copy fp32 4 rows unswizzled": lambda: probe_copy(cp, f32, (77, 44), (4, 32), 48, True),
        "copy fp32 x2 blocks": lambda: probe_copy(cp, f32, (70, 40), (16, 64), 40, True),
        "copy fp16 x4 blocks": lambda: probe_copy(cp, f16, (300, 600), (32, 256), 616, True),
        "ragged extent 45/48": lambda: probe_copy(cp, f32, (77, 45), (32, 32), 48, False),
        "ragged stride 45/45": lambda: probe_copy(cp, f32, (77, 45), (32, 32), 45, False),
        "misaligned base": lambda: probe_misaligned_base(cp),
        "shift 5 (unaligned)": lambda: probe_shift(cp, "zero", 5),
        "shift 16 (negative)": lambda: probe_shift(cp, "zero", 16),
        "shift 16 nan": lambda: probe_shift(cp, "nan", 16),
        "shift -16 (far edge)": lambda: probe_shift(cp, "zero", -16),
        "shift -64 (wholly out)": lambda: probe_shift(cp, "nan", -64),
        "one-sided": lambda: probe_one_sided(cp),
        "matmul tails st1": lambda: probe_matmul(cp, 300, 264, 328, (64, 64, 64), "fp16", 1),
        "matmul tails st2": lambda: probe_matmul(cp, 300, 264, 328, (64, 128, 64), "fp16", 2),
        "matmul tails bf16 st3": lambda: probe_matmul(cp, 1000, 520, 776, (128, 128, 64), "bf16",
                                                      3),
        "matmul tails st4": lambda: probe_matmul(cp, 1000, 520, 776, (128, 128, 32), "fp16", 4),
        "matmul 2048 st1": lambda: probe_matmul(cp, 2048, 2048, 2048, (128, 128, 64), "fp16", 1),
        "matmul 2048 st3 w8": lambda: probe_matmul(cp, 2048, 2048, 2048, (128, 256, 64), "fp16", 3,
                                                   8, np.float16),
        "tutorial-09 b.T": lambda: probe_matmul_bt(cp, 1000, 520, 776, (128, 128, 64), 3),
        "unpipelined 2048": lambda: probe_matmul_k_sum(cp, 2048, 2048, 2048, (128, 128, 64)),
        SM90 + "unpipelined 2048": lambda: probe_matmul_k_sum(cp, 2048, 2048, 2048,
                                                              (128, 128, 64)),
        SM90 + "matmul 2048 st1": lambda: probe_matmul(cp, 2048, 2048, 2048, (128, 128, 64),
                                                       "fp16", 1, 4, np.float16),
        SM90 + "tutorial-09 b.T st3": lambda: probe_matmul_bt(cp, 1000, 520, 776,
                                                              (128, 128, 64), 3),
        TIMING: lambda: probe_timing(4096, "fp16"),
        TIMING_BF16: lambda: probe_timing(4096, "bf16", CONFIGS[:2]),
        TIMING_8K: lambda: probe_timing(8192, "fp16", CONFIGS[:2]),
    }


def run_case(name: str) -> int:
    """The child: run one case and print its row as JSON."""
    import cupy as cp

    try:
        _cases(cp)[name]()
        cp.cuda.runtime.deviceSynchronize()
    except Exception as error:  # noqa: BLE001 - a probe: report, the parent tabulates
        traceback.print_exc()
        ROWS.append((name, "ERROR", "", f"{type(error).__name__}: {error}"[:300], ""))
    print("ROW " + json.dumps(ROWS[-1] if ROWS else (name, "ERROR", "", "no row", "")), flush=True)
    return 0


def _child(name: str, cache: str, sanitize: bool = False, timeout: int = 100) -> tuple:
    env = dict(os.environ, TILEWORKBENCH_CACHE_DIR=cache, TILEWORKBENCH_TMA="1")
    if name.startswith(SM90):
        env["TILEWORKBENCH_TARGET"] = "sm_90"
    command = [sys.executable, __file__, "--case", name]
    if sanitize:
        command = ["compute-sanitizer", "--tool", "memcheck", *command]
    try:
        done = subprocess.run(command, env=env, check=False, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        hang = f"timed out after {timeout} s (a hang: an mbarrier never done?)"
        return (name, "ERROR", "", hang, ""), ""
    lines = [line for line in done.stdout.splitlines() if line.startswith("ROW ")]
    result = tuple(json.loads(lines[-1][4:])) if lines else (
        name, "ERROR", "", f"rc {done.returncode}: {done.stderr.strip()[-300:]}", "")
    return (name, *result[1:]), done.stderr if result[1] != "ok" else ""


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        return run_case(sys.argv[2])
    import cupy as cp

    from tileworkbench.runtime.compiler import resolve_target

    cache = tempfile.mkdtemp(prefix="probe_tma_cache_")
    if len(sys.argv) == 3 and sys.argv[1] == "--sanitize":
        result, stderr = _child(sys.argv[2], cache, sanitize=True)
        print(result, stderr[-6000:], sep="\n")
        return 0 if result[1] == "ok" else 1
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, "
          f"target {resolve_target(None)}", flush=True)
    start = time.perf_counter()
    names = [n for n in _cases(cp) if n not in TIMINGS]
    with ThreadPoolExecutor(min(8, os.cpu_count() or 4)) as pool:  # each case its own context
        results = list(pool.map(lambda n: _child(n, cache), names))
    results += [_child(name, cache, timeout=300) for name in TIMINGS]  # alone on the GPU
    for result, stderr in results:
        ROWS.append(result)
        if stderr:
            sys.stderr.write(f"--- {result[0]}\n{stderr[-2500:]}\n")
    widths = [min(64, max(len(str(r[i])) for r in ROWS)) for i in range(5)]
    for r in ROWS:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))
    failed = [r[0] for r in ROWS if r[1] != "ok"]
    print(f"{time.perf_counter() - start:.0f} s; " +
          ("FAILED: " + ", ".join(failed) if failed else "all TMA probes passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
