"""The attention forward shaped like tutorial 06's (`attention_kernel`) on the GPU at the block
sizes that were wrong before the axis-info fix, causal and not, 4 warps and 1, against NumPy float64
(outputs poisoned first). Needs no tutorial files; skipped where no GPU is visible."""

from __future__ import annotations

import re

import numpy as np
import pytest
from attention_kernel import attention_forward, reference

pytestmark = pytest.mark.gpu
SM_SCALE = 0.5


@pytest.fixture(scope="module")
def cp():
    from tileworkbench.cuda.device import gpu_available

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



# -- Hopper (sm_90a, the H200's default target): both dots on wgmma, P @ V with P in registers -------

@pytest.fixture(scope="module")
def torch(cp):
    from tileworkbench.cuda.device import device_properties

    if device_properties().major != 9:
        pytest.skip("wgmma needs a Hopper GPU (compute capability 9.0)")
    return pytest.importorskip("torch")


def _operands(torch, rows, head_dim, dtype, seed):
    """q, k, v on the host (float64 copies of the rounded values) and on the GPU (torch: CuPy has
    no bfloat16)."""
    t = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    gen = torch.Generator().manual_seed(seed)
    device = [(torch.randn(rows, head_dim, generator=gen) * 0.5).to(t) for _ in range(3)]
    return [x.double().numpy() for x in device], [x.cuda() for x in device]


def _check(torch, got, host, heads, n_ctx, causal, dtype, lse=None):
    got = got.double().cpu().numpy()
    tolerance = 1e-2 if dtype == "fp16" else 3e-2  # P rounded to bf16's 8 bits
    q, k, v = host
    for h in range(heads):
        rows = slice(h * n_ctx, (h + 1) * n_ctx)
        want, want_lse = reference(q[rows], k[rows], v[rows], SM_SCALE, causal)
        error = np.abs(got[rows] - want)
        bad = int((~(error <= tolerance)).sum())  # NaN (an unwritten element) counts as bad
        assert bad == 0, f"head {h}: {bad} of {error.size} outputs off, max {np.nanmax(error):.3g}"
        if lse is not None:
            assert np.abs(lse.cpu().numpy()[rows] - want_lse).max() <= 1e-3, f"head {h}: lse"


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
@pytest.mark.parametrize("head_dim, block_m, block_n, num_warps", [
    (64, 128, 64, 8), (64, 128, 128, 8), (128, 128, 64, 8), (128, 128, 128, 8), (64, 64, 64, 4),
    (128, 64, 32, 4)])
def test_attention_forward_on_wgmma(torch, head_dim, block_m, block_n, num_warps, causal, dtype):
    """Tutorial 06's forward at Hopper configs, fp16 and bf16, 2 heads of 256 tokens, against
    float64, outputs poisoned; the PTX has the register-A wgmma of the dtype."""
    heads, n_ctx = 2, 256
    host, (q, k, v) = _operands(torch, heads * n_ctx, head_dim, dtype, head_dim + block_n + causal)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((heads * n_ctx,), float("nan"), device="cuda")
    compiled = attention_forward[(n_ctx // block_m, heads)](
        q, k, v, o, lse, SM_SCALE, N_CTX=n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m,
        BLOCK_N=block_n, CAUSAL=causal, num_warps=num_warps, num_stages=3)
    torch.cuda.synchronize()
    ptx = compiled.asm["ptx"]
    ab = dtype.replace("fp", "f")
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{head_dim}k16\.f32\.{ab}\.{ab} "
                     r"\{[^}]*\}, \{%r", ptx), "no register-A wgmma in the PTX"
    _check(torch, o, host, heads, n_ctx, causal, dtype, lse)


@pytest.mark.parametrize("n_ctx, head_dim, causal, dtype", [
    (1000, 64, False, "fp16"), (1000, 64, True, "bf16"), (333, 128, True, "fp16"),
    (77, 128, False, "bf16")])
def test_masked_attention_tails_on_wgmma(torch, n_ctx, head_dim, causal, dtype):
    """Sequence lengths that are not a multiple of the blocks (the masked pointer variant)."""
    from attention_kernel import attention_forward_masked

    heads, block_m, block_n = 3, 128, 64
    host, (q, k, v) = _operands(torch, heads * n_ctx, head_dim, dtype, n_ctx + causal)
    o = torch.full_like(q, float("nan"))
    attention_forward_masked[(-(-n_ctx // block_m), heads)](
        q, k, v, o, SM_SCALE, n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
        CAUSAL=causal, num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    _check(torch, o, host, heads, n_ctx, causal, dtype)


@pytest.mark.parametrize("head_dim, block_m, block_n, num_warps, num_stages", [
    (64, 128, 64, 8, 3), (64, 128, 64, 4, 3), (64, 128, 128, 8, 3), (128, 128, 64, 8, 3),
    (64, 64, 32, 4, 2)])
def test_causal_descriptor_attention_on_tma(torch, head_dim, block_m, block_n, num_warps,
                                            num_stages):
    """The causal descriptor forward on TMA (the pointers from torch are 16-byte aligned, so the
    kernel builds tensor maps): Q in its own tile, the off-band and on-band loops sharing the K
    and V rings (4 query blocks: the rings wrap; 64 x 32 with 2 stages refills in the on-band
    loop), ptxas without spills; against float64, outputs poisoned."""
    heads, n_ctx = 2, 4 * block_m
    host, (q, k, v) = _operands(torch, heads * n_ctx, head_dim, "fp16", block_m + block_n)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((heads * n_ctx,), float("nan"), device="cuda")
    compiled = attention_forward[(n_ctx // block_m, heads)](
        q, k, v, o, lse, SM_SCALE, N_CTX=n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m,
        BLOCK_N=block_n, CAUSAL=True, num_warps=num_warps, num_stages=num_stages)
    torch.cuda.synchronize()
    assert "cp.async.bulk.tensor" in compiled.asm["ptx"], "the descriptors took pointers"
    assert compiled.metadata.n_spills in (0, None)
    _check(torch, o, host, heads, n_ctx, True, "fp16", lse)
