"""The PTX of every benchmark and canonical kernel, hashed: a refactor that must not change code
generation compares these before and after.

    python tools/ptx_snapshot.py --write before.json       # at the old commit
    python tools/ptx_snapshot.py --check before.json       # at the new one: lists what differs

Each entry compiles one kernel at one config and arch with `tw.compile` (no cache, no GPU): the
kernels of bench/kernels.py at the configs bench/tensor_cores.py times, tests/kernels' canonical
kernels, and the tests' tensor-core, attention and in-kernel-descriptor kernels.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for folder in ("", "bench", "tests/kernels", "tests/nvptx"):
    sys.path.insert(0, str(ROOT / folder))

import tileworkbench as tw  # noqa: E402

MATMUL = [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
          (128, 128, 64, 8, 3), (64, 128, 64, 4, 4)]
TF32 = [(128, 128, 32, 8, 3), (128, 256, 32, 8, 3), (128, 128, 16, 8, 4), (64, 128, 32, 4, 4)]
FP8 = [(128, 256, 128, 8, 3), (128, 128, 128, 8, 4), (128, 256, 64, 8, 4), (128, 128, 128, 4, 3)]
ATTN = [(128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3), (128, 128, 8, 2)]


def _bench_cases():
    import kernels

    mod = kernels.load("tileworkbench")
    p32 = "*fp32:16"
    yield "bench.add", mod.add_kernel, {"x_ptr": p32, "y_ptr": p32, "out_ptr": p32, "n": "i32:16"}, \
        {"BLOCK": 1024}, "sm_90a", 4, 3
    for dt in ("fp32", "fp16"):
        sig = {"out_ptr": f"*{dt}:16", "in_ptr": f"*{dt}:16", "in_stride": "i32:16",
               "out_stride": "i32:16", "n_cols": "i32:16"}
        yield f"bench.softmax.{dt}", mod.softmax_kernel, sig, {"BLOCK": 4096}, "sm_90a", 16, 3
        sig = {"x_ptr": f"*{dt}:16", "y_ptr": f"*{dt}:16", "w_ptr": f"*{dt}:16", "b_ptr": f"*{dt}:16",
               "mean_ptr": p32, "rstd_ptr": p32, "stride": "i32:16", "n_cols": "i32:16", "eps": "fp32"}
        yield f"bench.layer_norm.{dt}", mod.layer_norm_kernel, sig, {"BLOCK": 4096}, "sm_90a", 8, 3
    for dt, configs, out in (("fp16", MATMUL, "fp16"), ("bf16", MATMUL, "bf16"),
                             ("fp32", TF32, "fp32"), ("fp8e4nv", FP8, "fp16")):
        for n_tag, n_spec in (("", "i32:16"), ("ragged", "i32")):
            sig = {"a_ptr": f"*{dt}:16", "b_ptr": f"*{dt}:16", "c_ptr": f"*{out}:16", "M": "i32:16",
                   "N": n_spec, "K": "i32:16", "stride_am": "i32:16", "stride_ak": "i32:1",
                   "stride_bk": n_spec, "stride_bn": "i32:1", "stride_cm": n_spec,
                   "stride_cn": "i32:1"}
            # fp8 has no sm_80 tensor-core form: its upcast at these tiles takes minutes to compile
            for arch in ("sm_90a",) if dt == "fp8e4nv" else ("sm_90a", "sm_80"):
                for bm, bn, bk, warps, stages in configs:
                    if n_tag and (bm, bn) != (128, 256):
                        continue
                    name = f"bench.matmul.{dt}{'.' + n_tag if n_tag else ''}.{arch}.{bm}x{bn}x{bk}w{warps}s{stages}"
                    yield name, mod.matmul_kernel, sig, {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8}, \
                        arch, warps, stages
    sig = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16", "o_ptr": "*fp16:16",
           "sm_scale": "fp32", "stride_h": "i32:16", "stride_m": "i32:16", "N_CTX": "i32:16"}
    for d in (64, 128):
        for causal in (False, True):
            for bm, bn, warps, stages in ATTN:
                name = f"bench.attn.d{d}.{'causal' if causal else 'full'}.{bm}x{bn}w{warps}s{stages}"
                yield name, mod.attn_fwd_kernel, sig, {"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn,
                                                       "CAUSAL": causal}, "sm_90a", warps, stages


def _test_cases():
    import attention_kernel
    import canonical_kernels
    import device_desc_kernels as dd
    import tensor_core_kernels as tck

    for name, (fn, sig, consts) in canonical_kernels.CASES.items():
        for arch in ("sm_80", "sm_90", "sm_90a"):
            yield f"canonical.{name}.{arch}", fn, sig, consts, arch, 4, 3
    for dt in ("fp16", "bf16", "fp32", "int8", "fp8e4nv"):
        sig = tck.matmul_signature(dt, sizes=(128, 128, 128))
        for arch in ("sm_80", "sm_90a"):
            consts = {"BM": 64, "BN": 64, "BK": 32, "PRECISION": "tf32",
                      "OUT_F16": False}
            yield f"tests.matmul.{dt}.{arch}", tck.matmul_kernel, sig, consts, arch, 4, 3
    for dt in ("fp16", "bf16"):
        for d in (64, 128):
            for causal in (False, True):
                consts = {"N_CTX": 512, "HEAD_DIM": d, "BLOCK_M": 128, "BLOCK_N": 64,
                          "CAUSAL": causal}
                yield f"tests.attention.{dt}.d{d}.{causal}", attention_kernel.attention_forward, \
                    attention_kernel.signature(dt, aligned=True), consts, "sm_90a", 8, 3
    p16 = "*fp16:16"
    copy_sig = {"src_ptr": p16, "dst_ptr": p16, "M": "i32", "N": "i32:16", "stride_src": "i32:16",
                "stride_dst": "i32:16", "factor": "fp32"}
    yield "tests.desc.copy", dd.device_desc_copy, copy_sig, {"BM": 64, "BN": 64}, "sm_90a", 4, 3
    mm_sig = {"a_ptr": p16, "b_ptr": p16, "c_ptr": p16, "M": "i32:16", "N": "i32:16", "K": "i32:16",
              "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}
    yield "tests.desc.matmul", dd.device_desc_matmul, mm_sig, {"BM": 128, "BN": 128, "BK": 64}, \
        "sm_90a", 8, 3
    pm_sig = {"a_ptr": p16, "b_ptr": p16, "c_ptr": p16, "M": "i32:16", "N": "i32:16", "K": "i32:16"}
    yield "tests.desc.persistent", dd.device_desc_persistent_matmul, pm_sig, \
        {"BM": 128, "BN": 128, "BK": 64, "PROGRAMS": 132}, "sm_90a", 8, 3


def snapshot(only: str = "", verbose: bool = False) -> dict[str, str]:
    """name -> sha256 of the PTX (or "error: ..." where it does not compile)."""
    import time

    hashes = {}
    for case in [*_bench_cases(), *_test_cases()]:
        name, fn, sig, consts, arch, warps, stages = case
        if only and only not in name:
            continue
        start = time.perf_counter()
        try:
            compiled = tw.compile(fn, signature=sig, constexprs=consts, target=arch, num_warps=warps,
                                  num_stages=stages, use_cache=False)
            # the checkout's folder (PTX `.file` lines) is no part of the code: worktrees compare too
            ptx = compiled.asm["ptx"].replace(str(ROOT), "<root>")
            hashes[name] = hashlib.sha256(ptx.encode()).hexdigest()
        except Exception as error:  # a config that does not compile is recorded as such
            hashes[name] = f"error: {type(error).__name__}: {str(error).splitlines()[0][:160]}"
        if verbose:
            print(f"{time.perf_counter() - start:6.1f}s {name}", flush=True)
    return hashes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", help="write the hashes to this JSON file")
    group.add_argument("--check", help="compare with the hashes in this JSON file")
    parser.add_argument("--only", default="", help="only entries whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each kernel's compile time")
    args = parser.parse_args()
    hashes = snapshot(args.only, args.verbose)
    if args.write:
        Path(args.write).write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
        errors = sum(v.startswith("error") for v in hashes.values())
        print(f"{len(hashes)} kernels ({errors} do not compile) -> {args.write}")
        return 0
    before = json.loads(Path(args.check).read_text())
    differ = [name for name in sorted(set(before) | set(hashes)) if before.get(name) != hashes.get(name)]
    for name in differ:
        print(f"DIFFERS {name}: {before.get(name, 'missing')[:70]} -> {hashes.get(name, 'missing')[:70]}")
    print(f"{len(hashes)} kernels, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
