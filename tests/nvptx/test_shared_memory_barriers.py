"""Barrier placement in the NVPTX lowering, read off the LLVM IR (`shared_hazards`): every exchange
through shared memory is fenced, before O3 and after, in loops (the attention forward's two dots and
reductions per key block, the matmul's k loop) and in straight-line code. The CPU emulator cannot be
trusted to show a missing barrier (host threads run far apart in time), so this is checked here."""

from __future__ import annotations

import pytest
from attention_kernel import SIGNATURE, attention_forward
from nvptx_kernels import CASES
from shared_hazards import find_hazards, lowered_llvm

import tileworkbench as tw
from tileworkbench.backends.nvptx.lower import Lowering

ATTENTION = {"N_CTX": 64, "HEAD_DIM": 16, "BLOCK_M": 32, "BLOCK_N": 16}


@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_is_fenced_before_and_after_o3(causal):
    constexprs = {**ATTENTION, "CAUSAL": causal}
    before = lowered_llvm(attention_forward, SIGNATURE, constexprs)
    assert before.count("addrspace(3)") > 50  # the dots and conversions do go through shared memory
    assert find_hazards(before) == []
    after = tw.compile(attention_forward, signature=SIGNATURE, constexprs=constexprs,
                       target="sm_80")
    assert find_hazards(after.asm["llvm"]) == []


@pytest.mark.parametrize("name", [n for n in CASES if n in (
    "softmax", "layer_norm", "matmul", "cumsum", "sort", "atomic", "shapes", "columns",
    "gather_hist")])
def test_nvptx_cases_are_fenced(name):
    fn, signature, constexprs, num_warps = CASES[name]
    assert find_hazards(lowered_llvm(fn, signature, constexprs, num_warps)) == []


def test_a_missing_barrier_is_found(monkeypatch):
    """The check can fail: without the barrier before each reuse of shared memory in the loop, the
    next key block's writes race the last block's reads (WAR); without the barrier after writing,
    reads race the writes (RAW)."""
    constexprs = {**ATTENTION, "CAUSAL": False}
    monkeypatch.setattr(Lowering, "barrier_before_shared", lambda self: None)
    kinds = {h.kind for h in find_hazards(lowered_llvm(attention_forward, SIGNATURE, constexprs))}
    assert kinds == {"WAR"}
    monkeypatch.setattr(Lowering, "barrier", lambda self: None)
    kinds = {h.kind for h in find_hazards(lowered_llvm(attention_forward, SIGNATURE, constexprs))}
    assert kinds == {"WAR", "RAW"}
