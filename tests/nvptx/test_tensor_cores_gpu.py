"""Tensor-core `tl.dot` launched on the GPU through the runtime (torch CUDA tensors: CuPy has no bf16 or
fp8), every dtype and input precision against NumPy float64 of the rounded inputs, outputs poisoned:
transposed (strided) operands, masked odd shapes, num_stages 1-4, fp16 accumulation, batched 3-D dots,
and the flash-attention forward of bench/kernels.py, causal and not, at several block shapes."""

from __future__ import annotations


import numpy as np
import pytest
from tensor_core_kernels import TOLERANCE, batched_dot_kernel, matmul_kernel

pytestmark = pytest.mark.gpu
RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def torch():
    from tileworkbench.cuda.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible (CuPy or a CUDA device is missing)")
    return pytest.importorskip("torch")


def _inputs(torch, dtype: str, m: int, n: int, k: int):
    """Random A and B as torch CUDA tensors of `dtype`, and their float64 values."""
    if dtype == "int8":
        a = torch.randint(-100, 100, (m, k), dtype=torch.int8)
        b = torch.randint(-100, 100, (k, n), dtype=torch.int8)
    else:
        t = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32,
             "fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2}[dtype]
        a, b = torch.randn(m, k).to(t), torch.randn(k, n).to(t)
    return a.cuda(), b.cuda(), a.double().numpy(), b.double().numpy()


def _matmul(torch, dtype, m=192, n=160, k=256, block=(64, 64, 32), warps=4, stages=3,
            precision="tf32", trans_a=False, trans_b=False, out_f16=False):
    a, b, a64, b64 = _inputs(torch, dtype, m, n, k)
    if trans_a:
        a = a.t().contiguous().t()
    if trans_b:
        b = b.t().contiguous().t()
    out_type = torch.int32 if dtype == "int8" else torch.float16 if out_f16 else torch.float32
    c = torch.full((m, n), -7 if dtype == "int8" else float("nan"), dtype=out_type, device="cuda")
    bm, bn, bk = block
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn)
    compiled = matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                                   b.stride(1), c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk,
                                   PRECISION=precision, OUT_F16=out_f16, num_warps=warps,
                                   num_stages=stages)
    torch.cuda.synchronize()
    want = a64 @ b64
    got = c.double().cpu().numpy()
    return np.abs(got - want).max() / np.abs(want).max(), compiled


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "int8", "fp8e4nv", "fp8e5"])
def test_matmul_dtypes(torch, dtype):
    err, _ = _matmul(torch, dtype, block=(64, 64, 64 if dtype in ("int8", "fp8e4nv", "fp8e5") else 32))
    assert err <= TOLERANCE[dtype]


@pytest.mark.parametrize("precision", ["tf32", "tf32x3", "ieee"])
def test_matmul_fp32_precisions(torch, precision):
    err, _ = _matmul(torch, "fp32", block=(64, 64, 16), precision=precision)
    assert err <= TOLERANCE[precision]
    if precision == "tf32":
        assert err > 1e-6


def test_matmul_fp16_accumulator(torch):
    err, _ = _matmul(torch, "fp16", out_f16=True)
    assert err <= TOLERANCE["fp16_acc"]


@pytest.mark.parametrize("trans_a,trans_b", [(True, False), (False, True), (True, True)])
def test_matmul_transposed(torch, trans_a, trans_b):
    err, _ = _matmul(torch, "fp16", trans_a=trans_a, trans_b=trans_b)
    assert err <= TOLERANCE["fp16"]


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_matmul_stages(torch, stages):
    err, _ = _matmul(torch, "bf16", m=256, n=256, k=512, block=(128, 128, 32), warps=8, stages=stages)
    assert err <= TOLERANCE["bf16"]


@pytest.mark.parametrize("block,warps,stages", [((128, 256, 32), 8, 3), ((128, 128, 64), 4, 3)])
def test_matmul_epilogue_over_the_rings(torch, monkeypatch, block, warps, stages):
    """The accumulator staged for its coalesced store in the bytes of the pipeline's rings (written
    after the loop's last async wait): a 128x256 fp32 tile of 128 KB and a 128x128 one; for mma.sync,
    so target sm_90 (not sm_90a) explicitly."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "target", "sm_90")
    err, compiled = _matmul(torch, "fp16", m=256, n=512, k=320, block=block, warps=warps,
                            stages=stages)
    assert err <= TOLERANCE["fp16"]
    staging = [e for e in compiled.metadata.shared_plan if e["use"] == "epilogue staging"]
    assert staging and staging[0]["offset"] == 0 and "mma.sync" in compiled.asm["ptx"]


@pytest.mark.parametrize("shape", [(100, 72, 48), (33, 200, 80), (128, 128, 1000)])
def test_matmul_odd_shapes(torch, shape):
    err, _ = _matmul(torch, "fp16", *shape)
    assert err <= TOLERANCE["fp16"]


def test_batched_dot(torch):
    a = torch.randn(4, 32, 64, dtype=torch.float16, device="cuda")
    b = torch.randn(4, 64, 32, dtype=torch.float16, device="cuda")
    c = torch.full((4, 32, 32), float("nan"), device="cuda")
    batched_dot_kernel[(1,)](a, b, c, B=4, M=32, N=32, K=64, num_warps=4)
    want = a.double().cpu().numpy() @ b.double().cpu().numpy()
    assert np.abs(c.cpu().numpy() - want).max() / np.abs(want).max() <= TOLERANCE["fp16"]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim,block_m,block_n,warps", [(64, 128, 64, 4), (128, 128, 64, 8),
                                                             (64, 64, 32, 4), (32, 32, 16, 1)])
def test_attention_forward(torch, causal, head_dim, block_m, block_n, warps):
    import kernels

    ours = kernels.load("tileworkbench")
    z, n_ctx = 3, 512
    q, k, v = (torch.randn(z, n_ctx, head_dim, dtype=torch.float16, device="cuda") for _ in range(3))
    o = torch.full_like(q, float("nan"))
    scale = head_dim ** -0.5
    ours.attn_fwd_kernel[(n_ctx // block_m, z)](q, k, v, o, scale, q.stride(0), q.stride(1), n_ctx,
                                                HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
                                                CAUSAL=causal, num_warps=warps, num_stages=2)
    s = q.double() @ k.double().transpose(1, 2) * scale
    if causal:
        s = s.masked_fill(torch.ones(n_ctx, n_ctx, dtype=torch.bool, device="cuda").triu(1), -float("inf"))
    want = torch.softmax(s, -1) @ v.double()
    err = ((o.double() - want).abs().max() / want.abs().max()).item()
    assert err < 5e-3
