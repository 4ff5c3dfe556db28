"""GPU probe of the attention forward on Hopper (sm_90a: Q@K^T on wgmma by descriptors, P@V on
register-A wgmma): correctness against float64, and TFLOP/s of ours beside Triton (the same
tutorial-06-style source, bench/kernels.py's `attn_fwd_kernel`, compiled by each) and torch SDPA, at
N_CTX 4096, batch * heads 32, head dim 64 and 128, causal and not; then the SASS opcode counts of our
best kernel (HGMMA, HMMA, MUFU.EX2, ...) and Triton's. Run from the repository root:

    PYTHONPATH=. python3 tools/probe_attention.py

Prints a short table; exits 1 when a result is wrong or our sm_90a PTX lacks the register-A wgmma.
With PROBE_TUTORIAL=1 and /tmp/triton_tutorials/06-fused-attention.py present, Triton's own tutorial
forward (autotuned, TMA descriptors: slower to start, past the 2 minutes) is timed too.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton
import triton.testing

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import kernels  # noqa: E402

from tileworkbench.backends.nvptx.ptxas import find_tool  # noqa: E402

import sass_counts  # noqa: E402  (tools/, the probe's own folder)

Z_H, N_CTX = 32, 4096
CONFIGS = [(128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3)]  # BM, BN, warps, stages
OPCODES = ("HGMMA", "HMMA", "MUFU.EX2", "WARPGROUP.ARRIVE", "WARPGROUP.DEPBAR", "LDGSTS", "BAR.SYNC",
           "SHFL", "F2FP", "FMUL", "FFMA", "LDS", "STS", "LDSM")
REGISTER_A = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16 \{[^}]*\}, "
                        r"\{%r\d+, ?%r\d+, ?%r\d+, ?%r\d+\}")
FAILED: list = []


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=5, rep=30, return_mode="median")


def tflops(ms: float, d: int, causal: bool) -> float:
    return 4.0 * Z_H * N_CTX * N_CTX * d * (0.5 if causal else 1.0) / ms / 1e9


def reference(q, k, v, scale: float, causal: bool, heads: int = 2):
    s = q[:heads].double() @ k[:heads].double().transpose(1, 2) * scale
    if causal:
        mask = torch.ones(N_CTX, N_CTX, dtype=torch.bool, device="cuda").triu(1)
        s = s.masked_fill(mask, -float("inf"))
    return torch.softmax(s, -1) @ v[:heads].double()


def rel_err(got, want) -> float:
    return ((got[:want.shape[0]].double() - want).norm() / want.norm()).item()


def case(d: int, causal: bool, mods: dict, compiled: dict) -> dict:
    """The best config of each compiler for (d, causal), checked, and torch SDPA's time."""
    gen = torch.Generator(device="cuda").manual_seed(d + causal)
    q, k, v = (torch.randn(Z_H, N_CTX, d, device="cuda", dtype=torch.float16, generator=gen)
               for _ in range(3))
    scale = d ** -0.5
    want = reference(q, k, v, scale, causal)
    best = {}
    for name, mod in mods.items():
        for bm, bn, warps, stages in CONFIGS:
            o = torch.full_like(q, float("nan"))

            def run(mod=mod, o=o, bm=bm, bn=bn, warps=warps, stages=stages):
                return mod.attn_fwd_kernel[(N_CTX // bm, Z_H)](
                    q, k, v, o, scale, q.stride(0), q.stride(1), N_CTX, HEAD_DIM=d, BLOCK_M=bm,
                    BLOCK_N=bn, CAUSAL=causal, num_warps=warps, num_stages=stages)
            try:
                handle = run()
                torch.cuda.synchronize()
                err = rel_err(o, want)
                ms = bench(run)
            except Exception as exc:  # noqa: BLE001 - reported in the table
                print(f"    {name} {bm}x{bn} w{warps} s{stages}: {type(exc).__name__}: "
                      f"{str(exc)[:150]}")
                continue
            ok = err <= 1e-2
            if not ok:
                FAILED.append((name, d, causal, (bm, bn, warps, stages), err))
            print(f"    {name:13} {bm:3}x{bn:<3} w{warps} s{stages}: {tflops(ms, d, causal):6.1f} "
                  f"TFLOP/s  err {err:.1e}{'' if ok else '  WRONG'}")
            compiled[(name, d, causal, bm, bn, warps, stages)] = handle
            if ok and (name not in best or ms < best[name][0]):
                best[name] = (ms, (bm, bn, warps, stages))
    q4, k4, v4 = (x.view(1, Z_H, N_CTX, d) for x in (q, k, v))
    best["torch SDPA"] = (bench(lambda: torch.nn.functional.scaled_dot_product_attention(
        q4, k4, v4, is_causal=causal, scale=scale)), "")
    tutorial = _tutorial_ms(q, k, v, scale, causal)
    if tutorial:
        best["triton tut.06"] = tutorial
    return best


_TUTORIAL = Path("/tmp/triton_tutorials/06-fused-attention.py")


def _tutorial_ms(q, k, v, scale: float, causal: bool):
    """Triton's tutorial 06 forward (its own autotuned kernel), when its file is on this machine."""
    if os.environ.get("PROBE_TUTORIAL") != "1" or not _TUTORIAL.exists():
        return None
    try:
        spec = importlib.util.spec_from_file_location("tutorial06", _TUTORIAL)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        shape = (1, Z_H, N_CTX, q.shape[-1])
        q4, k4, v4 = (x.view(shape) for x in (q, k, v))
        fn = lambda: mod.attention(q4, k4, v4, causal, scale, False)  # noqa: E731
        return bench(fn), "autotuned"
    except Exception as exc:  # noqa: BLE001 - optional
        print(f"    (tutorial 06 not run: {type(exc).__name__}: {str(exc)[:120]})")
        return None


def _counts(sass: str) -> dict:
    """Opcode counts in the longest loop body (the key-block loop: the code between a backward
    `BRA 0x...` and its target; cuobjdump prints addresses, not labels), and its length."""
    code = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            code.append((int(m.group(1), 16), m.group(2)))
    loop: list = []
    for address, text in code:
        m = re.search(r"BRA (?:`\(\.L_x_\d+\) )?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < address:
            body = [c for c in code if int(m.group(1), 16) <= c[0] <= address]
            loop = body if len(body) > len(loop) else loop
    counts = {op: sum(bool(re.search(rf"(^|\s){re.escape(op)}\b", text)) for _, text in loop)
              for op in OPCODES}
    return {"instructions": len(loop), **{k: v for k, v in counts.items() if v}}


def report_sass(d: int, causal: bool, config, compiled: dict) -> None:
    """Loop opcode counts of our best config and of Triton's kernel for the same config; our PTX must
    hold the register-A wgmma. Our launch returns our CompiledKernel, Triton's its own."""
    ours = compiled.get(("tileworkbench", d, causal, *config))
    theirs = compiled.get(("triton", d, causal, *config))
    out = os.environ.get("OUT")
    for name, handle in (("ours", ours), ("triton", theirs)):
        kernel = handle
        asm = getattr(kernel, "asm", None) or {}
        cubin = getattr(kernel, "cubin", None) or asm.get("cubin")
        sass = sass_counts.disassemble(cubin, find_tool("cuobjdump"))
        regs = getattr(getattr(kernel, "metadata", None), "n_regs", None) or \
            getattr(kernel, "n_regs", "?")
        tag = f"attn_d{d}{'_causal' if causal else ''}_{name}"
        if out and sass:
            Path(out, f"{tag}.sass").write_text(sass)
        if name == "ours":
            ptx = asm.get("ptx", "")
            if out and ptx:
                Path(out, f"{tag}.ptx").write_text(ptx)
            if ptx and not REGISTER_A.search(ptx):
                FAILED.append(("no register-A wgmma in our PTX", d, causal))
        print(f"    SASS {name:6} {config}: regs {regs}; loop {_counts(sass) if sass else 'n/a'}")


def with_chained_in_flight(d: int, causal: bool, config) -> None:
    """An experiment, not a check: our best config once more with the other setting of
    `config.chained_wgmma_in_flight` (on by default since session 10: p @ v left in flight across
    the loop's back edge, as Triton's PTX; off: waited for in its own iteration). Compiled into a
    fresh cache directory; a wrong result is reported as WRONG and fails."""
    from tileworkbench.config import config as tw_config

    saved = tw_config.chained_wgmma_in_flight, tw_config.cache_dir
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tw_config.chained_wgmma_in_flight, tw_config.cache_dir = not saved[0], Path(tmp)
            mod = kernels.load("tileworkbench")
            gen = torch.Generator(device="cuda").manual_seed(d + causal)
            q, k, v = (torch.randn(Z_H, N_CTX, d, device="cuda", dtype=torch.float16,
                                   generator=gen) for _ in range(3))
            scale, (bm, bn, warps, stages) = d ** -0.5, config
            o = torch.full_like(q, float("nan"))

            def run():
                return mod.attn_fwd_kernel[(N_CTX // bm, Z_H)](
                    q, k, v, o, scale, q.stride(0), q.stride(1), N_CTX, HEAD_DIM=d, BLOCK_M=bm,
                    BLOCK_N=bn, CAUSAL=causal, num_warps=warps, num_stages=stages)
            run()
            torch.cuda.synchronize()
            err = rel_err(o, reference(q, k, v, scale, causal))
            if not err <= 1e-2:
                FAILED.append(("chained in flight", d, causal, config, err))
            what = "in flight" if tw_config.chained_wgmma_in_flight else "waited in its iteration"
            print(f"    ours with p @ v {what} {config}: "
                  f"{tflops(bench(run), d, causal):6.1f} TFLOP/s  err {err:.1e}"
                  f"{'' if err <= 1e-2 else '  WRONG'}")
    except Exception as exc:  # noqa: BLE001 - an experiment: reported only
        print(f"    (p @ v in flight: {type(exc).__name__}: {str(exc)[:150]})")
    finally:
        tw_config.chained_wgmma_in_flight, tw_config.cache_dir = saved


def main() -> int:
    start = time.time()
    props = torch.cuda.get_device_properties(0)
    print(f"{props.name}, cc {props.major}.{props.minor}; torch {torch.__version__}, triton "
          f"{triton.__version__}; batch*heads {Z_H}, N_CTX {N_CTX}, fp16")
    mods = {"tileworkbench": kernels.load("tileworkbench"), "triton": kernels.load("triton")}
    summary = []
    compiled: dict = {}
    for d in (64, 128):
        for causal in (False, True):
            print(f"  D={d} {'causal' if causal else 'non-causal'}:")
            best = case(d, causal, mods, compiled)
            summary.append((d, causal, best))
            if "tileworkbench" in best:
                report_sass(d, causal, best["tileworkbench"][1], compiled)
                with_chained_in_flight(d, causal, best["tileworkbench"][1])
    print(f"\n{'D':>4} {'causal':6} {'ours':>7} {'triton':>7} {'SDPA':>7} {'tut.06':>7} "
          f"{'/triton':>8} {'/SDPA':>6}  ours cfg / triton cfg (TFLOP/s)")
    for d, causal, best in summary:
        t = {k: tflops(v[0], d, causal) for k, v in best.items()}
        ratio = t.get("tileworkbench", 0) / t["triton"] if t.get("triton") else float("nan")
        print(f"{d:>4} {str(causal):6} {t.get('tileworkbench', 0):7.1f} {t.get('triton', 0):7.1f} "
              f"{t['torch SDPA']:7.1f} {t.get('triton tut.06', float('nan')):7.1f} {ratio:8.3f} "
              f"{t.get('tileworkbench', 0) / t['torch SDPA']:6.3f}  "
              f"{best.get('tileworkbench', (0, '-'))[1]} / {best.get('triton', (0, '-'))[1]}")
        if "tileworkbench" not in best:
            FAILED.append(("no config of ours ran", d, causal))
    print(f"{'FAILED: ' + str(FAILED) if FAILED else 'all ok'} ({time.time() - start:.0f} s)")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
