"""`tw.compile`'s signature binds types to parameters by name: given in another order than the
kernel's parameters, it compiles the same kernel (it once bound them by position: a pointer's type
went to a scalar, or two pointers' types swapped silently)."""

from __future__ import annotations

import pytest

import tileworkbench as tw
import tileworkbench.language as tl


@tw.jit
def mixed_kernel(x_ptr, idx_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    gathered = tl.load(x_ptr + tl.load(idx_ptr + offs, mask=mask, other=0), mask=mask)
    tl.store(out_ptr + offs, (gathered * scale).to(tl.float16), mask=mask)


IN_ORDER = {"x_ptr": "*fp32:16", "idx_ptr": "*i32:16", "out_ptr": "*fp16:16", "n": "i32", "scale": "fp32"}
SHUFFLED = {k: IN_ORDER[k] for k in ("scale", "out_ptr", "n", "idx_ptr", "x_ptr")}


@pytest.mark.parametrize("target", ["cpu", "sm_90a"])
def test_a_shuffled_signature_compiles_the_same_kernel(target):
    stage = "llvm"  # the IR the backend made: the types each parameter got, whole
    want = tw.compile(mixed_kernel, signature=IN_ORDER, constexprs={"BLOCK": 64}, target=target,
                      use_cache=False)
    got = tw.compile(mixed_kernel, signature=SHUFFLED, constexprs={"BLOCK": 64}, target=target,
                     use_cache=False)
    assert got.asm[stage] == want.asm[stage]
    assert got.asm["tile"] == want.asm["tile"]
    as_text = tw.compile(mixed_kernel, signature="scale=fp32,n=i32,out_ptr=*fp16:16,x_ptr=*fp32:16,"
                         "idx_ptr=*i32:16", constexprs={"BLOCK": 64}, target=target, use_cache=False)
    assert as_text.asm[stage] == want.asm[stage]


def test_an_unknown_name_in_a_shuffled_signature_is_named():
    with pytest.raises(tw.CompilationError, match=r"no parameter named 'idx'"):
        tw.compile(mixed_kernel, signature={"scale": "fp32", "idx": "*i32"}, constexprs={"BLOCK": 64},
                   target="cpu", use_cache=False)

