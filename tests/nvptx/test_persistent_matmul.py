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


def test_the_epilogue_lies_over_the_free_ring_slots_inside_the_tile_loop():
    """128x256x64 with 3 stages: rings of 4 slots (the spare), the next tile's copies in slots 0-1,
    and the 64 KB fp16 staging tile over slots 2-3 of B's ring, in 192 KB plus scratch; wgmma keeps
    one group in flight."""
    compiled = _compile()
    plan = compiled.metadata.shared_plan
    rings = [entry for entry in plan if entry["use"] == "cp.async ring"]
    staging = next(entry for entry in plan if entry["use"] == "epilogue staging")
    assert [ring["slots"] for ring in rings] == [4, 4]
    b = rings[1]
    assert staging["offset"] == b["offset"] + 2 * b["slot_bytes"]
    assert staging["offset"] + staging["bytes"] <= b["offset"] + b["bytes"]
    assert compiled.metadata.shared <= 4 * 48 * 1024 + 4096
    assert "wgmma.wait_group.sync.aligned 1;" in compiled.asm["ptx"]


def test_the_next_tiles_copies_are_issued_before_this_tiles_epilogue():
    """In the tile loop: the k loop, its `ttg.async_wait` (every copy and wgmma read done, then a
    barrier), the next tile's copies (predicated on the tile existing) and only then the staged
    epilogue; the first tile's copies come before the tile loop, and a wait after it."""
    lines = _compile().asm["tile-gpu"].splitlines()
    outer = next(i for i, line in enumerate(lines) if "scf.for %tile" in line)
    inner = next(i for i in range(outer, len(lines)) if "scf.for %k" in lines[i])
    end_inner = next(i for i in range(inner, len(lines)) if lines[i].startswith("    }"))
    staging = next(i for i in range(end_inner, len(lines)) if "ttg.local_alloc %" in lines[i])
    between = lines[end_inner:staging]
    assert any(line.strip().startswith("ttg.async_wait  ") for line in between)
    assert sum("async_copy_global_to_local" in line for line in between) == 2 * 2  # A, B x 2 stages
    assert sum("async_copy_global_to_local" in line for line in lines[:outer]) == 2 * 2
    assert not any("async_copy_global_to_local" in line for line in lines[outer:inner])
    assert "ttg.async_wait" in lines[-3] or "ttg.async_wait" in lines[-2]


@pytest.mark.parametrize("programs,stages", [(2, 3), (3, 2)])
def test_emulated_persistent_matmul(programs, stages):
    """Several tiles per program (with masked M and N tails): the staging tile written over free
    ring slots while the next tile's copies land in the others, and the rings refilled, do not
    corrupt each other."""
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
    gpu = tw.compile(persistent_matmul_kernel, signature=_signature(m, n, k), target="sm_90a",
                     constexprs={"BM": bm, "BN": bn, "BK": bk, "PROGRAMS": programs}, num_warps=4,
                     num_stages=stages, use_cache=False).asm["tile-gpu"]
    assert gpu.index("async_copy_global_to_local") < gpu.index("scf.for %tile")  # prefetching
    want = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(c.astype(np.float64) - want).max() / np.abs(want).max()
    assert err <= 1e-3  # fp16 output rounding


@pytest.mark.gpu
@pytest.mark.parametrize("block,warps,stages", [((128, 256, 64), 8, 3), ((128, 128, 64), 4, 4)])
def test_persistent_matmul_on_a_hopper_gpu(block, warps, stages):
    """16 programs over 8 x 5 (or 8 x 10) tiles with masked tails (2 to 5 tiles each), against
    float64."""
    from tileworkbench.cuda.device import device_properties, gpu_available

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
