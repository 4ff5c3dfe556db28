"""`enable_fp_fusion`, as Triton's: on GPU targets float `a * b + c` becomes one FMA unless it is False,
which keeps both operations rounded on their own (as the interpreter computes them)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from nvptx_support import needs_ptxas, run_ptxas

import tileworkbench as tw
import tileworkbench.language as tl


@tw.jit
def muladd_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    c = tl.load(c_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a * b + c, mask=mask)


SUFFIX = {"fp32": "f32", "fp16": "f16", "bf16": "bf16", "fp64": "f64"}


def _compile(dtype: str, arch: str, **options):
    signature = {name: f"*{dtype}" for name in ("a_ptr", "b_ptr", "c_ptr", "out_ptr")}
    return tw.compile(muladd_kernel, signature={**signature, "n": "i32"}, constexprs={"BLOCK": 256},
                      target=arch, **options)


def _count(ptx: str, op: str) -> int:
    return len(re.findall(rf"\b{op}\b", ptx))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", sorted(SUFFIX))
def test_multiply_add_contracts_unless_disabled(dtype, arch, wait_for_cache_entries):
    t = SUFFIX[dtype]
    fused = _compile(dtype, arch)
    separate = _compile(dtype, arch, enable_fp_fusion=False)  # the cache must not hand back `fused`
    assert fused.metadata.enable_fp_fusion and not separate.metadata.enable_fp_fusion
    ptx = fused.asm["ptx"]
    assert _count(ptx, rf"fma\.rn\.{t}") == 2, ptx  # 2 elements per thread
    assert not re.search(rf"\b(mul|add)(\.rn)?\.{t}\b", ptx)
    ptx = separate.asm["ptx"]
    if dtype == "bf16" and arch == "sm_80":
        # sm_80 has no add/mul.bf16: LLVM writes a*b as fma(a, b, -0) and x+c as fma(x, 1, c), each
        # rounded once like the op it stands for; the product still rounds before the add
        assert _count(ptx, rf"fma\.rn\.{t}") == 4, ptx
    else:
        assert _count(ptx, rf"mul\.rn\.{t}") == 2 and _count(ptx, rf"add\.rn\.{t}") == 2, ptx
        assert not re.search(r"\bfma\.", ptx)
    # a cache hit keeps the option it was compiled with (entries are written once ptxas is done)
    wait_for_cache_entries(2)
    again = _compile(dtype, arch, enable_fp_fusion=False)
    assert again.metadata.cache_hit and again.asm["ptx"] == separate.asm["ptx"]


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("fusion", [True, False])
def test_both_forms_assemble(arch, fusion, tmp_path):
    for dtype in SUFFIX:
        kernel = _compile(dtype, arch, enable_fp_fusion=fusion, use_cache=False)
        proc = run_ptxas(kernel.asm["ptx"], arch, tmp_path)
        assert proc.returncode == 0, proc.stderr


def test_cli_compiles_without_fusion(capsys):
    from tileworkbench.cli import main

    path = __file__
    main(["compile", f"{path}::muladd_kernel", "-s", "a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,out_ptr=*fp32,n=i32",
          "-c", "BLOCK=256", "--no-fp-fusion"])
    ptx = capsys.readouterr().out
    assert _count(ptx, r"mul\.rn\.f32") == 2 and not re.search(r"\bfma\.", ptx)


def test_launch_option(target):
    """c = -(a*b rounded): unfused, a*b + c is exactly 0; one FMA gives the product's rounding error,
    exactly representable, so float64 computes it exactly. The interpreter never fuses."""
    rng = np.random.default_rng()
    n = 3000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = -(a * b)  # float32 product, rounded
    residual = (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)
    assert np.count_nonzero(residual) > n // 2  # most products round: the two forms differ
    for fusion in (None, True, False):
        out = target.put(np.full(n, np.nan, np.float32))
        options = {} if fusion is None else {"enable_fp_fusion": fusion}
        muladd_kernel[(-(-n // 256),)](target.put(a), target.put(b), target.put(c), out, n, BLOCK=256,
                                       **options)
        got = target.get(out)
        if (target == "cuda" or target == "cpu") and fusion is not False:  # compiled targets fuse
            err = np.max(np.abs(got.astype(np.float64) - residual) / np.abs(residual).max())
            assert err <= 1e-6, (fusion, err)
        else:
            assert np.array_equal(got, np.zeros(n, np.float32)), fusion
