"""The backward kernel of Triton's tutorial 06 (`_attn_bwd`) at the tutorial's own launch (BLOCK_M1 32,
BLOCK_N1 128, BLOCK_M2 128, BLOCK_N2 32, BLK_SLICE_FACTOR 2, 4 warps, 5 stages) for sm_90a: every
load of its four loops (Q^T, dO, K^T, V^T and the rows of M and D) comes through a cp.async ring,
ptxas assembles it (without spills at head dim 64), and the CPU emulator of the GPU lowering
computes dQ, dK and dV as float64 does. Needs TRITON_TUTORIALS_DIR (the tutorial files are not in
this repository) and torch (the tutorial imports it)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from tutorial_loader import load_tutorial, tutorial_or_skip

import tileworkbench as tw

TUTORIAL = "06-fused-attention.py"
P16 = "*fp16:16"
SIGNATURE = {"Q": P16, "K": P16, "V": P16, "sm_scale": "fp32", "DO": P16, "DQ": P16, "DK": P16,
             "DV": P16, "M": "*fp32:16", "D": "*fp32:16", "stride_z": "i32:16", "stride_h": "i32:16",
             "stride_tok": "i32:16", "stride_d": "i32:1", "H": "i32", "N_CTX": "i32:16"}
LAUNCH = {"BLOCK_M1": 32, "BLOCK_N1": 128, "BLOCK_M2": 128, "BLOCK_N2": 32, "BLK_SLICE_FACTOR": 2}
SM_SCALE = 0.5
RCP_LN2, LN2 = 1.4426950408889634, 0.6931471824645996


@pytest.fixture(scope="module")
def backward():
    return load_tutorial(tutorial_or_skip(TUTORIAL))._attn_bwd


def _compile(kernel, head_dim, causal):
    return tw.compile(kernel, signature=SIGNATURE,
                      constexprs={**LAUNCH, "HEAD_DIM": head_dim, "CAUSAL": causal},
                      target="sm_90a", num_warps=4, num_stages=5, use_cache=False)


@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_every_load_of_the_loops_takes_a_ring(backward, head_dim, causal, tmp_path):
    compiled = _compile(backward, head_dim, causal)
    gpu = compiled.asm["tile-gpu"]
    bodies = re.findall(r"= scf\.for .*?\n(.*?)\n\s*scf\.yield", gpu, re.S)
    assert len(bodies) == (4 if causal else 2)
    for body in bodies:
        assert "tt.load" not in body and "ttg.local_alloc" not in body
    # every load copied into a ring of its own: Q^T, dO, M and D in the dK/dV loops, K^T and V^T
    # in the dQ loops (the dK/dV epilogue's tiles between them lie over the first loops' rings,
    # so the dQ loops do not take those over)
    copies = [body.count("ttg.async_copy_global_to_local") for body in bodies]
    assert copies == ([4, 4, 2, 2] if causal else [4, 2])
    rings = re.findall(r"= ttg\.local_alloc : !ttg\.memdesc<5x", gpu)
    assert len(rings) == (12 if causal else 6)
    if shutil.which("ptxas") is None:
        return
    (tmp_path / "k.ptx").write_text(compiled.asm["ptx"])
    result = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(tmp_path / "k.ptx"), "-o",
                             str(tmp_path / "k.o")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[:2000]
    if head_dim == 64:
        assert "0 bytes stack frame" in result.stderr, result.stderr


def _reference(q, k, v, do, causal):
    """(dQ, dK, dV, M, delta) in float64 for the tutorial's inputs: k is its pre-scaled K
    (sm_scale / ln 2), M the base-2 log-sum-exp, as its forward leaves them."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    scores = q @ k.T
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    top = scores.max(1, keepdims=True)
    m = top[:, 0] + np.log2(np.exp2(scores - top).sum(1))
    p = np.exp2(scores - m[:, None])
    delta = (p @ v * do).sum(1)
    ds = p * (do @ v.T - delta[:, None])
    return ds @ k * LN2, ds.T @ q * SM_SCALE, p.T @ do, m, delta


@pytest.mark.parametrize("head_dim, causal", [(64, True)], ids=["d64-causal"])
def test_backward_on_the_cpu_emulator(backward, head_dim, causal):
    from cpu_emulator import Emulator

    n_ctx = 256  # two key blocks and two query blocks, so each loop runs past its first steps
    rng = np.random.default_rng()
    q, k, v, do = (rng.normal(0.0, 0.5, (n_ctx, head_dim)).astype(np.float16) for _ in range(4))
    k = (k.astype(np.float32) * np.float32(SM_SCALE * RCP_LN2)).astype(np.float16)
    want = _reference(q, k, v, do, causal)
    dq, dk, dv = (np.full_like(q, np.nan) for _ in range(3))
    emulator = Emulator(backward, SIGNATURE, {**LAUNCH, "HEAD_DIM": head_dim, "CAUSAL": causal},
                        4, wgmma=True, num_stages=5)
    emulator.launch((n_ctx // 128, 1, 1), q, k, v, SM_SCALE, do, dq, dk, dv,
                    want[3].astype(np.float32), want[4].astype(np.float32), n_ctx * head_dim,
                    n_ctx * head_dim, head_dim, 1, 1, n_ctx)
    for name, got, expected in zip(("dQ", "dK", "dV"), (dq, dk, dv), want):
        error = np.abs(got.astype(np.float64) - expected).max() / np.abs(expected).max()
        assert error < 1e-2, f"{name}: relative error {error}"
