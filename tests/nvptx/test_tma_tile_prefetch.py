"""The tile loop's TMA prefetch (passes/prefetch_tiles.py `prefetch_next_tma_tile`) on tutorial 09's
persistent kernel without warp specialization: the next tile's first copies are issued after the k
loop's wgmma drain, before this tile's epilogue, and the first tile's before the tile loop; the
epilogue's TMA store stages its tile beside the rings and waits for the engine's read of it only
before the next tile's store and before the program exits. Compiled for sm_90a (PTX assembled by
ptxas), emulated (tiles per program 0 to 5, ragged edges in M, N and K), on the GPU; where the rings
and the staging tile do not fit the block together, the staging tile lies over the rings as before.
(Descriptors made in the kernel and a pointer epilogue with the prefetch: test_tma_staging_reuse.py.)"""

from __future__ import annotations

import re

import bt_matmul
import numpy as np
import pytest
from cpu_emulator import Emulator
from nvptx_support import needs_ptxas, run_ptxas
from tma_kernels import tma_persistent_matmul_ws

import tileworkbench as tw

RNG = np.random.default_rng(2112)
TILE_ALIGN = 1024  # each TMA tile's room for the run-time alignment (lowering/tma.py)


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    """TMA (on by default) and the prefetch (TILEWORKBENCH_TMA_TILE_PREFETCH=1, off by default)."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)
    monkeypatch.setattr(config, "tma_tile_prefetch", True)


def _compile(blocks, num_warps, stages, programs=132):
    return tw.compile(tma_persistent_matmul_ws, signature=bt_matmul.signature(blocks),
                      constexprs=bt_matmul.constexprs(blocks, False, programs), target="sm_90a",
                      num_warps=num_warps, num_stages=stages)


def _tile_loop(ir: str) -> tuple[str, str]:
    """(what precedes the tile loop, the tile loop's body) of the `tile-gpu` IR."""
    start = ir.index("scf.for %tile_id")
    return ir[:start], ir[start:ir.index("\n  }\n", start)]


@needs_ptxas
def test_the_next_tiles_copies_go_before_the_epilogue(tmp_path):
    """128x256x64 fp16, 8 warps, 3 stages (Triton's tutorial-09 config): rings made before the tile
    loop and filled there for the first tile; in the loop, after the drain, the next tile's two
    stages of A and B copies, predicated on that tile existing; the store deferred, its wait before
    it and after the loop; the staging tile its own 64 KB beside the rings."""
    bm, bn, bk = blocks = (128, 256, 64)
    kernel = _compile(blocks, 8, 3)
    before, loop = _tile_loop(kernel.asm["tile-gpu"])
    assert before.count("ttng.tma_ring") == 2 and before.count("ttng.tma_copy") == 4
    k_loop_end = loop.index("\n    }\n")
    after = loop[k_loop_end:]
    drain = after.index("ttng.warp_group_dot_wait")
    assert drain < after.index("ttng.tma_copy") and after.count("ttng.tma_copy") == 4
    assert after.rindex("ttng.tma_copy") < after.index("ttng.tma_store_wait")
    assert after.index("ttng.tma_store_wait") < after.index("ttng.tma_store ")
    assert "deferred = true" in after and "ttng.tma_store_wait" in kernel.asm["tile-gpu"][
        kernel.asm["tile-gpu"].index("\n  }\n"):]
    plan = {e["use"]: e for e in kernel.metadata.shared_plan if e["space"] == "dynamic"}
    staging = plan["TMA store staging"]
    assert staging["bytes"] == bm * bn * 2 + TILE_ALIGN
    rings = [e for e in kernel.metadata.shared_plan if e["use"] == "TMA ring"]
    assert staging["offset"] >= sum(r["bytes"] for r in rings)  # beside the rings, not over them
    assert kernel.metadata.shared <= 227 * 1024
    ptx = kernel.asm["ptx"]
    # the first tile's 4, the loop's 2, the next tile's 4; the store's wait before it and at the exit
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 10
    assert len(re.findall(r"cp\.async\.bulk\.wait_group\.read\s+0;", ptx)) == 2
    assembled = run_ptxas(ptx, "sm_90a", tmp_path)
    assert assembled.returncode == 0, assembled.stderr


def test_where_the_staging_tile_does_not_fit_beside_the_rings_it_lies_over_them():
    """4 stages of 128x256x64 (192 KB of rings) leave no room for a 64 KB staging tile beside them:
    the k loop's prologue stays in the tile loop and the staging tile over the dead rings."""
    kernel = _compile((128, 256, 64), 8, 4)
    before, loop = _tile_loop(kernel.asm["tile-gpu"])
    assert "ttng.tma_ring" not in before and loop.count("ttng.tma_ring") == 2
    assert "deferred" not in loop and "ttng.tma_store_wait" not in kernel.asm["tile-gpu"]
    plan = {e["use"]: e for e in kernel.metadata.shared_plan if e["space"] == "dynamic"}
    assert plan["TMA store staging"]["offset"] == 0
    assert len(re.findall(r"cp\.async\.bulk\.wait_group\.read\s+0;", kernel.asm["ptx"])) == 1


@pytest.mark.parametrize("num_warps, stages, programs", [(8, 3, 2), (4, 2, 3), (4, 3, 11)],
                         ids=["2-groups-3-stages-2-programs", "1-group-2-stages-3-programs",
                              "more-programs-than-tiles"])
def test_prefetching_persistent_matmul_emulated(num_warps, stages, programs):
    """9 tiles of 4 K tiles (the last partial) over the programs: 4 or 5 tiles each, 3 each, and 0
    or 1 (a program with no tile issues nothing and exits); every tile's first stages come from the
    previous tile's prefetch or the one before the loop."""
    blocks = bm, bn, bk = (64, 64, 32)
    m, n, k = 2 * bm + 8, 2 * bn + 16, 3 * bk + 16
    emu = Emulator(tma_persistent_matmul_ws, bt_matmul.signature(blocks),
                   bt_matmul.constexprs(blocks, False, programs), num_warps=num_warps, tma=True,
                   wgmma=True, num_stages=stages)
    assert emu.threads == 32 * num_warps
    bt_matmul.check_emulated(emu, (programs,), m, n, k, blocks, RNG)


def test_off_by_default(monkeypatch):
    """Without TILEWORKBENCH_TMA_TILE_PREFETCH=1 the tile loop keeps its prologue and the staging
    tile lies over the rings (the path that has run on the GPU)."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma_tile_prefetch", False)
    kernel = _compile((128, 256, 64), 8, 3)
    before, loop = _tile_loop(kernel.asm["tile-gpu"])
    assert "ttng.tma_ring" not in before and "deferred" not in loop
    plan = {e["use"]: e for e in kernel.metadata.shared_plan if e["space"] == "dynamic"}
    assert plan["TMA store staging"]["offset"] == 0


@needs_ptxas
def test_warp_specialized_consumers_defer_their_store(tmp_path):
    """With a producer warp group the rings are already filled ahead; the consumers' store gets a
    staging tile of its own and waits for the engine only before the next tile's store and at the
    end (two `wait_group.read`, none after the copy)."""
    blocks = (128, 256, 64)
    kernel = tw.compile(tma_persistent_matmul_ws, signature=bt_matmul.signature(blocks),
                        constexprs=bt_matmul.constexprs(blocks, True, 132), target="sm_90a",
                        num_warps=8, num_stages=3)
    assert kernel.metadata.producer_warps == 4
    consumers = kernel.asm["tile-gpu"].split("ttng.warp_specialize", 1)[1].split("\n  })\n", 1)[1]
    assert "deferred = true" in consumers and consumers.count("ttng.tma_store_wait") == 2
    ptx = kernel.asm["ptx"]
    assert len(re.findall(r"cp\.async\.bulk\.wait_group\.read\s+0;", ptx)) == 2
    assembled = run_ptxas(ptx, "sm_90a", tmp_path)
    assert assembled.returncode == 0, assembled.stderr


@pytest.mark.parametrize("num_warps, programs", [(8, 2), (4, 3)])
def test_warp_specialized_deferred_store_emulated(num_warps, programs):
    """The warp-specialized persistent kernel with its consumers' deferred store, emulated."""
    blocks = bm, bn, bk = (64, 64, 32)
    m, n, k = 2 * bm + 8, 2 * bn + 16, 3 * bk + 16
    emu = Emulator(tma_persistent_matmul_ws, bt_matmul.signature(blocks),
                   bt_matmul.constexprs(blocks, True, programs), num_warps=num_warps, tma=True,
                   wgmma=True, num_stages=3)
    bt_matmul.check_emulated(emu, (programs,), m, n, k, blocks, RNG)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k, blocks, num_warps, stages", [
    (1000, 1048, 776, (128, 256, 64), 8, 3),
    (2048, 2048, 1024, (128, 256, 64), 8, 3),
    (1200, 1000, 520, (128, 128, 64), 4, 4),
], ids=["edges-128x256", "2048-128x256", "edges-128x128-4-warps"])
def test_prefetching_persistent_matmul_on_the_gpu(hopper_cp, m, n, k, blocks, num_warps,
                                                  stages):
    """One program per SM (fewer where there are fewer tiles), each over one or more tiles, the
    store of one tile in flight while the next tile's loop runs; against float64."""
    from tileworkbench.cuda.device import device_properties

    tiles = -(-m // blocks[0]) * -(-n // blocks[1])
    programs = min(device_properties().sm_count, tiles)
    values = bt_matmul.constexprs(blocks, False, programs)
    compiled = bt_matmul.check_on_gpu(hopper_cp, tma_persistent_matmul_ws, (programs,), m, n, k,
                                      blocks, values, num_warps, stages, RNG, producer_warps=0)
    assert "deferred = true" in compiled.asm["tile-gpu"]
