"""The uniform warp index (lowering/warp_uniform.py): `shfl.sync.idx` of lane 0's tid.x / 32, and wgmma
descriptors built on it (the default) or on tid.x (the probe's comparison) giving the same matmul on
the emulator, two warp groups on M, against NumPy float64."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import Emulator
from tensor_core_kernels import TOLERANCE, matmul_kernel, matmul_signature, random_operands

from tileworkbench.backends.llvm.lowering import wgmma

RNG = np.random.default_rng(32)


@pytest.mark.parametrize("uniform", [True, False])
def test_descriptors_from_the_uniform_warp_index(monkeypatch, uniform):
    if not uniform:
        monkeypatch.setattr(wgmma, "_group_origin", wgmma._group_origin_from_tid)
    m = n = 128
    k = 64
    a, b = random_operands("fp16", m, n, k, RNG)
    c = np.full((m, n), np.nan, dtype=np.float32)
    emulator = Emulator(matmul_kernel, matmul_signature("fp16", sizes=(m, n, k)),
                        {"BM": 128, "BN": 128, "BK": 32, "PRECISION": "tf32", "OUT_F16": False},
                        num_warps=8, num_stages=3, wgmma=True)
    assert ('llvm.nvvm.shfl.sync.idx.i32"(' in emulator.text) == uniform
    emulator.launch((1, 1), a, b, c, m, n, k, k, 1, n, 1, n, 1)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - want).max() / np.abs(want).max() <= TOLERANCE["fp16"]
