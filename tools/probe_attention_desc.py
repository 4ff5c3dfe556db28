"""GPU probe of the descriptor form of the attention forward (tests/nvptx/attention_kernel.py: tensor
descriptors made in the kernel, as tutorial 06's Hopper path) on sm_90a, causal, head dim 64 and
128: ours with TMA on (the default) and off (TILEWORKBENCH_TMA=0: the descriptors on pointers),
paired (bench/paired_timing.py) against Triton's tutorial-06 forward `_attn_fwd` at the same config
(descriptors made in the kernel, no warp specialization), or, where the tutorial file is not found,
the same source compiled by Triton. Every result is checked against float64 on two heads (outputs
NaN-poisoned first); ptxas's registers and spills of ours are printed (0 spills expected since the
fix of issue 11's causal spills). Run from the repository root:

    PYTHONPATH=. python3 tools/probe_attention_desc.py

Exits 1 on a wrong result or a spill. The tutorial: TRITON_TUTORIALS_DIR, `.tutorials/` or
/tmp/triton_tutorials (tools/probe_tutorials.py's lookup).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from paired_timing import paired_times, ratio, spread  # noqa: E402

import tileworkbench as tw  # noqa: E402
from tileworkbench.config import config  # noqa: E402

Z, H, N_CTX = 4, 8, 4096
CONFIGS = {64: [(128, 64, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3), (128, 128, 8, 3)],
           128: [(128, 64, 8, 3), (64, 64, 4, 3), (128, 128, 8, 3)]}  # BM, BN, warps, stages
KERNEL_FILE = ROOT / "tests" / "nvptx" / "attention_kernel.py"
FAILED: list = []


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _triton_same_source(tmp: Path):
    """attention_kernel.py with `tw`/`tl` bound to Triton (Triton's @jit reads the source file), its
    annotations evaluated (Triton tells constexpr parameters by them)."""
    text = KERNEL_FILE.read_text().replace("from __future__ import annotations\n", "")
    text = text.replace("import tileworkbench as tw", "import triton as tw")
    text = text.replace("import tileworkbench.language as tl", "import triton.language as tl")
    path = tmp / "attention_kernel_triton.py"
    path.write_text(text)
    return _module("attention_kernel_triton", path)


def _tutorial():
    """Tutorial 06's module, or None where its file is not on this machine."""
    for folder in (os.environ.get("TRITON_TUTORIALS_DIR"), ROOT / ".tutorials",
                   "/tmp/triton_tutorials"):
        if folder and (Path(folder) / "06-fused-attention.py").is_file():
            try:
                return _module("tutorial06", Path(folder) / "06-fused-attention.py")
            except Exception as exc:  # noqa: BLE001 - reported, the same-source kernel stands in
                print(f"(tutorial 06 did not import: {type(exc).__name__}: {str(exc)[:120]})")
    return None


def tflops(ms: float, d: int) -> float:
    return 4.0 * Z * H * N_CTX * N_CTX * d * 0.5 / ms / 1e9  # causal: half the scores


def reference(q, k, v, scale: float, heads: int = 2):
    """o of the first `heads` heads in float64 (q, k, v: [Z*H, N_CTX, d])."""
    s = q[:heads].double() @ k[:heads].double().transpose(1, 2) * scale
    mask = torch.ones(N_CTX, N_CTX, dtype=torch.bool, device="cuda").triu(1)
    return torch.softmax(s.masked_fill(mask, -float("inf")), -1) @ v[:heads].double()


def rel_err(got, want) -> float:
    got = got[:want.shape[0]].double()
    if torch.isnan(got).any():
        return float("inf")
    return ((got - want).norm() / want.norm()).item()


def contenders(d: int, cfg, kernels: dict, q, k, v, scale: float) -> dict:
    """name -> (launch function, its output [Z*H, N_CTX, d], note) for one config."""
    bm, bn, warps, stages = cfg
    grid = (N_CTX // bm, Z * H)
    out = {}
    for name in ("ours TMA", "ours no-TMA"):
        o = torch.full_like(q, float("nan"))
        lse = torch.full((Z * H * N_CTX,), float("nan"), device="cuda")
        mod = kernels[name]

        def run(mod=mod, o=o, lse=lse):
            return mod.attention_forward[grid](
                q.view(-1, d), k.view(-1, d), v.view(-1, d), o.view(-1, d), lse, scale,
                N_CTX=N_CTX, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=True, num_warps=warps,
                num_stages=stages)
        config.tma = name == "ours TMA"  # read when the kernel compiles (its first launch)
        try:
            compiled = run()
        finally:
            config.tma = True
        ptx = compiled.asm["ptx"]
        path = "tma" if "cp.async.bulk.tensor" in ptx else "pointers"
        md = compiled.metadata
        out[name] = (run, o, f"{path}, {md.n_regs} regs, {md.n_spills} spill bytes, "
                              f"{md.shared // 1024} KB smem")
        if md.n_spills:
            FAILED.append((name, d, cfg, f"{md.n_spills} spill bytes"))
    tutorial = kernels.get("tutorial")
    if tutorial is not None:
        if bn > d:
            return out  # the tutorial asserts BLOCK_N <= HEAD_DIM
        o = torch.full_like(q, float("nan"))
        lse = torch.full((Z, H, N_CTX), float("nan"), device="cuda")
        q4, k4, v4, o4 = (x.view(Z, H, N_CTX, d) for x in (q, k, v, o))

        def run_tutorial():
            return tutorial._attn_fwd.fn[grid](
                scale, lse, Z, H, q4, k4, v4, o4, N_CTX=N_CTX, HEAD_DIM=d, BLOCK_M=bm,
                BLOCK_N=bn, FP8_OUTPUT=False, STAGE=3, warp_specialize=False, IS_HOPPER=True,
                num_warps=warps, num_stages=stages)
        handle = run_tutorial()
        out["triton tut.06"] = (run_tutorial, o, _triton_resources(handle))
    else:
        mod = kernels["triton same source"]
        o = torch.full_like(q, float("nan"))
        lse = torch.full((Z * H * N_CTX,), float("nan"), device="cuda")

        def run_same():
            return mod.attention_forward[grid](
                q.view(-1, d), k.view(-1, d), v.view(-1, d), o.view(-1, d), lse, scale,
                N_CTX=N_CTX, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=True, num_warps=warps,
                num_stages=stages)
        handle = run_same()
        out["triton same source"] = (run_same, o, _triton_resources(handle))
    return out


def _triton_resources(handle) -> str:
    """Registers and spills of a Triton launch's compiled kernel (known once it has run)."""
    return f"{getattr(handle, 'n_regs', '?')} regs, {getattr(handle, 'n_spills', '?')} spills"


def case(d: int, kernels: dict, rows: list) -> None:
    gen = torch.Generator(device="cuda").manual_seed(d)
    q, k, v = (torch.randn(Z * H, N_CTX, d, device="cuda", dtype=torch.float16, generator=gen)
               for _ in range(3))
    scale = d ** -0.5
    want = reference(q, k, v, scale)
    for cfg in CONFIGS[d]:
        try:
            runs = contenders(d, cfg, kernels, q, k, v, scale)
        except Exception as exc:  # noqa: BLE001 - reported in the table
            FAILED.append(("compile/launch", d, cfg, f"{type(exc).__name__}: {str(exc)[:150]}"))
            print(f"  d{d} {cfg}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        torch.cuda.synchronize()
        for name, (_, o, note) in runs.items():
            err = rel_err(o, want)
            if not err <= 1e-2:
                FAILED.append((name, d, cfg, f"relative error {err:.2e}"))
            print(f"  d{d} {cfg} {name:18} err {err:.1e}  {note}"
                  f"{'' if err <= 1e-2 else '  WRONG'}")
        times = paired_times({name: fn for name, (fn, _, _) in runs.items()}, reps=30)
        rows.append((d, cfg, {name: sorted(t)[len(t) // 2] for name, t in times.items()}, times))


def main() -> int:
    start = time.time()
    props = torch.cuda.get_device_properties(0)
    print(f"{props.name}, cc {props.major}.{props.minor}; torch {torch.__version__}, triton "
          f"{triton.__version__}; Z*H {Z * H}, N_CTX {N_CTX}, fp16, causal")
    tw.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    with tempfile.TemporaryDirectory() as tmp:
        kernels = {"ours TMA": _module("attention_tma", KERNEL_FILE),
                   "ours no-TMA": _module("attention_no_tma", KERNEL_FILE)}
        tutorial = _tutorial()
        if tutorial is not None:
            kernels["tutorial"] = tutorial
        else:
            print("(tutorial 06 not found: Triton compiles attention_kernel.py's source instead)")
            kernels["triton same source"] = _triton_same_source(Path(tmp))
        rows: list = []
        for d in (64, 128):
            case(d, kernels, rows)
    theirs = "triton tut.06" if tutorial is not None else "triton same source"
    print(f"\n{'d':>4} {'BM,BN,w,s':14} {'TMA':>7} {'no-TMA':>7} {'triton':>7} "
          f"{'TMA/triton (IQR)':>22} {'TMA/no-TMA':>11}   (TFLOP/s; ratios: paired speed)")
    for d, cfg, ms, times in rows:
        t = {name: tflops(value, d) for name, value in ms.items()}
        cols = [f"{t.get(n, float('nan')):7.1f}" for n in ("ours TMA", "ours no-TMA", theirs)]
        vs_triton = "-"
        if theirs in times:
            low, high = spread(times, theirs, "ours TMA")
            vs_triton = f"{ratio(times, theirs, 'ours TMA'):.3f} ({low:.3f}-{high:.3f})"
        on_off = ratio(times, "ours no-TMA", "ours TMA")
        print(f"{d:>4} {','.join(map(str, cfg)):14} {' '.join(cols)} {vs_triton:>22} "
              f"{on_off:11.3f}")
    print(f"{'FAILED: ' + str(FAILED) if FAILED else 'all ok'} ({time.time() - start:.0f} s)")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
