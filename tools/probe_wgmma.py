"""GPU probe of `wgmma` (sm_90a): every dtype of `tl.dot` against a float64 reference on the GPU, the
fp16 4096^3 matmul's TFLOP/s beside Triton (same source, bench/kernels.py) and cuBLAS (torch), and
the SASS of our kernel grepped for HGMMA. Run from the repository root:

    PYTHONPATH=. python3 tools/probe_wgmma.py

Prints a short table; exits 1 when a result is wrong (or no wgmma where one is expected).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton.testing

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests" / "nvptx")]

import kernels  # noqa: E402
from tensor_core_kernels import matmul_kernel  # noqa: E402

import tileworkbench as tw  # noqa: E402
from tileworkbench.backends import backend_for  # noqa: E402
from tileworkbench.backends.nvptx.ptxas import find_tool  # noqa: E402

TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "int8": torch.int8,
         "fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2}
# (dtype, precision, B transposed (K-major), fp16 accumulator, tolerance: max error / max |ref|)
CASES = [("fp16", "tf32", False, False, 1e-4), ("fp16", "tf32", True, False, 1e-4),
         ("bf16", "tf32", False, False, 1e-4), ("fp32", "tf32", True, False, 5e-3),
         ("fp32", "tf32", False, False, 5e-3), ("int8", "tf32", True, False, 0.0),
         ("fp8e4nv", "tf32", True, False, 1e-2), ("fp8e5", "tf32", True, False, 1e-2),
         ("fp16", "tf32", False, True, 5e-3), ("fp32", "tf32x3", False, False, 1e-4)]
FAILED = []
RESULTS: dict = {}


def operands(dtype: str, m: int, n: int, k: int, trans_b: bool):
    gen = torch.Generator(device="cuda").manual_seed(m * 7 + n + k)
    if dtype == "int8":
        a = torch.randint(-100, 100, (m, k), device="cuda", generator=gen, dtype=torch.int8)
        b = torch.randint(-100, 100, (k, n), device="cuda", generator=gen, dtype=torch.int8)
    else:
        a = torch.randn(m, k, device="cuda", generator=gen).to(TORCH[dtype])
        b = torch.randn(k, n, device="cuda", generator=gen).to(TORCH[dtype])
    if trans_b:  # B as the transpose of an N x K array: K contiguous (K-major)
        b = b.T.contiguous().T
    return a, b


def check_dtypes() -> None:
    print(f"{'dtype':8} {'prec':6} {'B':6} {'acc':4} {'wgmma':5} {'rel.err':>9} {'tol':>7}  ok")
    m, n, k = 320, 264, 192
    for dtype, precision, trans_b, acc16, tol in CASES:
        block = (128, 128, 32 if dtype == "fp32" else 64)  # fp32 tiles: 2x the bytes
        a, b = operands(dtype, m, n, k, trans_b)
        out = torch.float16 if acc16 else (torch.int32 if dtype == "int8" else torch.float32)
        c = torch.full((m, n), -7 if dtype == "int8" else float("nan"), device="cuda", dtype=out)
        grid = (triton.cdiv(m, block[0]), triton.cdiv(n, block[1]))
        args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), n, 1)
        meta = dict(BM=block[0], BN=block[1], BK=block[2], PRECISION=precision, OUT_F16=acc16,
                    num_warps=8, num_stages=3)
        try:
            compiled = matmul_kernel.warmup(*args, grid=grid, **meta)
            matmul_kernel[grid](*args, **meta)
            torch.cuda.synchronize()
            want = a.double() @ b.double()
            err = ((c.double() - want).abs().max() / want.abs().max()).item()
            wgmma = "wgmma.mma_async" in compiled.asm["ptx"]
        except Exception as exc:  # noqa: BLE001 - reported in the table
            err, wgmma = float("nan"), f"{type(exc).__name__}: {str(exc)[:120]}"
        # tf32x3, and tf32 or 8-bit with an N-major B, stay on mma.sync (the PTX ISA has no such wgmma)
        expect = precision != "tf32x3" and (trans_b or dtype in ("fp16", "bf16"))
        ok = err <= tol and wgmma == expect
        FAILED.extend([] if ok else [(dtype, precision, trans_b, acc16)])
        print(f"{dtype:8} {precision:6} {'K-maj' if trans_b else 'N-maj':6} {'f16' if acc16 else '':4} "
              f"{str(wgmma):5} {err:9.2e} {tol:7.0e}  {'ok' if ok else 'WRONG'}")


def tflops(ms: float, m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k / ms / 1e9


def _in_flight(mod, name: str) -> str:
    """Ours: whether the kernel just launched kept a wgmma group in flight (wait(1))."""
    if name != "tileworkbench":
        return ""
    try:
        ptx = list(mod.matmul_kernel.cache.values())[-1].compiled.asm["ptx"]
    except (AttributeError, IndexError, KeyError):
        return ""
    return "  wait(1)" if "wgmma.wait_group.sync.aligned 1;" in ptx else "  wait(0)"


def bench_fp16(size: int = 4096):
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    want = (a.float() @ b.float())
    results = {}
    configs = [(128, 256, 64, 8, 3), (128, 256, 32, 8, 4), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4)]
    for name in ("tileworkbench", "triton"):
        mod = kernels.load(name)
        best = None
        for bm, bn, bk, warps, stages in configs:
            c = torch.empty(size, size, device="cuda", dtype=torch.float16)
            grid = (triton.cdiv(size, bm) * triton.cdiv(size, bn),)

            def run(mod=mod, c=c, grid=grid, bm=bm, bn=bn, bk=bk, warps=warps, stages=stages):
                return mod.matmul_kernel[grid](a, b, c, size, size, size, a.stride(0), a.stride(1),
                                               b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                               BM=bm, BN=bn, BK=bk, GROUP_M=8, num_warps=warps,
                                               num_stages=stages)
            try:
                KERNELS[(name, bm, bn, bk, warps, stages)] = run()
                torch.cuda.synchronize()
                err = ((c.float() - want).abs().max() / want.abs().max()).item()
                ms = triton.testing.do_bench(run, warmup=10, rep=50, return_mode="median")
            except Exception as exc:  # noqa: BLE001
                print(f"  {name} {bm}x{bn}x{bk} w{warps} s{stages}: {type(exc).__name__}: {str(exc)[:150]}")
                continue
            print(f"  {name:13} {bm}x{bn}x{bk} w{warps} s{stages}: {tflops(ms, size, size, size):6.1f} "
                  f"TFLOP/s  err {err:.1e}{_in_flight(mod, name)}")
            if err > 1e-2:
                FAILED.append((name, "fp16 4096", (bm, bn, bk)))
            if best is None or ms < best[0]:
                best = (ms, (bm, bn, bk, warps, stages))
        results[name] = best
    RESULTS.update(results)
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    results["torch"] = (triton.testing.do_bench(lambda: torch.matmul(a, b, out=c), warmup=10, rep=50,
                                                return_mode="median"), "cuBLAS")
    print(f"fp16 {size}^3 TFLOP/s (best config):")
    for name, best in results.items():
        if best:
            print(f"  {name:13} {tflops(best[0], size, size, size):6.1f}  {best[1]}")
    if results.get("tileworkbench") and results.get("triton"):
        print(f"  ratio ours/Triton {results['triton'][0] / results['tileworkbench'][0]:.2f}, "
              f"ours/cuBLAS {results['torch'][0] / results['tileworkbench'][0]:.2f}")
    return results.get("tileworkbench")


OPCODES = ("HGMMA", "HMMA", "WARPGROUP.ARRIVE", "WARPGROUP.DEPBAR", "LDSM", "LDGSTS", "DEPBAR",
           "BAR.SYNC", "FENCE.VIEW.ASYNC", "STS", "LDS", "STG")
KERNELS: dict = {}  # (compiler, config) -> what its launch returned (Triton: its CompiledKernel)


def _disassemble(cubin: bytes | None) -> str:
    tool = find_tool("cuobjdump")
    if not cubin or not tool:
        return ""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        return subprocess.run([tool, "--dump-sass", str(path)], capture_output=True,
                              text=True).stdout


def _loop_counts(sass: str) -> dict:
    """Opcode counts of the whole kernel and of its hottest loop (the backward branch's body)."""
    lines = sass.splitlines()
    code = [line for line in lines if "/*" in line and ";" in line]
    whole = {op: sum(bool(re.search(rf"\b{re.escape(op)}\b", x)) for x in code) for op in OPCODES}
    loop: list[str] = []
    for i, line in enumerate(lines):  # the longest body of a backward BRA to a label above it
        if "BRA" in line and "`(.L_x_" in line:
            label = line.split("`(")[1].split(")")[0]
            start = next((j for j in range(i) if lines[j].strip().startswith(label + ":")), None)
            body = [x for x in lines[start:i + 1] if "/*" in x and ";" in x] if start is not None else []
            loop = body if len(body) > len(loop) else loop
    hot = {op: sum(bool(re.search(rf"\b{re.escape(op)}\b", x)) for x in loop) for op in OPCODES}
    return {"all": whole, "loop": {**hot, "instructions": len(loop)}}


def triton_sass(best) -> None:
    """Triton's SASS for its best config beside ours for the same config (if ours compiled it)."""
    if not best:
        return
    config = best[1]
    theirs = KERNELS.get(("triton", *config))
    try:
        sass = _disassemble(theirs.asm["cubin"])
        regs = getattr(theirs, "n_regs", "?")
    except (AttributeError, KeyError, TypeError):
        return
    out = os.environ.get("OUT")
    if out and sass:
        Path(out, "s6wgmma_triton.sass").write_text(sass)
    counts = _loop_counts(sass) if sass else {}
    print(f"Triton SASS of {config}: registers {regs}; loop {counts.get('loop')}")


def sass_counts(best) -> None:
    """Compile our best config again and count HGMMA / HMMA in its SASS (cuobjdump on our cubin)."""
    bm, bn, bk, warps, stages = best[1] if best else (128, 128, 64, 8, 3)
    mod = kernels.load("tileworkbench")
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32:16",
           "N": "i32:16", "K": "i32:16", "stride_am": "i32:16", "stride_ak": "i32:1",
           "stride_bk": "i32:16", "stride_bn": "i32:1", "stride_cm": "i32:16", "stride_cn": "i32:1"}
    compiled = tw.compile(mod.matmul_kernel, signature=sig, target="sm_90a", num_warps=warps,
                          num_stages=stages, use_cache=False,
                          constexprs={"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8})
    sass = _disassemble(compiled.cubin) or compiled.asm.get("sass") or ""
    out = os.environ.get("OUT")
    if out and sass:
        Path(out, "s6wgmma_ours.sass").write_text(sass)
        Path(out, "s6wgmma_ours.ptx").write_text(compiled.asm["ptx"])
    counts = _loop_counts(sass)
    md = compiled.metadata
    print(f"our SASS of {bm}x{bn}x{bk} w{warps} s{stages}: registers {md.n_regs}, spills "
          f"{md.n_spills}, shared {md.shared} B; loop {counts['loop']}")
    if not sass:
        print("  (no cuobjdump or nvdisasm here: SASS not checked)")
    elif not counts["all"]["HGMMA"]:
        FAILED.append(("sass", "no HGMMA"))


def main() -> int:
    start = time.time()
    props = torch.cuda.get_device_properties(0)
    print(f"{props.name}, cc {props.major}.{props.minor}; torch {torch.__version__}, triton "
          f"{triton.__version__}; default target {backend_for('cuda').resolve('cuda')}")
    check_dtypes()
    best = bench_fp16()
    sass_counts(best)
    triton_sass(RESULTS.get("triton"))
    print(f"{'FAILED: ' + str(FAILED) if FAILED else 'all ok'} ({time.time() - start:.0f} s)")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
