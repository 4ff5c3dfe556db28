"""`config.chained_wgmma_in_flight` (on by default; `TILEWORKBENCH_CHAINED_WGMMA_IN_FLIGHT=0` turns
it off): attention's p @ v wgmma stays in flight across the loop's back edge, as in Triton's PTX. The next iteration waits for
it with the q @ k^T wait (one `wgmma.wait_group 0` asm for both) before the carried accumulator is
read; the loop's result is waited for on its exit edge; with `num_stages` ring slots, a barrier
comes before the refill copies. Checked in the Tile IR and the PTX, by ptxas (no serialized wgmma),
and by emulated runs whose wgmma stand-in returns NaN for an accumulator read before its wait."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
from attention_kernel import attention_forward_masked, masked_signature, reference
from cpu_emulator import Emulator
from nvptx_support import needs_ptxas
from test_wgmma_register_a import BENCH_SIGNATURE, kernels

import tileworkbench as tw

RNG = np.random.default_rng(2026)
SM_SCALE = 0.5


@pytest.fixture(autouse=True)
def chained_in_flight(monkeypatch):
    from tileworkbench.config import config

    monkeypatch.setattr(config, "chained_wgmma_in_flight", True)


def _bench_attention(head_dim=64, causal=False, block=(128, 64), warps=8, stages=3):
    return tw.compile(kernels.load("tileworkbench").attn_fwd_kernel, signature=BENCH_SIGNATURE,
                      constexprs={"HEAD_DIM": head_dim, "BLOCK_M": block[0], "BLOCK_N": block[1],
                                  "CAUSAL": causal},
                      target="sm_90a", num_warps=warps, num_stages=stages, use_cache=False)


def test_p_at_v_is_waited_for_in_the_next_iteration():
    gpu = _bench_attention().asm["tile-gpu"]
    body = gpu[gpu.index("scf.for"):gpu.index("scf.yield")]
    lines = body.splitlines()
    waits = [i for i, line in enumerate(lines) if "ttng.warp_group_dot_wait" in line]
    dots = [i for i, line in enumerate(lines) if "ttng.warp_group_dot " in line]
    assert len(dots) == 2 and len(waits) == 2 and waits == [dots[0] + 1, dots[0] + 2]
    carried = re.search(r"iter_args\(%\w+ = %\w+, (%\w+) = ", lines[0]).group(1)  # the accumulator
    assert re.search(rf"= ttng\.warp_group_dot_wait {carried} ", lines[waits[1]])
    p_at_v = re.match(r"\s*(%\w+) = ", lines[dots[1]]).group(1)
    yielded = gpu[gpu.index("scf.yield"):].splitlines()[0]
    assert f", {p_at_v}, " in yielded  # yielded in flight
    # num_stages slots: the barrier comes after p @ v's issue and before the refill copies
    barrier = next(i for i, line in enumerate(lines) if "gpu.barrier" in line)
    copies = [i for i, line in enumerate(lines) if "async_copy_global_to_local" in line]
    assert dots[1] < barrier < min(copies)
    after = gpu[gpu.index("scf.yield"):]
    assert "ttng.warp_group_dot_wait" in after.split("\n", 2)[2].split("\n")[0]  # the drain

    ptx = _bench_attention().asm["ptx"]
    assert ptx.count("wgmma.wait_group.sync.aligned 0;") == 2  # one in the loop, the drain



@pytest.mark.parametrize("stages", [2, 3])
def test_refill_copies_at_two_stages_come_after_the_first_wait(stages):
    """At 2 stages the copies of iteration i + 1 (into the slot iteration i - 1 read) are issued
    right after iteration i's first wait, which retires p @ v of i - 1, and a barrier: issued at the
    end of the iteration, the next iteration's first wait met them at once. With more stages they
    stay at the end (their addresses would be live through the softmax)."""
    gpu = _bench_attention(stages=stages).asm["tile-gpu"]
    lines = gpu[gpu.index("scf.for"):gpu.index("scf.yield")].splitlines()
    dots = [i for i, line in enumerate(lines) if "ttng.warp_group_dot " in line]
    waits = [i for i, line in enumerate(lines) if "ttng.warp_group_dot_wait" in line]
    barriers = [i for i, line in enumerate(lines) if "gpu.barrier" in line]
    copies = [i for i, line in enumerate(lines) if "async_copy_global_to_local" in line]
    assert len(dots) == 2 and len(copies) == 2
    if stages == 2:
        assert waits[1] < barriers[0] < min(copies) and max(copies) < dots[1]
    else:
        assert dots[1] < barriers[0] < min(copies)


@pytest.mark.parametrize("stages", [2, 3])
def test_tma_refill_copies_at_two_stages_come_after_the_first_wait(stages):
    """The same for TMA rings (tutorial 06's descriptor form): at 2 stages K's and V's copies of the
    next iteration come right after the first wait (each `ttng.tma_copy` orders the slot's readers
    first with a barrier of its own), before p @ v; with more stages at the end."""
    from attention_kernel import attention_forward, signature

    gpu = tw.compile(attention_forward, signature=signature("fp16", aligned=True), target="sm_90a",
                     constexprs={"N_CTX": 1024, "HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64,
                                 "CAUSAL": False},
                     num_warps=4, num_stages=stages, use_cache=False).asm["tile-gpu"]
    lines = gpu[gpu.index("scf.for"):gpu.index("scf.yield")].splitlines()
    dots = [i for i, line in enumerate(lines) if "ttng.warp_group_dot " in line]
    waits = [i for i, line in enumerate(lines) if "ttng.warp_group_dot_wait" in line]
    copies = [i for i, line in enumerate(lines) if "ttng.tma_copy" in line]
    assert len(dots) == 2 and len(copies) == 2
    if stages == 2:
        assert waits[1] < min(copies) and max(copies) < dots[1]
    else:
        assert dots[1] < min(copies)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_p_at_v_stays_in_flight_over_a_tma_ring(causal):
    """Tutorial 06's descriptor form on TMA: p @ v reads V's TMA slot and stays in flight across the
    back edge (before, each iteration waited for it, then issued the next copies: the next K's
    latency was not hidden behind it). Each loop's TMA copies come after its first wait, which
    retires the previous iteration's p @ v (a copy refills the slot iteration i - 1 read, after a
    barrier of its own); each loop's result is waited for after it."""
    from attention_kernel import attention_forward, signature

    gpu = tw.compile(attention_forward, signature=signature("fp16", aligned=True), target="sm_90a",
                     constexprs={"N_CTX": 1024, "HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64,
                                 "CAUSAL": causal},
                     num_warps=8, num_stages=3, use_cache=False).asm["tile-gpu"]
    loops = re.findall(r"scf\.for .*?scf\.yield[^\n]*\n[^\n]*\n[^\n]*\n", gpu, re.S)
    assert len(loops) == (2 if causal else 1)
    for loop in loops:
        lines = loop.splitlines()
        dots = [i for i, line in enumerate(lines) if "ttng.warp_group_dot " in line]
        waits = [i for i, line in enumerate(lines) if "ttng.warp_group_dot_wait" in line]
        copies = [i for i, line in enumerate(lines) if "ttng.tma_copy" in line]
        assert len(dots) == 2 and waits[:2] == [dots[0] + 1, dots[0] + 2], loop
        assert copies and min(copies) > waits[1]
        p_at_v = re.match(r"\s*(%\w+) = ", lines[dots[1]]).group(1)
        yielded = next(line for line in lines if "scf.yield" in line)
        assert re.search(rf"scf\.yield [^:]*{p_at_v}\b", yielded), yielded  # yielded in flight
        assert "ttng.warp_group_dot_wait" in lines[-1]  # the drain after the loop


def test_off_waits_for_p_at_v_in_its_own_iteration(monkeypatch):
    """`TILEWORKBENCH_CHAINED_WGMMA_IN_FLIGHT=0`: each dot is waited for right after its issue, no
    drain after the loop, and the setting reads from the environment (on unless it says off)."""
    from tileworkbench.config import Config, config

    monkeypatch.setattr(config, "chained_wgmma_in_flight", False)
    gpu = _bench_attention().asm["tile-gpu"]
    lines = gpu[gpu.index("scf.for"):gpu.index("scf.yield")].splitlines()
    waits = [i for i, line in enumerate(lines) if "ttng.warp_group_dot_wait" in line]
    dots = [i for i, line in enumerate(lines) if "ttng.warp_group_dot " in line]
    assert len(dots) == 2 and waits == [dots[0] + 1, dots[1] + 1]
    after = gpu[gpu.index("scf.yield"):].split("\n", 2)[2].split("\n")[0]
    assert "ttng.warp_group_dot_wait" not in after
    for value, on in (("0", False), ("off", False), ("1", True), ("", True)):
        monkeypatch.setenv("TILEWORKBENCH_CHAINED_WGMMA_IN_FLIGHT", value)
        assert Config().chained_wgmma_in_flight is on

@needs_ptxas
@pytest.mark.parametrize("head_dim, causal, block, warps", [
    (64, False, (128, 64), 8), (64, True, (128, 64), 8), (128, False, (128, 64), 8),
    (128, True, (128, 128), 8), (64, False, (64, 64), 4)])
def test_ptxas_keeps_the_chain_unserialized(tmp_path, head_dim, causal, block, warps):
    ptx = _bench_attention(head_dim, causal, block, warps).asm["ptx"]
    (tmp_path / "k.ptx").write_text(ptx)
    report = subprocess.run(["ptxas", "-v", "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o",
                             str(tmp_path / "k.cubin")], capture_output=True, text=True)
    out = report.stdout + report.stderr
    assert report.returncode == 0, out
    assert not re.search(r"\(C75\d\d\)|serialized", out), out
    assert " 0 bytes spill stores" in out


@pytest.mark.parametrize("warps, stages, block, head_dim", [(8, 3, (128, 64), 64),
                                                            (4, 2, (64, 32), 128)])
def test_emulated_bench_attention(warps, stages, block, head_dim):
    """Four and eight key blocks: the rings wrap; 8 warps are two warp groups."""
    n_ctx, heads = 256, 2
    q, k, v = (RNG.normal(0.0, 0.5, (heads * n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    o = np.full_like(q, np.nan)
    emulator = Emulator(kernels.load("tileworkbench").attn_fwd_kernel, BENCH_SIGNATURE,
                        {"HEAD_DIM": head_dim, "BLOCK_M": block[0], "BLOCK_N": block[1],
                         "CAUSAL": False}, warps, wgmma=True, num_stages=stages)
    emulator.launch((n_ctx // block[0], heads), q, k, v, o, SM_SCALE, n_ctx * head_dim, head_dim,
                    n_ctx)
    for h in range(heads):
        rows = slice(h * n_ctx, (h + 1) * n_ctx)
        want, _ = reference(q[rows], k[rows], v[rows], SM_SCALE, False)
        assert np.abs(o[rows].astype(np.float64) - want).max() <= 1e-2


def test_emulated_masked_attention_tails():
    """The pointer kernel with masked tails (n_ctx 100: a partial last key block), causal."""
    n_ctx, head_dim, heads = 100, 64, 2
    q, k, v = (RNG.normal(0.0, 0.5, (heads * n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    o = np.full_like(q, np.nan)
    emulator = Emulator(attention_forward_masked, masked_signature("fp16"),
                        {"HEAD_DIM": head_dim, "BLOCK_M": 64, "BLOCK_N": 32, "CAUSAL": True}, 4,
                        wgmma=True, num_stages=2)
    emulator.launch((2, heads), q, k, v, o, SM_SCALE, n_ctx)
    for h in range(heads):
        rows = slice(h * n_ctx, (h + 1) * n_ctx)
        want, _ = reference(q[rows], k[rows], v[rows], SM_SCALE, True)
        assert np.abs(o[rows].astype(np.float64) - want).max() <= 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("head_dim, causal, block, warps, stages", [
    (64, False, (128, 64), 8, 3), (64, True, (128, 64), 8, 3), (128, False, (128, 128), 8, 3),
    (128, True, (64, 64), 4, 3), (64, False, (128, 64), 4, 4)])
def test_bench_attention_on_the_gpu(hopper_cp, head_dim, causal, block, warps, stages):
    """The bench kernel with p @ v in flight, 2 heads of 1024 tokens, against float64."""
    n_ctx, heads = 1024, 2
    host = [RNG.normal(0.0, 0.5, (heads * n_ctx, head_dim)).astype(np.float16) for _ in range(3)]
    q, k, v = (hopper_cp.asarray(x) for x in host)
    o = hopper_cp.full(q.shape, np.nan, dtype=np.float16)
    compiled = kernels.load("tileworkbench").attn_fwd_kernel[(n_ctx // block[0], heads)](
        q, k, v, o, SM_SCALE, n_ctx * head_dim, head_dim, n_ctx, HEAD_DIM=head_dim,
        BLOCK_M=block[0], BLOCK_N=block[1], CAUSAL=causal, num_warps=warps, num_stages=stages)
    hopper_cp.cuda.runtime.deviceSynchronize()
    assert compiled.asm["ptx"].count("wgmma.wait_group.sync.aligned 0;") == 2
    got = o.get().astype(np.float64)
    for h in range(heads):
        rows = slice(h * n_ctx, (h + 1) * n_ctx)
        want, _ = reference(*(x[rows] for x in host), SM_SCALE, causal)
        assert np.abs(got[rows] - want).max() <= 1e-2, f"head {h}"
