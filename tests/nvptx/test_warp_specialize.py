"""Warp specialization (`tl.range(..., warp_specialize=True)`, passes/warp_specialize.py) on tutorial
09's TMA matmul: a producer warp group issues the k loop's copies, each once the consumer warp groups
have released its slot, and the consumers compute. Compiled for sm_90a (PTX assembled by ptxas),
run in the CPU emulator (the producer and consumers as host threads, the mbarriers and TMA by
tma_standin.py) and on the GPU, against NumPy float64 with the output poisoned; loops that cannot
take it say why in the `tile-gpu` IR and compile as without it."""

from __future__ import annotations

import re

import bt_matmul
import numpy as np
import pytest
from cpu_emulator import Emulator
from nvptx_support import needs_ptxas, run_ptxas
from tma_kernels import tma_matmul_bt, tma_persistent_matmul_ws

import tileworkbench as tw
import tileworkbench.language as tl

RNG = np.random.default_rng(93)


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    """TMA is on by default; these tests need it whatever TILEWORKBENCH_TMA says."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)


_signature = bt_matmul.signature
_constexprs = bt_matmul.constexprs


def _compile(blocks=(128, 128, 64), num_warps=8, num_stages=3, target="sm_90a", specialize=True):
    return tw.compile(tma_matmul_bt, signature=_signature(blocks), constexprs=_constexprs(blocks,
                      specialize), target=target, num_warps=num_warps, num_stages=num_stages)


@needs_ptxas
def test_the_producer_warp_group_issues_every_copy(tmp_path):
    """8 consumer warps and a producer warp group: 384 threads, the copies only in the producer
    (which waits on the release barriers), the consumers' loop of waits, wgmmas and releases, their
    barriers counting 256 threads, and the registers handed over (168 at launch; 40 and 232)."""
    kernel = _compile()
    assert kernel.metadata.producer_warps == 4
    ir = kernel.asm["tile-gpu"]
    producer, consumers = ir.split("ttng.warp_specialize", 1)[1].split("\n  })\n", 1)
    assert producer.count("ttng.tma_copy") == 2 and producer.count("after_release = true") == 2
    assert "ttng.tma_copy" not in consumers and consumers.count("ttng.tma_release") == 2
    assert consumers.count("ttng.tma_wait ") == 2 and "warp_group_dot_wait" in consumers
    assert ir.count("ttng.tma_ring {releases = 2}") == 2
    ptx = kernel.asm["ptx"]
    assert ".reqntid 384" in ptx and ".maxnreg 168" in ptx
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 2  # A and B, no prologue
    assert ptx.count("mbarrier.arrive.shared.b64") == 2  # the consumers' releases
    split = ptx.index("setmaxnreg.inc")
    assert "bar.sync \t0;" not in ptx[split:] and "bar.sync \t1, 256;" in ptx[split:]
    # 3 slots x (A, B) copy barriers of 1 arrival, release barriers of 2 (the consumer groups)
    inits = re.findall(r"mbarrier\.init\.shared\.b64\s+\[[^\]]+\], (%r\d+);", ptx)
    assert len(inits) == 12
    assembled = run_ptxas(ptx, "sm_90a", tmp_path)
    assert assembled.returncode == 0, assembled.stderr


@needs_ptxas
def test_one_consumer_warp_group_keeps_its_registers(tmp_path):
    """4 consumer warps: 256 threads, which may have 255 registers each anyway: no setmaxnreg."""
    kernel = _compile((64, 128, 64), num_warps=4, num_stages=2)
    ptx = kernel.asm["ptx"]
    assert ".reqntid 256" in ptx and "setmaxnreg" not in ptx and ".maxnreg" not in ptx
    assert "bar.sync \t1, 128;" in ptx
    assembled = run_ptxas(ptx, "sm_90a", tmp_path)
    assert assembled.returncode == 0, assembled.stderr


@pytest.mark.parametrize("blocks, num_warps, stages", [
    ((64, 64, 32), 8, 3), ((64, 64, 32), 4, 2), ((128, 64, 64), 8, 4),
], ids=["2-groups-3-stages", "1-group-2-stages", "2-groups-4-stages"])
def test_warp_specialized_matmul_emulated(blocks, num_warps, stages):
    """The producer and the consumers as host threads: edge tiles in M, N and K (zero-filled), the
    ring wrapping unevenly (6 K tiles), each slot refilled only after both warp groups released it."""
    bm, bn, bk = blocks
    m, n, k = 2 * bm + 8, bn + 16, 5 * bk + 16
    emu = Emulator(tma_matmul_bt, _signature(blocks), _constexprs(blocks), num_warps=num_warps,
                   tma=True, wgmma=True, num_stages=stages)
    assert emu.threads == 32 * (num_warps + 4)
    bt_matmul.check_emulated(emu, (-(-m // bm) * -(-n // bn),), m, n, k, blocks, RNG)


def _persistent_constexprs(blocks, programs):
    return _constexprs(blocks, programs=programs)


@needs_ptxas
def test_a_persistent_kernel_specializes_its_tile_loop(tmp_path):
    """Tutorial 09's persistent kernel marks its tile loop: the producer runs a copy of the tile
    loop around the k loop's copies, the slot carried through both; the consumers' tile loop carries
    the slot too, and after each k loop's closing wgmma wait they release its last slot."""
    blocks = (128, 256, 64)
    kernel = tw.compile(tma_persistent_matmul_ws, signature=_signature(blocks),
                        constexprs=_persistent_constexprs(blocks, 132), target="sm_90a",
                        num_warps=8, num_stages=3)
    ir = kernel.asm["tile-gpu"]
    producer, consumers = ir.split("ttng.warp_specialize", 1)[1].split("\n  })\n", 1)
    assert producer.count("scf.for") == 2 and producer.count("ttng.tma_copy") == 2
    assert "ttng.tma_copy" not in consumers and consumers.count("ttng.tma_release") == 4
    tile_loop = consumers[consumers.index("%tile_slot = scf.for"):]
    k_loop_end = tile_loop.index("\n    }\n")
    after_k_loop = tile_loop[k_loop_end:]
    drain = after_k_loop.index("ttng.warp_group_dot_wait")
    assert drain < after_k_loop.index("ttng.tma_release") < after_k_loop.index("ttng.tma_store")
    ptx = kernel.asm["ptx"]
    assert ".reqntid 384" in ptx and "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    assembled = run_ptxas(ptx, "sm_90a", tmp_path)
    assert assembled.returncode == 0, assembled.stderr


@pytest.mark.parametrize("num_warps, stages, programs", [(8, 3, 2), (4, 2, 3)],
                         ids=["2-groups-3-stages-2-programs", "1-group-2-stages-3-programs"])
def test_warp_specialized_persistent_matmul_emulated(num_warps, stages, programs):
    """Each program runs 3-5 tiles of 4 K tiles (the last partial): the slot and its phases carry
    from one tile to the next, in the producer and in the consumers."""
    blocks = bm, bn, bk = (64, 64, 32)
    m, n, k = 2 * bm + 8, 2 * bn + 16, 3 * bk + 16
    emu = Emulator(tma_persistent_matmul_ws, _signature(blocks),
                   _persistent_constexprs(blocks, programs), num_warps=num_warps, tma=True,
                   wgmma=True, num_stages=stages)
    bt_matmul.check_emulated(emu, (programs,), m, n, k, blocks, RNG)


@tw.jit
def pointer_matmul_ws(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr):
    """A k loop on pointers that asks for warp specialization."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, warp_specialize=True):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@needs_ptxas
@pytest.mark.parametrize("case", ["pointers", "sm_90", "tma_off", "switched_off"])
def test_a_loop_that_cannot_take_it_says_why(case, monkeypatch, tmp_path):
    """Pointer loads, a target without wgmma, descriptors kept off TMA, and
    TILEWORKBENCH_WARP_SPECIALIZE=0: the loop is pipelined as without the option, a
    `ttng.warp_specialize_note` says why, and the block keeps num_warps."""
    from tileworkbench.config import config

    if case == "pointers":
        kernel = tw.compile(pointer_matmul_ws, signature={"a_ptr": "*fp16:16", "b_ptr": "*fp16:16",
                            "c_ptr": "*fp32:16", "K": "i32:16"},
                            constexprs={"BM": 64, "BN": 64, "BK": 32}, target="sm_90a", num_warps=4,
                            num_stages=3)
        reason = "no TMA descriptor loads"
    elif case == "sm_90":
        kernel = _compile(target="sm_90")
        reason = "needs wgmma"
    elif case == "tma_off":
        monkeypatch.setattr(config, "tma", False)
        kernel = _compile()
        reason = "no TMA descriptor loads"
    else:
        monkeypatch.setattr(config, "warp_specialize", False)
        kernel = _compile()
        reason = "TILEWORKBENCH_WARP_SPECIALIZE=0"
    ir = kernel.asm["tile-gpu"]
    notes = re.findall(r'ttng.warp_specialize_note \{reason = "([^"]*)"\}', ir)
    assert len(notes) == 1 and reason in notes[0]
    assert "ttng.warp_specialize " not in ir and kernel.metadata.producer_warps == 0
    ptx = kernel.asm["ptx"]
    assert f".reqntid {32 * kernel.metadata.num_warps}" in ptx and "setmaxnreg" not in ptx
    assembled = run_ptxas(ptx, kernel.metadata.target, tmp_path)
    assert assembled.returncode == 0, assembled.stderr


# -- on the GPU -------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k, blocks, num_warps, stages", [
    (300, 264, 328, (64, 64, 32), 4, 2),
    (1024, 520, 776, (128, 128, 64), 8, 3),
    (2048, 2048, 2048, (128, 256, 64), 8, 3),
], ids=["edges-1-group", "edges-2-groups", "2048-128x256"])
def test_warp_specialized_matmul_on_the_gpu(hopper_cp, m, n, k, blocks, num_warps, stages):
    """Through the JIT with host TensorDescriptors: the launch runs the producer's warps too
    (`metadata.producer_warps`), edge tiles everywhere, against float64."""
    grid = (-(-m // blocks[0]) * -(-n // blocks[1]),)
    bt_matmul.check_on_gpu(hopper_cp, tma_matmul_bt, grid, m, n, k, blocks, _constexprs(blocks),
                           num_warps, stages, RNG)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k, num_warps, stages", [(1000, 1048, 776, 8, 3),
                                                        (2048, 2048, 1024, 8, 3)],
                         ids=["edges", "2048"])
def test_warp_specialized_persistent_matmul_on_the_gpu(hopper_cp, m, n, k, num_warps, stages):
    """One program per SM, each over several tiles, the producer running into the next tile."""
    from tileworkbench.cuda.device import device_properties

    blocks = (128, 256, 64)
    programs = min(device_properties().sm_count, -(-m // blocks[0]) * -(-n // blocks[1]))
    bt_matmul.check_on_gpu(hopper_cp, tma_persistent_matmul_ws, (programs,), m, n, k, blocks,
                           _persistent_constexprs(blocks, programs), num_warps, stages, RNG)
