"""GPU probe for tensor descriptors made in the kernel (issue 11, item 2): `tl.make_tensor_descriptor`
on sm_90a builds its TMA tensor map on the device (`tensormap.replace` in shared memory, copied to the
launch's global scratch from `set_allocator`) and copies tiles with `cp.async.bulk.tensor`; the
epilogue's TMA store stages its tile over the dead rings. Run from the repo root, no arguments:

    PYTHONPATH=. python3 tools/probe_tensormap_device.py

Sets TILEWORKBENCH_TMA=1 itself (TMA is on by default since s7tma; the probe does not rely on it). Each case runs in a
subprocess of its own (a device fault ends only that case), on CuPy or torch arrays with outputs
poisoned first, against a NumPy float64 reference, and says whether the kernel took the TMA path (PTX
`tensormap.replace` / `cp.async.bulk.tensor`, SASS `UTMALDG` / `UTMASTG`), with its shared memory
and blocks per SM. The checks run six at a time; then, alone, the paired timing at 4096^3 fp16
(bench/paired_timing.py: all contenders back to back in every repetition) of our descriptor matmul
on host descriptors and on in-kernel ones (and, at 4 warps, the persistent one) beside Triton's
same-source kernels (`TensorDescriptor` arguments; `tl.make_tensor_descriptor` +
`triton.set_allocator`) at 128x128x64/4w/3s and 128x256x64/8w/3s: each row gives the shared bytes,
blocks per SM, and the speed-up over Triton's counterpart (> 1: ours faster) with its quartiles.
Exit 1 on a wrong result (any contender's), a crash, or TMA missing (or present) where not expected.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

os.environ.setdefault("TILEWORKBENCH_TMA", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "nvptx"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import sass_counts  # noqa: E402  (tools/, the probe's own folder)

RNG = np.random.default_rng(2027)
ROWS: list[tuple] = []


def facts(compiled, want_tma: bool, want_maps: bool | None = None) -> str:
    """What the kernel took: in-kernel maps (`want_maps`, default `want_tma`) and TMA copies."""
    want_maps = want_tma if want_maps is None else want_maps
    ptx = compiled.asm["ptx"]
    sass = sass_counts.sass_of(compiled)
    maps = ptx.count("tensormap.cp_fenceproxy")
    loads = ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global")
    stores = ptx.count("cp.async.bulk.tensor.2d.global.shared::cta")
    text = f"maps {maps}, ptx ld/st {loads}/{stores}"
    if sass:
        text += f", sass UTMALDG {sass.count('UTMALDG')} UTMASTG {sass.count('UTMASTG')}"
        if "HGMMA" in sass:
            text += f" HGMMA {sass.count('HGMMA')}"
    if (want_tma and loads + stores == 0) or (want_maps and not maps):
        text += " NO TMA"
    if (not want_tma and loads + stores) or (not want_maps and maps):
        text += " UNEXPECTED TMA"
    return text


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if (np.isnan(got) != np.isnan(want)).any():
        return float("inf")
    mask = ~np.isnan(want)
    scale = max(1e-30, float(np.abs(want[mask]).max(initial=0)))
    return float(np.abs(got[mask] - want[mask]).max(initial=0)) / scale


def row(name, ok, err, text, ms=None, tflops=None) -> None:
    ROWS.append((name, "ok" if ok else "WRONG", "" if err is None else f"{err:.2e}", text,
                 "" if ms is None else f"{ms:.3f} ms" + ("" if tflops is None else
                                                          f" {tflops:.0f} TFLOP/s")))


def cupy_allocator():
    import cupy as cp

    import tileworkbench as tw

    tw.set_allocator(lambda size, align, stream: cp.empty(size, dtype=cp.uint8))


def torch_allocator():
    import torch

    import tileworkbench as tw

    tw.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))


# -- cases -------------------------------------------------------------------------------------------


def probe_copy(dtype, shape, block, stride: int, want_tma: bool = True) -> None:
    """A scale copy through in-kernel descriptors over a row stride of `stride` elements (the columns
    past the shape are poison no store may touch)."""
    import cupy as cp
    from device_desc_kernels import device_desc_copy

    cupy_allocator()
    rows, cols = shape
    host = RNG.standard_normal((rows, stride)).astype(dtype)
    x = cp.asarray(host)
    out = cp.full((rows, stride), np.nan, dtype=dtype)
    grid = (-(-rows // block[0]), -(-cols // block[1]))
    compiled = device_desc_copy[grid](x, out, rows, cols, stride, stride, 2.0, BM=block[0],
                                      BN=block[1])
    got = cp.asnumpy(out)
    want = np.full(got.shape, np.nan)
    want[:, :cols] = host[:, :cols].astype(np.float64) * 2.0
    err = rel_err(got, want)
    row(f"copy {np.dtype(dtype).name} {rows}x{cols} stride {stride} block {block}", err == 0, err,
        facts(compiled, want_tma))


def probe_padding(padding: str, shift: int) -> None:
    import cupy as cp
    from device_desc_kernels import device_desc_shifted

    cupy_allocator()
    rows, cols = 100, 80
    x_host = RNG.standard_normal((rows, 80)).astype(np.float32)
    out = cp.full((128, 128), -7.0, dtype=np.float32)
    compiled = device_desc_shifted[(4, 4)](cp.asarray(x_host), out, rows, cols, 80, shift, BM=32,
                                           BN=32, PADDING=padding)
    want = np.full((128, 128), np.nan if padding == "nan" else 0.0)
    r, c = np.meshgrid(np.arange(128) - shift, np.arange(128) - shift, indexing="ij")
    inside = (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
    want[inside] = x_host[r[inside], c[inside]]
    got = cp.asnumpy(out)
    err = rel_err(got, want)
    row(f"shifted by {shift}, {padding} padding, tiles past the edges", err == 0, err,
        facts(compiled, True))


def probe_no_allocator() -> None:
    import cupy as cp
    from device_desc_kernels import device_desc_copy

    import tileworkbench as tw

    tw.set_allocator(None)
    x = cp.asarray(RNG.standard_normal((64, 64)).astype(np.float32))
    out = cp.full((64, 64), np.nan, dtype=np.float32)
    try:
        device_desc_copy[(2, 2)](x, out, 64, 64, 64, 64, 1.0, BM=32, BN=32)
    except Exception as error:  # noqa: BLE001
        ok = "no allocator was set" in str(error) and "device_desc_copy" in str(error)
        row("no allocator: a clear error", ok, None, f"{type(error).__name__}: {str(error)[:90]}")
        return
    row("no allocator: a clear error", False, None, "launched without an allocator")


def _matmul_inputs(m, n, k):
    import torch

    a_host = RNG.standard_normal((m, k)).astype(np.float16)
    b_host = RNG.standard_normal((k, n)).astype(np.float16)
    a, b = torch.from_numpy(a_host).cuda(), torch.from_numpy(b_host).cuda()
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    want = a_host.astype(np.float64) @ b_host.astype(np.float64)
    return a, b, c, want


def probe_matmul(m, n, k, blocks, stages: int, warps: int, mode: str) -> None:
    """mode: "device" (in-kernel descriptors) or "host" (TensorDescriptor arguments)."""
    import torch

    a, b, c, want = _matmul_inputs(m, n, k)
    bm, bn, bk = blocks
    grid = (-(-m // bm), -(-n // bn))
    if mode == "host":
        from tma_kernels import tma_matmul

        from tileworkbench.tools.tensor_descriptor import TensorDescriptor

        descs = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
                 TensorDescriptor.from_tensor(c, [bm, bn]))

        def launch():
            return tma_matmul[grid](*descs, k, BM=bm, BN=bn, BK=bk, num_warps=warps,
                                    num_stages=stages)
        compiled = launch()
    else:
        from device_desc_kernels import device_desc_matmul

        torch_allocator()

        def launch():
            return device_desc_matmul[grid](a, b, c, m, n, k, k, n, n, BM=bm, BN=bn, BK=bk,
                                            num_warps=warps, num_stages=stages)
        compiled = launch()
    torch.cuda.synchronize()
    err = rel_err(c.cpu().numpy(), want)
    text = facts(compiled, True, mode == "device") + "; " + _kernel_facts(compiled, warps)
    row(f"matmul {m}x{n}x{k} {blocks} st{stages} w{warps} {mode}", err <= 2e-2, err, text)


def probe_persistent(m, n, k, blocks, stages: int, warps: int) -> None:
    """A persistent matmul (a program per SM looping over tiles) on in-kernel descriptors."""
    import torch
    from device_desc_kernels import device_desc_persistent_matmul

    torch_allocator()
    a, b, c, want = _matmul_inputs(m, n, k)
    bm, bn, bk = blocks
    programs = torch.cuda.get_device_properties(0).multi_processor_count

    def launch():
        return device_desc_persistent_matmul[(programs,)](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk,
                                                          PROGRAMS=programs, num_warps=warps,
                                                          num_stages=stages)
    compiled = launch()
    torch.cuda.synchronize()
    err = rel_err(c.cpu().numpy(), want)
    c.fill_(float("nan"))  # again, on the warm launch path (fresh scratch from the allocator)
    launch()
    torch.cuda.synchronize()
    err = max(err, rel_err(c.cpu().numpy(), want))
    row(f"persistent matmul {m}x{n}x{k} {blocks} st{stages} w{warps} device", err <= 2e-2, err,
        facts(compiled, True) + "; " + _kernel_facts(compiled, warps))


# -- paired timing: ours (host and in-kernel descriptors) against Triton's, one run --------------

PAIRED = "paired 4096^3 fp16"
PAIRED_CONFIGS = [(128, 128, 64, 4, 3), (128, 256, 64, 8, 3)]  # BM BN BK warps stages


def _blocks_per_sm(regs, shared, warps) -> str:
    from tileworkbench.workbench.resources import limits_for, occupancy

    if shared is None:
        return "?"
    blocks, limiter = occupancy(regs or None, shared, warps, limits_for("sm_90a"))
    return f"{blocks} ({limiter})"


def _triton_kernels():
    """Triton's descriptor matmuls (in-kernel and host descriptors), the source of ours."""
    import triton
    import triton.language as tl

    @triton.jit
    def triton_device_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr):
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1],
                                           block_shape=[BM, BK])
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1],
                                           block_shape=[BK, BN])
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1],
                                           block_shape=[BM, BN])
        row = tl.program_id(0) * BM
        col = tl.program_id(1) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(a_desc.load([row, k]), b_desc.load([k, col]), acc)
        c_desc.store([row, col], acc.to(tl.float16))

    @triton.jit
    def triton_host_matmul(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr):
        row = tl.program_id(0) * BM
        col = tl.program_id(1) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(a_desc.load([row, k]), b_desc.load([k, col]), acc)
        c_desc.store([row, col], acc.to(tl.float16))

    return triton_device_matmul, triton_host_matmul


def _paired_contenders(config, a, b, c):
    """name -> launch (returning the compiled kernel) at one config; every launch writes c."""
    import torch
    import triton
    from device_desc_kernels import device_desc_matmul, device_desc_persistent_matmul
    from tma_kernels import tma_matmul
    from triton.tools.tensor_descriptor import TensorDescriptor as TritonDescriptor

    from tileworkbench.tools.tensor_descriptor import TensorDescriptor

    bm, bn, bk, warps, stages = config
    m, k = a.shape
    n = b.shape[1]
    grid = (-(-m // bm), -(-n // bn))
    options = {"num_warps": warps, "num_stages": stages}
    ours = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
            TensorDescriptor.from_tensor(c, [bm, bn]))
    theirs = (TritonDescriptor.from_tensor(a, [bm, bk]), TritonDescriptor.from_tensor(b, [bk, bn]),
              TritonDescriptor.from_tensor(c, [bm, bn]))
    triton_device, triton_host = _triton_kernels()
    programs = torch.cuda.get_device_properties(0).multi_processor_count
    fns = {
        "ours host": lambda: tma_matmul[grid](*ours, k, BM=bm, BN=bn, BK=bk, **options),
        "triton host": lambda: triton_host[grid](*theirs, k, BM=bm, BN=bn, BK=bk, **options),
        "ours in-kernel": lambda: device_desc_matmul[grid](a, b, c, m, n, k, k, n, n, BM=bm, BN=bn,
                                                            BK=bk, **options),
        "triton in-kernel": lambda: triton_device[grid](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk,
                                                        **options),
    }
    if warps == 4:
        fns["ours persistent in-kernel"] = lambda: device_desc_persistent_matmul[(programs,)](
            a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, PROGRAMS=programs, **options)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    return fns


def _kernel_facts(kernel, warps) -> str:
    """Shared bytes and blocks per SM of a compiled kernel, ours or Triton's."""
    md = kernel.metadata
    shared = getattr(md, "shared", None)
    regs = getattr(md, "n_regs", None) or getattr(kernel, "n_regs", None)
    return f"shared {shared} B, {_blocks_per_sm(regs, shared, warps)} blocks/SM"


def probe_paired(size: int = 4096) -> None:
    """Our descriptor matmuls (host, in-kernel, persistent in-kernel) and Triton's at each config,
    timed back to back in every repetition (bench/paired_timing.py); ratios are ours/theirs
    speed-ups (> 1: ours faster). Every contender's result is checked first."""
    import torch
    from paired_timing import paired_times, ratio, spread

    torch_allocator()
    a, b, c, want = _matmul_inputs(size, size, size)
    for config in PAIRED_CONFIGS:
        tag = "x".join(map(str, config[:3])) + f" w{config[3]} st{config[4]}"
        fns = _paired_contenders(config, a, b, c)
        facts_of = {}
        for name, fn in fns.items():  # compile, check, note what it holds
            c.fill_(float("nan"))
            kernel = fn()
            torch.cuda.synchronize()
            err = rel_err(c.float().cpu().numpy(), want)
            facts_of[name] = _kernel_facts(kernel, config[3])
            if err > 2e-2:
                row(f"{tag} {name}", False, err, facts_of[name])
        times = paired_times(fns, reps=40)
        for name in fns:
            ms = float(np.median(times[name]))
            text = facts_of[name]
            rival = {"ours host": "triton host", "ours in-kernel": "triton in-kernel",
                     "ours persistent in-kernel": "triton in-kernel"}.get(name)
            if rival is not None:
                low, high = spread(times, rival, name)
                text += f"; {ratio(times, rival, name):.3f}x {rival} [{low:.3f}, {high:.3f}]"
            row(f"{tag} {name}", True, None, text, ms, 2 * size ** 3 / (ms * 1e-3) / 1e12)


def _cases() -> dict:
    """name -> (run, counts toward the exit status)."""
    f16, f32 = np.float16, np.float32
    big = (128, 128, 64)
    cases = {
        "copy fp16": (lambda: probe_copy(f16, (300, 208), (64, 64), 224), True),
        "copy fp32 edges": (lambda: probe_copy(f32, (77, 48), (32, 32), 64), True),
        "copy fp32 two boxes a block": (lambda: probe_copy(f32, (70, 48), (16, 64), 64), True),
        "copy fallback extent": (lambda: probe_copy(f32, (77, 45), (32, 32), 48, False), True),
        "copy fallback stride": (lambda: probe_copy(f32, (77, 48), (32, 32), 56, False), True),
        "zero padding, negative": (lambda: probe_padding("zero", 16), True),
        "nan padding, far edge": (lambda: probe_padding("nan", -16), True),
        "no allocator": (probe_no_allocator, True),
        "matmul small": (lambda: probe_matmul(300, 272, 320, (64, 64, 64), 3, 4, "device"), True),
    }
    cases["persistent ragged"] = (lambda: probe_persistent(1000, 1040, 512, big, 3, 4), True)
    for mode in ("device", "host"):
        cases[f"matmul 2048 {mode} 8 warps"] = (
            lambda mode=mode: probe_matmul(2048, 2048, 2048, (128, 256, 64), 3, 8, mode), True)
    cases[PAIRED] = (probe_paired, True)  # alone, after the others (timing)
    return cases


def run_case(name: str) -> int:
    run, _ = _cases()[name]
    try:
        run()
        import cupy as cp

        cp.cuda.runtime.deviceSynchronize()
    except Exception as error:  # noqa: BLE001 - a probe: report, the parent tabulates
        traceback.print_exc()
        ROWS.append((name, "ERROR", "", f"{type(error).__name__}: {error}"[:200], ""))
    for result in ROWS or [(name, "ERROR", "", "no row", "")]:
        print("ROW " + json.dumps(result))
    return 0


def _run_subprocess(name: str, cache: str, timeout: int) -> list[tuple]:
    """The rows of case `name`, run in a process of its own (a device fault ends only that case)."""
    env = dict(os.environ, TILEWORKBENCH_CACHE_DIR=cache, TILEWORKBENCH_TMA="1")
    try:
        done = subprocess.run([sys.executable, __file__, "--case", name], env=env, check=False,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        why = f"timed out after {timeout} s (a hang: an mbarrier never done?)"
        return [(name, "ERROR", "", why, "")]
    rows = [tuple(json.loads(line[4:])) for line in done.stdout.splitlines()
            if line.startswith("ROW ")]
    if not rows or any(r[1] == "ERROR" for r in rows):
        sys.stderr.write(done.stderr[-3000:])
    return rows or [(name, "ERROR", "", f"rc {done.returncode}: {done.stderr.strip()[-200:]}", "")]


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        return run_case(sys.argv[2])
    import cupy as cp

    from tileworkbench.backends.nvptx.tools import find_tool
    from tileworkbench.runtime.compiler import resolve_target

    ptxas = find_tool("ptxas")
    version = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout \
        if ptxas else "none"
    release = (re.findall(r"release [\d.]+", version) or ["?"])[0]
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, target "
          f"{resolve_target(None)}, ptxas {release}", flush=True)
    cache = tempfile.mkdtemp(prefix="probe_tensormap_cache_")
    cases = _cases()
    checks = [name for name in cases if name != PAIRED]
    with ThreadPoolExecutor(6) as pool:  # the checks side by side; the timing alone after them
        results = list(pool.map(lambda name: _run_subprocess(name, cache, 80), checks))
    results.append(_run_subprocess(PAIRED, cache, 100))
    failed = []
    for name, rows in zip([*checks, PAIRED], results):
        for result in rows:
            ROWS.append(result)
            bad = result[1] != "ok" or "NO TMA" in result[3] or "UNEXPECTED" in result[3]
            if bad and cases[name][1] and name not in failed:
                failed.append(name)
    widths = [min(72, max(len(str(r[i])) for r in ROWS)) for i in range(5)]
    for r in ROWS:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))
    print("FAILED: " + ", ".join(failed) if failed else "all in-kernel descriptor probes passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
