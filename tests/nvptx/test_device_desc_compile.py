"""Descriptors made in the kernel on sm_90a: the tensor map is built on the device (`tensormap.replace`
in shared memory, `tensormap.cp_fenceproxy` to the launch's global scratch, the acquire fence) and the
tiles move by `cp.async.bulk.tensor` with mbarrier completion, assembled by ptxas; the metadata asks
for 128 bytes of scratch per descriptor. Where the specialization does not prove TMA's rules, or the
target cannot build maps, the descriptor keeps the pointer lowering."""

from __future__ import annotations

import pytest
from device_desc_kernels import device_desc_copy, device_desc_matmul
from nvptx_support import needs_ptxas, run_ptxas

import tileworkbench as tw
import tileworkbench.language as tl
from tileworkbench.frontend import ArgSpec


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    """TMA is off by default (TILEWORKBENCH_TMA=1, config.tma): these tests turn it on."""
    from tileworkbench.config import config

    monkeypatch.setattr(config, "tma", True)


def _copy_args(element="fp16", aligned=True, strides_16=True, extent_16=True):
    return [ArgSpec("src_ptr", f"*{element}", aligned), ArgSpec("dst_ptr", f"*{element}", aligned),
            ArgSpec("M", "i32"), ArgSpec("N", "i32", extent_16),
            ArgSpec("stride_src", "i32", strides_16),
            ArgSpec("stride_dst", "i32", strides_16), ArgSpec("factor", "fp32")]


def _copy(arch="sm_90a", block=(64, 64), **kw):
    return tw.compile(device_desc_copy, signature=_copy_args(**kw),
                      constexprs={"BM": block[0], "BN": block[1]}, target=arch, use_cache=False)


def _matmul(num_stages=1):
    args = [ArgSpec(n, "*fp16", True) for n in ("a_ptr", "b_ptr", "c_ptr")]
    args += [ArgSpec("M", "i32")]
    args += [ArgSpec(n, "i32", True) for n in ("N", "K", "stride_am", "stride_bk", "stride_cm")]
    return tw.compile(device_desc_matmul, signature=args, constexprs={"BM": 64, "BN": 64, "BK": 64},
                      target="sm_90a", num_stages=num_stages, use_cache=False)


def _maps(kernel) -> int:
    return kernel.asm["ptx"].count("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic"
                                   ".release.gpu.sync.aligned")


@needs_ptxas
def test_copy_and_matmul_build_their_maps_and_use_tma(tmp_path):
    matmul = _matmul(1)
    for kernel, maps, loads, stores in ((_copy(), 2, 1, 1), (matmul, 3, 2, 1)):
        ptx = kernel.asm["ptx"]
        assert _maps(kernel) == maps
        assert ptx.count("fence.proxy.tensormap::generic.acquire.gpu") == maps
        for field in ("global_address", "rank", "box_dim", "global_dim", "global_stride",
                      "element_stride", "elemtype", "interleave_layout", "swizzle_mode", "fill_mode"):
            assert f"tensormap.replace.tile.{field}.shared::cta.b1024" in ptx, field
        assert "tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%r" in ptx
        assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == stores
        # a loop's loads are a ring (issued in its prologue and its body)
        assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier") >= loads
        assert "mbarrier.try_wait.parity" in ptx and "mbarrier.arrive.expect_tx" in ptx
        assert kernel.metadata.global_scratch == 128 * maps
        result = run_ptxas(ptx, "sm_90a", tmp_path)
        assert result.returncode == 0, result.stderr
    assert "ttng.tensormap_create" in matmul.asm["tile-gpu"]


@needs_ptxas
def test_pipelined_matmul_copies_through_the_ring(tmp_path):
    """num_stages=3: the maps made before the loop feed the ring's copies (prologue and body)."""
    kernel = _matmul(3)
    assert "ttng.tma_ring" in kernel.asm["tile-gpu"] and "ttng.tma_copy" in kernel.asm["tile-gpu"]
    assert _maps(kernel) == 3 and kernel.metadata.global_scratch == 384
    assert run_ptxas(kernel.asm["ptx"], "sm_90a", tmp_path).returncode == 0


@pytest.mark.parametrize("case, why", [
    ("sm_90", None), ("tma_off", None), ("unaligned_base", "base is not known to be 16-byte"),
    ("stride_unknown", "a stride is not known"), ("extent_unknown", "innermost extent is not known"),
    ("big_box", "TMA cannot copy a 8x512 block")])
def test_pointer_path_where_tma_is_not_proven(case, why, monkeypatch):
    """No map where the target cannot build one (sm_90 has no `tensormap.replace`), TMA is off, the
    base, a stride or the innermost extent is not known to be whole 16-byte chunks, or TMA cannot
    copy the block; a `ttng.tma_fallback` says why."""
    from tileworkbench.config import config

    kw = {"sm_90": {"arch": "sm_90"}, "tma_off": {}, "unaligned_base": {"aligned": False},
          "stride_unknown": {"strides_16": False}, "extent_unknown": {"extent_16": False},
          "big_box": {"block": (8, 512)}}
    if case == "tma_off":
        monkeypatch.setattr(config, "tma", False)
    kernel = _copy(**kw[case])
    assert "tensormap" not in kernel.asm["ptx"]
    assert kernel.metadata.global_scratch == 0
    if why is not None:
        assert "ttng.tma_fallback" in kernel.asm["tile-gpu"] and why in kernel.asm["tile-gpu"]
    if case != "sm_90":  # sm_90 still copies host descriptors with TMA; these have none
        assert "cp.async.bulk.tensor" not in kernel.asm["ptx"]


@tw.jit
def _constant_strides(x_ptr, y_ptr, n_rows, BM: tl.constexpr, BN: tl.constexpr):
    """Strides known at compile time: 64 elements of fp16 (128 bytes) and 44 (88 bytes)."""
    x = tl.make_tensor_descriptor(x_ptr, shape=[n_rows, 64], strides=[64, 1], block_shape=[BM, BN])
    y = tl.make_tensor_descriptor(y_ptr, shape=[n_rows, 48], strides=[44, 1], block_shape=[BM, BN])
    y.store([0, 0], x.load([0, 0]))


@tw.jit
def _made_in_a_loop(x_ptr, y_ptr, n_rows, BM: tl.constexpr, BN: tl.constexpr):
    for i in range(0, n_rows, BM):
        x = tl.make_tensor_descriptor(x_ptr, shape=[n_rows, 64], strides=[64, 1],
                                      block_shape=[BM, BN])
        tl.store(y_ptr + i + tl.arange(0, BM)[:, None] * 0 + tl.arange(0, BN)[None, :],
                 x.load([i, 0]))


def _sig():
    return [ArgSpec("x_ptr", "*fp16", True), ArgSpec("y_ptr", "*fp16", True),
            ArgSpec("n_rows", "i32")]


def test_constant_strides_and_loops():
    """A constant stride decides at compile time (128 bytes: a map; 88 bytes, not a multiple of 16:
    the pointer path); a descriptor made in a loop keeps the pointer path (its map would be
    rewritten while copies may still read it)."""
    kernel = tw.compile(_constant_strides, signature=_sig(), constexprs={"BM": 64, "BN": 64},
                        target="sm_90a", use_cache=False)
    assert _maps(kernel) == 1 and kernel.metadata.global_scratch == 128
    assert kernel.asm["ptx"].count("cp.async.bulk.tensor.2d.shared::cluster.global") == 1
    kernel = tw.compile(_made_in_a_loop, signature=_sig(), constexprs={"BM": 64, "BN": 64},
                        target="sm_90a", use_cache=False)
    assert _maps(kernel) == 0 and kernel.metadata.global_scratch == 0
