"""Persistent matmuls on sm_90a (a tile loop around a pipelined k loop, as Triton's tutorial 09): the
epilogue's staging tile lies over the k loop's rings inside the tile loop, so the rings keep their
spare slot and one wgmma group stays in flight; a barrier orders each tile's epilogue reads before the
next tile's first copies; and the kernel, run by the CPU emulator's wgmma stand-in over several tiles
per program, matches NumPy float64.
"""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import Emulator
from tensor_core_kernels import matmul_signature, persistent_matmul_kernel

import tileworkbench as tw

RNG = np.random.default_rng(9)


def _signature(m: int, n: int, k: int) -> dict:
    return matmul_signature("fp16", "*fp16", sizes=(m, n, k))


def _compile(block=(128, 256, 64), warps=8, stages=3):
    bm, bn, bk = block
    return tw.compile(persistent_matmul_kernel, signature=_signature(4096, 4096, 4096),
                      constexprs={"BM": bm, "BN": bn, "BK": bk, "PROGRAMS": 132}, target="sm_90a",
                      num_warps=warps, num_stages=stages, use_cache=False)


def test_the_epilogue_lies_over_the_rings_inside_the_tile_loop():
    """128x256x64 with 3 stages: rings of 4 slots (the spare) and the 64 KB fp16 staging tile at
    offset 0, in 192 KB plus scratch; wgmma keeps one group in flight."""
    compiled = _compile()
    plan = {entry["use"]: entry for entry in compiled.metadata.shared_plan}
    assert plan["cp.async ring"]["slots"] == 4
    assert plan["epilogue staging"]["offset"] == 0
    assert compiled.metadata.shared <= 4 * 48 * 1024 + 4096
    assert "wgmma.wait_group.sync.aligned 1;" in compiled.asm["ptx"]


def test_each_tile_waits_for_the_last_epilogue_before_its_first_copies():
    """In the tile loop, a `ttg.async_wait` (copies done, then a barrier) comes before the prologue's
    first copy: a fast warp must not refill a ring slot that another warp still reads as the previous
    tile's staged epilogue."""
    lines = _compile().asm["tile-gpu"].splitlines()
    outer = next(i for i, line in enumerate(lines) if "scf.for %tile" in line)
    first_copy = next(i for i in range(outer, len(lines)) if "async_copy_global_to_local" in lines[i])
    assert any("ttg.async_wait" in lines[i] for i in range(outer, first_copy))


@pytest.mark.parametrize("programs,stages", [(2, 3), (3, 2)])
def test_emulated_persistent_matmul(programs, stages):
    """Several tiles per program (with masked M and N tails): the staging tile written over the
    rings and the rings refilled for the next tile do not corrupt each other."""
    m, n, k = 144, 128, 96
    bm, bn, bk = 64, 64, 32
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, dtype=np.float16)
    emulator = Emulator(persistent_matmul_kernel, _signature(m, n, k),
                        {"BM": bm, "BN": bn, "BK": bk, "PROGRAMS": programs}, num_warps=4,
                        num_stages=stages, wgmma=True)
    assert emulator.text.count("@emu_wgmma(") >= 1
    emulator.launch((programs,), a, b, c, m, n, k, k, 1, n, 1, n, 1)
    want = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(c.astype(np.float64) - want).max() / np.abs(want).max()
    assert err <= 1e-3  # fp16 output rounding


@pytest.mark.gpu
@pytest.mark.parametrize("block,warps,stages", [((128, 256, 64), 8, 3), ((128, 128, 64), 4, 4)])
def test_persistent_matmul_on_a_hopper_gpu(block, warps, stages):
    """16 programs over 8 x 5 (or 8 x 10) tiles with masked tails (2 to 5 tiles each), against
    float64."""
    from tileworkbench.runtime.device import device_properties, gpu_available

    if not gpu_available() or device_properties().major != 9:
        pytest.skip("needs a Hopper GPU")
    import cupy

    m, n, k = 1000, 1200, 520
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    c = cupy.full((m, n), np.nan, dtype=np.float16)
    bm, bn, bk = block
    persistent_matmul_kernel[(16,)](cupy.asarray(a), cupy.asarray(b), c, m, n, k, k, 1, n, 1, n, 1,
                                    BM=bm, BN=bn, BK=bk, PROGRAMS=16, num_warps=warps,
                                    num_stages=stages)
    want = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(c.get().astype(np.float64) - want).max() / np.abs(want).max()
    assert err <= 1e-3
