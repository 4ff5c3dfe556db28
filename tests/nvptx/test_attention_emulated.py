"""The attention forward (tutorial 06's shape) lowered for the GPU and run on the CPU emulator,
against NumPy float64. Before the axis-info fix, `acc * rescale[:, None]` in the key loop was
computed once per run of columns (axis info kept the constancy of the loop's zero init for the
carried `acc`), so every block configuration was wrong from the second key block on."""

from __future__ import annotations

import numpy as np
import pytest
from attention_kernel import SIGNATURE, attention_forward, reference
from cpu_emulator import Emulator

SM_SCALE = 0.5


def run_emulated(n_ctx, head_dim, block_m, block_n, causal, num_warps=4, heads=2, **options):
    n_ctx = -(-n_ctx // block_m) * block_m  # whole query blocks
    rng = np.random.default_rng(block_m * 100 + block_n + causal)
    q, k, v = (rng.normal(0.0, 0.5, (heads * n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    o = np.full_like(q, np.nan)
    lse = np.full(heads * n_ctx, np.nan, np.float32)
    constexprs = {"N_CTX": n_ctx, "HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n,
                  "CAUSAL": causal}
    Emulator(attention_forward, SIGNATURE, constexprs, num_warps, **options).launch(
        (n_ctx // block_m, heads), q, k, v, o, lse, SM_SCALE)
    for h in range(heads):
        rows = slice(h * n_ctx, (h + 1) * n_ctx)
        want_o, want_lse = reference(q[rows], k[rows], v[rows], SM_SCALE, causal)
        assert np.abs(o[rows].astype(np.float64) - want_o).max() < 1e-2, f"output of head {h}"
        assert np.abs(lse[rows] - want_lse).max() < 1e-3, f"log-sum-exp of head {h}"


# The FMA dot (kept for shapes and dtypes tensor cores cannot take), at small shapes to keep the
# emulator quick (compiling the module for the host takes most of the time);
# two key blocks are enough: the bug showed from the second on.
@pytest.mark.parametrize("block_m, block_n, num_warps", [(32, 16, 4), (16, 32, 1)])
def test_attention_forward_non_causal(block_m, block_n, num_warps):
    run_emulated(2 * block_n, 16, block_m, block_n, causal=False, num_warps=num_warps, heads=1)


@pytest.mark.parametrize("block_m, block_n, num_warps", [(32, 16, 2)])
def test_attention_forward_causal(block_m, block_n, num_warps):
    run_emulated(2 * block_m, 16, block_m, block_n, causal=True, num_warps=num_warps, heads=1)


@pytest.mark.parametrize("causal, num_stages", [(False, 2), (True, 1)],
                         ids=["non-causal", "causal"])
def test_attention_forward_on_tensor_cores(causal, num_stages):
    """Both dots on mma.sync (ldmatrix operands; K and V through cp.async when staged), as the GPU
    runs them since issue 10; wrong before the axis-info fix too."""
    run_emulated(64, 16, 32, 16, causal=causal, heads=1, tensor_cores=True, num_stages=num_stages)
