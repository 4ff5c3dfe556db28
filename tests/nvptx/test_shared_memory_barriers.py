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
from tileworkbench.backends.llvm.lower import Lowering

ATTENTION = {"N_CTX": 64, "HEAD_DIM": 16, "BLOCK_M": 32, "BLOCK_N": 16}


@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_is_fenced_before_and_after_o3(causal):
    constexprs = {**ATTENTION, "CAUSAL": causal}
    before = lowered_llvm(attention_forward, SIGNATURE, constexprs)
    assert before.count("addrspace(3)") > 20  # the dots' operands go through shared memory
    assert "ldmatrix" in before  # read by the tensor-core path
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


def test_pipelined_tensor_core_matmul_waits_for_its_copies():
    """fp16 matmul on mma.sync with operands staged by cp.async into a 3-slot ring: every ldmatrix
    comes after a wait_group and a barrier; without them the check finds the reads (ASYNC)."""
    fn, signature, constexprs, num_warps = CASES["matmul"]
    signature = {**signature, "a_ptr": "*fp16:16", "b_ptr": "*fp16:16"}
    text = lowered_llvm(fn, signature, constexprs, num_warps, num_stages=3)
    assert "ldmatrix" in text and "cp.async" in text
    assert find_hazards(text) == []


def test_a_missing_async_wait_is_found(monkeypatch):
    from tileworkbench.backends.llvm.lowering import LOWERINGS
    from tileworkbench.ir.ops.ttg import AsyncWaitOp

    monkeypatch.setitem(LOWERINGS, AsyncWaitOp, lambda lw, op: None)
    fn, signature, constexprs, num_warps = CASES["matmul"]
    signature = {**signature, "a_ptr": "*fp16:16", "b_ptr": "*fp16:16"}
    hazards = find_hazards(lowered_llvm(fn, signature, constexprs, num_warps, num_stages=3))
    # the ldmatrix reads race the copies; the epilogue's staging tile lies over the rings
    # (passes/shared_reuse.py) and takes a barrier of its own, so its write is still ordered
    assert {h.kind for h in hazards} == {"ASYNC"}
    assert any("ldmatrix" in h.text for h in hazards if h.kind == "ASYNC")


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
