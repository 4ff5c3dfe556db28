"""Tutorial 06's forward (`_attn_fwd`) on host tensor descriptors with TMA off (TILEWORKBENCH_TMA=0,
as wherever TMA cannot be used): its K and V tiles stay on cp.async rings that wgmma reads (issue 21,
"no cliffs"; it was 8x slower than TMA on the H100 with every tile through registers). Compiled at
the tutorial's test config and assembled by ptxas, and run on the CPU emulator against float64 with
two heads, causal and not. Needs TRITON_TUTORIALS_DIR (the tutorial files are not in this repo)."""

from __future__ import annotations

import re
import shutil

import pytest
from attention_forward import forward_constexprs, forward_kernel, forward_signature

import tileworkbench as tw

SM_SCALE = 0.5


@pytest.fixture(autouse=True)
def tma_off(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", False)


@pytest.fixture(scope="module")
def forward():
    return forward_kernel()


def _signature(head_dim: int, block_m: int, block_n: int) -> list:
    return forward_signature(head_dim, block_m, block_n)


def _constexprs(head_dim: int, block_m: int, block_n: int, causal: bool) -> dict:
    return forward_constexprs(head_dim, block_m, block_n, causal)


@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
def test_tutorial_forward_without_tma_keeps_cp_async_rings(forward, causal):
    """128 x 64 blocks, 4 warps, 2 stages, head dim 64: in each loop K and V are cp.async copies
    (16 bytes) into rings, none a register load; the causal loops share the rings; no spills."""
    compiled = tw.compile(forward, signature=_signature(64, 128, 64),
                          constexprs=_constexprs(64, 128, 64, causal), target="sm_90a",
                          num_warps=4, num_stages=2, use_cache=False)
    gpu, ptx = compiled.asm["tile-gpu"], compiled.asm["ptx"]
    loops = re.findall(r"scf\.for .*?scf\.yield", gpu, re.S)
    assert len(loops) == (2 if causal else 1)
    for body in loops:
        assert " tt.load " not in body and body.count("ttg.async_copy_global_to_local") == 2
    assert len(re.findall(r"= ttg\.local_alloc : !ttg\.memdesc<2x64x64xf16", gpu)) == 2
    assert "cp.async.cg.shared.global" in ptx and "cp.async.bulk.tensor" not in ptx
    if shutil.which("ptxas"):
        assert compiled.metadata.n_spills == 0, compiled.metadata.resources


@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
def test_tutorial_forward_without_tma_on_the_cpu_emulator(forward, causal):
    """Two heads of 128 rows in 64 x 32 blocks on wgmma, 2 stages: the second head's key offsets
    start past the first head's rows (the loop-carried `offsetk_y`), the rings wrap."""
    import numpy as np
    from cpu_emulator import Emulator

    heads, n_ctx, head_dim, block_m, block_n = 2, 128, 64, 64, 32
    emulator = Emulator(forward, _signature(head_dim, block_m, block_n),
                        _constexprs(head_dim, block_m, block_n, causal), num_warps=4, wgmma=True,
                        num_stages=2)
    assert "@emu_cp_async(" in emulator.text
    rng = np.random.default_rng()
    q, k, v = (rng.normal(0.0, 0.5, (heads * n_ctx, head_dim)).astype(np.float16)
               for _ in range(3))
    o = np.full_like(q, np.nan)
    lse = np.full(heads * n_ctx, np.nan, np.float32)

    def flat(array):
        return [array, array.shape[0], array.shape[1], array.strides[0] // array.itemsize]

    emulator.launch((n_ctx // block_m, heads), np.float32(SM_SCALE), lse, 1, heads, *flat(q),
                    *flat(k), *flat(v), *flat(o), n_ctx)
    for head in range(heads):
        rows = slice(head * n_ctx, (head + 1) * n_ctx)
        scores = q[rows].astype(np.float64) @ k[rows].astype(np.float64).T * SM_SCALE
        if causal:
            scores = np.where(np.tril(np.ones((n_ctx, n_ctx), bool)), scores, -np.inf)
        weights = np.exp(scores - scores.max(1, keepdims=True))
        want = weights @ v[rows].astype(np.float64) / weights.sum(1, keepdims=True)
        got = o[rows].astype(np.float64)
        assert not np.isnan(got).any(), f"head {head}: rows left unwritten"
        error = np.linalg.norm(got - want) / np.linalg.norm(want)
        assert error <= 2e-3, f"head {head}: relative error {error:.2e}"
        want_lse = (scores.max(1) + np.log(weights.sum(1))) / np.log(2.0)
        assert np.abs(lse[rows] - want_lse).max() <= 1e-3


@pytest.mark.parametrize("causal, block_m, block_n, warps",
                         [(False, 64, 128, 4), (False, 128, 128, 4), (False, 128, 128, 8),
                          (True, 128, 128, 4), (True, 128, 128, 8)])
def test_tutorial_four_stage_configs_at_head_dim_128_fit_without_tma(forward, causal, block_m,
                                                                     block_n, warps):
    """The autotune configs (4 stages, head dim 128) whose K and V rings (128 KB each at 128-row
    key blocks) raised OutOfResources with TMA off: the compiler's retry keeps only the rings that
    fit (runtime/compiler.py), as it does where TMA's rings do not fit."""
    compiled = tw.compile(forward, signature=_signature(128, block_m, block_n),
                          constexprs=_constexprs(128, block_m, block_n, causal), target="sm_90a",
                          num_warps=warps, num_stages=4, use_cache=False)
    fallback = compiled.launch_metadata.tma_fallback
    assert fallback["host"] == [] and "the rings of its pointer loads need" in fallback["reason"]
    assert compiled.metadata.shared <= 232448
    if shutil.which("ptxas"):
        assert compiled.cubin is not None
