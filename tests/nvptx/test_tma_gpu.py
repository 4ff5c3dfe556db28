"""TMA descriptor copies on the GPU (sm_90+): host `TensorDescriptor`s on CuPy arrays through the JIT,
against NumPy float64, outputs poisoned: edge tiles (zero and NaN padding, clipped stores) in every
swizzle mode, one-sided TMA, the fallback for what TMA cannot take, and tutorial 09's TMA matmul."""

from __future__ import annotations

import numpy as np
import pytest
from tma_kernels import (
    tma_load_to_pointers,
    tma_matmul_bt,
    tma_scale_copy,
    tma_shifted_copy,
    tma_store_from_pointers,
)

from tileworkbench.tools.tensor_descriptor import TensorDescriptor


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    """TMA is off by default (TILEWORKBENCH_TMA=1, config.tma): these tests turn it on."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)

pytestmark = pytest.mark.gpu
RNG = np.random.default_rng(91)


@pytest.fixture(scope="module")
def cp():
    from tileworkbench.runtime.device import device_properties, gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible (CuPy or a CUDA device is missing)")
    if int(device_properties().arch[3:5]) < 90:
        pytest.skip("TMA needs sm_90 or newer")
    return pytest.importorskip("cupy")


def _uses_tma(compiled) -> bool:
    return "cp.async.bulk.tensor" in compiled.asm["ptx"]


@pytest.mark.parametrize("dtype, block, row, tma", [
    (np.float16, (64, 64), 200, True), (np.float32, (32, 32), 204, True),
    (np.float32, (16, 16), 48, False), (np.float32, (32, 8), 48, False),
    (np.float32, (16, 64), 40, True), (np.float32, (32, 32), 45, False),
], ids=["fp16-128B", "fp32-128B", "fp32-64B", "fp32-32B", "fp32-unswizzled", "fp32-fallback"])
def test_copy_with_edge_tiles(cp, dtype, block, row, tma):
    """TMA where verified (128-byte swizzle, rows of 256 bytes); 32/64-byte rows (wrong on the GPU on
    2026-12-01) and a 180-byte row stride keep the pointer lowering."""
    rows, cols = 77, min(row, 45 if row < 100 else 200)
    host = RNG.standard_normal((rows, row)).astype(dtype)
    x = cp.asarray(host)[:, :cols]
    out_full = cp.full((rows, row), np.nan, dtype=dtype)
    grid = (-(-rows // block[0]), -(-cols // block[1]))
    compiled = tma_scale_copy[grid](TensorDescriptor.from_tensor(x, list(block)),
                                    TensorDescriptor.from_tensor(out_full[:, :cols], list(block)),
                                    2.0, BM=block[0], BN=block[1])
    got = cp.asnumpy(out_full)
    np.testing.assert_array_equal(got[:, :cols], host[:, :cols] * dtype(2.0))
    assert np.isnan(got[:, cols:]).all()  # past the shape, inside the row stride: never written
    assert _uses_tma(compiled) == tma


@pytest.mark.parametrize("padding", ["zero", "nan"])
@pytest.mark.skip(reason="faults on the H200 (cudaErrorIllegalInstruction, 2026-12-01) and poisons the "
                         "CUDA context for every later test; TMA is off by default until it is fixed")
def test_negative_offsets_read_the_padding(cp, padding):
    host = RNG.standard_normal((128, 96)).astype(np.float32)
    out = cp.full((128, 96), -7.0, dtype=np.float32)
    src = TensorDescriptor.from_tensor(cp.asarray(host), [64, 32], padding)
    compiled = tma_shifted_copy[(2, 3)](src, TensorDescriptor.from_tensor(out, [64, 32]), 5,
                                        BM=64, BN=32)
    want = np.full((128, 96), 0.0 if padding == "zero" else np.nan, np.float32)
    want[5:, 5:] = host[:123, :91]
    np.testing.assert_array_equal(cp.asnumpy(out), want)
    assert _uses_tma(compiled)


def test_one_sided(cp):
    rows, cols = 100, 72
    host = RNG.standard_normal((rows, cols)).astype(np.float32)
    x = cp.asarray(host)
    grid = (4, 3)
    out = cp.full((rows, cols), np.nan, dtype=np.float32)
    tma_load_to_pointers[grid](TensorDescriptor.from_tensor(x, [32, 32]), out, rows, cols,
                               BM=32, BN=32)
    np.testing.assert_array_equal(cp.asnumpy(out), host)
    out = cp.full((rows, cols), np.nan, dtype=np.float32)
    tma_store_from_pointers[grid](x, TensorDescriptor.from_tensor(out, [32, 32]), rows, cols,
                                  BM=32, BN=32)
    np.testing.assert_array_equal(cp.asnumpy(out), host)


@pytest.mark.xfail(reason="on the H200 (2026-12-01) a misaligned base still took TMA: the fallback rule "
                          "is not applied at launch; TMA is off by default", strict=False)
def test_misaligned_base_falls_back(cp):
    host = RNG.standard_normal((64, 72)).astype(np.float32)
    x = cp.asarray(host)[:, 1:65]  # base 4 bytes past the allocation's alignment
    out = cp.full((64, 64), np.nan, dtype=np.float32)
    compiled = tma_scale_copy[(2, 2)](TensorDescriptor.from_tensor(x, [32, 32]),
                                      TensorDescriptor.from_tensor(out, [32, 32]), -1.0,
                                      BM=32, BN=32)
    np.testing.assert_array_equal(cp.asnumpy(out), -host[:, 1:65])
    assert not _uses_tma(compiled)


@pytest.mark.parametrize("m, n, k, blocks", [(300, 264, 328, (64, 64, 32)),
                                             (1024, 512, 768, (128, 128, 64))])
def test_tutorial09_tma_matmul(cp, m, n, k, blocks):
    bm, bn, bk = blocks
    a_host = RNG.standard_normal((m, k)).astype(np.float16)
    b_host = RNG.standard_normal((n, k)).astype(np.float16)
    c = cp.full((m, n), np.nan, dtype=np.float16)
    grid = (-(-m // bm) * -(-n // bn),)
    compiled = tma_matmul_bt[grid](
        TensorDescriptor.from_tensor(cp.asarray(a_host), [bm, bk]),
        TensorDescriptor.from_tensor(cp.asarray(b_host), [bn, bk]),
        TensorDescriptor.from_tensor(c, [bm, bn]), m, n, k,
        BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8)
    want = a_host.astype(np.float64) @ b_host.astype(np.float64).T
    got = cp.asnumpy(c).astype(np.float64)
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-2
    assert _uses_tma(compiled)
