"""Tutorial 06's forward with in-kernel tensor descriptors on sm_90a's TMA (the pointers specialized
as 16-byte aligned, as a launch specializes them): every tile reaches wgmma straight from the shared
tile TMA wrote. Before, Q and the causal on-band loop's K and V went shared -> registers -> shared
(B's `#dot_op` fragments hold the whole tile in every warp), and ptxas spilled the causal configs
(356, 1220 and 2268 bytes at head dim 64). Compiled and assembled by ptxas, and run on the CPU
emulator (TMA and wgmma through their stand-ins) against float64.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from attention_kernel import attention_forward, reference, signature
from cpu_emulator import Emulator
from wgmma_standin import runs_register_a

import tileworkbench as tw

SM_SCALE = 0.5
TOLERANCE = {"fp16": 2e-3, "bf16": 1.5e-2}  # relative (norm-wise), P rounded to the dtype
DTYPES = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16}


def _compile(head_dim, block_m, block_n, warps, causal, stages=3):
    return tw.compile(attention_forward, signature=signature("fp16", aligned=True), target="sm_90a",
                      constexprs={"N_CTX": 1024, "HEAD_DIM": head_dim, "BLOCK_M": block_m,
                                  "BLOCK_N": block_n, "CAUSAL": causal},
                      num_warps=warps, num_stages=stages, use_cache=False)


@pytest.mark.parametrize("block_m, block_n, warps, causal", [
    (128, 64, 8, True), (128, 64, 4, True), (128, 128, 8, True), (128, 64, 8, False)],
    ids=["128x64-w8-causal", "128x64-w4-causal", "128x128-w8-causal", "128x64-w8"])
def test_descriptor_attention_on_tma_does_not_spill(block_m, block_n, warps, causal):
    """ptxas -v reports no spills and injects no wait between wgmmas (C7517/C7519: it did at 4
    warps, where a warp group issues two m64 wgmmas on the zero accumulator, whose copies came after
    the fence); every load is a TMA copy (none falls back to pointers), none is read into registers,
    and no operand tile is stored from registers in a loop; the causal loops share one K ring and
    one V ring (three rings with Q's)."""
    compiled = _compile(64, block_m, block_n, warps, causal)
    gpu, ptx = compiled.asm["tile-gpu"], compiled.asm["ptx"]
    assert compiled.metadata.n_regs is not None, "ptxas did not report"
    assert compiled.metadata.n_spills == 0, compiled.metadata.resources
    assert "injected" not in compiled.metadata.resources["ptxas_output"]
    assert "tma_fallback" not in gpu and "ttng.tma_load" not in gpu
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx
    for body in re.findall(r"scf\.for .*?scf\.yield", gpu, re.S):
        assert "ttg.local_alloc" not in body and "tma_wait_read" not in body
    assert len(re.findall(r"= ttng\.tma_ring", gpu)) == 3
    assert len(re.findall(r"= ttng\.tma_wait", gpu)) == (5 if causal else 3)


def test_q_is_loaded_once_into_its_own_tile():
    """Q's load is outside the loops: one copy into a one-slot ring, awaited once, read by every
    Q @ K^T of both causal loops by descriptor."""
    gpu = _compile(64, 128, 64, 8, True).asm["tile-gpu"]
    q_ring = re.search(r"(%q\w*) = ttng\.tma_ring : !ttg\.memdesc<1x128x64xf16", gpu)
    assert q_ring
    q_tile = re.search(rf"(%\w+) = ttng\.tma_wait {q_ring.group(1)},", gpu).group(1)
    first_dots = re.findall(r"= ttng\.warp_group_dot (%\w+), ", gpu)
    assert first_dots.count(q_tile) == 2


def _run(n_ctx, head_dim, block_m, block_n, warps, causal, dtype, heads=1, stages=3):
    """The kernel on the emulator (TMA on) with fresh inputs and NaN-poisoned outputs, checked
    against float64 by relative error, and its emulator."""
    rng = np.random.default_rng(n_ctx * 7 + block_m + block_n + causal)
    q, k, v = (rng.normal(0.0, 0.5, (heads * n_ctx, head_dim)).astype(DTYPES[dtype])
               for _ in range(3))
    o = np.full_like(q, np.nan)
    lse = np.full(heads * n_ctx, np.nan, np.float32)
    constexprs = {"N_CTX": n_ctx, "HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n,
                  "CAUSAL": causal}
    emulator = Emulator(attention_forward, signature(dtype, aligned=True), constexprs, warps,
                        wgmma=True, num_stages=stages, tma=True)
    emulator.launch((n_ctx // block_m, heads), q, k, v, o, lse, SM_SCALE)
    for h in range(heads):
        rows = slice(h * n_ctx, (h + 1) * n_ctx)
        want_o, want_lse = reference(q[rows], k[rows], v[rows], SM_SCALE, causal)
        got = o[rows].astype(np.float64)
        assert not np.isnan(got).any(), f"head {h}: rows left unwritten"
        error = np.linalg.norm(got - want_o) / np.linalg.norm(want_o)
        assert error <= TOLERANCE[dtype], f"head {h}: relative error {error:.2e}"
        assert np.abs(lse[rows] - want_lse).max() < 1e-3, f"log-sum-exp of head {h}"
    return emulator


@pytest.mark.parametrize("block_m, block_n, warps, dtype, stages, query_blocks", [
    (64, 32, 4, "fp16", 2, 3), (64, 64, 4, "bf16", 3, 3), (128, 64, 8, "fp16", 3, 2)],
    ids=["64x32-fp16-2stages", "64x64-bf16", "128x64-w8-fp16"])
def test_causal_descriptor_attention_on_tma_emulated(block_m, block_n, warps, dtype, stages,
                                                     query_blocks):
    """Causal, TMA on: the last query block runs its off-band key blocks (four with 64 x 32: the
    rings wrap) and then the on-band ones on the same rings, whose first copies are issued after the
    off-band loop and, with 2 stages, the next ones by the on-band loop itself (ahead of the mask
    that reads the same key offset); Q comes from its own tile."""
    emulator = _run(query_blocks * block_m, 64, block_m, block_n, warps, True, dtype, stages=stages)
    assert "cp_async_bulk_tensor_g2s" in emulator.text
    assert runs_register_a(emulator.text)
