"""`wgmma` (sm_90a) on the GPU through the runtime (torch CUDA tensors): every dtype and input precision
against NumPy float64 of the rounded inputs, outputs poisoned, with the PTX checked for `wgmma` (or for
the `mma.sync` fallback where the PTX ISA has no wgmma form); transposed operands, masked odd shapes,
num_stages 1-4, warp groups on M and N, and `target="sm_90"` (mma.sync) beside the default (sm_90a)."""

from __future__ import annotations

import numpy as np
import pytest
from tensor_core_kernels import TOLERANCE, matmul_kernel

pytestmark = pytest.mark.gpu
# fp8 wgmma accumulates in fewer bits than fp32 (as Triton's fp8 matmul on Hopper shows)
GPU_TOLERANCE = {**TOLERANCE, "fp8e4nv": 2e-3, "fp8e5": 2e-3}


@pytest.fixture(scope="module")
def torch():
    from tileworkbench.cuda.device import device_properties, gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible (CuPy or a CUDA device is missing)")
    if device_properties().major != 9:
        pytest.skip("wgmma needs a Hopper GPU (compute capability 9.0)")
    return pytest.importorskip("torch")


def _matmul(torch, dtype, m=320, n=264, k=256, block=(128, 128, 64), warps=4, stages=3,
            precision="tf32", trans_a=False, trans_b=False, out_f16=False, target=None):
    if dtype == "int8":
        a = torch.randint(-100, 100, (m, k), dtype=torch.int8)
        b = torch.randint(-100, 100, (k, n), dtype=torch.int8)
    else:
        t = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32,
             "fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2}[dtype]
        a, b = torch.randn(m, k).to(t), torch.randn(k, n).to(t)
    a64, b64 = a.double().numpy(), b.double().numpy()
    a, b = a.cuda(), b.cuda()
    if trans_a:
        a = a.t().contiguous().t()
    if trans_b:
        b = b.t().contiguous().t()
    out_type = torch.int32 if dtype == "int8" else torch.float16 if out_f16 else torch.float32
    c = torch.full((m, n), -7 if dtype == "int8" else float("nan"), dtype=out_type, device="cuda")
    bm, bn, bk = block
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn)
    args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
            c.stride(1))
    meta = dict(BM=bm, BN=bn, BK=bk, PRECISION=precision, OUT_F16=out_f16, num_warps=warps,
                num_stages=stages)
    from tileworkbench.config import config

    saved, config.target = config.target, target or config.target  # launches compile for `target`
    try:
        compiled = matmul_kernel.warmup(*args, grid=grid, **meta)
        matmul_kernel[grid](*args, **meta)
    finally:
        config.target = saved
    torch.cuda.synchronize()
    want = a64 @ b64
    err = np.abs(c.double().cpu().numpy() - want).max() / np.abs(want).max()
    return err, compiled.asm["ptx"]


@pytest.mark.parametrize("dtype,trans_b", [("fp16", False), ("bf16", False), ("fp32", True),
                                           ("int8", True), ("fp8e4nv", True), ("fp8e5", True)])
def test_dtypes_on_wgmma(torch, dtype, trans_b):
    err, ptx = _matmul(torch, dtype, trans_b=trans_b)
    assert "wgmma.mma_async" in ptx and "mma.sync" not in ptx
    assert err <= GPU_TOLERANCE[dtype]
    if dtype == "fp32":
        assert err > 1e-6  # tf32 drops mantissa bits


@pytest.mark.parametrize("dtype,precision", [("fp32", "tf32"), ("int8", "tf32"), ("fp32", "tf32x3"),
                                             ("fp32", "ieee")])
def test_fallbacks_where_wgmma_has_no_form(torch, dtype, precision):
    """tf32 and 8-bit with an N-major B, tf32x3 and ieee: mma.sync or FMA, still right."""
    err, ptx = _matmul(torch, dtype, block=(64, 64, 32), precision=precision)
    assert "wgmma.mma_async" not in ptx
    assert err <= GPU_TOLERANCE[precision if dtype == "fp32" else dtype]


def test_fp16_accumulator(torch):
    err, ptx = _matmul(torch, "fp16", out_f16=True)
    assert ".f16.f16.f16" in ptx and err <= GPU_TOLERANCE["fp16_acc"]


@pytest.mark.parametrize("trans_a,trans_b", [(True, False), (False, True), (True, True)])
def test_transposed(torch, trans_a, trans_b):
    err, ptx = _matmul(torch, "fp16", trans_a=trans_a, trans_b=trans_b)
    assert "wgmma.mma_async" in ptx and err <= GPU_TOLERANCE["fp16"]


@pytest.mark.parametrize("block,warps,stages", [((128, 128, 64), 4, 1), ((128, 128, 64), 4, 2),
                                                ((128, 128, 64), 8, 3), ((128, 256, 64), 8, 3),
                                                ((64, 256, 32), 8, 4), ((128, 128, 32), 4, 4),
                                                ((256, 128, 64), 8, 3)])
def test_blocks_warps_and_stages(torch, block, warps, stages):
    """One or two warp groups on M or N, wait(1) with a spare ring slot or wait(0) without."""
    err, ptx = _matmul(torch, "bf16", m=512, n=512, k=1024, block=block, warps=warps, stages=stages)
    assert "wgmma.mma_async" in ptx and err <= GPU_TOLERANCE["bf16"]


@pytest.mark.parametrize("shape", [(100, 72, 48), (33, 200, 80), (128, 128, 1000), (700, 300, 136)])
def test_odd_shapes(torch, shape):
    err, ptx = _matmul(torch, "fp16", *shape, block=(64, 64, 32))
    assert "wgmma.mma_async" in ptx and err <= GPU_TOLERANCE["fp16"]


def test_sm_90_keeps_mma_sync(torch):
    err, ptx = _matmul(torch, "fp16", target="sm_90")
    assert "mma.sync" in ptx and "wgmma." not in ptx
    assert ".target sm_90\n" in ptx and err <= GPU_TOLERANCE["fp16"]


def test_the_default_target_is_sm_90a(torch):
    from tileworkbench.backends import backend_for

    assert backend_for("cuda").resolve("cuda") == "sm_90a"
