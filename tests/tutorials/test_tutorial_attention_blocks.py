"""The forward kernel of Triton's tutorial 06 (`_attn_fwd`, its tensor descriptors made inside the
kernel from plain tensors) launched directly at chosen block sizes, causal and not, against torch in
float64: on the GPU (marked gpu) at the configurations that were wrong before the axis-info fix,
on the CPU emulator of the GPU lowering, and in the interpreter. Needs TRITON_TUTORIALS_DIR (the
tutorial files are not in this repository)."""

from __future__ import annotations

import contextlib
import math

import pytest


from tutorial_checks import gpu_missing, interpreted, ran_on_gpu
from tutorial_loader import ENV_VAR, jit_function, load_tutorial, tutorials_dir

from tileworkbench.runtime.record import record_launches

TUTORIAL = "06-fused-attention.py"
SM_SCALE = 0.5
# (BLOCK_M, BLOCK_N, num_warps): the sizes the issue found wrong on the H200 (4 warps and 1), and
# the tutorial's own 128x64 and 64x64 on 8 warps; head dim 64.
GPU_BLOCKS = [(32, 16, 4), (16, 32, 4), (32, 32, 4), (64, 32, 4), (64, 32, 1), (32, 16, 1),
              (128, 64, 4), (64, 64, 8)]


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason="Triton's tutorials use torch tensors")


def _forward_kernel(module):
    """The JITFunction under the tutorial's @autotune (launched here at fixed block sizes)."""
    return jit_function(module._attn_fwd)


def _load(on_gpu: bool):
    folder = tutorials_dir()
    if folder is None or not (folder / TUTORIAL).is_file():
        pytest.skip(f"{ENV_VAR} does not name a folder holding {TUTORIAL} (not in this repo)")
    if on_gpu and gpu_missing():
        pytest.skip(gpu_missing())
    with interpreted(not on_gpu):
        return load_tutorial(folder / TUTORIAL)


@contextlib.contextmanager
def _scratch_allocator(torch, device):
    """The global scratch for the descriptors `_attn_fwd` makes on sm_90a, as the tutorial's own
    wrapper sets it (`triton.set_allocator`); set here so the test does not depend on an earlier
    test having run the tutorial."""
    from tileworkbench.runtime.allocation import get_allocator, set_allocator

    before = get_allocator()
    set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=device))
    try:
        yield
    finally:
        set_allocator(before)


def check_forward(torch, on_gpu, block_m, block_n, num_warps, causal, n_ctx=128, head_dim=64):
    if causal and block_m < block_n:
        pytest.skip("the tutorial's causal on-band pass needs BLOCK_M >= BLOCK_N (its autotuner "
                    "prunes these configs; the interpreter gives the same wrong answer)")
    module = _load(on_gpu)
    device = "cuda" if on_gpu else "cpu"
    z, h = 1, 2
    generator = torch.Generator().manual_seed(block_m * 1000 + block_n * 10 + num_warps + causal)
    q, k, v = (torch.empty((z, h, n_ctx, head_dim)).normal_(0.0, 0.5, generator=generator)
               .to(device=device, dtype=torch.float16) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    lse = torch.full((z, h, n_ctx), float("nan"), device=device, dtype=torch.float32)
    with interpreted(not on_gpu), record_launches() as launches, _scratch_allocator(torch, device):
        _forward_kernel(module)[(n_ctx // block_m, z * h, 1)](
            SM_SCALE, lse, z, h, q, k, v, o, n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m,
            BLOCK_N=block_n, FP8_OUTPUT=False, STAGE=3 if causal else 1, warp_specialize=False,
            IS_HOPPER=False, num_warps=num_warps)
    assert [ran_on_gpu(launch) for launch in launches] == [on_gpu]
    scores = q.cpu().double() @ k.cpu().double().transpose(2, 3) * SM_SCALE
    if causal:
        scores = scores.masked_fill(torch.ones(n_ctx, n_ctx).tril() == 0, float("-inf"))
    want = torch.softmax(scores, dim=-1) @ v.cpu().double()
    want_lse = torch.logsumexp(scores, dim=-1) / math.log(2.0)  # the kernel's M is in base 2
    error = (o.cpu().double() - want).abs()
    bad = int((~(error <= 1e-2)).sum())  # NaN (an unwritten element) counts as bad
    assert bad == 0, f"{bad} of {error.numel()} outputs off, max error {error.max():.3g}"
    lse_error = (lse.cpu().double() - want_lse).abs().max()
    assert lse_error <= 1e-3, f"log-sum-exp off by {lse_error:.3g}"


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
@pytest.mark.parametrize("block_m, block_n, num_warps", GPU_BLOCKS)
def test_tutorial_attention_forward_on_gpu(torch, block_m, block_n, num_warps, causal):
    check_forward(torch, True, block_m, block_n, num_warps, causal)


@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
def test_tutorial_attention_forward_in_the_interpreter(torch, causal):
    check_forward(torch, False, 32, 16, 4, causal, n_ctx=64, head_dim=16)


@pytest.mark.parametrize("causal", [False, True], ids=["non-causal", "causal"])
def test_tutorial_attention_forward_on_the_cpu_emulator(torch, causal):
    """The tutorial's own kernel through the GPU lowering, run by the CPU emulator (tests/nvptx):
    wrong before the axis-info fix at these sizes, like on the H200."""
    import numpy as np

    from cpu_emulator import Emulator

    module = _load(on_gpu=False)
    n_ctx, head_dim, block_m, block_n = 64, 16, 32, 16
    rng = np.random.default_rng(7 + causal)
    q, k, v = (rng.normal(0.0, 0.5, (n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    o = np.full_like(q, np.nan)
    lse = np.full(n_ctx, np.nan, np.float32)
    half = "*fp16"
    signature = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "desc_q": half,
                 "desc_k": half, "desc_v": half, "desc_o": half, "N_CTX": "i32"}
    constexprs = {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n,
                  "FP8_OUTPUT": False, "STAGE": 3 if causal else 1, "warp_specialize": False,
                  "IS_HOPPER": False}
    emulator = Emulator(_forward_kernel(module), signature, constexprs, num_warps=4)
    emulator.launch((n_ctx // block_m, 1), SM_SCALE, lse, 1, 1, q, k, v, o, n_ctx)
    scores = torch.from_numpy(q).double() @ torch.from_numpy(k).double().T * SM_SCALE
    if causal:
        scores = scores.masked_fill(torch.ones(n_ctx, n_ctx).tril() == 0, float("-inf"))
    want = (torch.softmax(scores, dim=-1) @ torch.from_numpy(v).double()).numpy()
    error = np.abs(o.astype(np.float64) - want)
    assert int((~(error <= 1e-2)).sum()) == 0, f"max error {np.nanmax(error):.3g}"
    want_lse = (torch.logsumexp(scores, dim=-1) / math.log(2.0)).numpy()
    assert np.abs(lse - want_lse).max() <= 1e-3
