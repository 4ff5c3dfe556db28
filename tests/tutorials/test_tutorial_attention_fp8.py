"""Tutorial 06's forward (`_attn_fwd`) on float8 e5m2 (`FP8_OUTPUT`, V stored transposed and read
through `desc_v.load(...).T`), as its benchmark runs it on Hopper: both dots on `wgmma` (e5m2), K and
V on TMA rings. Before, it ran on `mma.sync` with V on pointers (the V offset is carried by the loop,
and its divisibility was not seen), at 0.22-0.42x Triton's speed on an H100. Compiled at the
tutorial's config and assembled by ptxas, and run on the CPU emulator against float64. Needs
TRITON_TUTORIALS_DIR (the tutorial files are not in this repo)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from attention_forward import forward_constexprs, forward_kernel, forward_signature

import tileworkbench as tw

SM_SCALE = 0.5


@pytest.fixture(scope="module")
def forward():
    return forward_kernel()


def _signature(head_dim: int, block_m: int, block_n: int) -> list:
    return forward_signature(head_dim, block_m, block_n, fp8=True)


def _constexprs(head_dim: int, block_m: int, block_n: int, causal: bool) -> dict:
    return forward_constexprs(head_dim, block_m, block_n, causal, fp8=True)


@pytest.mark.parametrize("head_dim", [64, 128])
def test_fp8_forward_runs_on_wgmma_with_v_on_tma(forward, head_dim):
    """128 x 64 blocks, 4 warps, 2 stages: every dot a wgmma on e5m2 (p @ v reads p from
    registers), no mma.sync, V through its tensor map, no spills."""
    compiled = tw.compile(forward, signature=_signature(head_dim, 128, 64),
                          constexprs=_constexprs(head_dim, 128, 64, False), target="sm_90a",
                          num_warps=4, num_stages=2, use_cache=False)
    gpu, ptx = compiled.asm["tile-gpu"], compiled.asm["ptx"]
    assert "ttng.tma_fallback" not in gpu and "tt.dot " not in gpu
    assert gpu.count("ttng.warp_group_dot ") == 2
    assert "mma.sync" not in ptx and "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2" in ptx
    assert f"wgmma.mma_async.sync.aligned.m64n{head_dim}k32.f32.e5m2.e5m2" in ptx
    assert ptx.count("cp.async.bulk.tensor.2d") >= 4  # Q, K, V (prologue and loop)
    if shutil.which("ptxas"):
        assert compiled.metadata.n_spills == 0, compiled.metadata.resources


@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
def test_fp8_forward_on_the_cpu_emulator(forward, causal):
    """Two heads of 128 rows in 64 x 32 blocks on wgmma and TMA, 2 stages, head dim 64, V stored
    transposed per head as the tutorial stores it; against float64 softmax(q k^T) v of the same
    e5m2 inputs. e5m2 keeps 2 mantissa bits (p and o are rounded to it), hence the tolerance."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from cpu_emulator import Emulator
    from tma_standin import host_tensor_map

    heads, n_ctx, head_dim, block_m, block_n = 2, 128, 64, 64, 32
    e5m2 = ml_dtypes.float8_e5m2
    emulator = Emulator(forward, _signature(head_dim, block_m, block_n),
                        _constexprs(head_dim, block_m, block_n, causal), num_warps=4, wgmma=True,
                        tma=True, num_stages=2)
    rng = np.random.default_rng()
    q, k, v = (rng.normal(0.0, 1.0, (heads * n_ctx, head_dim)).astype(e5m2) for _ in range(3))
    # V per head transposed ([head, dim, row]), seen as [dim, columns] with a row stride of n_ctx:
    # head h's rows are columns h * n_ctx * head_dim on (the tutorial's wrapper gives the map
    # heads * n_ctx columns, so TMA reads zeros past the first head's; here every head is inside)
    v_t = np.ascontiguousarray(v.reshape(heads, n_ctx, head_dim).transpose(0, 2, 1))
    columns = heads * n_ctx * head_dim
    v_view = np.lib.stride_tricks.as_strided(v_t.view(np.uint8), (head_dim, columns), (n_ctx, 1))
    o = np.full_like(q, np.nan)
    lse = np.full(heads * n_ctx, np.nan, np.float32)

    def desc(array, block):  # what the launcher passes for a descriptor on TMA
        return [array, *array.shape, array.strides[0], host_tensor_map(array, block)]

    emulator.launch((n_ctx // block_m, heads), np.float32(SM_SCALE), lse, 1, heads,
                    *desc(q, (block_m, head_dim)), *desc(k, (block_n, head_dim)),
                    *desc(v_view, (head_dim, block_n)), *desc(o, (block_m, head_dim)), n_ctx)
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
        assert error <= 0.1, f"head {head}: relative error {error:.2e}"
        want_lse = (scores.max(1) + np.log(weights.sum(1))) / np.log(2.0)
        assert np.abs(lse[rows] - want_lse).max() <= 1e-3
