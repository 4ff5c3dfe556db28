"""A load read by two wgmma dots, once as it is and once through `tl.trans` (tutorial 06's backward:
Q^T in k @ qT and ds @ qT.T, dO in p @ do and v @ do.T): the `wgmma` pass stores the tile once and
gives the transposed use a `ttg.memdesc_trans` view of it, so `pipeline` turns the load into a
cp.async ring, as Triton does; the rows of M and delta read in registers take rings too
(`pipeline_register_loads.py`), and the last dot stays in flight into the next iteration. Checked
in the Tile IR and PTX, by ptxas, and by emulated runs against NumPy float64 (outputs poisoned
with NaN first)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from attention_kernel import DKDV_SIGNATURE, attention_dkdv, dkdv_reference
from cpu_emulator import Emulator
from nvptx_support import needs_ptxas, run_ptxas

import tileworkbench as tw
import tileworkbench.language as tl

RNG = np.random.default_rng()  # fresh inputs each run


def _dkdv(head_dim=64, block_m=32, block_n=128, stages=5, causal=False):
    return tw.compile(attention_dkdv, signature=DKDV_SIGNATURE,
                      constexprs={"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n,
                                  "CAUSAL": causal},
                      target="sm_90a", num_warps=4, num_stages=stages, use_cache=False)


def _loop_body(gpu: str) -> str:
    return gpu[gpu.index("scf.for"):gpu.index("scf.yield")]


@pytest.mark.parametrize("causal", [False, True])
def test_both_uses_of_qT_and_do_read_one_ring_slot(causal):
    """Also where the mask reads the query rows' carried counter, which M's and delta's addresses
    read too: the body reads it from the induction variable, so their copies can run ahead."""
    gpu = _dkdv(causal=causal).asm["tile-gpu"]
    before = gpu[:gpu.index("scf.for")]
    # one ring per load, of num_stages slots: Q^T K-major for k @ qT, dO MN-major for p @ do
    assert re.search(r"%qT = ttg\.local_alloc : !ttg\.memdesc<5x64x32xf16", before)
    assert re.search(r"%do = ttg\.local_alloc : !ttg\.memdesc<5x32x64xf16", before)
    # and the rows of M and delta, which reach the dots through exp2 and products
    assert re.search(r"%m = ttg\.local_alloc : !ttg\.memdesc<5x32xf32", before)
    assert re.search(r"%delta = ttg\.local_alloc : !ttg\.memdesc<5x32xf32", before)
    body = _loop_body(gpu)
    assert body.count("ttg.async_copy_global_to_local") == 4  # the copies issued S-1 steps ahead
    assert "tt.load" not in body and "ttg.convert_layout" not in body
    assert "tt.trans" not in body and "ttg.local_alloc" not in body
    views = re.findall(r"(%\w+) = ttg\.memdesc_trans (%\w+) \{order = \[1, 0\]\}", body)
    read_slots = dict(re.findall(r"(%\w+) = ttg\.memdesc_index (%\w+), %slot", body))
    assert sorted(read_slots[slot] for _, slot in views) == ["%do", "%qT"]
    # each slot feeds one dot as it is and one through its view
    for view, slot in views:
        assert len(re.findall(rf"ttng\.warp_group_dot [^\n]*{slot}\b", body)) == 1
        assert len(re.findall(rf"ttng\.warp_group_dot [^\n]*{view}\b", body)) == 1


def test_the_last_dot_stays_in_flight_across_the_back_edge():
    """dk += ds @ q, the last of the loop's four wgmma dots, is waited for by the next iteration's
    first wait (`wgmma_pipeline`'s chained rule, taken past two dots), and after the loop."""
    gpu = _dkdv().asm["tile-gpu"]
    body = _loop_body(gpu)
    lines = body.splitlines()
    dots = [i for i, line in enumerate(lines) if "ttng.warp_group_dot " in line]
    waits = [i for i, line in enumerate(lines) if "ttng.warp_group_dot_wait" in line]
    assert len(dots) == 4 and len(waits) == 4 and max(waits) < dots[-1]
    assert waits[:2] == [dots[0] + 1, dots[0] + 2]  # the first dot's and the carried dk's
    dk = re.match(r"\s*(%\w+) = ", lines[dots[-1]]).group(1)
    assert re.search(rf"scf\.yield [^\n]*{dk}\b", gpu)
    barrier = next(i for i, line in enumerate(lines) if "gpu.barrier" in line)
    copies = [i for i, line in enumerate(lines) if "async_copy_global_to_local" in line]
    assert dots[-1] < barrier < min(copies)


def test_a_transposed_only_operand_is_pipelined_too():
    """`tl.dot(a, tl.trans(b))` with b loaded N x K (a pointer-path K^T): b's tile is stored as
    loaded and read K-major through the view, so it takes a cp.async ring as a itself does."""
    p16 = "*fp16:16"
    gpu = tw.compile(_dot_b_trans, signature={"a_ptr": p16, "b_ptr": p16, "c_ptr": "*fp32:16",
                                              "K": "i32:16"},
                     constexprs={"BM": 64, "BN": 64, "BK": 64}, target="sm_90a", num_warps=4,
                     num_stages=3, use_cache=False).asm["tile-gpu"]
    body = _loop_body(gpu)
    assert body.count("ttg.async_copy_global_to_local") == 2
    assert "ttg.memdesc_trans" in body and "tt.load" not in body


def test_slots_read_only_through_views_are_fenced_for_wgmma():
    """Both operands transposed: wgmma reads the slots only through views, and the wait before it
    still fences the copies for the async proxy."""
    p16 = "*fp16:16"
    gpu = tw.compile(_dot_both_trans, signature={"a_ptr": p16, "b_ptr": p16, "c_ptr": "*fp32:16",
                                                 "K": "i32:16"},
                     constexprs={"BM": 64, "BN": 64, "BK": 64}, target="sm_90a", num_warps=4,
                     num_stages=3, use_cache=False).asm["tile-gpu"]
    body = _loop_body(gpu)
    assert body.count("ttg.memdesc_trans") == 2 and body.count("async_copy_global_to_local") == 2
    assert "ttg.async_wait {num = 2, fence_async = true}" in body


@tw.jit
def _dot_b_trans(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows, cols, ks = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :])
        b = tl.load(b_ptr + cols[:, None] * K + (k + ks)[None, :])
        acc = tl.dot(a, tl.trans(b), acc)
    tl.store(c_ptr + rows[:, None] * BN + cols[None, :], acc)


@tw.jit
def _dot_both_trans(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows, cols, ks = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        a_t = tl.load(a_ptr + (k + ks)[:, None] * BM + rows[None, :])  # K x M
        b = tl.load(b_ptr + cols[:, None] * K + (k + ks)[None, :])
        acc = tl.dot(tl.trans(a_t), tl.trans(b), acc)
    tl.store(c_ptr + rows[:, None] * BN + cols[None, :], acc)


@needs_ptxas
@pytest.mark.parametrize("head_dim", [64, 128])
def test_the_rings_assemble(head_dim, tmp_path):
    ptx = _dkdv(head_dim).asm["ptx"]
    # per thread, 16-byte copies of Q^T and dO: the prologue's 4 steps and the loop's
    per_step = 2 * 32 * head_dim * 2 // (128 * 16)
    assert len(re.findall(r"cp\.async\.cg\.shared\.global", ptx)) == 5 * per_step
    assert len(re.findall(r"cp\.async\.ca\.shared\.global", ptx)) == 5 * 2  # M's and delta's
    result = run_ptxas(ptx, "sm_90a", tmp_path)
    assert result.returncode == 0, result.stderr[:2000]


@pytest.mark.parametrize("head_dim, block_m, block_n, stages, n_ctx, causal", [
    (64, 32, 64, 3, 192, True),
    (128, 16, 64, 2, 64, False),
], ids=["d64-causal-3-stages-6-steps", "d128-2-stages"])
def test_emulated_dkdv(head_dim, block_m, block_n, stages, n_ctx, causal):
    heads = 1
    q, k, v, do = (RNG.normal(0.0, 0.5, (heads * n_ctx, head_dim)).astype(np.float16)
                   for _ in range(4))
    k = (k * np.float16(0.5 * 1.4426950408889634)).astype(np.float16)  # sm_scale / ln(2)
    dk_want, dv_want, m, delta = dkdv_reference(q, k, v, do, causal)
    dk, dv = np.full_like(k, np.nan), np.full_like(v, np.nan)
    emulator = Emulator(attention_dkdv, DKDV_SIGNATURE,
                        {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n,
                         "CAUSAL": causal}, 4, wgmma=True, num_stages=stages)
    emulator.launch((n_ctx // block_n, heads), q, k, v, do, m.astype(np.float32),
                    delta.astype(np.float32), dk, dv, n_ctx)
    for name, got, want in (("dK", dk, dk_want), ("dV", dv, dv_want)):
        error = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
        assert error < 1e-2, f"{name}: relative error {error}"
