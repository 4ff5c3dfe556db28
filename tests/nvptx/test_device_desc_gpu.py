"""Descriptors made in the kernel on the GPU (sm_90a): tensor maps built on the device in scratch from
`set_allocator`, tiles copied by TMA, on CuPy arrays through the JIT against NumPy float64 with
outputs poisoned: edge tiles (clipped stores, zero and NaN padding), the pointer fallback, a matmul,
and the error when no allocator is set."""

from __future__ import annotations

import numpy as np
import pytest
from device_desc_kernels import (
    device_desc_copy,
    device_desc_matmul,
    device_desc_persistent_matmul,
    device_desc_shifted,
)

import tileworkbench as tw
from tileworkbench.errors import LaunchError

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("tma_with_cupy_scratch")]
RNG = np.random.default_rng(92)


@pytest.fixture(scope="module")
def cp(hopper_cp):
    return hopper_cp


def _maps(compiled) -> int:
    return compiled.asm["ptx"].count("tensormap.cp_fenceproxy")


@pytest.mark.parametrize("dtype, block, stride, cols, tma", [
    (np.float16, (64, 64), 224, 208, True), (np.float32, (32, 32), 64, 48, True),
    (np.float32, (16, 64), 64, 48, True), (np.float32, (32, 32), 48, 45, False),
    (np.float32, (32, 32), 54, 48, False), (np.float32, (32, 32), 56, 48, True),
], ids=["fp16", "fp32-edges", "fp32-two-boxes", "fallback-extent", "fallback-stride",
        "stride-8"])
def test_copy_with_edge_tiles(cp, dtype, block, stride, cols, tma):
    """Maps only where the specialization proves the rules: N and the row stride whole 16-byte
    chunks (45 is not a multiple of 16 elements, 54 fp32 is 216 bytes: the pointer lowering; 56 fp32
    specializes `:8`, 224 bytes: TMA)."""
    rows = 77
    host = RNG.standard_normal((rows, stride)).astype(dtype)
    out = cp.full((rows, stride), np.nan, dtype=dtype)
    grid = (-(-rows // block[0]), -(-cols // block[1]))
    compiled = device_desc_copy[grid](cp.asarray(host), out, rows, cols, stride, stride, 2.0,
                                      BM=block[0], BN=block[1])
    got = cp.asnumpy(out)
    np.testing.assert_array_equal(got[:, :cols], host[:, :cols] * dtype(2.0))
    assert np.isnan(got[:, cols:]).all()  # inside the row stride, past the shape: never written
    assert (_maps(compiled) == 2) == tma


@pytest.mark.gpu_isolated
@pytest.mark.parametrize("padding, shift", [("zero", 16), ("nan", -16)])
def test_tiles_past_the_edges_read_the_padding(cp, padding, shift):
    rows, cols = 100, 80
    host = RNG.standard_normal((rows, 80)).astype(np.float32)
    out = cp.full((128, 128), -7.0, dtype=np.float32)
    compiled = device_desc_shifted[(4, 4)](cp.asarray(host), out, rows, cols, 80, shift, BM=32,
                                           BN=32, PADDING=padding)
    want = np.full((128, 128), np.nan if padding == "nan" else 0.0)
    r, c = np.meshgrid(np.arange(128) - shift, np.arange(128) - shift, indexing="ij")
    inside = (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
    want[inside] = host[r[inside], c[inside]]
    np.testing.assert_array_equal(cp.asnumpy(out), want.astype(np.float32))
    assert _maps(compiled) == 1


@pytest.mark.parametrize("m, n, k, blocks, stages", [(300, 272, 320, (64, 64, 64), 1),
                                                     (1024, 512, 768, (128, 128, 64), 3)])
def test_matmul(cp, m, n, k, blocks, stages):
    bm, bn, bk = blocks
    a_host = RNG.standard_normal((m, k)).astype(np.float16)
    b_host = RNG.standard_normal((k, n)).astype(np.float16)
    c = cp.full((m, n), np.nan, dtype=np.float16)
    compiled = device_desc_matmul[(-(-m // bm), -(-n // bn))](
        cp.asarray(a_host), cp.asarray(b_host), c, m, n, k, k, n, n, BM=bm, BN=bn, BK=bk,
        num_stages=stages)
    want = a_host.astype(np.float64) @ b_host.astype(np.float64)
    got = cp.asnumpy(c).astype(np.float64)
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-2
    assert _maps(compiled) == 3


def test_persistent_matmul(cp):
    """A program per SM (here 8) looping over the tiles, its maps built once."""
    assert _maps(_persistent_matmul(cp, 1000, 1040, 512)) == 3


def _persistent_matmul(cp, m: int, n: int, k: int):
    """Fresh fp16 operands, c poisoned, 8 programs of 128x128x64 tiles; checked against float64."""
    a_host = RNG.standard_normal((m, k)).astype(np.float16)
    b_host = RNG.standard_normal((k, n)).astype(np.float16)
    c = cp.full((m, n), np.nan, dtype=np.float16)
    compiled = device_desc_persistent_matmul[(8,)](
        cp.asarray(a_host), cp.asarray(b_host), c, m, n, k, BM=128, BN=128, BK=64, PROGRAMS=8)
    want = a_host.astype(np.float64) @ b_host.astype(np.float64)
    got = cp.asnumpy(c).astype(np.float64)
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-2
    return compiled


def test_no_allocator_is_a_clear_error(cp):
    tw.set_allocator(None)
    x = cp.asarray(RNG.standard_normal((64, 64)).astype(np.float32))
    out = cp.full((64, 64), np.nan, dtype=np.float32)
    with pytest.raises(LaunchError, match="device_desc_copy requires a runtime memory allocation"):
        device_desc_copy[(2, 2)](x, out, 64, 64, 64, 64, 1.0, BM=32, BN=32)
    assert np.isnan(cp.asnumpy(out)).all()


def test_warm_launches_take_the_fast_path_with_fresh_scratch(cp, monkeypatch):
    """After the first launch, launches of a kernel with global scratch skip the full path: each
    asks the allocator for its grid's scratch on CuPy's stream, and the results are right for new
    data (ragged persistent matmul tiles, outputs poisoned)."""
    from tileworkbench.runtime import jit

    full_runs, sizes = [], []
    original = jit.JITFunction._run
    monkeypatch.setattr(jit.JITFunction, "_run",
                        lambda self, *a, **k: full_runs.append(1) or original(self, *a, **k))

    def allocator(size, align, stream):
        sizes.append((size, stream))
        return cp.empty(size, dtype=cp.uint8)

    tw.set_allocator(allocator)
    device_desc_persistent_matmul.clear_cache()  # the first launch below takes the full path
    compiled = [_persistent_matmul(cp, 300, 272, 192) for _ in range(3)][-1]
    assert len(full_runs) == 1  # the first launch compiled and filed the kernel; the rest were warm
    stream = cp.cuda.get_current_stream().ptr
    assert sizes == [(8 * compiled.metadata.global_scratch, stream)] * 3
