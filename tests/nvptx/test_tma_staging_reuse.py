"""The epilogue's staging tile over the dead TMA rings (passes/shared_reuse.py): a descriptor
matmul's TMA store (host descriptors and descriptors made in the kernel) and a pointer epilogue's
staging tile take no shared memory beside the rings, so 128x128x64 fp16 at 3 stages fits two blocks
per SM on sm_90a. Checked on the plan and the PTX order (copies awaited, wgmma retired, a fence and
a barrier before the tile is written; the engine done reading it before anything reuses it), and by
emulated persistent runs whose next tiles refill the rings under the last tile's staging tile."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import Emulator
from device_desc_kernels import device_desc_matmul, device_desc_persistent_matmul
from tma_kernels import descriptor_args, tma_matmul, tma_persistent_matmul_to_pointers
from tma_standin import host_tensor_map

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.frontend import ArgSpec
from tileworkbench.workbench.resources import limits_for, occupancy

RNG = np.random.default_rng(2026)
TILE_ALIGN = 1024  # each ring's and tile's room for the run-time alignment (lowering/tma.py)


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)


def _host(bm, bn, bk, warps, stages, kernel=tma_matmul):
    args = descriptor_args(["a_desc", "b_desc", "c_desc"], "fp16", [(bm, bk), (bk, bn), (bm, bn)])
    return tw.compile(kernel, signature=args + [ArgSpec("K", "i32", True)],
                      constexprs={"BM": bm, "BN": bn, "BK": bk}, target="sm_90a",
                      num_warps=warps, num_stages=stages, use_cache=False)


def _in_kernel(bm, bn, bk, warps, stages):
    args = [ArgSpec(n, "*fp16", True) for n in ("a_ptr", "b_ptr", "c_ptr")] + [ArgSpec("M", "i32")]
    args += [ArgSpec(n, "i32", True) for n in ("N", "K", "stride_am", "stride_bk", "stride_cm")]
    return tw.compile(device_desc_matmul, signature=args, constexprs={"BM": bm, "BN": bn, "BK": bk},
                      target="sm_90a", num_warps=warps, num_stages=stages, use_cache=False)


def _dynamic(plan, use):
    return [e for e in plan if e["use"] == use]


@pytest.mark.parametrize("make", [_host, _in_kernel], ids=["host", "in-kernel"])
@pytest.mark.parametrize("config, blocks_per_sm",
                         [((128, 128, 64, 4, 3), 2), ((128, 256, 64, 8, 3), 1)],
                         ids=["128x128x64-4w-3s", "128x256x64-8w-3s"])
def test_store_staging_lies_over_the_rings(make, config, blocks_per_sm):
    bm, bn, bk, warps, stages = config
    kernel = make(*config)
    plan = kernel.metadata.shared_plan
    rings = _dynamic(plan, "TMA ring")
    assert [r["bytes"] for r in rings] == [stages * bm * bk * 2 + TILE_ALIGN,
                                           stages * bk * bn * 2 + TILE_ALIGN]
    (staging,) = _dynamic(plan, "TMA store staging")
    assert staging["offset"] == 0 and staging["bytes"] == bm * bn * 2 + TILE_ALIGN
    static = sum(e["bytes"] for e in plan if e["space"] == "static")
    assert kernel.metadata.shared == sum(r["bytes"] for r in rings) + static
    blocks, _ = occupancy(None, kernel.metadata.shared, warps, limits_for("sm_90a"))
    assert blocks == blocks_per_sm


def test_epilogue_waits_for_the_rings_and_the_engine():
    """In the PTX after the k loop: the last wgmma retired (wait_group 0), a proxy fence and a
    barrier, the tile written, a fence and a barrier, the store issued, and its issuing thread waits
    until the engine has read the tile (the next writer over the rings, a persistent kernel's next
    copies, is that same thread, after a barrier)."""
    ptx = _host(128, 256, 64, 8, 3).asm["ptx"]
    tail = ptx[ptx.index("wgmma.wait_group.sync.aligned 0"):]
    steps = ["wgmma.wait_group.sync.aligned 0", "fence.proxy.async.shared::cta", "bar.sync",
             "stmatrix", "fence.proxy.async.shared::cta", "bar.sync",
             "cp.async.bulk.tensor.2d.global.shared::cta", "cp.async.bulk.commit_group",
             "cp.async.bulk.wait_group.read"]
    at = 0
    for step in steps:
        found = tail.find(step, at)
        assert found >= 0, f"{step} missing after {steps[:steps.index(step)]}"
        at = found + len(step)
    between = tail[:tail.index("stmatrix")]
    assert "cp.async.bulk.tensor.2d.shared::cluster" not in between  # no copy into the rings there


@tw.jit
def store_every_iteration(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr):
    """The partial product stored in the k loop: the rings are live at the store."""
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([0, k]), b_desc.load([k, 0]), acc)
        c_desc.store([0, 0], acc.to(c_desc.dtype))


def test_store_while_the_rings_are_live_keeps_its_own_space():
    kernel = _host(64, 64, 32, 4, 3, store_every_iteration)
    plan = kernel.metadata.shared_plan
    assert not _dynamic(plan, "TMA store staging")
    rings = sum(e["bytes"] for e in _dynamic(plan, "TMA ring"))
    static = sum(e["bytes"] for e in plan if e["space"] == "static")
    assert kernel.metadata.shared >= rings + static + 64 * 64 * 2
    # the resource panel names what the scratch and the static arrays hold
    (scratch,) = _dynamic(plan, "scratch")
    assert any(user.startswith("ttng.tma_store (line") for user in scratch["users"])
    assert scratch["bytes"] >= 64 * 64 * 2
    statics = [e["use"] for e in plan if e["space"] == "static"]
    assert statics.count("TMA ring mbarriers") == 2 and "reduction partials" not in statics


def _poisoned_and_reference(m, n, k, out_dtype):
    a = RNG.standard_normal((m, k)).astype(np.float16)
    b = RNG.standard_normal((k, n)).astype(np.float16)
    return a, b, np.full((m, n), np.nan, out_dtype), a.astype(np.float64) @ b.astype(np.float64)


RINGS = 2 * (3 * 64 * 32 * 2 + TILE_ALIGN)  # the persistent kernels' A and B rings, 3 stages


def _persistent(monkeypatch, prefetch: bool) -> None:
    """Without the tile loop's prefetch the staging tile lies over the rings; with it
    (TILEWORKBENCH_TMA_TILE_PREFETCH=1, passes/prefetch_tiles.py) it lies beside them, which the next
    tile's first copies fill during the epilogue."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma_tile_prefetch", prefetch)


def _layout_ok(emu, prefetch: bool, staging: int) -> bool:
    """The rings alone (staging over them), or the rings and a `staging`-byte tile beside them."""
    return RINGS + staging <= emu.smem_size if prefetch else emu.smem_size <= RINGS


PREFETCH = pytest.mark.parametrize("prefetch", [False, True], ids=["over-the-rings", "prefetch"])


@PREFETCH
def test_persistent_in_kernel_descriptors_with_ragged_tails(monkeypatch, prefetch):
    """Two programs over four tiles of c (M, N and K past the blocks), wgmma reading the rings, c's
    tile written over the rings (or beside them) and stored by TMA; the next tile's copies refill
    the rings."""
    _persistent(monkeypatch, prefetch)
    m, n, k = 100, 80, 144
    args = [ArgSpec("a_ptr", "*fp16", True), ArgSpec("b_ptr", "*fp16", True),
            ArgSpec("c_ptr", "*fp32", True), ArgSpec("M", "i32"), ArgSpec("N", "i32", True),
            ArgSpec("K", "i32", True)]
    emu = Emulator(device_desc_persistent_matmul, args,
                   {"BM": 64, "BN": 64, "BK": 32, "PROGRAMS": 2}, num_warps=4, tma=True,
                   wgmma=True, num_stages=3)
    assert _layout_ok(emu, prefetch, 64 * 64 * 4 + TILE_ALIGN)
    a, b, c, want = _poisoned_and_reference(m, n, k, np.float32)
    emu.launch((2,), a, b, c, m, n, k)
    assert np.abs(c - want).max() / np.abs(want).max() <= 1e-3


@PREFETCH
def test_persistent_host_descriptors_pointer_epilogue_with_ragged_tails(monkeypatch, prefetch):
    """As above with host descriptors and the pointer path's staging tile over the rings (threads
    read it back, so the next tile's copies wait behind a proxy fence), or beside them."""
    _persistent(monkeypatch, prefetch)
    m, n, k = 80, 112, 112
    args = descriptor_args(["a_desc", "b_desc"], "fp16", [(64, 32), (32, 64)])
    args += [ArgSpec("c_ptr", "*fp32", True)] + [ArgSpec(x, "i32", True) for x in "MNK"]
    emu = Emulator(tma_persistent_matmul_to_pointers, args,
                   {"BM": 64, "BN": 64, "BK": 32, "PROGRAMS": 2}, num_warps=4, tma=True,
                   wgmma=True, num_stages=3)
    assert _layout_ok(emu, prefetch, 64 * 64 * 4)
    a, b, c, want = _poisoned_and_reference(m, n, k, np.float32)

    def flat(x, block):
        return [x, x.shape[0], x.shape[1], x.strides[0] // x.itemsize, host_tensor_map(x, block)]

    emu.launch((2,), *flat(a, (64, 32)), *flat(b, (32, 64)), c, m, n, k)
    assert np.abs(c - want).max() / np.abs(want).max() <= 1e-3


def test_in_kernel_descriptors_with_a_on_pointers():
    """K = 72 is not specialized as a multiple of 16, so a's descriptor made in the kernel stays on
    pointers (a staging tile of its own, written from registers each iteration) while b is copied by
    TMA into its ring and c's tile lies over that ring: the mix the GPU tests run at K = 968."""
    m, n, k = 100, 80, 72
    args = [ArgSpec("a_ptr", "*fp16", True), ArgSpec("b_ptr", "*fp16", True),
            ArgSpec("c_ptr", "*fp16", True), ArgSpec("M", "i32"), ArgSpec("N", "i32", True),
            ArgSpec("K", "i32"), ArgSpec("stride_am", "i32"), ArgSpec("stride_bk", "i32", True),
            ArgSpec("stride_cm", "i32", True)]
    emu = Emulator(device_desc_matmul, args, {"BM": 64, "BN": 64, "BK": 32}, num_warps=4, tma=True,
                   wgmma=True, num_stages=3)
    a, b, c, want = _poisoned_and_reference(m, n, k, np.float16)
    emu.launch((2, 2), a, b, c, m, n, k, k, n, n)
    assert not np.isnan(c).any()
    assert np.abs(c.astype(np.float64) - want).max() / np.abs(want).max() <= 2e-3
    compiled = tw.compile(device_desc_matmul, signature={a.name: a.key for a in args},
                          constexprs={"BM": 64, "BN": 64, "BK": 32}, target="sm_90a", num_warps=4,
                          num_stages=3, use_cache=False)
    plan = {e["use"]: e for e in compiled.metadata.shared_plan}
    assert plan["TMA store staging"]["offset"] == 0 and plan["TMA ring"]["offset"] == 0
    assert plan["operand staging"]["offset"] >= plan["TMA ring"]["bytes"]


def test_persistent_in_kernel_descriptors_with_a_on_pointers():
    """A persistent kernel with K = 72 (not specialized as a multiple of 16): a's descriptor stays on
    pointers, its operand tile staged from registers in each k iteration, while b comes by TMA into
    its ring. c's tile lies over that ring; the next tile's first write of a's staging tile waits at
    a barrier behind the engine's read of c's tile. Two programs over four tiles, ragged M and N."""
    m, n, k = 100, 80, 72
    args = [ArgSpec("a_ptr", "*fp16", True), ArgSpec("b_ptr", "*fp16", True),
            ArgSpec("c_ptr", "*fp16", True), ArgSpec("M", "i32"), ArgSpec("N", "i32", True),
            ArgSpec("K", "i32")]
    constexprs = {"BM": 64, "BN": 64, "BK": 32, "PROGRAMS": 2}
    compiled = tw.compile(device_desc_persistent_matmul, signature={a.name: a.key for a in args},
                          constexprs=constexprs, target="sm_90a", num_warps=4, num_stages=3,
                          use_cache=False)
    plan = {e["use"]: e for e in compiled.metadata.shared_plan}
    assert plan["TMA store staging"]["offset"] == 0 and plan["TMA ring"]["offset"] == 0
    assert plan["operand staging"]["offset"] >= plan["TMA ring"]["bytes"]
    assert "scratch" not in plan
    emu = Emulator(device_desc_persistent_matmul, args, constexprs, num_warps=4, tma=True,
                   wgmma=True, num_stages=3)
    a, b, c, want = _poisoned_and_reference(m, n, k, np.float16)
    emu.launch((2,), a, b, c, m, n, k)
    assert not np.isnan(c).any()
    assert np.abs(c.astype(np.float64) - want).max() / np.abs(want).max() <= 2e-3
