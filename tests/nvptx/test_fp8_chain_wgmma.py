"""An fp8 chain of two dots, written as tutorial 06's fp8 forward writes its loop: K and V^T read
through host descriptors and `.T` (K-major, as 8-bit wgmma operands must be), the first dot's
result cast to e5m2 and multiplied by V. On sm_90a both dots are wgmma (the second reads the cast
result from registers, moved there by shuffles) and both loads are TMA copies, the V offset
carried by the loop.
Compiled (ptxas where present) and run on the CPU emulator against float64."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from cpu_emulator import Emulator
from tma_standin import host_tensor_map

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.frontend import ArgSpec

ml_dtypes = pytest.importorskip("ml_dtypes")
E5M2 = ml_dtypes.float8_e5m2
SCALE = 0.125


@tw.jit
def fp8_chain(desc_q, desc_k, desc_vt, out_ptr, N, D: tl.constexpr, BM: tl.constexpr,
              BN: tl.constexpr):
    """out = sum over key blocks of fp8(q @ k^T * SCALE) @ v, in float32; v stored transposed."""
    row = tl.program_id(0) * BM
    q = desc_q.load([row, 0])
    acc = tl.zeros((BM, D), tl.float32)
    offset_v = 0
    for start in range(0, N, BN):
        k = desc_k.load([start, 0]).T
        p = (tl.dot(q, k) * 0.125).to(tl.float8e5)
        v = desc_vt.load([0, offset_v]).T
        acc = tl.dot(p, v, acc)
        offset_v += BN
    rows = row + tl.arange(0, BM)
    tl.store(out_ptr + rows[:, None] * D + tl.arange(0, D)[None, :], acc)


def _signature(d, bm, bn):
    def desc(name, block):
        return ArgSpec(name, f"tensordesc<fp8e5,{block[0]}x{block[1]},zero>", True)

    return [desc("desc_q", (bm, d)), desc("desc_k", (bn, d)), desc("desc_vt", (d, bn)),
            ArgSpec("out_ptr", "*fp32", True), ArgSpec("N", "i32", True)]


def test_both_dots_are_wgmma_on_tma_copies():
    compiled = tw.compile(fp8_chain, signature=_signature(64, 64, 32),
                          constexprs={"D": 64, "BM": 64, "BN": 32}, target="sm_90a",
                          num_warps=4, num_stages=2, use_cache=False)
    gpu, ptx = compiled.asm["tile-gpu"], compiled.asm["ptx"]
    assert gpu.count("ttng.warp_group_dot ") == 2 and "ttng.tma_fallback" not in gpu
    assert "mma.sync" not in ptx
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n32k32.f32.e5m2.e5m2") >= 1
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2") >= 1
    # p, cast in the accumulator's layout, reaches the second dot's A registers by shuffles
    # within quads of lanes (no shared tile, no fence): the register-A form
    cast = next(line for line in gpu.splitlines() if "arith.truncf" in line)
    assert "xf8e5, #mma" in cast, cast
    assert not any("local_alloc" in line and "f8e5" in line for line in gpu.splitlines())
    assert re.search(r"m64n64k32\.f32\.e5m2\.e5m2 \{[^}]*\}, \{%r\d+,%r\d+,%r\d+,%r\d+\}", ptx)
    assert ptx.count("shfl.sync.idx") >= 8 and "fence.proxy.async" not in ptx
    if shutil.which("ptxas"):
        assert compiled.metadata.n_spills == 0, compiled.metadata.resources


def test_the_chain_on_the_emulator():
    n, d, bm, bn = 128, 64, 64, 32
    emulator = Emulator(fp8_chain, _signature(d, bm, bn), {"D": d, "BM": bm, "BN": bn},
                        num_warps=4, wgmma=True, tma=True, num_stages=2)
    rng = np.random.default_rng()
    q, k, v = (rng.normal(0.0, 1.0, (n, d)).astype(E5M2) for _ in range(3))
    v_t = np.ascontiguousarray(v.T)  # [d, n]
    out = np.full((n, d), np.nan, np.float32)

    def desc(array, block):  # what the launcher passes for a descriptor on TMA
        return [array, *array.shape, array.strides[0], host_tensor_map(array, block)]

    emulator.launch((n // bm,), *desc(q, (bm, d)), *desc(k, (bn, d)), *desc(v_t, (d, bn)), out, n)
    scores = q.astype(np.float64) @ k.astype(np.float64).T * SCALE
    p = scores.astype(np.float32).astype(E5M2).astype(np.float64)  # the kernel's cast of fp32
    want = p @ v.astype(np.float64)
    assert not np.isnan(out).any()
    error = np.linalg.norm(out - want) / np.linalg.norm(want)
    assert error <= 1e-2, f"relative error {error:.2e}"
