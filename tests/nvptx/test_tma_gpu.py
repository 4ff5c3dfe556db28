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
    """TMA is on by default; these tests need it whatever TILEWORKBENCH_TMA says."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)

pytestmark = pytest.mark.gpu
RNG = np.random.default_rng(91)


@pytest.fixture(scope="module")
def cp():
    from tileworkbench.cuda.device import device_properties, gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible (CuPy or a CUDA device is missing)")
    if int(device_properties().arch[3:5]) < 90:
        pytest.skip("TMA needs sm_90 or newer")
    return pytest.importorskip("cupy")


def _uses_tma(compiled) -> bool:
    return "cp.async.bulk.tensor" in compiled.asm["ptx"]


@pytest.mark.parametrize("dtype, block, cols, row, tma", [
    (np.float16, (64, 64), 200, 200, True), (np.float32, (32, 32), 200, 204, True),
    (np.float32, (16, 16), 44, 48, True), (np.float32, (32, 8), 44, 48, True),
    (np.float32, (16, 64), 40, 40, True), (np.float32, (4, 32), 44, 48, True),
    (np.float32, (32, 32), 45, 48, False), (np.float32, (32, 32), 45, 45, False),
], ids=["fp16-128B", "fp32-128B", "fp32-64B", "fp32-32B", "fp32-2-column-blocks",
        "fp32-4-rows-unswizzled", "fp32-ragged-extent", "fp32-ragged-stride"])
def test_copy_with_edge_tiles(cp, dtype, block, cols, row, tma):
    """Every swizzle (and wide rows as 128-byte column blocks) through TMA; a 45-column fp32 tensor
    (180-byte rows, which a TMA store would overwrite up to 192 bytes) and a 180-byte row stride
    keep the pointer lowering."""
    rows = 77
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
@pytest.mark.parametrize("shift", [5, 16, -16], ids=["unaligned", "negative", "far-edge"])
def test_shifted_offsets_read_the_padding(cp, padding, shift):
    """Offsets moved by -shift: an unaligned shift (the H200 trapped on TMA with it) takes the
    pointer path; a shift by 16 elements (64 bytes) is TMA at negative or far coordinates."""
    host = RNG.standard_normal((128, 96)).astype(np.float32)
    out = cp.full((128, 96), -7.0, dtype=np.float32)
    src = TensorDescriptor.from_tensor(cp.asarray(host), [64, 32], padding)
    compiled = tma_shifted_copy[(2, 3)](src, TensorDescriptor.from_tensor(out, [64, 32]), shift,
                                        BM=64, BN=32)
    s = abs(shift)
    padded = np.full((128 + 2 * s, 96 + 2 * s), 0.0 if padding == "zero" else np.nan, np.float32)
    padded[s:s + 128, s:s + 96] = host
    want = padded[s - shift:s - shift + 128, s - shift:s - shift + 96]
    np.testing.assert_array_equal(cp.asnumpy(out), want)
    loads = compiled.asm["ptx"].count("cp.async.bulk.tensor.2d.shared::cluster.global")
    assert loads == (0 if shift % 16 else 1)


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


def test_misaligned_base_falls_back(cp):
    """The base 4 bytes off: that descriptor's load takes pointers; the aligned output's store stays
    TMA (the H200 run of 2026-12-01 counted the store's TMA against the whole kernel)."""
    host = RNG.standard_normal((64, 72)).astype(np.float32)
    x = cp.asarray(host)[:, 1:65]  # base 4 bytes past the allocation's alignment
    out = cp.full((64, 64), np.nan, dtype=np.float32)
    compiled = tma_scale_copy[(2, 2)](TensorDescriptor.from_tensor(x, [32, 32]),
                                      TensorDescriptor.from_tensor(out, [32, 32]), -1.0,
                                      BM=32, BN=32)
    np.testing.assert_array_equal(cp.asnumpy(out), -host[:, 1:65])
    ptx = compiled.asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 0
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == 1


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
