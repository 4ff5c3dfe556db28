"""GPU probe of matmul on an H200 (sm_90a) against Triton and cuBLAS: correctness against float64
on small shapes (our tiled and persistent kernels, fp16 and bf16), then fp16/bf16 4096^3 and 8192^3
at wgmma-sized configs for ours and Triton (the same tutorial-03-style source, bench/kernels.py)
beside cuBLAS (torch), Triton's tutorial 09 persistent kernel compiled by both (loaded at run time
from TRITON_TUTORIALS_DIR, /tmp/triton_tutorials or .tutorials: never part of this repository), and
SASS counts (HGMMA, STSM, LDGSTS, ...) of ours beside Triton's. Run from the repository root:

    PYTHONPATH=. python3 tools/probe_matmul_hopper.py

Ratios are medians of paired per-repetition ratios (bench/paired_timing.py), with an A/A control
(Triton's best config timed twice). Exits 1 on a wrong result. SASS goes to $OUT when set.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tools"), str(ROOT / "tests" / "tutorials")]

import kernels  # noqa: E402
import paired_timing  # noqa: E402
import sass_counts  # noqa: E402

import tileworkbench as tw  # noqa: E402
from tileworkbench.backends.nvptx.ptxas import find_tool  # noqa: E402

OURS = kernels.load("tileworkbench")
THEIRS = kernels.load("triton")
TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16}
CONFIGS = [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4)]  # BM BN BK warps stages
PERSISTENT_CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 3)]
BRIEF = ("HGMMA", "STSM", "STS", "LDS", "LDSM", "LDGSTS", "STG", "BAR.SYNC", "R2UR", "MEMBAR")
FAILED: list = []
OUT = os.environ.get("OUT")


def tflops(ms: float, m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k / ms / 1e9


def launch_tiled(mod, config, a, b, c):
    bm, bn, bk, warps, stages = config
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    return mod.matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                   b.stride(1), c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk,
                                   GROUP_M=8, num_warps=warps, num_stages=stages)


def launch_persistent(module, config, a, b, c):
    """Tutorial 09's `matmul_kernel_persistent` at one config (its autotuner bypassed)."""
    bm, bn, bk, warps, stages = config
    m, k = a.shape
    n = b.shape[1]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grid = (min(sms, triton.cdiv(m, bm) * triton.cdiv(n, bn)),)
    kernel = module.matmul_kernel_persistent
    kernel = getattr(kernel, "fn", kernel)
    return kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                        BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, NUM_SMS=sms, num_warps=warps,
                        num_stages=stages)


def tutorial_09():
    """(ours, Triton's) modules of tutorial 09, or (None, None) when no copy is here."""
    from tutorial_loader import load_tutorial

    for folder in (os.environ.get("TRITON_TUTORIALS_DIR"), "/tmp/triton_tutorials",
                   str(ROOT / ".tutorials")):
        path = Path(folder or "/nonexistent") / "09-persistent-matmul.py"
        if path.is_file():
            return load_tutorial(path), load_tutorial(path, original=True)
    print("tutorial 09 not found: persistent kernels skipped")
    return None, None


def operands(dtype: str, m: int, n: int, k: int, seed: int):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=gen).to(TORCH[dtype])
    b = torch.randn(k, n, device="cuda", generator=gen).to(TORCH[dtype])
    return a, b


def rel_err(c: torch.Tensor, want: torch.Tensor) -> float:
    return ((c.double() - want).abs().max() / want.abs().max()).item()


def check_small(ours09) -> None:
    """Every config and dtype against float64 on a shape with M, N tails (fp16/bf16 output: the
    stmatrix epilogue); the persistent kernel with several tiles per program."""
    m, n, k = 320, 272, 192  # multiples of 16, not of the tiles: the same specializations as 4096
    print(f"correctness {m}x{n}x{k} vs float64 (max err / max |ref|, tolerance 1e-2):")
    for dtype in TORCH:
        a, b = operands(dtype, m, n, k, 1)
        want = a.double() @ b.double()
        runs = [(f"tiled {c}", lambda out, c=c: launch_tiled(OURS, c, a, b, out)) for c in CONFIGS]
        if ours09 is not None and dtype == "fp16":  # tutorial 09 casts to fp16
            runs += [(f"persistent {c}", lambda out, c=c: launch_persistent(ours09, c, a, b, out))
                     for c in PERSISTENT_CONFIGS]
        for name, run in runs:
            out = torch.full((m, n), float("nan"), device="cuda", dtype=TORCH[dtype])
            try:
                run(out)
                torch.cuda.synchronize()
                err = rel_err(out, want)
            except Exception as exc:  # noqa: BLE001 - a row of the table
                err = float("nan")
                print(f"  {dtype} {name}: {type(exc).__name__}: {str(exc)[:300]}")
            ok = err <= 1e-2
            FAILED.extend([] if ok else [(dtype, name, err)])
            print(f"  {dtype} {name:32} {err:9.2e}  {'ok' if ok else 'WRONG'}")


def bench(dtype: str, size: int, compiled: dict) -> dict:
    """Every config of ours and Triton's, cuBLAS and an A/A control, timed in pairs."""
    a, b = operands(dtype, size, size, size, 2)
    want = (a.float() @ b.float())
    fns = {}
    for who, mod in (("ours", OURS), ("triton", THEIRS)):
        for config in CONFIGS:
            c = torch.empty(size, size, device="cuda", dtype=TORCH[dtype])
            try:
                compiled[(who, dtype, config)] = launch_tiled(mod, config, a, b, c)
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001
                print(f"  {who} {config}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            err = ((c.float() - want).abs().max() / want.abs().max()).item()
            if not err <= 1e-2:
                FAILED.append((who, dtype, size, config, err))
                print(f"  {who} {config}: WRONG {err:.2e}")
                continue
            fns[(who, config)] = lambda mod=mod, config=config, c=c: launch_tiled(mod, config, a, b, c)
    c = torch.empty(size, size, device="cuda", dtype=TORCH[dtype])
    fns[("cublas", None)] = lambda: torch.matmul(a, b, out=c)
    times = paired_timing.paired_times(fns, reps=30 if size <= 4096 else 15)
    med = {key: sorted(t)[len(t) // 2] for key, t in times.items()}
    best = {who: min((key for key in med if key[0] == who), key=med.get, default=None)
            for who in ("ours", "triton")}
    for key in sorted(med, key=str):
        print(f"  {dtype} {size}^3 {key[0]:7} {str(key[1]):22} {tflops(med[key], size, size, size):6.1f}"
              " TFLOP/s")
    if best["ours"] is None or best["triton"] is None:
        return {}
    control = dict(fns)
    control[("triton_control", best["triton"][1])] = fns[best["triton"]]
    pair = {k: control[k] for k in (best["ours"], best["triton"], ("cublas", None),
                                    ("triton_control", best["triton"][1]))}
    times = paired_timing.paired_times(pair, reps=60 if size <= 4096 else 30)
    names = list(pair)
    vs_triton = paired_timing.ratio(times, names[1], names[0])
    vs_cublas = paired_timing.ratio(times, names[2], names[0])
    aa = paired_timing.ratio(times, names[1], names[3])
    low, high = paired_timing.spread(times, names[1], names[0])
    print(f"  {dtype} {size}^3 best: ours {best['ours'][1]} vs Triton {best['triton'][1]}: "
          f"ours/Triton {vs_triton:.3f} (IQR {low:.3f}-{high:.3f}), ours/cuBLAS {vs_cublas:.3f}, "
          f"A/A {aa:.3f}", flush=True)
    return {"best": best, "vs_triton": vs_triton}


def variant(patches: list) -> tuple:
    """A fresh copy of our kernels to be compiled with `patches` ((module, name, value) each) in
    place, in a fresh cache (kept for the rest of the run: a cache entry is written when ptxas is
    done, maybe after the patches are undone, and must not land in the real cache). Returns the
    module and a function that undoes the patches."""
    import tempfile

    from tileworkbench.config import config as settings

    module = kernels.load("tileworkbench")
    saved = [(where, name, getattr(where, name)) for where, name, _ in patches]
    for where, name, value in patches:
        setattr(where, name, value)
    settings.cache_dir = Path(tempfile.mkdtemp())
    return module, lambda: [setattr(where, name, value) for where, name, value in saved]


def experiments() -> dict:
    """Code-generation variants timed against the default: no `fence.proxy.async` after the ring
    waits (Triton's cp.async + wgmma loop has none; ours is a MEMBAR.ALL.CTA per k step), and the
    wgmma descriptors built from tid.x (session 6's: an R2UR before each HGMMA) instead of the
    uniform warp index (the default since session 7)."""
    from tileworkbench.backends.llvm.lowering import shared, wgmma

    no_fence = (shared, "fence_async_shared", lambda lw: None)
    from_tid = (wgmma, "_group_origin", wgmma._group_origin_from_tid)
    return {"no fence": [no_fence], "tid warp": [from_tid], "no fence, tid": [no_fence, from_tid]}


def bench_variants(dtype: str, size: int, config) -> None:
    """Ours by default and in each experiment's variant, paired, each checked; SASS counts."""
    a, b = operands(dtype, size, size, size, 4)
    want = (a.float() @ b.float())
    fns, kernels_by_name = {}, {}
    for name, patches in [("default", None), *experiments().items()]:
        mod, restore = (OURS, lambda: None) if patches is None else variant(patches)
        c = torch.empty(size, size, device="cuda", dtype=TORCH[dtype])
        try:
            kernels_by_name[name] = launch_tiled(mod, config, a, b, c)
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001
            print(f"  variant {name}: {type(exc).__name__}: {str(exc)[:300]}")
            continue
        finally:
            restore()
        err = ((c.float() - want).abs().max() / want.abs().max()).item()
        if not err <= 1e-2:
            FAILED.append(("variant", name, err))
            print(f"  variant {name}: WRONG {err:.2e}")
            continue
        fns[name] = lambda mod=mod, c=c: launch_tiled(mod, config, a, b, c)
    times = paired_timing.paired_times(fns, reps=40)
    tool = find_tool("cuobjdump")
    for name in fns:
        speed = paired_timing.ratio(times, "default", name)
        sass = sass_counts.disassemble(getattr(kernels_by_name[name], "cubin", None), tool)
        counts = sass_counts.counts(sass) if sass else None
        loop = f"loop {counts['loop']['instructions']} instr, R2UR {counts['loop']['R2UR']}, " \
               f"MEMBAR {counts['loop']['MEMBAR']}" if counts else "no SASS"
        print(f"  {dtype} {size}^3 {config} {name:12}: speed vs default {speed:.3f}; {loop}")
        if OUT and sass and name == "tid warp":
            Path(OUT, "s7mm_ours_tid_warp.sass").write_text(sass)


def bench_persistent(ours09, theirs09, size: int, compiled: dict) -> None:
    a, b = operands("fp16", size, size, size, 3)
    want = (a.float() @ b.float())
    fns = {}
    for who, module in (("ours", ours09), ("triton", theirs09)):
        for config in PERSISTENT_CONFIGS:
            c = torch.empty(size, size, device="cuda", dtype=torch.float16)
            try:
                compiled[(who, "persistent", config)] = launch_persistent(module, config, a, b, c)
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001
                print(f"  persistent {who} {config}: {type(exc).__name__}: {str(exc)[:300]}")
                continue
            err = ((c.float() - want).abs().max() / want.abs().max()).item()
            if not err <= 1e-2:
                FAILED.append(("persistent", who, size, config, err))
                print(f"  persistent {who} {config}: WRONG {err:.2e}")
                continue
            fns[(who, config)] = lambda m=module, config=config, c=c: launch_persistent(m, config, a, b, c)
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    fns[("ours tiled", CONFIGS[0])] = lambda: launch_tiled(OURS, CONFIGS[0], a, b, c)
    times = paired_timing.paired_times(fns, reps=30 if size <= 4096 else 15)
    for key, t in times.items():
        ms = sorted(t)[len(t) // 2]
        print(f"  persistent fp16 {size}^3 {key[0]:10} {str(key[1]):22} "
              f"{tflops(ms, size, size, size):6.1f} TFLOP/s")
    for config in PERSISTENT_CONFIGS:
        if ("ours", config) in times and ("triton", config) in times:
            r = paired_timing.ratio(times, ("triton", config), ("ours", config))
            print(f"  persistent {size}^3 {config}: ours/Triton {r:.3f}")


def sass_table(compiled: dict, bests: dict) -> None:
    """SASS counts of ours and Triton's at the fp16 4096 best configs and the persistent kernels."""
    tool = find_tool("cuobjdump")
    if tool is None:
        print("no cuobjdump: SASS not counted")
        return
    keys = [("ours", "fp16", bests.get("ours")), ("triton", "fp16", bests.get("triton")),
            ("ours", "fp16", CONFIGS[2]), ("triton", "fp16", CONFIGS[2]),
            ("ours", "persistent", PERSISTENT_CONFIGS[0]),
            ("triton", "persistent", PERSISTENT_CONFIGS[0])]
    for key in keys:
        kernel = compiled.get(key)
        if kernel is None:
            continue
        try:
            cubin = kernel.asm["cubin"]
        except (AttributeError, KeyError, TypeError):
            cubin = getattr(kernel, "cubin", None)
        if cubin is None:  # ours: the launch returns nothing; compile the same kernel again
            cubin = _our_cubin(key)
        sass = sass_counts.disassemble(cubin, tool)
        if not sass:
            continue
        best = key[2] == bests.get(key[0])
        if OUT and key[1] == "fp16" and best:  # at most 3 files under $OUT (with the variant's)
            Path(OUT, f"s7mm_{key[0]}.sass").write_text(sass)
        counts = sass_counts.counts(sass)
        print(f"  SASS {key[0]:6} {key[1]:10} {key[2]}: {sass_counts.brief(counts, BRIEF)}")
        if key[0] == "ours" and key[1] == "fp16" and not counts["all"]["HGMMA"]:
            FAILED.append(("sass", "no HGMMA"))


def _our_cubin(key) -> bytes | None:
    who, kind, config = key
    bm, bn, bk, warps, stages = config
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16"}
    for name in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm"):
        sig[name] = "i32:16"
    for name in ("stride_ak", "stride_bn", "stride_cn"):
        sig[name] = "i32:1"
    if kind == "persistent":
        ours09, _ = tutorial_09()
        fn = ours09.matmul_kernel_persistent
        fn = getattr(fn, "fn", fn)
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        constexprs = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk,
                      "GROUP_SIZE_M": 8, "NUM_SMS": sms}
    else:
        fn, constexprs = OURS.matmul_kernel, {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8}
    compiled = tw.compile(fn, signature=sig, constexprs=constexprs, target="sm_90a",
                          num_warps=warps, num_stages=stages, use_cache=False)
    md = compiled.metadata
    print(f"  ours {kind} {config}: registers {md.n_regs}, spills {md.n_spills}, shared {md.shared} B")
    return compiled.cubin


def main() -> int:
    start = time.time()
    props = torch.cuda.get_device_properties(0)
    print(f"{props.name}, cc {props.major}.{props.minor}; torch {torch.__version__}, triton "
          f"{triton.__version__}")
    ours09, theirs09 = tutorial_09()
    check_small(ours09)
    compiled: dict = {}
    bests: dict = {}
    for dtype in ("fp16", "bf16"):
        for size in (4096, 8192):
            result = bench(dtype, size, compiled)
            if dtype == "fp16" and size == 4096 and result:
                bests = {who: cfg[1] for who, cfg in result["best"].items()}
    if bests.get("ours"):
        bench_variants("fp16", 4096, bests["ours"])
    if ours09 is not None:
        for size in (4096, 8192):
            bench_persistent(ours09, theirs09, size, compiled)
    sass_table(compiled, bests)
    print(f"{'FAILED: ' + str(FAILED) if FAILED else 'all ok'} ({time.time() - start:.0f} s)")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
