"""The attention forward (tutorial 06's shape) lowered for the GPU and run on the CPU emulator,
against NumPy float64: on the FMA path, on mma.sync, and on Hopper's wgmma (sm_90a: Q @ K^T by
descriptors, P @ V with P in registers), whose stand-in is asynchronous as the GPU. Before the
axis-info fix, `acc * rescale[:, None]` in the key loop was computed once per run of columns (axis
info kept the constancy of the loop's zero init for the carried `acc`), so every block
configuration was wrong from the second key block on."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from attention_kernel import (
    attention_forward,
    attention_forward_masked,
    masked_signature,
    reference,
    signature,
)
from cpu_emulator import Emulator
from wgmma_standin import runs_register_a

SM_SCALE = 0.5
DTYPES = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16}
TOLERANCE = {"fp16": 1e-2, "bf16": 3e-2}  # P rounded to 8 bits of mantissa in bf16


def _inputs(rows, head_dim, dtype, seed):
    rng = np.random.default_rng(seed)
    return [rng.normal(0.0, 0.5, (rows, head_dim)).astype(DTYPES[dtype]) for _ in range(3)]


def run_emulated(n_ctx, head_dim, block_m, block_n, causal, num_warps=4, heads=2, dtype="fp16",
                 **options):
    n_ctx = -(-n_ctx // block_m) * block_m  # whole query blocks
    q, k, v = _inputs(heads * n_ctx, head_dim, dtype, block_m * 100 + block_n + causal)
    o = np.full_like(q, np.nan)
    lse = np.full(heads * n_ctx, np.nan, np.float32)
    constexprs = {"N_CTX": n_ctx, "HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n,
                  "CAUSAL": causal}
    emulator = Emulator(attention_forward, signature(dtype), constexprs, num_warps, **options)
    emulator.launch((n_ctx // block_m, heads), q, k, v, o, lse, SM_SCALE)
    for h in range(heads):
        rows = slice(h * n_ctx, (h + 1) * n_ctx)
        want_o, want_lse = reference(q[rows], k[rows], v[rows], SM_SCALE, causal)
        error = np.abs(o[rows].astype(np.float64) - want_o)
        assert (error <= TOLERANCE[dtype]).all(), f"output of head {h}: max {np.nanmax(error)}"
        assert np.abs(lse[rows] - want_lse).max() < 1e-3, f"log-sum-exp of head {h}"
    return emulator


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


# -- Hopper: both dots on wgmma, P @ V with A (P) from registers ------------------------------------

@pytest.mark.parametrize("head_dim, causal, dtype, block_m, block_n, num_warps, n_ctx", [
    (64, False, "fp16", 128, 64, 4, 128),
    (128, True, "fp16", 64, 64, 4, 128),
    (64, True, "bf16", 128, 64, 8, 128),
    (128, False, "bf16", 64, 32, 4, 64),
], ids=["d64-fp16-two-m-halves", "d128-causal-fp16", "d64-causal-bf16-8warps", "d128-bf16-bn32"])
def test_attention_forward_on_wgmma(head_dim, causal, dtype, block_m, block_n, num_warps, n_ctx):
    """Tutorial 06's forward (tensor descriptors) on sm_90a's wgmma: Q @ K^T reads both tiles by
    descriptors, P @ V takes P's fragments from registers; heads 64 and 128, causal and not."""
    emulator = run_emulated(n_ctx, head_dim, block_m, block_n, causal, num_warps=num_warps,
                            heads=1, dtype=dtype, wgmma=True, num_stages=2)
    assert runs_register_a(emulator.text)


@pytest.mark.parametrize("n_ctx, head_dim, causal, dtype", [
    (100, 64, False, "fp16"), (72, 64, True, "bf16"), (40, 128, True, "fp16"),
], ids=["100-fp16", "72-causal-bf16", "40-d128-causal-fp16"])
def test_masked_attention_tails_on_wgmma(n_ctx, head_dim, causal, dtype):
    """Sequence lengths that are not a multiple of the blocks (masked cp.async loads of K and V
    zero-filled, keys past the end weightless, stores clipped), two heads."""
    heads, block_m, block_n = 2, 64, 32
    q, k, v = _inputs(heads * n_ctx, head_dim, dtype, n_ctx + causal)
    o = np.full_like(q, np.nan)
    constexprs = {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": causal}
    emulator = Emulator(attention_forward_masked, masked_signature(dtype), constexprs, 4,
                        wgmma=True, num_stages=2)
    assert runs_register_a(emulator.text)
    emulator.launch((-(-n_ctx // block_m), heads), q, k, v, o, SM_SCALE, n_ctx)
    for h in range(heads):
        rows = slice(h * n_ctx, (h + 1) * n_ctx)
        want, _ = reference(q[rows], k[rows], v[rows], SM_SCALE, causal)
        error = np.abs(o[rows].astype(np.float64) - want)
        assert (error <= TOLERANCE[dtype]).all(), f"head {h}: max {np.nanmax(error)}"
