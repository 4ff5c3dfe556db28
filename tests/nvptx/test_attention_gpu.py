"""The attention forward shaped like tutorial 06's (`attention_kernel`) on the GPU at the block
sizes that were wrong before the axis-info fix, causal and not, 4 warps and 1, against NumPy float64
(outputs poisoned first). Needs no tutorial files; skipped where no GPU is visible."""

from __future__ import annotations

import numpy as np
import pytest
from attention_kernel import attention_forward, reference

pytestmark = pytest.mark.gpu
SM_SCALE = 0.5


@pytest.fixture(scope="module")
def cp():
    from tileworkbench.runtime.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible (CuPy or a CUDA device is missing)")
    import cupy

    return cupy


@pytest.fixture(autouse=True)
def scratch_allocator(cp):
    """The kernel makes its descriptors in the kernel: on sm_90a their TMA maps live in scratch
    memory from `set_allocator` (as Triton's tutorial 06 sets one)."""
    import tileworkbench as tw

    tw.set_allocator(lambda size, align, stream: cp.empty(size, dtype=cp.uint8))
    yield
    tw.set_allocator(None)


@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
@pytest.mark.parametrize("block_m, block_n, num_warps", [
    (32, 16, 4), (16, 32, 4), (32, 32, 4), (64, 32, 4), (64, 32, 1), (32, 16, 1), (128, 64, 4),
    (64, 64, 8)])
def test_attention_forward_on_gpu(cp, monkeypatch, tmp_path, block_m, block_n, num_warps, causal):
    from tileworkbench.config import config

    if causal and block_m % block_n:
        pytest.skip("the causal on-band pass covers BLOCK_M keys: BLOCK_M must be a multiple of "
                    "BLOCK_N")
    monkeypatch.setattr(config, "interpret", False)
    heads, n_ctx, head_dim = 2, 128, 64
    rng = np.random.default_rng(block_m * 1000 + block_n * 10 + num_warps + causal)
    q, k, v = (rng.normal(0.0, 0.5, (heads * n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    o = cp.full(q.shape, np.nan, cp.float16)
    lse = cp.full(heads * n_ctx, np.nan, cp.float32)
    attention_forward[(n_ctx // block_m, heads)](
        cp.asarray(q), cp.asarray(k), cp.asarray(v), o, lse, SM_SCALE, N_CTX=n_ctx,
        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal, num_warps=num_warps)
    got, got_lse = o.get().astype(np.float64), lse.get()
    for h in range(heads):
        rows = slice(h * n_ctx, (h + 1) * n_ctx)
        want, want_lse = reference(q[rows], k[rows], v[rows], SM_SCALE, causal)
        error = np.abs(got[rows] - want)
        bad = int((~(error <= 1e-2)).sum())  # NaN (an unwritten element) counts as bad
        assert bad == 0, f"head {h}: {bad} of {error.size} outputs off, max {np.nanmax(error):.3g}"
        assert np.abs(got_lse[rows] - want_lse).max() <= 1e-3, f"head {h}: log-sum-exp"
