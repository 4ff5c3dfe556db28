"""On the GPU (sm_90a): descriptor matmuls whose epilogue tile lies over the dead TMA rings
(passes/shared_reuse.py), at the configs where it matters: 128x128x64/4w/3s (two blocks per SM now)
and 128x256x64/8w/3s (two warp groups: the barrier before the tile is written orders the other
group's wgmma reads). Host descriptors, in-kernel ones, persistent kernels (the next tile's copies
refill the rings under the last tile's staging tile) with a TMA store and with a pointer epilogue;
ragged M, N and K, outputs poisoned, NumPy float64 references."""

from __future__ import annotations

import numpy as np
import pytest
from device_desc_kernels import device_desc_matmul, device_desc_persistent_matmul
from tma_kernels import tma_matmul, tma_persistent_matmul_to_pointers

from tileworkbench.tools.tensor_descriptor import TensorDescriptor

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("tma_with_cupy_scratch")]
RNG = np.random.default_rng(93)
CONFIGS = [(128, 128, 64, 4, 3), (128, 256, 64, 8, 3)]
IDS = ["128x128x64-4w-3s", "128x256x64-8w-3s"]
M, N, K = 1000, 1040, 968  # ragged against every block; 16-byte rows for every map


@pytest.fixture(scope="module")
def cp(hopper_cp):
    return hopper_cp


def _inputs(cp, out_dtype):
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((K, N)).astype(np.float16)
    c = cp.full((M, N), np.nan, dtype=out_dtype)
    return a, b, c, a.astype(np.float64) @ b.astype(np.float64)


def _check(cp, c, want, compiled, staged: bool = True):
    """c against the reference; the epilogue's staging tile (where `staged`: there is one) over
    the rings."""
    got = cp.asnumpy(c).astype(np.float64)
    assert not np.isnan(got).any()
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-2
    # the epilogue's tile only: in-kernel descriptors of a, with stride K = 968 (not specialized as a
    # multiple of 16), stay on pointers, and a's operand staging tile has its own space
    staging = [e for e in compiled.metadata.shared_plan
               if e["use"] in ("TMA store staging", "epilogue staging")]
    assert all(e["offset"] == 0 for e in staging) and (bool(staging) or not staged), staging


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_host_descriptors(cp, config):
    bm, bn, bk, warps, stages = config
    a, b, c, want = _inputs(cp, np.float16)
    descs = (TensorDescriptor.from_tensor(cp.asarray(a), [bm, bk]),
             TensorDescriptor.from_tensor(cp.asarray(b), [bk, bn]),
             TensorDescriptor.from_tensor(c, [bm, bn]))
    compiled = tma_matmul[(-(-M // bm), -(-N // bn))](*descs, K, BM=bm, BN=bn, BK=bk,
                                                       num_warps=warps, num_stages=stages)
    _check(cp, c, want, compiled)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_in_kernel_descriptors(cp, config):
    bm, bn, bk, warps, stages = config
    a, b, c, want = _inputs(cp, np.float16)
    compiled = device_desc_matmul[(-(-M // bm), -(-N // bn))](
        cp.asarray(a), cp.asarray(b), c, M, N, K, K, N, N, BM=bm, BN=bn, BK=bk, num_warps=warps,
        num_stages=stages)
    _check(cp, c, want, compiled)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_persistent_in_kernel_descriptors(cp, config):
    bm, bn, bk, warps, stages = config
    a, b, c, want = _inputs(cp, np.float16)
    compiled = device_desc_persistent_matmul[(16,)](
        cp.asarray(a), cp.asarray(b), c, M, N, K, BM=bm, BN=bn, BK=bk, PROGRAMS=16,
        num_warps=warps, num_stages=stages)
    _check(cp, c, want, compiled)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_persistent_pointer_epilogue(cp, config):
    bm, bn, bk, warps, stages = config
    a, b, c, want = _inputs(cp, np.float32)
    descs = (TensorDescriptor.from_tensor(cp.asarray(a), [bm, bk]),
             TensorDescriptor.from_tensor(cp.asarray(b), [bk, bn]))
    compiled = tma_persistent_matmul_to_pointers[(16,)](
        *descs, c, M, N, K, BM=bm, BN=bn, BK=bk, PROGRAMS=16, num_warps=warps, num_stages=stages)
    _check(cp, c, want, compiled, staged=warps == 4)  # at 8 warps the store takes no staging tile
